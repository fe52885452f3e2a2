-- Retry: a Failed upgrade runs again from preflight, from what is observed now; a paused one resumes. The
-- operator acts on each new value of the upgrade.apiserver.dev/retry annotation once: only annotations change.
local os = require("os")
obj.metadata.annotations = obj.metadata.annotations or {}
obj.metadata.annotations["upgrade.apiserver.dev/retry"] = os.date("!%Y-%m-%dT%H:%M:%SZ")
return obj

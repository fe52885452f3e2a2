-- Abort: roll back now, through the same safety checks as onBreach Rollback (when rollback is unsafe the
-- upgrade pauses, saying why); before any server changed version it ends RolledBack at once. The operator acts
-- on each new value of the upgrade.apiserver.dev/abort annotation once: only annotations change, no drift.
local os = require("os")
obj.metadata.annotations = obj.metadata.annotations or {}
obj.metadata.annotations["upgrade.apiserver.dev/abort"] = os.date("!%Y-%m-%dT%H:%M:%SZ")
return obj

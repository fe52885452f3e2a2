-- Resume a paused upgrade. A declarative pause (spec.paused) ends when spec.paused is false; an automatic pause
-- ends when the upgrade.apiserver.dev/resume annotation gets a new value (no spec edit, so Git does not drift).
-- An automatic pause while spec.paused is also true needs both, in one patch.
local os = require("os")
local status = obj.status or {}
local reason = status.pause and status.pause.reason or nil
local automatic = status.phase == "Paused" and reason ~= nil and reason ~= "PausedBySpec"
if obj.spec.paused == true then
  obj.spec.paused = false
  if not automatic then return obj end
end
obj.metadata.annotations = obj.metadata.annotations or {}
obj.metadata.annotations["upgrade.apiserver.dev/resume"] = os.date("!%Y-%m-%dT%H:%M:%SZ")
return obj

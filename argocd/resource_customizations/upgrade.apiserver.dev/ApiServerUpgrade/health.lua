-- Argo CD health check for upgrade.apiserver.dev/ApiServerUpgrade
-- (resource.customizations.health.upgrade.apiserver.dev_ApiServerUpgrade in argocd-cm; see docs/argocd.md).
-- Lua 5.1, as Argo CD runs it with gopher-lua, and only the base library: a health check from argocd-cm runs
-- without the standard libraries (no string, math). Cases: health_test.yaml, run by test/argocd/.
local hs = {}

-- Every pause reason of src/api/vocabulary.ts PAUSE_REASONS (test/argocd/vocabulary.test.ts keeps both lists
-- equal). "PausedBySpec" is declarative: it ends when spec.paused is false again and does not page. The others
-- are automatic: the operator paged, and waits for a human to fix the cause and resume. Either way the upgrade
-- is Suspended, not Degraded: nothing is broken, it waits for a human (the Degraded condition an automatic pause
-- sets is for alerts, not for Argo CD).
local AUTOMATIC_PAUSE = {
  ["AnalysisBreach"] = true,
  ["BatchTimeout"] = true,
  ["DriverFailed"] = true,
  ["DiscoveryNotConverged"] = true,
  ["RollbackUnsafe"] = true,
  ["RollbackSafetyUnknown"] = true,
  ["MembershipChanged"] = true,
  ["EmulationIneffective"] = true,
  ["RollbackOrphans"] = true,
  ["NotAllowedByPolicy"] = true,
  ["FlagProofRefused"] = true,
  ["ComponentSkew"] = true,
  ["RunningProcessDiffers"] = true,
}

local function condition(conditions, ctype)
  if conditions == nil then return nil end
  for _, c in ipairs(conditions) do
    if c.type == ctype then return c end
  end
  return nil
end

local function batch_text(status)
  local b = status.batch
  if b ~= nil and b.total ~= nil and b.total > 0 then
    return " (batch " .. tostring(b.current or 0) .. "/" .. tostring(b.total) .. ")"
  end
  return ""
end

local function with_message(prefix, c)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return prefix .. ": " .. c.message
  end
  return prefix
end

local status = obj.status
if status == nil or status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to pick up the upgrade"
  local degraded = status ~= nil and condition(status.conditions, "Degraded") or nil
  if degraded ~= nil and degraded.status == "True" and degraded.reason == "InvalidSpec" then
    hs.status = "Degraded"
    hs.message = with_message("Invalid spec", degraded)
  end
  return hs
end

-- The generation the operator last acted on: status.observedGeneration; before the operator sets it (an upgrade
-- waiting in Pending behind another has only its PreflightPassed condition), the newest one of its conditions.
local function observed_generation(s)
  if s.observedGeneration ~= nil then return s.observedGeneration end
  local newest = nil
  for _, c in ipairs(s.conditions or {}) do
    if c.observedGeneration ~= nil and (newest == nil or c.observedGeneration > newest) then newest = c.observedGeneration end
  end
  return newest
end

local generation = obj.metadata and obj.metadata.generation or nil
local observed = observed_generation(status)
if generation ~= nil and (observed == nil or observed < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end

local phase = status.phase
local target = status.targetVersion or (obj.spec and obj.spec.targetVersion) or "?"

if phase == "Succeeded" then
  hs.status = "Healthy"
  hs.message = "Every kube-apiserver runs " .. target
elseif phase == "Paused" then
  hs.status = "Suspended"
  local p = status.pause or {}
  hs.message = "Paused (" .. (p.reason or "Unknown") .. ")"
  if p.message ~= nil and p.message ~= "" then hs.message = hs.message .. ": " .. p.message end
  if p.reason == "PausedBySpec" then
    hs.message = hs.message .. "; resumes when spec.paused is false"
  elseif p.reason == "NotAllowedByPolicy" then
    hs.message = hs.message .. "; resumes by itself once the spec and the operator's policy agree (the resume annotation does not override the policy)"
  elseif AUTOMATIC_PAUSE[p.reason] then
    hs.message = hs.message .. "; resume once the cause is fixed"
  end
elseif phase == "Failed" then
  hs.status = "Degraded"
  hs.message = with_message("Failed", condition(status.conditions, "Degraded") or condition(status.conditions, "Progressing"))
elseif phase == "RolledBack" then
  hs.status = "Degraded"
  hs.message = "Rolled back to " .. (status.fromVersion or "the previous version")
  local degraded = condition(status.conditions, "Degraded")
  if degraded ~= nil and degraded.status == "True" and degraded.message ~= nil then
    hs.message = hs.message .. ": " .. degraded.message
  end
elseif phase == "Pending" or phase == "Preflight" or phase == "EnablingProxy" or phase == "Upgrading" or phase == "RollingBack" then
  local degraded = condition(status.conditions, "Degraded")
  if degraded ~= nil and degraded.status == "True" and degraded.reason == "InvalidSpec" then
    hs.status = "Degraded"
    hs.message = with_message("Invalid spec", degraded)
    return hs
  end
  hs.status = "Progressing"
  if phase == "RollingBack" then
    hs.message = "RollingBack to " .. (status.fromVersion or "the previous version")
  else
    hs.message = phase .. " to " .. target .. batch_text(status)
  end
  local preflight = condition(status.conditions, "PreflightPassed")
  if (phase == "Pending" or phase == "Preflight") and preflight ~= nil and preflight.status == "False" and preflight.message ~= nil then
    hs.message = hs.message .. ": " .. preflight.message
  end
else
  hs.status = "Unknown"
  hs.message = "Unknown phase " .. tostring(phase)
end
return hs

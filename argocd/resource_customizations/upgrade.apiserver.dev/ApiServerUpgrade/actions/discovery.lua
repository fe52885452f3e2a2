-- Argo CD resource actions for upgrade.apiserver.dev/ApiServerUpgrade: which are offered, and when
-- (resource.customizations.actions.upgrade.apiserver.dev_ApiServerUpgrade in argocd-cm; see docs/argocd.md).
-- Lua 5.1 with the base and table libraries only, as Argo CD runs actions. Cases: action_test.yaml.
local status = obj.status or {}
-- No status yet: the operator has not picked the upgrade up; it starts Pending.
local phase = status.phase or "Pending"
local specPaused = obj.spec ~= nil and obj.spec.paused == true

-- What each phase of src/api/vocabulary.ts PHASES offers (test/argocd/vocabulary.test.ts keeps both lists equal).
-- The operator ignores abort while RollingBack (already going back) and once the upgrade is over; retry re-runs a
-- Failed upgrade from preflight, or resumes a paused one.
local OFFERED = {
  ["Pending"] = { pause = true, abort = true },
  ["Preflight"] = { pause = true, abort = true },
  ["EnablingProxy"] = { pause = true, abort = true },
  ["Upgrading"] = { pause = true, abort = true },
  ["Paused"] = { resume = true, abort = true, retry = true },
  ["RollingBack"] = { pause = true },
  ["Succeeded"] = {},
  ["RolledBack"] = {},
  ["Failed"] = { retry = true },
}
-- A phase from a newer operator: offer nothing rather than guess.
local offered = OFFERED[phase] or {}
local active = offered.pause == true

local actions = {}
actions["pause"] = {
  ["disabled"] = not active or specPaused,
  ["iconClass"] = "fa-solid fa-fw fa-pause",
  ["displayName"] = "Pause upgrade",
}
-- spec.paused set but not acted on yet (the operator pauses before its next call) can be taken back too.
actions["resume"] = {
  ["disabled"] = not (offered.resume or (active and specPaused)),
  ["iconClass"] = "fa-solid fa-fw fa-play",
  ["displayName"] = "Resume upgrade",
}
actions["abort"] = {
  ["disabled"] = not offered.abort,
  ["iconClass"] = "fa-solid fa-fw fa-rotate-left",
  ["displayName"] = "Abort: roll back",
}
-- While spec.paused holds a pause the operator records a retry and ignores it: resume clears spec.paused.
actions["retry"] = {
  ["disabled"] = not offered.retry or (phase == "Paused" and specPaused),
  ["iconClass"] = "fa-solid fa-fw fa-rotate-right",
  ["displayName"] = "Retry upgrade",
}
return actions

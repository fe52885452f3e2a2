-- Declarative pause: the operator starts no new driver call (a call in flight completes) and pauses with
-- reason PausedBySpec, which does not page. This edits the spec: see docs/argocd.md about drift.
obj.spec.paused = true
return obj

// The start-condition draws of the campaign (e2e/campaign/draw-gates.ts): drawn after every older draw, so an upgrade
// that draws a gate, a window or an accepted risk is the upgrade it was plus them; their odds; and the window the harness builds from
// the draw (e2e/campaign/window-draw.ts) closes on the drawn minute and opens again when the fault heals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GATE_ODDS, RISK_ODDS, WINDOW_ODDS } from '../../e2e/campaign/draw-gates.ts';
import { LATE_FAULTS } from '../../e2e/campaign/late-draws.ts';
import { windowOpenAt } from '../../e2e/campaign/rules-gates.ts';
import { drawUpgrade, MODES, type Fault, type Schedule } from '../../e2e/campaign/schedule.ts';
import { waitForAlignment, windowSpec } from '../../e2e/campaign/window-draw.ts';

/**
 * What the start-condition draws added to `s`: its gate and window, their faults, the gate's Prometheus fault, the kill
 * at the reopening; and what the late draws after them added (late-draws.ts: faults at a hold, a component, a rollout).
 */
function added(s: Schedule): Fault[] {
  const close = s.faults.find((f) => f.kind === 'window-close');
  return s.faults.filter((f) => f.holdMs !== undefined || LATE_FAULTS[s.mode ?? 'process'].includes(f.kind) || f.kind === 'gate-fail' || f.kind === 'window-close' || f.kind === 'hard-finding'
    || (s.spec.startGate && !s.spec.prometheus && f.kind.startsWith('prometheus-'))
    || (close !== undefined && f.kind === 'operator-leader-kill' && Math.abs(f.atMs - (close.atMs + close.durationMs)) <= 4_000));
}

for (const mode of MODES) {
  test(`${mode} mode: an upgrade that draws a gate or a window is the same upgrade plus them; the odds are as documented`, () => {
    let gates = 0;
    let windows = 0;
    let risks = 0;
    for (let seed = 0; seed < 300; seed++) {
      const s = drawUpgrade(seed, seed % 7, mode);
      if (s.spec.startGate) gates++;
      if (s.spec.window) windows++;
      const extra = added(s);
      if (!s.spec.startGate) assert.ok(!s.faults.some((f) => f.kind === 'gate-fail'));
      if (!s.spec.window) assert.ok(!s.faults.some((f) => f.kind === 'window-close'));
      if (s.spec.startGate) {
        const flaps = s.faults.filter((f) => f.kind === 'gate-fail');
        assert.ok(flaps.length >= 1 && flaps.length <= 3 && flaps.every((f) => f.durationMs >= 3_000 && f.durationMs <= 25_000));
      }
      if (s.spec.window) {
        const close = s.faults.filter((f) => f.kind === 'window-close');
        assert.equal(close.length, 1);
        assert.ok(close[0]!.atMs >= 20_000 && [60_000, 120_000].includes(close[0]!.durationMs), JSON.stringify(close));
      }
      // The older draws, unchanged: the faults left once the added ones are taken out are what the weights drew
      // (1-3, and one Prometheus fault with the Prometheus source), in order.
      const rest = s.faults.filter((f) => !extra.includes(f));
      // (A moved component may bring an abort, drawn late like it: late-draws.ts.)
      const lateAbort = s.faults.some((f) => f.kind === 'component-newer') ? 1 : 0;
      assert.ok(rest.length >= 1 && rest.length <= 3 + (s.spec.prometheus ? 1 : 0) + lateAbort, `${seed}: ${JSON.stringify(s.faults)}`);
      if (extra.length === 0) assert.equal(s.spec.startGate ?? s.spec.window, undefined);
      if (s.spec.expiringCert !== undefined) {
        risks++;
        assert.ok([0, 1, 2].includes(s.spec.expiringCert));
        const hard = s.faults.filter((f) => f.kind === 'hard-finding');
        assert.ok(hard.length <= 1 && hard.every((f) => f.atMs === 0 && f.durationMs >= 5_000 && f.durationMs <= 25_000), 'there at the creation, gone within 25 s');
      }
    }
    if (mode === 'process') assert.ok(Math.abs(risks / 300 - RISK_ODDS) < 0.08, `accepted risks ${risks}/300`);
    else assert.equal(risks, 0, 'no accepted risk in nodes mode');
    if (mode === 'process') assert.ok(Math.abs(gates / 300 - GATE_ODDS) < 0.08, `gates ${gates}/300`);
    else assert.equal(gates, 0, 'no gate in nodes mode (no Prometheus there)');
    assert.ok(Math.abs(windows / 300 - WINDOW_ODDS) < 0.08, `windows ${windows}/300`);
  });
}

test('the window the harness builds: open at the creation, closed from the drawn minute for the drawn time, open again after', () => {
  for (const closeAtMs of [20_000, 47_000, 95_000]) {
    for (const closedMs of [60_000, 120_000]) {
      const now = Date.parse('2026-12-07T23:58:13.400Z');
      const createdAt = now + waitForAlignment(now, closeAtMs);
      assert.equal((createdAt + closeAtMs) % 60_000, 0, 'the closing falls on a minute');
      const w = windowSpec(createdAt, closeAtMs, closedMs);
      assert.equal(w.closesAt, createdAt + closeAtMs);
      // The harness wakes from its wait a little late: the closing stays on the drawn minute.
      assert.equal(windowSpec(createdAt + 40, closeAtMs, closedMs).closesAt, w.closesAt);
      assert.equal(windowSpec(createdAt - 40, closeAtMs, closedMs).closesAt, w.closesAt);
      assert.equal(w.opensAt, w.closesAt + closedMs);
      assert.equal(windowOpenAt(w.spec, createdAt), true, 'open at the creation');
      assert.equal(windowOpenAt(w.spec, w.closesAt - 1), true);
      assert.equal(windowOpenAt(w.spec, w.closesAt), false, 'closed from the minute');
      assert.equal(windowOpenAt(w.spec, w.opensAt - 1), false);
      assert.equal(windowOpenAt(w.spec, w.opensAt), true, 'open again when the fault heals');
      assert.equal(windowOpenAt(w.spec, w.opensAt + 170 * 60_000), true, 'and for the rest of the upgrade');
      for (const r of w.spec.recurring) assert.match(r.start, /^([01][0-9]|2[0-3]):[0-5][0-9]$/);
    }
  }
});

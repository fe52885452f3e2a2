// The campaign's schedules: the same seed draws the same upgrades, different indices differ, every fault heals
// well before the window ends, and a replay file is checked before it is run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { budgetMs, drawUpgrade, faultKinds, parseSchedule, prng, FAULT_KINDS, MODES, RESUMES_AFTER_HEAL, type Fault } from '../../e2e/campaign/schedule.ts';
import { drawsFeature, FEATURES, LATE_FAULTS, pickUpgrades } from '../../e2e/campaign/late-draws.ts';

test('a seed draws the same upgrades again; upgrades of one campaign differ', () => {
  assert.deepEqual(drawUpgrade(42, 3), drawUpgrade(42, 3));
  const a = JSON.stringify(drawUpgrade(42, 0));
  assert.notEqual(a, JSON.stringify(drawUpgrade(42, 1)));
  assert.notEqual(a, JSON.stringify(drawUpgrade(43, 0)));
  const r = prng(7);
  const xs = Array.from({ length: 1000 }, () => r());
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  assert.ok(new Set(xs).size > 990, 'spread');
});

const NODE_FAULTS: string[] = ['kubelet-stop', 'containerd-stop', 'image-missing', 'etcd-cut', 'peer-cut'];

for (const mode of MODES) {
  test(`${mode} mode, over many seeds: every fault heals before its window ends, server faults name a server, every kind of the mode is drawn and no other`, () => {
    const kinds = new Set<string>();
    for (let seed = 0; seed < 300; seed++) {
      const s = drawUpgrade(seed, seed % 5, mode);
      assert.equal(s.mode ?? 'process', mode);
      // 1-3 drawn by weight, one Prometheus fault, 1-3 gate flaps and a Prometheus fault, a window's closing and a
      // leader kill, a hard finding; the late draws (late-draws.ts) up to two at the hold, two with a component, one rollout.
      const late = s.faults.filter((f) => f.holdMs !== undefined || LATE_FAULTS[mode].includes(f.kind)).length;
      assert.ok(s.faults.length >= 1 && s.faults.length <= 3 + (s.spec.prometheus ? 1 : 0) + (s.spec.startGate ? 4 : 0) + (s.spec.window ? 2 : 0) + (s.spec.expiringCert === undefined ? 0 : 1) + late + 1);
      if (s.faults.some((f) => f.kind === 'hard-finding')) assert.notEqual(s.spec.expiringCert, undefined, 'a hard finding only in a kubeadm cluster (where preflight lists the Nodes)');
      if (s.faults.some((f) => f.kind.startsWith('prometheus-'))) assert.ok(s.spec.prometheus || s.spec.startGate, 'a Prometheus fault only where the analysis or a gate reads Prometheus');
      for (const f of s.faults) {
        kinds.add(f.kind);
        assert.ok(f.atMs + f.durationMs + 60_000 <= s.windowMs, `${f.kind} heals at ${f.atMs + f.durationMs}, window ${s.windowMs}`);
        assert.equal(f.server !== undefined, f.kind.startsWith('apiserver-') || NODE_FAULTS.includes(f.kind) || f.kind === 'component-newer');
        if (f.holdMs !== undefined) assert.ok(s.spec.phaseTwo && s.spec.twoPhase, 'a fault at the hold only where phase two is held');
      }
      assert.ok([1, 2].includes(s.spec.batchSize) && s.spec.failureLimit >= 2 && s.spec.failureLimit <= 4);
    }
    assert.deepEqual([...kinds].sort(), faultKinds(mode).sort());
  });
}

test('the Prometheus draws come after every older draw: an upgrade with them is the same upgrade plus a source and at most one fault', () => {
  let withProm = 0;
  for (let seed = 0; seed < 300; seed++) {
    const s = drawUpgrade(seed, 0);
    if (!s.spec.prometheus) continue;
    withProm++;
    assert.ok(s.faults.filter((f) => f.kind.startsWith('prometheus-')).length <= 1);
  }
  assert.ok(withProm > 60 && withProm < 150, `about a third of the upgrades read Prometheus: ${withProm} of 300`);
  for (let seed = 0; seed < 100; seed++) assert.equal(drawUpgrade(seed, 0, 'nodes').spec.prometheus, undefined, 'no Prometheus in nodes mode');
});

test('the modes split the kinds: no hook fault in nodes mode, no kubelet fault in process mode; together every kind', () => {
  assert.ok(!faultKinds('nodes').some((k) => k.startsWith('hook-')));
  assert.ok(!faultKinds('process').some((k) => NODE_FAULTS.includes(k)));
  assert.deepEqual([...new Set([...faultKinds('process'), ...faultKinds('nodes')])].sort(), [...FAULT_KINDS].sort());
});

test('process mode draws what it drew before the nodes mode existed, where it draws no Prometheus (drawn last)', () => {
  // Seed 7 #8 as docs/reliability.md's run B drew it (it draws no Prometheus), plus what was drawn after it: a gate
  // and its flaps (draw-gates.ts), then the late draws (late-draws.ts), and the window they need.
  const s = drawUpgrade(7, 8);
  const { startGate, window, expiringCert, phaseTwo, ...spec } = s.spec;
  assert.deepEqual(spec, { batchSize: 1, soakSeconds: 4, failureLimit: 4, intervalSeconds: 2, onBreach: 'Pause', twoPhase: true, gate: true, standby: true });
  assert.equal(startGate, true);
  assert.equal(window ?? expiringCert, undefined);
  const added = (f: Fault): boolean => f.kind === 'gate-fail' || f.holdMs !== undefined || LATE_FAULTS.process.includes(f.kind);
  assert.deepEqual(s.faults.filter((f) => !added(f)), [{ kind: 'operator-late-standby', atMs: 19000, durationMs: 0 }]);
  assert.ok(s.faults.some((f) => f.kind === 'gate-fail'));
  if (phaseTwo) assert.ok(s.faults.some((f) => f.holdMs !== undefined || f.kind === 'approve'), 'a held upgrade gets a fault at its hold');
  // The active part (140 s: TwoPhase) and 90 s after the last heal, and more for a hold.
  const lastHeal = Math.max(...s.faults.filter((f) => f.holdMs === undefined).map((f) => f.atMs + f.durationMs));
  assert.ok(s.windowMs >= lastHeal + 140_000 + 90_000, 'the window grows with the last heal');
});

test('the late draws come after every older draw: holds only on TwoPhase, about half of them; a component only in process mode; rollouts in both', () => {
  for (const mode of MODES) {
    let twoPhase = 0;
    let held = 0;
    let deadline = 0;
    let rollout = 0;
    let component = 0;
    for (let seed = 0; seed < 400; seed++) {
      const s = drawUpgrade(seed, 1, mode);
      if (s.spec.twoPhase) twoPhase++;
      if (s.spec.phaseTwo) {
        held++;
        assert.ok(s.spec.twoPhase);
        if (s.spec.phaseTwo.deadlineSeconds !== undefined) {
          deadline++;
          assert.ok(s.spec.phaseTwo.deadlineSeconds >= 10 && s.spec.phaseTwo.deadlineSeconds <= 40 && ['Proceed', 'Rollback'].includes(s.spec.phaseTwo.onDeadline ?? ''));
        } else assert.equal(s.spec.phaseTwo.onDeadline, undefined);
        assert.ok(s.faults.some((f) => f.holdMs !== undefined || f.kind === 'approve'), 'a held upgrade gets a fault at its hold');
      }
      if (s.faults.some((f) => f.kind === 'operator-rollout')) rollout++;
      if (s.faults.some((f) => f.kind === 'component-newer')) component++;
    }
    assert.ok(held > twoPhase * 0.35 && held < twoPhase * 0.65, `${mode}: about half the TwoPhase upgrades hold: ${held} of ${twoPhase}`);
    assert.ok(deadline > held * 0.4 && deadline < held * 0.8, `${mode}: most holds have a deadline: ${deadline} of ${held}`);
    assert.ok(rollout > 50 && rollout < 110, `${mode}: one upgrade in five rolls the operator out: ${rollout} of 400`);
    if (mode === 'process') assert.ok(component > 50 && component < 110, `one process upgrade in five moves a component: ${component} of 400`);
    else assert.equal(component, 0, 'no component moved in nodes mode');
  }
});

test('a replay file round-trips; a malformed one is refused', () => {
  const s = drawUpgrade(5, 2);
  assert.deepEqual(parseSchedule(JSON.stringify(s)), s);
  assert.throws(() => parseSchedule(JSON.stringify({ ...s, faults: [{ kind: 'rm -rf', atMs: 1, durationMs: 1 }] })), /not a campaign schedule/);
  assert.throws(() => parseSchedule(JSON.stringify({ ...s, faults: [{ kind: 'apiserver-kill', atMs: 1, durationMs: 1, server: 7 }] })), /not a campaign schedule/);
  assert.throws(() => parseSchedule('{}'), /not a campaign schedule/);
  const n = drawUpgrade(5, 2, 'nodes');
  assert.deepEqual(parseSchedule(JSON.stringify(n)), n);
  assert.throws(() => parseSchedule(JSON.stringify({ ...n, mode: 'vm' })), /not a campaign schedule/);
  const live = { ...s, resumeAfterHeal: true };
  assert.deepEqual(parseSchedule(JSON.stringify(live)), live, 'a liveness run replays as one');
  assert.throws(() => parseSchedule(JSON.stringify({ ...s, resumeAfterHeal: 'yes' })), /not a campaign schedule/);
});

test('--stop-by budgets a liveness upgrade one more window per resume it may make', () => {
  const s = drawUpgrade(5, 2);
  assert.equal(budgetMs(s), s.windowMs);
  assert.equal(budgetMs({ ...s, resumeAfterHeal: true }), s.windowMs * (1 + RESUMES_AFTER_HEAL));
  assert.ok(RESUMES_AFTER_HEAL >= 1);
});

test('--only picks the upgrades of a seed that draw a feature, each as the seed draws it at its index', () => {
  for (const feature of FEATURES) {
    const picked = pickUpgrades((i, m) => drawUpgrade(9, i, m), 4, ['process', 'nodes'], feature);
    assert.equal(picked.length, 4);
    for (const s of picked) {
      assert.ok(drawsFeature(s, feature), `${feature}: ${JSON.stringify(s)}`);
      assert.equal(s.mode ?? 'process', s.index % 2 === 0 ? 'process' : 'nodes');
      assert.deepEqual(s, drawUpgrade(9, s.index, s.mode ?? 'process'));
    }
  }
  assert.equal(pickUpgrades((i, m) => drawUpgrade(9, i, m), 3, ['nodes'], 'component').length, 0, 'no component moved in nodes mode');
});

// Consent for an alpha gate (issue 23): through v1.35 the Mixed Version Proxy gate is alpha, and the operator turns
// it on only where spec.proxy.allowAlphaGate says so. Without it preflight waits with AlphaGateNotAllowed, calls
// nothing, says what is missing, and goes on by itself once the spec consents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sim, peer, spec, OLD, NEW } from './fleet.ts';
import { alphaGateConsent } from '../../src/plan/preflight.ts';

const threeOld = (gate: 'on' | 'off' = 'off') => [peer('cp-1', OLD, gate), peer('cp-2', OLD, gate), peer('cp-3', OLD, gate)];

test('alphaGateConsent: needed only where a pass would turn an alpha gate on and the spec has not consented', () => {
  const base = { needsProxyPass: true, fromVersion: 'v1.35.4', allowAlphaGate: false, gateOff: ['cp-1', 'cp-2'] };
  const refused = alphaGateConsent(base);
  assert.equal(refused.ok, false);
  assert.ok(!refused.ok && refused.reason === 'AlphaGateNotAllowed');
  assert.match(!refused.ok ? refused.message : '', /off on cp-1, cp-2 and alpha on v1\.35\.4.*spec\.proxy\.allowAlphaGate: true.*proxy\.gate: Unmanaged/);
  assert.deepEqual(alphaGateConsent({ ...base, allowAlphaGate: true }), { ok: true });
  assert.deepEqual(alphaGateConsent({ ...base, needsProxyPass: false }), { ok: true }, 'gate already on, or Unmanaged, or a patch under Auto: nothing to turn on');
  assert.deepEqual(alphaGateConsent({ ...base, fromVersion: 'v1.36.3' }), { ok: true }, 'beta (on by default) from 1.36');
  assert.deepEqual(alphaGateConsent({ ...base, fromVersion: 'v1.36.0-rc.1' }), { ok: true });
  assert.equal(alphaGateConsent({ ...base, fromVersion: 'v1.35.4-eks-a737599' }).ok, false, 'a vendor build of 1.35 has it alpha too');
  const unknown = alphaGateConsent({ ...base, fromVersion: 'v1.38.0' });
  assert.ok(!unknown.ok && /unknown maturity on v1\.38\.0/.test(unknown.message), 'a minor newer than the facts: unknown is unsafe, consent asked');
});

for (const gate of ['Auto', 'Enabled'] as const) {
  test(`proxy.gate ${gate} on v1.35 with the gate off and no consent: waits in Preflight, nothing called; the spec's consent lets it go on`, () => {
    const sim = new Sim(threeOld('off'), spec({ proxy: { gate, allowAlphaGate: false } }));
    for (let i = 0; i < 3; i++) {
      sim.step(10_000);
      assert.deepEqual(sim.calls(), []);
    }
    assert.equal(sim.status?.phase, 'Preflight');
    const c = sim.condition('PreflightPassed');
    assert.deepEqual([c?.status, c?.reason], ['False', 'AlphaGateNotAllowed']);
    assert.match(c!.message, /allowAlphaGate/);
    assert.equal(sim.status?.plan, undefined, 'no plan frozen');
    sim.spec = spec({ proxy: { gate, allowAlphaGate: true } });
    sim.step(10_000);
    assert.equal(sim.condition('PreflightPassed')?.status, 'True');
    for (let i = 0; i < 5 && sim.calls().length === 0; i++) sim.step();
    assert.deepEqual(sim.calls(), ['EnableProxy:cp-1']);
  });
}

test('no consent needed where the gate is already on, or with proxy.gate Unmanaged', () => {
  for (const [peers, proxy] of [[threeOld('on'), { gate: 'Auto' as const }], [threeOld('off'), { gate: 'Unmanaged' as const }]] as const) {
    const sim = new Sim([...peers.map((p) => ({ ...p }))], spec({ proxy: { ...proxy, allowAlphaGate: false } }));
    sim.step();
    for (let i = 0; i < 4 && sim.calls().length === 0; i++) sim.step();
    assert.equal(sim.condition('PreflightPassed')?.status, 'True', JSON.stringify(sim.condition('PreflightPassed')));
    assert.deepEqual(sim.calls(), [`Upgrade:cp-1`], `${proxy.gate}: straight to the first replacement to ${NEW}`);
  }
});

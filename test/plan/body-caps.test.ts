// Issue 21: a server whose answer exceeds a cap is a named per-server breach (src/plan/body-caps.ts): the
// upgrade pauses before its first replacement when failureLimit is 1, the pause message names the server and
// the cap, and no driver call is made. The Prometheus address is checked before anything is sent to it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Sim, peer, spec, OLD } from './fleet.ts';
import { bodyCapBreaches } from '../../src/plan/body-caps.ts';
import { prometheusAddressProblem } from '../../src/plan/prometheus-address.ts';

describe('bodyCapBreaches', () => {
  it('one breach per server, sorted, naming the first cap and counting the rest', () => {
    const b = bodyCapBreaches([
      { server: 'cp-9', body: 'discovery', message: 'https://10.0.0.9:6443/apis: larger than 4194304 bytes' },
      { server: 'cp-2', body: 'metrics', message: 'metrics page: a line longer than 65536 bytes' },
      { server: 'cp-9', body: 'metrics', message: 'metrics page: larger than 33554432 bytes' },
    ]);
    assert.deepEqual(b.map((x) => x.server), ['cp-2', 'cp-9']);
    assert.equal(b[1]!.signal, 'bodyCap');
    assert.match(b[1]!.message!, /^cp-9: discovery: https:\/\/10\.0\.0\.9:6443\/apis: larger than 4194304 bytes \(and 1 more: metrics\)$/);
    assert.deepEqual(bodyCapBreaches(undefined), []);
  });
});

describe('a server over a cap in the planner', () => {
  it('pauses before any replacement, naming the server and the cap', () => {
    const sim = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')], spec({ analysis: { interval: '10s', failureLimit: 1, onBreach: 'Pause' } }));
    let calls = 0;
    sim.extra = { ...sim.extra, bodyCaps: [{ server: 'cp-1', body: 'discovery', message: 'https://10.0.0.1/apis: larger than 4194304 bytes' }] };
    const phases: string[] = [];
    for (let i = 0; i < 40 && sim.status?.phase !== 'Paused'; i++) {
      sim.step(1000);
      phases.push(sim.status?.phase ?? '');
      calls += sim.calls().length;
      sim.applyDriverCalls();
    }
    assert.equal(sim.status?.phase, 'Paused', phases.join(' '));
    assert.equal(sim.status?.pause?.reason, 'AnalysisBreach');
    assert.match(sim.status?.pause?.message ?? '', /bodyCap@cp-1 .*cp-1: discovery: https:\/\/10\.0\.0\.1\/apis: larger than 4194304 bytes/);
    assert.equal(calls, 0);
  });
});

describe('prometheusAddressProblem', () => {
  it('takes plain http(s) URLs of a host, with a path prefix', () => {
    for (const ok of ['http://prometheus.monitoring:9090', 'https://prom.example.com/prefix/', 'http://10.0.0.5:9090', 'http://[fd00::1]:9090']) assert.equal(prometheusAddressProblem(ok), undefined, ok);
  });
  it('refuses other schemes, credentials, queries, fragments, control characters and junk', () => {
    for (const bad of ['file:///etc/passwd', 'gopher://x', 'http://user:pw@prom:9090', 'http://user@prom', 'http://prom:9090/?x=1', 'http://prom/#f', 'http://prom\n:9090', 'http://prom /', 'prom:9090', '/api', '', 'http://', 'x'.repeat(3000)]) {
      assert.notEqual(prometheusAddressProblem(bad), undefined, JSON.stringify(bad));
    }
  });
  it('never throws, and anything it accepts parses as http(s) without a user', () => {
    fc.assert(fc.property(fc.oneof(fc.webUrl({ withQueryParameters: true, withFragments: true }), fc.string(), fc.constantFrom('http://', 'https://').chain((p) => fc.string().map((s) => p + s))), (s) => {
      if (prometheusAddressProblem(s) !== undefined) return;
      const u = new URL(s);
      assert.ok(u.protocol === 'http:' || u.protocol === 'https:');
      assert.equal(u.username + u.password + u.search + u.hash, '');
    }), { numRuns: 500 });
  });
});

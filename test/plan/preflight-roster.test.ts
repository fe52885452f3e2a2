// Preflight counts every server it has seen: a kube-apiserver deletes its identity Lease when it starts (v1.35:
// "Deleting old lease on startup"), so one look during a restart finds the fleet a server short. Fault campaign seed
// 4208 #6: cp-2 killed in preflight; its restart deleted the old Lease, the next look saw cp-1 and cp-3 healthy, and
// preflight froze a plan of two and called cp-1 before cp-2's new Lease appeared (paused MembershipChanged 0.2 s later).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MISSING_SERVER_GRACE_MS, preflightRoster } from '../../src/plan/preflight-roster.ts';
import { OLD, Sim, peer, spec } from './fleet.ts';

const HOSTS = ['cp-1', 'cp-2', 'cp-3'] as const;

function fleet(): ReturnType<typeof peer>[] {
  return HOSTS.map((h) => peer(h, OLD));
}

/** A preflight whose first look waits (cp-1 not ready), then a look without `gone`'s Lease. */
function withoutLease(gone: (typeof HOSTS)[number], s = spec(), advanceMs = 1_000): Sim {
  const sim = new Sim(fleet(), s);
  sim.peers[0]!.ready = false;
  sim.step();
  sim.peers = fleet().filter((p) => p.hostname !== gone);
  sim.step(advanceMs);
  return sim;
}

test('a server whose Lease is gone during a restart keeps preflight waiting; back, preflight passes with every server', () => {
  const sim = new Sim(fleet());
  sim.peers[1]!.ready = false;
  sim.step();
  assert.equal(sim.status?.waiting?.reason, 'UnhealthyFleet');
  sim.peers = sim.peers.filter((p) => p.hostname !== 'cp-2');
  for (let i = 0; i < 5; i++) {
    const p = sim.step(5_000);
    assert.equal(sim.status?.phase, 'Preflight', 'no plan while a server seen before has no Lease');
    assert.equal(sim.status?.waiting?.reason, 'UnhealthyFleet');
    assert.match(sim.status?.waiting?.message ?? '', /cp-2 \(no identity Lease since /);
    assert.ok(!p.actions.some((a) => a.kind === 'callDriver'), 'no call');
  }
  const row = sim.status?.peers?.find((r) => r.hostname === 'cp-2');
  assert.equal(row?.ready, false);
  assert.ok(row?.missingSince, 'the time it went missing is in status');
  sim.peers = fleet();
  sim.step(5_000);
  assert.notEqual(sim.status?.phase, 'Preflight');
  assert.deepEqual(sim.status?.plan?.members, [...HOSTS]);
  assert.ok(sim.status?.peers?.every((r) => r.missingSince === undefined), JSON.stringify(sim.status?.peers));
});

test('the missing server is remembered across an operator restart: a new process with the same status waits too', () => {
  const sim = withoutLease('cp-2', spec(), 2_000);
  // A new leader: nothing but the stored status (a JSON round trip) carries over.
  sim.status = JSON.parse(JSON.stringify(sim.status)) as typeof sim.status;
  sim.step(2_000);
  assert.equal(sim.status?.phase, 'Preflight');
  assert.equal(sim.status?.waiting?.reason, 'UnhealthyFleet');
});

test('a server gone for longer than the grace is counted removed (a Warning Event), and preflight goes on without it', () => {
  const sim = withoutLease('cp-3');
  sim.step(MISSING_SERVER_GRACE_MS - 1_000);
  assert.equal(sim.status?.phase, 'Preflight', 'still within the grace');
  const p = sim.step(1_001);
  assert.ok(p.actions.some((a) => a.kind === 'event' && a.reason === 'ServerRemoved' && /cp-3/.test(a.note)), JSON.stringify(p.actions));
  sim.step(1_000);
  assert.notEqual(sim.status?.phase, 'Preflight');
  assert.deepEqual(sim.status?.plan?.members, ['cp-1', 'cp-2']);
});

test('a fatal preflight verdict is not hidden by a missing server', () => {
  const sim = new Sim(fleet(), spec({ targetVersion: 'v1.34.4' }));
  sim.peers[0]!.ready = false;
  sim.step();
  sim.peers = fleet().slice(0, 2);
  sim.step();
  assert.equal(sim.status?.phase, 'Failed');
  assert.equal(sim.status?.conditions?.find((c) => c.type === 'PreflightPassed')?.reason, 'Downgrade');
});

// Invariant over generated looks: preflight never freezes a plan that leaves out a server some earlier look saw
// less than the grace ago, and a server in the plan was seen by the look that froze it.
test('property: a plan never leaves out a server seen within the grace', () => {
  const look = fc.record({ present: fc.subarray([...HOSTS], { minLength: 0 }), notReady: fc.subarray([...HOSTS]), advanceMs: fc.integer({ min: 100, max: MISSING_SERVER_GRACE_MS / 2 }), restart: fc.boolean() });
  fc.assert(
    fc.property(fc.array(look, { minLength: 1, maxLength: 25 }), (looks) => {
      const sim = new Sim(fleet());
      const lastSeen = new Map<string, number>();
      for (const l of looks) {
        sim.peers = fleet().filter((p) => l.present.includes(p.hostname as (typeof HOSTS)[number])).map((p) => ({ ...p, ready: !l.notReady.includes(p.hostname as (typeof HOSTS)[number]) }));
        if (l.restart) sim.status = JSON.parse(JSON.stringify(sim.status ?? {})) as typeof sim.status;
        const before = sim.status?.phase;
        sim.step(l.advanceMs);
        for (const p of sim.peers) lastSeen.set(p.hostname, sim.now.getTime());
        if ((before === undefined || before === 'Preflight') && sim.status?.plan) {
          const members = sim.status.plan.members ?? [];
          for (const [h, t] of lastSeen) {
            if (sim.now.getTime() - t <= MISSING_SERVER_GRACE_MS) assert.ok(members.includes(h), `${h} seen ${sim.now.getTime() - t} ms before the plan ${JSON.stringify(members)}`);
          }
          for (const h of members) assert.ok(sim.peers.some((p) => p.hostname === h), `${h} in the plan was observed`);
          return;
        }
      }
    }),
    { numRuns: 300 },
  );
});

test('preflightRoster: hostile stored times never move the clock into the future nor past the grace', () => {
  const now = new Date('2026-12-07T12:00:00Z');
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.date({ noInvalidDate: true }).map((d) => d.toISOString())), (t) => {
      const r = preflightRoster([{ identity: 'apiserver-cp-9', hostname: 'cp-9', missingSince: t }], [], now);
      const row = [...r.missing, ...r.dropped][0]!;
      assert.ok(Date.parse(row.since) <= now.getTime());
      assert.equal(r.dropped.length === 1, now.getTime() - Date.parse(row.since) > MISSING_SERVER_GRACE_MS);
    }),
  );
});

test('a missing server and a server down are named in one UnhealthyFleet message', () => {
  const sim = withoutLease('cp-2');
  sim.peers[0]!.ready = false;
  sim.step();
  assert.equal(sim.status?.waiting?.reason, 'UnhealthyFleet');
  assert.match(sim.status?.waiting?.message ?? '', /^preflight: every server must be healthy before an upgrade starts; not healthy: cp-1 \(not ready\), cp-2 \(no identity Lease since [^)]+\)$/);
});

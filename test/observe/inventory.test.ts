// The inventory join over synthetic Leases, endpoints and probe results.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IdentityLeaseLike, Inventory, InventoryRow, ProbeResult } from '../../src/observe/inventory.ts';
import { addressesToProbe, buildInventory, hostOf, joinHostPort } from '../../src/observe/inventory.ts';

const NOW = Date.parse('2026-01-01T00:00:00Z');

function lease(name: string, hostname: string, opts: { address?: string; holder?: string; renewedAgoS?: number } = {}): IdentityLeaseLike {
  return {
    metadata: {
      name,
      labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': hostname },
      annotations: opts.address ? { 'kubernetes.io/peer-advertise-address': opts.address } : {},
    },
    spec: { holderIdentity: opts.holder ?? `${name}_uuid-1`, renewTime: new Date(NOW - (opts.renewedAgoS ?? 2) * 1000), leaseDurationSeconds: 3600 },
  };
}

const ENDPOINTS = [{ addresses: ['10.77.0.11', '10.77.0.12', '10.77.0.13'], port: 6443 }];
const probes = (entries: Record<string, ProbeResult>) => new Map(Object.entries(entries));

describe('addresses (synthetic)', () => {
  it('splits and joins host and port, IPv6 included', () => {
    assert.equal(hostOf('10.0.0.1:6443'), '10.0.0.1');
    assert.equal(hostOf('[fd00::1]:6443'), 'fd00::1');
    assert.equal(hostOf('fd00::1'), 'fd00::1');
    assert.equal(joinHostPort('fd00::1', 6443), '[fd00::1]:6443');
    assert.equal(joinHostPort('10.0.0.1', 6443), '10.0.0.1:6443');
  });
});

describe('buildInventory (synthetic)', () => {
  it('takes addresses from lease annotations and joins probe results', () => {
    const inv = buildInventory({
      leases: [lease('apiserver-a', 'cp1', { address: '10.77.0.11:6443' }), lease('apiserver-b', 'cp2', { address: '10.77.0.12:6443' })],
      endpoints: [{ addresses: ['10.77.0.11', '10.77.0.12'], port: 6443 }],
      probes: probes({
        '10.77.0.11:6443': { version: 'v1.35.4', ready: true, proxyGate: 'on' },
        '10.77.0.12:6443': { version: 'v1.36.3', ready: true, proxyGate: 'on' },
      }),
      now: NOW,
    });
    assert.deepEqual(inv.problems, []);
    assert.deepEqual(inv.servers[0], {
      identity: 'apiserver-a',
      hostname: 'cp1',
      address: '10.77.0.11:6443',
      addressSource: 'leaseAnnotation',
      version: 'v1.35.4',
      ready: true,
      proxyGate: 'on',
      holderIdentity: 'apiserver-a_uuid-1',
      restarts: 0,
      lastRenew: new Date(NOW - 2000).toISOString(),
      stale: false,
      problems: [],
    });
    assert.equal(inv.servers[1]?.version, 'v1.36.3');
  });

  it('carries the probe\'s emulated version, and leaves the field out when the probe has none', () => {
    const inv = buildInventory({
      leases: [lease('apiserver-a', 'cp1', { address: '10.77.0.11:6443' }), lease('apiserver-b', 'cp2', { address: '10.77.0.12:6443' })],
      endpoints: [{ addresses: ['10.77.0.11', '10.77.0.12', '10.77.0.13'], port: 6443 }],
      probes: probes({
        '10.77.0.11:6443': { version: 'v1.36.3', emulation: '1.35', ready: true, proxyGate: 'on' },
        '10.77.0.12:6443': { version: 'v1.30.0', ready: true, proxyGate: 'on' },
        '10.77.0.13:6443': { version: 'v1.36.3', emulation: '1.36', ready: true, proxyGate: 'on' },
      }),
      now: NOW,
    });
    assert.deepEqual(inv.servers.map((r) => [r.identity || r.address, r.version, r.emulation]), [['apiserver-a', 'v1.36.3', '1.35'], ['apiserver-b', 'v1.30.0', undefined], ['10.77.0.13:6443', 'v1.36.3', '1.36']]);
    assert.ok(!('emulation' in inv.servers[1]!));
  });

  it('falls back to the one unclaimed endpoint for the one lease without annotation (gate off)', () => {
    const input = {
      leases: [lease('apiserver-a', 'cp1', { address: '10.77.0.11:6443' }), lease('apiserver-b', 'cp2', { address: '10.77.0.12:6443' }), lease('apiserver-c', 'cp3')],
      endpoints: ENDPOINTS,
    };
    assert.deepEqual(addressesToProbe(input), ['10.77.0.11:6443', '10.77.0.12:6443', '10.77.0.13:6443']);
    const inv = buildInventory({ ...input, probes: probes({ '10.77.0.13:6443': { version: 'v1.35.4', ready: true, proxyGate: 'off' } }), now: NOW });
    const c = inv.servers.find((r) => r.identity === 'apiserver-c');
    assert.equal(c?.address, '10.77.0.13:6443');
    assert.equal(c?.addressSource, 'endpointSlice');
    assert.equal(c?.proxyGate, 'off');
    assert.deepEqual(c?.problems, []);
  });

  it('refuses to guess when two leases lack an address, unless the fetcher gives a hint', () => {
    const leases = [lease('apiserver-a', 'cp1', { address: '10.77.0.11:6443' }), lease('apiserver-b', 'cp2'), lease('apiserver-c', 'cp3')];
    const guessless = buildInventory({ leases, endpoints: ENDPOINTS, probes: new Map(), now: NOW });
    assert.deepEqual(guessless.servers.filter((r) => r.identity).map((r) => r.addressSource), ['leaseAnnotation', 'none', 'none']);
    assert.match(guessless.servers[1]?.problems.join('\n') ?? '', /fallback was ambiguous/);
    // The two unclaimed endpoints appear as rows of their own.
    assert.deepEqual(guessless.servers.filter((r) => !r.identity).map((r) => r.address), ['10.77.0.12:6443', '10.77.0.13:6443']);

    const hinted = buildInventory({ leases, endpoints: ENDPOINTS, probes: new Map(), hostnameAddresses: new Map([['cp2', '10.77.0.12:6443']]), now: NOW });
    assert.deepEqual(hinted.servers.map((r) => [r.identity, r.address, r.addressSource]), [
      ['apiserver-a', '10.77.0.11:6443', 'leaseAnnotation'],
      ['apiserver-b', '10.77.0.12:6443', 'hostnameHint'],
      ['apiserver-c', '10.77.0.13:6443', 'endpointSlice'],
    ]);
  });

  it('matches a hostname that is itself an endpoint IP', () => {
    const inv = buildInventory({ leases: [lease('apiserver-x', '10.77.0.12'), lease('apiserver-y', 'cp9')], endpoints: ENDPOINTS, probes: new Map(), now: NOW });
    assert.equal(inv.servers.find((r) => r.identity === 'apiserver-x')?.address, '10.77.0.12:6443');
    assert.equal(inv.servers.find((r) => r.identity === 'apiserver-y')?.addressSource, 'none');
  });

  it('counts restarts from holderIdentity changes', () => {
    const endpoints = [{ addresses: ['10.77.0.11'], port: 6443 }];
    const first = buildInventory({ leases: [lease('apiserver-a', 'cp1', { address: '10.77.0.11:6443' })], endpoints, probes: new Map(), now: NOW });
    const second = buildInventory({ leases: [lease('apiserver-a', 'cp1', { address: '10.77.0.11:6443', holder: 'apiserver-a_uuid-2' })], endpoints, probes: new Map(), previous: first, now: NOW + 10_000 });
    assert.equal(second.servers[0]?.restarts, 1);
    assert.equal(second.servers[0]?.stale, false);
  });

  it('flags a gate that is on without the peer annotation, probe errors and unready servers', () => {
    const inv = buildInventory({
      leases: [lease('apiserver-a', 'cp1')],
      endpoints: [{ addresses: ['10.77.0.11'], port: 6443 }],
      probes: probes({ '10.77.0.11:6443': { proxyGate: 'on', ready: false, error: 'metrics: timeout' } }),
      now: NOW,
    });
    const problems = inv.servers[0]?.problems.join('\n') ?? '';
    assert.match(problems, /proxy gate on but no kubernetes.io\/peer-advertise-address/);
    assert.match(problems, /metrics: timeout/);
    assert.match(problems, /not ready/);
  });

  it('reports more endpoints than live leases at fleet level, and ignores non-identity leases', () => {
    const other: IdentityLeaseLike = { metadata: { name: 'kube-scheduler', labels: {} }, spec: {} };
    const inv = buildInventory({ leases: [lease('apiserver-a', 'cp1', { address: '10.77.0.11:6443' }), other], endpoints: ENDPOINTS, probes: new Map(), now: NOW });
    assert.equal(inv.servers.filter((r) => r.identity).length, 1);
    assert.match(inv.problems.join('\n'), /3 endpoint addresses but 1 live identity leases/);
  });
});

/** One server's identity lease as it renews: renewTime on the server's clock, a new resourceVersion each time. */
function renewing(serverClockStart: number) {
  let renewals = 0;
  return {
    renew(): void {
      renewals++;
    },
    lease(): IdentityLeaseLike {
      return {
        metadata: {
          name: 'apiserver-a',
          resourceVersion: String(1000 + renewals),
          labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': 'cp1' },
          annotations: { 'kubernetes.io/peer-advertise-address': '10.77.0.11:6443' },
        },
        spec: { holderIdentity: 'apiserver-a_uuid-1', renewTime: new Date(serverClockStart + renewals * 10_000).toISOString(), leaseDurationSeconds: 3600 },
      };
    },
  };
}

/** Observes the lease every `stepMs` on the operator's clock, carrying the inventory forward; returns each row. */
function observeLease(source: ReturnType<typeof renewing>, operatorStart: number, steps: number, stepMs: number, renewEachStep: boolean): InventoryRow[] {
  const endpoints = [{ addresses: ['10.77.0.11'], port: 6443 }];
  const rows: InventoryRow[] = [];
  let previous: Inventory | undefined;
  for (let i = 0; i < steps; i++) {
    if (i > 0 && renewEachStep) source.renew();
    const probes = new Map<string, ProbeResult>([['10.77.0.11:6443', { version: 'v1.35.4', ready: true, proxyGate: 'on' }]]);
    const inv: Inventory = buildInventory({ leases: [source.lease()], endpoints, probes, now: operatorStart + i * stepMs, ...(previous ? { previous } : {}) });
    rows.push(inv.servers[0]!);
    previous = inv;
  }
  return rows;
}

describe('lease staleness on the operator\'s clock (issue 8, defect 15)', () => {
  const HOUR = 3600_000;

  it('defect 15: operator clock 1 h ahead of renewTime: not stale while renewals keep coming', () => {
    const rows = observeLease(renewing(NOW - HOUR), NOW, 12, 10_000, true);
    assert.deepEqual(rows.map((r) => r.stale), rows.map(() => false));
    assert.deepEqual(rows.flatMap((r) => r.problems), []);
  });

  it('defect 15: operator clock 1 h behind renewTime: not stale while renewals keep coming', () => {
    const rows = observeLease(renewing(NOW + HOUR), NOW, 12, 10_000, true);
    assert.deepEqual(rows.map((r) => r.stale), rows.map(() => false));
  });

  for (const [name, skew] of [['ahead', -HOUR], ['behind', HOUR], ['in step', 0]] as const) {
    it(`defect 15: operator clock ${name}: stale once the lease stays unchanged for the window (3 x 10 s) on the operator's clock`, () => {
      const rows = observeLease(renewing(NOW + skew), NOW, 6, 10_000, false);
      // Unchanged for 0, 10, 20, 30 s: not stale (the window is "more than 30 s"); 40, 50 s: stale.
      assert.deepEqual(rows.map((r) => r.stale), [false, false, false, false, true, true]);
      assert.match(rows[4]!.problems.join('\n'), /identity lease unchanged for 40s by the operator's clock/);
    });
  }

  it('a lease seen for the first time is not stale, however old its renewTime looks; a renewal after a pause restarts the clock', () => {
    const source = renewing(NOW - 5 * HOUR);
    const first = buildInventory({ leases: [source.lease()], endpoints: ENDPOINTS, probes: new Map(), now: NOW });
    assert.equal(first.servers[0]?.stale, false);
    const later = buildInventory({ leases: [source.lease()], endpoints: ENDPOINTS, probes: new Map(), previous: first, now: NOW + 31_000 });
    assert.equal(later.servers[0]?.stale, true);
    source.renew();
    const back = buildInventory({ leases: [source.lease()], endpoints: ENDPOINTS, probes: new Map(), previous: later, now: NOW + 41_000 });
    assert.equal(back.servers[0]?.stale, false);
  });

  it('any of holderIdentity, renewTime or resourceVersion counts as a change; a relaxed renew period widens the window', () => {
    const base = lease('apiserver-a', 'cp1', { address: '10.77.0.11:6443' });
    const variants: IdentityLeaseLike[] = [
      { ...base, spec: { ...base.spec, holderIdentity: 'apiserver-a_uuid-9' } },
      { ...base, spec: { ...base.spec, renewTime: new Date(NOW + 1).toISOString() } },
      { ...base, metadata: { ...base.metadata, resourceVersion: '77' } },
    ];
    const first = buildInventory({ leases: [base], endpoints: ENDPOINTS, probes: new Map(), now: NOW });
    for (const v of variants) {
      assert.equal(buildInventory({ leases: [v], endpoints: ENDPOINTS, probes: new Map(), previous: first, now: NOW + 60_000 }).servers[0]?.stale, false);
    }
    assert.equal(buildInventory({ leases: [base], endpoints: ENDPOINTS, probes: new Map(), previous: first, now: NOW + 60_000 }).servers[0]?.stale, true);
    assert.equal(buildInventory({ leases: [base], endpoints: ENDPOINTS, probes: new Map(), previous: first, now: NOW + 60_000, renewPeriodSeconds: 30 }).servers[0]?.stale, false);
  });

  it('a lease without renewTime is stale (fail closed), and a deleted lease is forgotten', () => {
    const bare: IdentityLeaseLike = { metadata: { name: 'apiserver-z', labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': 'cp9' } }, spec: {} };
    const inv = buildInventory({ leases: [bare, lease('apiserver-a', 'cp1')], endpoints: ENDPOINTS, probes: new Map(), now: NOW });
    assert.equal(inv.servers.find((r) => r.identity === 'apiserver-z')?.stale, true);
    const next = buildInventory({ leases: [bare], endpoints: ENDPOINTS, probes: new Map(), previous: inv, now: NOW + 1000 });
    assert.deepEqual(Object.keys(next.sightings), ['apiserver-z']);
  });
});

describe('the peer address annotation is hostile input (issue 21)', () => {
  it('an annotation that is not IP[:port] is ignored, said so in the row, and the other rules apply', () => {
    const bad = '10.77.0.11:6443\n    - --authorization-mode=AlwaysAllow';
    const inv = buildInventory({
      leases: [lease('apiserver-a', '10.77.0.11', { address: bad }), lease('apiserver-b', 'cp2', { address: 'cp2.example.com:6443' }), lease('apiserver-c', 'cp3', { address: '[fd00::13]:6443' })],
      endpoints: ENDPOINTS,
      probes: probes({}),
      now: NOW,
    });
    const [a, b, c] = inv.servers.filter((r) => r.identity);
    // a: its hostname is an IP the EndpointSlice lists, so that rule gives its address.
    assert.deepEqual([a!.address, a!.addressSource], ['10.77.0.11:6443', 'endpointSlice']);
    assert.ok(a!.problems.some((p) => p.startsWith('the lease\'s kubernetes.io/peer-advertise-address "10.77.0.11:6443\\n    - --authorization-mode=AlwaysAllow" is not an IP address with an optional port 1-65535: ignored')), a!.problems.join('; '));
    // b: a host name is no address either; nothing else places it.
    assert.equal(b!.address === 'cp2.example.com:6443', false);
    assert.ok(b!.problems.some((p) => p.includes('"cp2.example.com:6443" is not an IP address')), b!.problems.join('; '));
    // c: a valid IPv6 annotation is taken.
    assert.deepEqual([c!.address, c!.addressSource], ['[fd00::13]:6443', 'leaseAnnotation']);
    assert.ok(!addressesToProbe({ leases: [lease('apiserver-a', 'x', { address: bad })], endpoints: [] }).includes(bad), 'never probed');
  });
});

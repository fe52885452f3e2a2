// Smoke tests of the real HA control plane: the facts the operator builds on, checked on real servers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, OLD_VERSION, NEW_VERSION, PROXY_GATE, waitFor, sleep } from './cluster/index.ts';
import { ownResources, counterSum, DISCOVERY_V2 } from './support/discovery.ts';
import { identityLeases } from './support/identity-leases.ts';

const GATE_ON = { [PROXY_GATE]: true };
let cluster: Cluster;
/** A group/version/resource that only the new version serves, found by diffing discovery. */
let newOnly: string;

before(async () => {
  cluster = await Cluster.start({ servers: 3, version: OLD_VERSION, featureGates: GATE_ON, verbose: true });
});
after(async () => {
  await cluster?.teardown();
});

test('three old servers: three distinct identity Leases, and every /version tells the old version', async () => {
  // A lease is written once its server runs; its peer-advertise annotation with it (gate on).
  const leases = await waitFor('3 identity leases with their peer-advertise annotation', 30_000, async () => {
    const l = await identityLeases(cluster);
    return l.length === 3 && l.every((x) => x.metadata.annotations?.['kubernetes.io/peer-advertise-address']) ? l : undefined;
  });
  const hostnames = leases.map((l) => l.metadata.labels?.['kubernetes.io/hostname']).sort();
  assert.deepEqual(hostnames, ['cp-1', 'cp-2', 'cp-3']);
  assert.equal(new Set(leases.map((l) => l.metadata.name)).size, 3);
  // With the gate on, each lease advertises where peers reach the server.
  const advertised = leases.map((l) => l.metadata.annotations?.['kubernetes.io/peer-advertise-address']).sort();
  assert.deepEqual(advertised, cluster.servers.map((s) => `${s.address}:${s.port}`).sort());
  for (const s of cluster.servers) {
    const v = JSON.parse((await cluster.request(s.index, '/version')).body) as { gitVersion: string; minor: string };
    assert.equal(v.gitVersion, OLD_VERSION, `${s.name} /version`);
  }
  // The default/kubernetes EndpointSlice lists the real (non-loopback) addresses, as in a real cluster.
  // Each server adds itself as it starts (lease endpoint reconciler), so give the last one a moment.
  const want = cluster.servers.map((s) => s.address).sort();
  const got = await waitFor('the kubernetes EndpointSlice to list the 3 servers', 30_000, async () => {
    const eps = JSON.parse((await cluster.request('lb', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes')).body) as { endpoints?: { addresses: string[] }[] };
    const a = (eps.endpoints ?? []).flatMap((e) => e.addresses).sort();
    return a.length === want.length ? a : undefined;
  });
  assert.deepEqual(got, want);
});

test('replace one server by the new version and find what only it serves (own discovery, profile=nopeer)', async () => {
  const before = (await identityLeases(cluster)).find((l) => l.metadata.labels?.['kubernetes.io/hostname'] === 'cp-3');
  await cluster.replace(2, { version: NEW_VERSION, featureGates: GATE_ON });
  const v = JSON.parse((await cluster.request(2, '/version')).body) as { gitVersion: string };
  assert.equal(v.gitVersion, NEW_VERSION);
  // Same hostname -> same lease name; a new process -> a new holderIdentity.
  const afterLease = await waitFor('cp-3 lease renewed by the new process', 30_000, async () => {
    const l = (await identityLeases(cluster)).find((x) => x.metadata.labels?.['kubernetes.io/hostname'] === 'cp-3');
    return l && l.spec.holderIdentity !== before?.spec.holderIdentity ? l : undefined;
  });
  assert.equal(afterLease.metadata.name, before?.metadata.name);

  const oldSet = await ownResources(cluster, 0);
  const newSet = await ownResources(cluster, 2);
  const added = [...newSet].filter((r) => !oldSet.has(r)).filter((r) => !r.includes('/status') && r.split('/').length === 3);
  process.stderr.write(`resources served by ${NEW_VERSION} and not by ${OLD_VERSION}: ${added.join(', ') || '(none)'}\n`);
  assert.ok(added.length > 0, `${NEW_VERSION} serves no resource that ${OLD_VERSION} lacks with default settings`);
  newOnly = added.sort()[0]!;
});

function listPath(gvr: string): string {
  const [group, version, resource] = gvr.split('/');
  return `/apis/${group}/${version}/${resource}`;
}

test('gate on: an old server proxies a new-only resource to its new peer (200); gate off: the same GET is a 404', async () => {
  assert.ok(newOnly, 'needs the resource found by the previous test');
  const reroutedBefore = await counterSum(cluster, 0, 'apiserver_rerouted_request_total');
  // The old server learns its peers' discovery asynchronously; allow it to catch up after the replacement.
  const r = await waitFor(`server cp-1 to proxy ${newOnly}`, 60_000, async () => {
    const res = await cluster.request(0, listPath(newOnly));
    return res.status === 200 ? res : undefined;
  });
  assert.equal(r.status, 200);
  const reroutedAfter = await counterSum(cluster, 0, 'apiserver_rerouted_request_total');
  assert.ok(reroutedAfter > reroutedBefore, `apiserver_rerouted_request_total on cp-1 grew (${reroutedBefore} -> ${reroutedAfter})`);

  await cluster.replace(0, { featureGates: { [PROXY_GATE]: false } });
  assert.equal(cluster.server(0).proxyGate, false);
  const off = await cluster.request(0, listPath(newOnly));
  assert.equal(off.status, 404, `with the gate off cp-1 answers 404 for ${newOnly}`);
  await cluster.replace(0, { featureGates: GATE_ON });
});

test('discovery answers 304 to If-None-Match with its last ETag', async () => {
  for (const accept of [DISCOVERY_V2, `${DISCOVERY_V2};profile=nopeer`]) {
    const first = await cluster.request(1, '/apis', { headers: { Accept: accept } });
    assert.equal(first.status, 200);
    const etag = first.headers.etag;
    assert.equal(typeof etag, 'string', `${accept} carries an ETag`);
    const again = await cluster.request(1, '/apis', { headers: { Accept: accept, 'If-None-Match': etag as string } });
    assert.equal(again.status, 304, accept);
  }
});

test('an old server in graceful shutdown still serves its own resources but answers what it would proxy with 503', async () => {
  // Why Cluster.replace() drains a server at the balancer before stopping it: from SIGTERM on, a v1.35.4
  // server cannot look up its peers' addresses any more (its storage client is closing), and it keeps
  // accepting requests for --shutdown-delay-duration (3 s here), so whatever it would proxy fails.
  await waitFor(`cp-2 to proxy ${newOnly}`, 60_000, async () => ((await cluster.request(1, listPath(newOnly))).status === 200 ? true : undefined));
  const stopping = cluster.stop(1);
  await sleep(200);
  const own = await cluster.request(1, '/api/v1/namespaces/default', { newConnection: true });
  const t0 = Date.now();
  const proxied = await cluster.request(1, listPath(newOnly), { newConnection: true, timeoutMs: 10_000 });
  const took = Date.now() - t0;
  await stopping;
  // Back before asserting, so the tests after this one find three servers whatever happens here.
  await cluster.start(1);
  process.stderr.write(`during shutdown: own resource ${own.status}; proxied ${proxied.status} after ${took} ms: ${proxied.body.slice(0, 160)}\n`);
  assert.equal(own.status, 200, 'a stopping server still serves what it serves itself');
  assert.equal(proxied.status, 503);
  assert.match(proxied.body, /Error getting ip and port info of the remote server/);
});

test('SIGKILL the new server: proxied requests through an old server answer 503 while its identity Lease lingers', async () => {
  await waitFor(`cp-2 to proxy ${newOnly}`, 60_000, async () => ((await cluster.request(1, listPath(newOnly))).status === 200 ? true : undefined));
  await cluster.kill(2);
  await sleep(1000);
  const r = await cluster.request(1, listPath(newOnly));
  assert.equal(r.status, 503, `expected 503 from cp-2 for ${newOnly}, got ${r.status}: ${r.body.slice(0, 300)}`);
  const lingering = (await identityLeases(cluster, 1)).find((l) => l.metadata.labels?.['kubernetes.io/hostname'] === 'cp-3');
  assert.ok(lingering, 'the killed server\'s identity Lease is still there');
});

// What the Mixed Version Proxy does with identity, loops and audit, on real servers (issue 13): cp-1 runs
// v1.35.4 with the gate on, cp-2 v1.36.3; a request for a resource only v1.36 serves
// (admissionregistration.k8s.io/v1 mutatingadmissionpolicies) sent to cp-1 is forwarded to cp-2. Both servers
// write an audit log. Users are client certificates of the cluster CA. docs/observe.md ("Proven on real
// servers") states each fact with the test that keeps it true.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, OLD_VERSION, NEW_VERSION, PROXY_GATE, waitFor, type HttpResult } from './cluster/index.ts';
import { userCredentials, frontProxyCredentials, requestAs, type Credentials } from './support/users.ts';
import { auditEvents, type AuditEvent } from './support/audit.ts';
import { counterSum } from './support/discovery.ts';

const NEW_ONLY = '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies';
const MARKER = 'x-kubernetes-peer-proxied';
const ENTRY = 0; // cp-1, v1.35.4: forwards
const DEST = 1; // cp-2, v1.36.3: serves

// Metadata-level events for the new-only resource, nothing else; RequestReceived left out (one event per request).
const AUDIT_POLICY = JSON.stringify({
  apiVersion: 'audit.k8s.io/v1', kind: 'Policy', omitStages: ['RequestReceived'],
  rules: [{ level: 'Metadata', resources: [{ group: 'admissionregistration.k8s.io', resources: ['mutatingadmissionpolicies'] }] }, { level: 'None' }],
});

let cluster: Cluster;
let alice: Credentials; // may get, list and create mutatingadmissionpolicies, and get ConfigMaps
let bob: Credentials; // no RBAC at all
let carol: Credentials; // may create mutatingadmissionpolicies too, but not get ConfigMaps (alice may)

const startedAt = Date.now();
before(async () => {
  cluster = await Cluster.start({
    servers: 2, version: OLD_VERSION, featureGates: { [PROXY_GATE]: true },
    perServer: [{}, { version: NEW_VERSION, featureGates: {} }], audit: { policy: AUDIT_POLICY }, verbose: true,
  });
  const post = async (path: string, obj: unknown): Promise<void> => {
    const r = await cluster.request('lb', path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(obj) });
    assert.equal(r.status, 201, `POST ${path}: ${r.body}`);
  };
  await post('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    metadata: { name: 'auo-e2e-map-writer' },
    rules: [{ apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingadmissionpolicies'], verbs: ['get', 'list', 'create'] }],
  });
  for (const user of ['alice', 'carol']) {
    await post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: `auo-e2e-map-writer-${user}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'auo-e2e-map-writer' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
  }
  await post('/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'auo-e2e-configmap-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] });
  await post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    metadata: { name: 'auo-e2e-configmap-reader-alice' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'auo-e2e-configmap-reader' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
  });
  [alice, bob, carol] = await Promise.all([userCredentials(cluster, 'alice'), userCredentials(cluster, 'bob'), userCredentials(cluster, 'carol')]);
  // cp-1 forwards once it has cp-2's discovery, and RBAC is read from informers on both servers.
  await waitFor('cp-1 to forward alice\'s list to cp-2', 60_000, async () => ((await requestAs(cluster, alice, ENTRY, NEW_ONLY)).status === 200 ? true : undefined), 250);
});
after(async () => {
  await cluster?.teardown();
  process.stderr.write(`proxy-identity: ${((Date.now() - startedAt) / 1000).toFixed(1)} s in all\n`);
});

const rerouted = (i: number): Promise<number> => counterSum(cluster, i, 'apiserver_rerouted_request_total');

/** The request's audit ID: every server it passed through sets the `Audit-Id` response header, so it may come more than once. */
function auditIds(r: HttpResult): string[] {
  const h = r.headers['audit-id'];
  return (Array.isArray(h) ? h : String(h ?? '').split(',')).map((s) => s.trim()).filter(Boolean);
}

/** Server i's event for one audit ID, waited for briefly (the log backend writes as the request completes). */
async function eventOf(i: number, auditId: string): Promise<AuditEvent> {
  return waitFor(`${cluster.server(i).name}'s audit event ${auditId}`, 10_000, async () => (await auditEvents(cluster.server(i).auditLogPath!)).find((e) => e.auditID === auditId), 100);
}

async function noEventOf(i: number, auditId: string): Promise<void> {
  // Give a forwarded request's event time to land before saying there is none.
  await new Promise((r) => setTimeout(r, 1000));
  const found = (await auditEvents(cluster.server(i).auditLogPath!)).filter((e) => e.auditID === auditId);
  assert.deepEqual(found, [], `${cluster.server(i).name} has no event for ${auditId}`);
}

test('identity through the proxy: the forwarded request runs as the caller; the front-proxy certificate could assert anyone', async () => {
  // alice may list: cp-1 forwards (its rerouted counter grows) and cp-2 authorizes alice, not the proxy.
  let before = await rerouted(ENTRY);
  const ok = await requestAs(cluster, alice, ENTRY, NEW_ONLY);
  assert.equal(ok.status, 200, ok.body);
  assert.equal((await rerouted(ENTRY)) - before, 1, 'cp-1 forwarded alice\'s request');
  const destEvent = await eventOf(DEST, auditIds(ok)[0]!);
  assert.equal(destEvent.user.username, 'alice');
  assert.match(destEvent.annotations?.['authorization.k8s.io/reason'] ?? '', /to User "alice"/, 'cp-2 authorized alice by her own binding');

  // bob may not: 403 naming bob. The entry server authorizes before its peer-proxy handler (that handler wraps the
  // API handler, inside authorization), so nothing is forwarded: cp-1's counter stays, cp-2 never sees the request.
  before = await rerouted(ENTRY);
  const denied = await requestAs(cluster, bob, ENTRY, NEW_ONLY);
  assert.equal(denied.status, 403, denied.body);
  assert.match(denied.body, /User \\"bob\\" cannot list resource \\"mutatingadmissionpolicies\\"/);
  assert.equal((await rerouted(ENTRY)) - before, 0, 'a denied request is not forwarded');
  const bobId = auditIds(denied)[0]!;
  assert.equal((await eventOf(ENTRY, bobId)).annotations?.['authorization.k8s.io/decision'], 'forbid');
  await noEventOf(DEST, bobId);

  // What the proxy's own certificate could do, sent straight to cp-2: alone it is no user at all (401: it is not
  // signed by --client-ca-file's CA); with X-Remote-User it is whoever it names, system:masters included. So
  // the identity a forwarded request gets is exactly what the entry server asserts: the caller's.
  const bare = await requestAs(cluster, frontProxyCredentials(cluster), DEST, NEW_ONLY);
  assert.equal(bare.status, 401, bare.body);
  const asBob = await requestAs(cluster, frontProxyCredentials(cluster, 'bob'), DEST, NEW_ONLY);
  assert.equal(asBob.status, 403, asBob.body);
  assert.match(asBob.body, /User \\"bob\\"/);
  const asAdmin = await requestAs(cluster, frontProxyCredentials(cluster, 'auo-e2e-anyone', ['system:masters']), DEST, NEW_ONLY);
  assert.equal(asAdmin.status, 200, 'the front-proxy certificate can assert any user and group');

  // A decision only the destination makes is made for the caller too. Creating a MutatingAdmissionPolicy (a
  // v1.36-only kind: only cp-2's registry handles it) with a paramKind is an RBAC check of its own in that
  // registry: the creator must be allowed to get the param kind. alice may get ConfigMaps, carol may not; both
  // may create the policy, so cp-1 forwards both, and cp-2 refuses carol by name.
  const map = (name: string): string => JSON.stringify({
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingAdmissionPolicy', metadata: { name },
    spec: {
      paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
      matchConstraints: { resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] }] },
      mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"e2e": "yes"}}}' } }],
      reinvocationPolicy: 'Never', failurePolicy: 'Fail',
    },
  });
  const create = (who: Credentials, name: string): Promise<HttpResult> =>
    requestAs(cluster, who, ENTRY, NEW_ONLY, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: map(name) });
  before = await rerouted(ENTRY);
  const carolCreate = await create(carol, 'auo-e2e-carol');
  assert.equal(carolCreate.status, 422, carolCreate.body);
  const carolMessage = (JSON.parse(carolCreate.body) as { message: string }).message;
  assert.match(carolMessage, /spec\.paramKind: Forbidden: user &\{carol .* must have "get" permission on all objects of the referenced paramKind \(kind=ConfigMap/);
  const aliceCreate = await create(alice, 'auo-e2e-alice');
  assert.equal(aliceCreate.status, 201, aliceCreate.body);
  assert.equal((await rerouted(ENTRY)) - before, 2, 'both creates were forwarded');
  assert.equal((await eventOf(DEST, auditIds(carolCreate)[0]!)).user.username, 'carol');
});

test('no loops: a request carrying x-kubernetes-peer-proxied: true is served where it lands, never forwarded', async () => {
  // cp-1 lacks the resource: with the marker it answers its own 404 and forwards nothing.
  let before = await rerouted(ENTRY);
  const marked = await cluster.request(ENTRY, NEW_ONLY, { headers: { [MARKER]: 'true' } });
  assert.equal(marked.status, 404, marked.body);
  assert.match(marked.body, /the server could not find the requested resource/);
  assert.equal((await rerouted(ENTRY)) - before, 0);
  const id = auditIds(marked);
  assert.equal(id.length, 1, 'one server answered');
  assert.equal((await eventOf(ENTRY, id[0]!)).responseStatus?.code, 404);
  await noEventOf(DEST, id[0]!);

  // Only the exact value "true" counts (the handler compares the header with "true"): anything else is forwarded.
  for (const value of ['false', 'True']) {
    before = await rerouted(ENTRY);
    const r = await cluster.request(ENTRY, NEW_ONLY, { headers: { [MARKER]: value } });
    assert.equal(r.status, 200, `${MARKER}: ${value}: ${r.body}`);
    assert.equal((await rerouted(ENTRY)) - before, 1, `${MARKER}: ${value} is forwarded`);
  }

  // Where the marked request's resource is served, it is served: cp-2 answers itself, and cp-1 its own resources.
  const onDest = await cluster.request(DEST, NEW_ONLY, { headers: { [MARKER]: 'true' } });
  assert.equal(onDest.status, 200, onDest.body);
  const own = await cluster.request(ENTRY, '/api/v1/namespaces', { headers: { [MARKER]: 'true' } });
  assert.equal(own.status, 200, own.body);
});

test('audit: the destination\'s event names the caller and carries the entry server\'s audit ID', async () => {
  const ua = 'auo-e2e-audit/1.0';
  const r = await requestAs(cluster, alice, ENTRY, NEW_ONLY, { headers: { 'User-Agent': ua } });
  assert.equal(r.status, 200, r.body);
  // Both servers answer with the same Audit-Id header: the entry server's ID travels with the forwarded request.
  const ids = auditIds(r);
  assert.equal(ids.length, 2, `Audit-Id from each server: ${JSON.stringify(r.headers['audit-id'])}`);
  assert.equal(new Set(ids).size, 1);
  const [entry, dest] = await Promise.all([eventOf(ENTRY, ids[0]!), eventOf(DEST, ids[0]!)]);
  process.stderr.write(`entry event: ${JSON.stringify(entry)}\ndestination event: ${JSON.stringify(dest)}\n`);
  for (const e of [entry, dest]) {
    assert.equal(e.user.username, 'alice');
    assert.deepEqual(e.user.groups, ['system:authenticated']);
    assert.equal(e.verb, 'list');
    assert.equal(e.responseStatus?.code, 200);
    assert.equal(e.userAgent, ua, 'the caller\'s User-Agent, not the proxy\'s');
    assert.equal(e.annotations?.['authorization.k8s.io/decision'], 'allow', 'authorized on both servers');
  }
  // The user's extra (the certificate's credential ID) travels too, through X-Remote-Extra-*.
  assert.deepEqual(dest.user.extra, entry.user.extra);
  assert.equal(dest.impersonatedUser, undefined);
  // sourceIPs: the entry server saw the client; the destination lists the client first (X-Forwarded-For),
  // then the address the forwarding server dialled from.
  const client = cluster.netns.hostAddress;
  assert.deepEqual(entry.sourceIPs, [client]);
  assert.equal(dest.sourceIPs?.[0], client);
  assert.equal(dest.sourceIPs?.length, 2);
  assert.match(dest.sourceIPs?.[1] ?? '', new RegExp(`^${cluster.netns.prefix.replace(/\./g, '\\.')}\\.\\d+$`));

  // A caller's own Audit-ID is kept by both servers: a client can join the two events by the ID it chose.
  const mine = `auo-e2e-${Date.now()}`;
  const r2 = await requestAs(cluster, alice, ENTRY, NEW_ONLY, { headers: { 'Audit-ID': mine } });
  assert.equal(r2.status, 200);
  assert.deepEqual(auditIds(r2), [mine, mine]);
  assert.equal((await eventOf(ENTRY, mine)).user.username, 'alice');
  assert.equal((await eventOf(DEST, mine)).user.username, 'alice');
});

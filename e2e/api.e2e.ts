// The ApiServerUpgrade API on real kube-apiservers (issue 3, real-server half): the CRD installs and is
// Established, every example passes server-side validation, every invalid spec of the table is rejected
// with its message, and kubectl shows the field docs and the printer columns.
//
// One mixed cluster covers both versions: cp-1 runs the old version, cp-2 and cp-3 the new one. Each
// server compiles and runs the CRD's CEL rules itself, so validation requests go to each server by its
// own address, never through the balancer.
import { test, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { Cluster, OLD_VERSION, NEW_VERSION, waitFor, type ServerInfo } from './cluster/index.ts';
import { installCrd, createUpgrade, CRD_PATH } from './support/operator.ts';
import { loadExamples } from '../test/api/examples.ts';
import { invalidSpecs, manifest, validSpec, type InvalidSpecCase } from '../test/api/invalid-specs.ts';
import { API_VERSION, KIND, CRD_NAME, GROUP, VERSION, PLURAL } from '../src/api/constants.ts';
import { withDefaults } from '../src/api/defaults.ts';
import type { ApiServerUpgradeSpec } from '../src/api/types.generated.ts';

const UPGRADES = `/apis/${GROUP}/${VERSION}/${PLURAL}`;
const JSON_HEADERS = { 'Content-Type': 'application/json' };
const t0 = Date.now();
let cluster: Cluster;
let crdInstalled = false;

before(async () => {
  cluster = await Cluster.start({
    servers: 3,
    perServer: [{ version: OLD_VERSION }, { version: NEW_VERSION }, { version: NEW_VERSION }],
    verbose: true,
  });
});
after(async () => {
  await cluster?.teardown();
  process.stderr.write(`api.e2e: ${((Date.now() - t0) / 1000).toFixed(1)} s wall time\n`);
});

// --- helpers ---------------------------------------------------------------------------------------

interface Cause { reason?: string; message?: string; field?: string }
interface Status { kind: string; status?: string; message?: string; reason?: string; code?: number; details?: { causes?: Cause[] } }
interface Condition { type: string; status: string; reason?: string; message?: string }
interface CrdObject {
  metadata: { name: string };
  spec: { versions: { name: string; schema: { openAPIV3Schema: SchemaNode } }[] };
  status?: { conditions?: Condition[] };
}
interface SchemaNode { description?: string; properties?: Record<string, SchemaNode> }
interface ObjectMeta { name: string; resourceVersion?: string }

function nameOf(obj: Record<string, unknown>): string {
  return (obj.metadata as ObjectMeta).name;
}

function describe(s: ServerInfo): string {
  return `${s.name} (${s.config.version})`;
}

/** Parses an API error body; a non-Status body fails the test with the raw text. */
function statusOf(body: string, where: string): Status {
  let st: Status;
  try {
    st = JSON.parse(body) as Status;
  } catch {
    assert.fail(`${where}: expected a Status, got: ${body.slice(0, 500)}`);
  }
  assert.equal(st.kind, 'Status', `${where}: ${body.slice(0, 500)}`);
  return st;
}

/** Asserts a 422 Invalid whose message and causes name `field` and carry `expected`. */
function assertRejected(r: { status: number; body: string }, c: InvalidSpecCase, where: string): void {
  assert.equal(r.status, 422, `${where}: expected 422, got ${r.status}: ${r.body.slice(0, 800)}`);
  const st = statusOf(r.body, where);
  assert.equal(st.reason, 'Invalid', where);
  const msg = st.message ?? '';
  assert.ok(msg.includes(c.field), `${where}: message does not name ${c.field}: ${msg}`);
  assert.ok(msg.includes(c.expectedMessage), `${where}: message lacks "${c.expectedMessage}": ${msg}`);
  // The structured causes must agree: one of them is at the field and carries the message.
  const causes = st.details?.causes ?? [];
  assert.ok(
    causes.some((x) => x.field === c.field && (x.message ?? '').includes(c.expectedMessage)),
    `${where}: no cause at ${c.field} with "${c.expectedMessage}": ${JSON.stringify(causes)}`,
  );
}

/** Runs kubectl with a private discovery cache; a missing kubectl fails with a clear message. */
function kubectl(args: string[], kubeconfig: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = process.env.KUBECTL ?? 'kubectl';
  const cacheDir = join(cluster.dir, 'kubectl-cache');
  return new Promise((resolve, reject) => {
    execFile(bin, [...args, '--kubeconfig', kubeconfig, '--cache-dir', cacheDir], { timeout: 30_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err && (err as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new Error(`kubectl not found on PATH (or KUBECTL=${process.env.KUBECTL ?? ''}): install kubectl >= 1.32 to run e2e/api.e2e.ts`));
        return;
      }
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Collapses whitespace, so a description matches kubectl's word-wrapped rendering of it. */
function words(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

function requireCrd(): void {
  assert.ok(crdInstalled, 'needs the CRD installed by the first test');
}

// --- tests -----------------------------------------------------------------------------------------

test('the cluster mixes versions: cp-1 runs the old version, cp-2 and cp-3 the new one', async () => {
  const seen: string[] = [];
  for (const s of cluster.servers) {
    const v = JSON.parse((await cluster.request(s.index, '/version')).body) as { gitVersion: string };
    seen.push(v.gitVersion);
  }
  assert.deepEqual(seen, [OLD_VERSION, NEW_VERSION, NEW_VERSION]);
});

test('installCrd: the CRD is Established and NamesAccepted, as every server reads it', async () => {
  await installCrd(cluster);
  for (const s of cluster.servers) {
    const crd = await waitFor(`${describe(s)} to report the CRD Established`, 30_000, async () => {
      const r = await cluster.request(s.index, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`);
      if (r.status !== 200) return undefined;
      const obj = JSON.parse(r.body) as CrdObject;
      return obj.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? obj : undefined;
    });
    const conds = crd.status?.conditions ?? [];
    const established = conds.find((c) => c.type === 'Established');
    const names = conds.find((c) => c.type === 'NamesAccepted');
    assert.equal(established?.status, 'True', `${describe(s)} Established: ${JSON.stringify(conds)}`);
    assert.equal(names?.status, 'True', `${describe(s)} NamesAccepted: ${JSON.stringify(conds)}`);
    // A structural schema with no violations: otherwise NonStructuralSchema would be True.
    const nonStructural = conds.find((c) => c.type === 'NonStructuralSchema');
    assert.notEqual(nonStructural?.status, 'True', `${describe(s)}: ${nonStructural?.message ?? ''}`);
  }
  crdInstalled = true;
});

test('every example in examples/ passes server-side dry run on every server (both versions), defaulted as withDefaults says', async (t: TestContext) => {
  requireCrd();
  const examples = loadExamples();
  assert.ok(examples.length >= 3, `expected the examples, found ${examples.length}`);
  // A minimal spec too: only the required fields, so every schema default is applied by the server.
  const minimal = { file: '(minimal spec)', object: { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'minimal' }, spec: { targetVersion: NEW_VERSION, driver: { webhook: { url: 'https://replacer.example.com/replace' } } } } };
  let checked = 0;
  for (const ex of [...examples, minimal]) {
    const obj = ex.object as unknown as Record<string, unknown>;
    const spec = ex.object.spec as ApiServerUpgradeSpec;
    await Promise.all(cluster.servers.map(async (s) => {
      const where = `${ex.file} ${nameOf(obj)} on ${describe(s)}`;
      const r = await cluster.request(s.index, `${UPGRADES}?dryRun=All`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(obj) });
      assert.equal(r.status, 201, `${where}: HTTP ${r.status}: ${r.body.slice(0, 800)}`);
      const back = JSON.parse(r.body) as { kind: string; spec: ApiServerUpgradeSpec };
      assert.equal(back.kind, KIND, where);
      // The server's defaulting and the operator's own (read from the same schema) agree.
      assert.deepEqual(back.spec, withDefaults(spec), `${where}: server defaults differ from withDefaults`);
      checked++;
    }));
  }
  // Dry run persists nothing.
  const list = JSON.parse((await cluster.request('lb', UPGRADES)).body) as { items: unknown[] };
  assert.equal(list.items.length, 0);
  t.diagnostic(`${examples.length} examples + a minimal spec x ${cluster.servers.length} servers = ${checked} dry-run creates accepted`);
});

test('every invalid spec is rejected with 422 naming its field and message, by every server (both versions)', async (t: TestContext) => {
  requireCrd();
  const checked = new Set<string>();
  let requests = 0;
  for (const c of invalidSpecs) {
    if (c.before === undefined) {
      await Promise.all(cluster.servers.map(async (s) => {
        const r = await cluster.request(s.index, `${UPGRADES}?dryRun=All`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(c.manifest) });
        assertRejected(r, c, `${c.name} (create) on ${describe(s)}`);
        requests++;
      }));
    } else {
      // A transition rule: the object must exist for real, then the update is dry-run on every server.
      const name = nameOf(c.before);
      assert.equal(nameOf(c.manifest), name, `${c.name}: before and manifest name the same object`);
      await createUpgrade(cluster, c.before);
      try {
        await Promise.all(cluster.servers.map(async (s) => {
          // A GET without resourceVersion is a quorum read: each server sees the object just created.
          const got = await cluster.request(s.index, `${UPGRADES}/${name}`);
          assert.equal(got.status, 200, `${c.name}: GET on ${describe(s)}: ${got.body}`);
          const current = JSON.parse(got.body) as { metadata: ObjectMeta };
          const rv = current.metadata.resourceVersion;
          assert.ok(rv, `${c.name}: resourceVersion on ${describe(s)}`);

          // Control: the unchanged object updates fine, so the rejection below is the transition's doing.
          const same = { ...c.before, metadata: { name, resourceVersion: rv } };
          const ok = await cluster.request(s.index, `${UPGRADES}/${name}?dryRun=All`, { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify(same) });
          assert.equal(ok.status, 200, `${c.name}: unchanged update on ${describe(s)}: ${ok.body.slice(0, 800)}`);

          // The update, as a PUT with the resourceVersion...
          const upd = { ...c.manifest, metadata: { name, resourceVersion: rv } };
          const put = await cluster.request(s.index, `${UPGRADES}/${name}?dryRun=All`, { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify(upd) });
          assertRejected(put, c, `${c.name} (PUT update) on ${describe(s)}`);
          // ...and as a server-side apply, as `kubectl apply --server-side` would send it (JSON is YAML).
          const apply = await cluster.request(s.index, `${UPGRADES}/${name}?dryRun=All&fieldManager=e2e&force=true`, {
            method: 'PATCH', headers: { 'Content-Type': 'application/apply-patch+yaml' }, body: JSON.stringify(c.manifest),
          });
          assertRejected(apply, c, `${c.name} (apply update) on ${describe(s)}`);
          requests += 2;
        }));
      } finally {
        const del = await cluster.request('lb', `${UPGRADES}/${name}`, { method: 'DELETE' });
        assert.ok(del.status === 200 || del.status === 202, `${c.name}: delete ${name}: HTTP ${del.status}: ${del.body}`);
      }
    }
    checked.add(c.name);
  }
  assert.equal(checked.size, invalidSpecs.length);
  assert.ok(checked.size >= 12, `only ${checked.size} distinct invalid cases were checked`);
  const byKind = (k: InvalidSpecCase['by']): number => invalidSpecs.filter((c) => c.by === k).length;
  t.diagnostic(`${checked.size} distinct invalid cases (${byKind('cel')} CEL, ${byKind('openapi')} OpenAPI, ${invalidSpecs.filter((c) => c.before).length} transition) x ${cluster.servers.length} servers: ${requests} rejections`);
  process.stderr.write(`api.e2e: ${checked.size} distinct invalid cases checked on ${cluster.servers.length} servers (${requests} rejected requests)\n`);
});

test('kubectl explain apiserverupgrade.spec shows the field descriptions', async (t: TestContext) => {
  requireCrd();
  const crd = parse(readFileSync(CRD_PATH, 'utf8')) as CrdObject;
  const specSchema = crd.spec.versions.find((v) => v.name === VERSION)?.schema.openAPIV3Schema.properties?.spec;
  assert.ok(specSchema?.properties, 'the CRD has a spec schema with properties');
  // kubectl 1.32 reads /openapi/v3 of an old-version server; the new version is within kubectl's skew
  // too, but the check does not depend on which server the balancer picks.
  const old = cluster.servers.find((s) => s.config.version === OLD_VERSION);
  assert.ok(old, 'an old-version server');
  // Fail at once, not after the wait below, when kubectl is missing.
  const client = await kubectl(['version', '--client'], old.kubeconfig);
  assert.equal(client.code, 0, `kubectl version --client: ${client.stderr}`);
  // The CRD's OpenAPI is published asynchronously after it is Established.
  const out = await waitFor('kubectl explain to know apiserverupgrade.spec', 45_000, async () => {
    const r = await kubectl(['explain', 'apiserverupgrade.spec'], old.kubeconfig);
    return r.code === 0 && r.stdout.includes('targetVersion') ? r.stdout : undefined;
  }, 1000);
  const text = words(out);
  assert.ok(text.includes(`KIND: ${KIND}`), out);
  assert.ok(text.includes(`VERSION: ${VERSION}`), out);
  if (specSchema.description) assert.ok(text.includes(words(specSchema.description)), `spec description missing:\n${out}`);
  const fields = Object.entries(specSchema.properties);
  for (const [field, schema] of fields) {
    assert.match(out, new RegExp(`^\\s+${field}\\s+<`, 'm'), `field ${field} is not listed:\n${out}`);
    if (schema.description) assert.ok(text.includes(words(schema.description)), `description of spec.${field} missing: "${schema.description}"\n${out}`);
  }
  // One level deeper, to show nested docs come through too.
  const strategy = specSchema.properties.strategy?.properties;
  if (strategy) {
    const r = await kubectl(['explain', 'asu.spec.strategy'], old.kubeconfig);
    assert.equal(r.code, 0, r.stderr);
    for (const [field, schema] of Object.entries(strategy)) {
      if (schema.description) assert.ok(words(r.stdout).includes(words(schema.description)), `description of spec.strategy.${field} missing:\n${r.stdout}`);
    }
  }
  t.diagnostic(`kubectl explain on ${describe(old)}: ${fields.length} spec fields with their descriptions`);
});

test('kubectl get asu shows the printer columns, with a status written through the status subresource', async (t: TestContext) => {
  requireCrd();
  const name = 'printer-columns';
  await createUpgrade(cluster, manifestWithPause(name));
  const status = {
    status: {
      phase: 'Paused',
      fromVersion: OLD_VERSION,
      targetVersion: NEW_VERSION,
      batch: { current: 1, total: 3, progress: '1/3' },
      stage: 'Binaries',
      pause: { reason: 'AnalysisBreach', message: 'proxyErrorRatio 0.2 > 0.01 on cp-2', since: new Date().toISOString().replace(/\.\d+Z$/, 'Z') },
    },
  };
  const r = await cluster.request('lb', `${UPGRADES}/${name}/status`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify(status) });
  assert.equal(r.status, 200, `status patch: HTTP ${r.status}: ${r.body.slice(0, 800)}`);
  const back = JSON.parse(r.body) as { status?: { phase?: string; batch?: { progress?: string } } };
  assert.equal(back.status?.phase, 'Paused');
  assert.equal(back.status?.batch?.progress, '1/3');

  // The Table is rendered by the server that answers, so ask each one: both versions print the columns.
  const expected: Record<string, string> = { NAME: name, PHASE: 'Paused', FROM: OLD_VERSION, TO: NEW_VERSION, BATCH: '1/3', STAGE: 'Binaries', PAUSED: 'true', REASON: 'AnalysisBreach' };
  const targets: { label: string; kubeconfig: string }[] = [
    { label: 'balancer', kubeconfig: cluster.kubeconfig },
    ...cluster.servers.map((s) => ({ label: describe(s), kubeconfig: s.kubeconfig })),
  ];
  for (const target of targets) {
    for (const wide of [false, true]) {
      const res = await kubectl(['get', 'asu', name, ...(wide ? ['-o', 'wide'] : [])], target.kubeconfig);
      const where = `kubectl get asu${wide ? ' -o wide' : ''} via ${target.label}`;
      assert.equal(res.code, 0, `${where}: ${res.stderr}`);
      const lines = res.stdout.trimEnd().split('\n');
      assert.equal(lines.length, 2, `${where}:\n${res.stdout}`);
      const headers = lines[0]!.trim().split(/\s{2,}/);
      const values = lines[1]!.trim().split(/\s{2,}/);
      assert.deepEqual(headers, ['NAME', 'PHASE', 'FROM', 'TO', 'BATCH', 'STAGE', 'PAUSED', 'REASON', 'AGE'], `${where}:\n${res.stdout}`);
      assert.equal(values.length, headers.length, `${where}:\n${res.stdout}`);
      const row = Object.fromEntries(headers.map((h, i) => [h, values[i]]));
      for (const [h, v] of Object.entries(expected)) assert.equal(row[h], v, `${where}: column ${h}\n${res.stdout}`);
      assert.match(row.AGE ?? '', /^\d+(s|m\d*s?)$/, `${where}: AGE\n${res.stdout}`);
    }
  }
  // The category from the CRD works too: `kubectl get upgrade` lists the object.
  const cat = await kubectl(['get', 'upgrade', '-o', 'name'], cluster.servers[0]!.kubeconfig);
  assert.equal(cat.code, 0, cat.stderr);
  assert.ok(cat.stdout.includes(`apiserverupgrade.${GROUP}/${name}`), cat.stdout);
  t.diagnostic(`kubectl get asu printed PHASE FROM TO BATCH STAGE PAUSED REASON AGE through ${targets.length} endpoints`);
});

/** A valid upgrade, paused by the spec so the PAUSED column has a value. */
function manifestWithPause(name: string): Record<string, unknown> {
  const m = manifest(name, { ...validSpec(), paused: true });
  return { ...m, apiVersion: API_VERSION, kind: KIND, metadata: { name } };
}

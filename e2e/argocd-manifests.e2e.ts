// Every Argo CD manifest the repository ships — argocd/*.yaml and the Argo CD objects of the docs' YAML blocks — is
// accepted by a real kube-apiserver serving Argo CD's own CRDs (v3.5.1, test/fixtures/argocd-crds/): a server-side
// dry run (`kubectl apply --dry-run=server --validate=strict`: the CRD's schema, and no field it does not know).
// Manifests broken on purpose are refused, so the check can fail. The operator Application's Helm values render
// the chart with `helm template`, which validates them against values.schema.json (so do those of the docs' objects);
// a wrong value is refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { Cluster, OLD_VERSION, waitFor } from './cluster/index.ts';
import { run, runOk, tool } from './support/tools.ts';
import { ARGOCD_MANIFESTS, docArgoObjects, generatedApplications, type ApplicationSet } from '../test/argocd/manifests.ts';

const root = join(import.meta.dirname, '..');
const CRDS = ['application-crd.yaml', 'applicationset-crd.yaml', 'appproject-crd.yaml'].map((f) => join(root, 'test', 'fixtures', 'argocd-crds', f));
const CHART = join(root, 'charts', 'apiserver-upgrade-operator');
const t0 = Date.now();
interface HelmSource { helm?: { valuesObject?: Record<string, unknown> } }
let cluster: Cluster;
let kubectl: string;

before(async () => {
  kubectl = tool('kubectl');
  cluster = await Cluster.start({ servers: 1, version: OLD_VERSION, verbose: true });
  // The ApplicationSet CRD (1.4 MB) is larger than client-side apply's last-applied annotation may be.
  for (const f of CRDS) await k(['apply', '--server-side', '-f', f]);
  await waitFor('the API to serve the Argo CD kinds', 60_000, async () => {
    for (const plural of ['applications', 'applicationsets', 'appprojects']) {
      if ((await cluster.request(0, `/apis/argoproj.io/v1alpha1/namespaces/argocd/${plural}`)).status !== 200) return undefined;
    }
    return true;
  });
  await k(['create', 'namespace', 'argocd']);
  process.stderr.write(`[argocd-manifests] cluster and Argo CD CRDs ready in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
});
after(async () => {
  await cluster?.teardown();
  process.stderr.write(`[argocd-manifests] ${((Date.now() - t0) / 1000).toFixed(1)} s in all\n`);
});

function k(args: string[], input?: string): Promise<string> {
  return runOk(kubectl, ['--kubeconfig', cluster.kubeconfig, ...args], input === undefined ? {} : { input });
}
/** A server-side dry run of `text`, strict: the exit code and what kubectl printed. */
async function dryRun(text: string): Promise<{ code: number; out: string }> {
  const r = await run(kubectl, ['--kubeconfig', cluster.kubeconfig, 'apply', '--dry-run=server', '--validate=strict', '-f', '-'], { input: text });
  return { code: r.code, out: `${r.stdout}${r.stderr}`.trim() };
}

test('every Argo CD manifest of argocd/ passes a strict server-side dry run against Argo CD\'s CRDs', async () => {
  for (const file of ARGOCD_MANIFESTS) {
    const r = await dryRun(readFileSync(join(root, file), 'utf8'));
    assert.equal(r.code, 0, `${file}: ${r.out}`);
    assert.match(r.out, /created \(server dry run\)/, file);
    assert.doesNotMatch(r.out, /Warning/i, `${file}: ${r.out}`);
  }
});

test('the Applications the waves ApplicationSet generates (its template with each cluster of the list) pass the same dry run', async () => {
  const set = parse(readFileSync(join(root, 'argocd', 'upgrade-waves-applicationset.yaml'), 'utf8')) as ApplicationSet;
  const apps = generatedApplications(set);
  assert.ok(apps.length >= 2);
  for (const app of apps) {
    const r = await dryRun(stringify(app));
    assert.equal(r.code, 0, `${app.metadata?.name}: ${r.out}`);
    assert.match(r.out, /created \(server dry run\)/);
  }
});

test('every Argo CD object in the docs\' YAML blocks passes the same dry run', async () => {
  const objects = docArgoObjects();
  process.stderr.write(`[argocd-manifests] ${objects.length} Argo CD object(s) in the docs: ${objects.map((o) => `${o.object.kind} ${o.where}`).join(', ')}\n`);
  assert.ok(objects.some((o) => o.where.startsWith('docs/argocd.md:') && o.object.kind === 'ApplicationSet'), 'docs/argocd.md shows the fleet ApplicationSet');
  for (const { where, object } of objects) {
    const r = await dryRun(stringify(object));
    assert.equal(r.code, 0, `${where}: ${r.out}`);
    assert.doesNotMatch(r.out, /Warning/i, `${where}: ${r.out}`);
  }
});

test('manifests broken on purpose are refused: a wrong type, an unknown field, a missing required field', async () => {
  const set = parse(readFileSync(join(root, 'argocd', 'upgrade-waves-applicationset.yaml'), 'utf8')) as { spec: { strategy: { rollingSync: { steps: Record<string, unknown>[] } } } };
  set.spec.strategy.rollingSync.steps[0]!.maxUpdate = true;
  const wrongType = await dryRun(stringify(set));
  assert.notEqual(wrongType.code, 0, wrongType.out);
  assert.match(wrongType.out, /maxUpdate/);

  const app = parse(readFileSync(join(root, 'argocd', 'operator-application.yaml'), 'utf8')) as { spec: { source: Record<string, unknown>; destination?: unknown } };
  app.spec.source.chartName = app.spec.source.chart;
  const unknown = await dryRun(stringify(app));
  assert.notEqual(unknown.code, 0, unknown.out);
  assert.match(unknown.out, /unknown field "spec\.source\.chartName"/);

  delete app.spec.source.chartName;
  delete app.spec.destination;
  const missing = await dryRun(stringify(app));
  assert.notEqual(missing.code, 0, missing.out);
  assert.match(missing.out, /spec\.destination: Required value/);
});

test('the operator Application\'s Helm values render the chart (helm validates them against values.schema.json); a wrong one is refused', async () => {
  const helm = tool('helm');
  const app = parse(readFileSync(join(root, 'argocd', 'operator-application.yaml'), 'utf8')) as { spec: { source: { helm: { releaseName: string; valuesObject: Record<string, Record<string, unknown>> } }; destination: { namespace: string } } };
  const dir = mkdtempSync(join(tmpdir(), 'auo-argocd-values-'));
  try {
    const values = join(dir, 'values.yaml');
    writeFileSync(values, stringify(app.spec.source.helm.valuesObject));
    const out = await runOk(helm, ['template', app.spec.source.helm.releaseName, CHART, '--namespace', app.spec.destination.namespace, '--kube-version', OLD_VERSION, '-f', values]);
    const kinds = out.split('\n').filter((l) => l.startsWith('kind: ')).map((l) => l.slice('kind: '.length));
    assert.ok(kinds.includes('ServiceMonitor') && kinds.includes('PrometheusRule'), `rendered kinds: ${kinds.join(', ')}`);
    assert.match(out, /^ {4}release: kube-prometheus-stack$/m);
    // A wrong type, and a key the schema does not have (a typo): helm refuses both.
    for (const wrong of [{ serviceMonitor: { ...app.spec.source.helm.valuesObject.serviceMonitor, enabled: 'maybe' } }, { serviceMonitors: { enabled: true } }]) {
      writeFileSync(values, stringify({ ...app.spec.source.helm.valuesObject, ...wrong }));
      const bad = await run(helm, ['template', 'x', CHART, '--kube-version', OLD_VERSION, '-f', values]);
      assert.notEqual(bad.code, 0, JSON.stringify(wrong));
      assert.match(bad.stderr, /values don't meet the specifications of the schema/);
    }
    // The docs' Argo CD objects that install the chart: their values render it too.
    let rendered = 0;
    for (const { where, object } of docArgoObjects()) {
      const spec = object.spec as { source?: HelmSource; template?: { spec?: { source?: HelmSource } } } | undefined;
      const v = (spec?.source ?? spec?.template?.spec?.source)?.helm?.valuesObject;
      if (v === undefined) continue;
      writeFileSync(values, stringify(v));
      const r = await run(helm, ['template', 'x', CHART, '--kube-version', OLD_VERSION, '-f', values]);
      assert.equal(r.code, 0, `${where}: ${r.stderr}`);
      rendered++;
    }
    assert.ok(rendered >= 1, 'the fleet ApplicationSet of docs/argocd.md has Helm values');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

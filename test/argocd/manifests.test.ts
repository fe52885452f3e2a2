// The Argo CD manifests of argocd/: the operator's Application installs the chart this release publishes with values
// the chart's values.schema.json types (helm itself validates them in e2e/argocd-manifests.e2e.ts, which also
// dry-runs every manifest against Argo CD's CRDs on a real kube-apiserver), and the ApplicationSet's RollingSync
// steps put exactly one cluster in the first wave and every other cluster in the second. The CRD fixtures are the
// upstream files test/fixtures/argocd-crds/SOURCE.md names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { readChart, schemaAt, type Schema } from '../../scripts/chart-readme.ts';
import { parseRegistry, releaseNames } from '../../scripts/release/plan.ts';
import { ARGOCD_MANIFESTS, argoObjects, generatedApplications, rollingSyncWaves, type ApplicationSet } from './manifests.ts';

const root = join(import.meta.dirname, '..', '..');
/** The Argo CD release the manifests and the CRD fixtures are for (docs/argocd.md names it). */
export const ARGOCD_VERSION = 'v3.5.1';
const CRDS = join(root, 'test', 'fixtures', 'argocd-crds');
const VERSION = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

interface Application {
  kind: 'Application';
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec: { source: { repoURL: string; chart?: string; targetRevision: string; helm?: { valuesObject?: Record<string, unknown> } }; syncPolicy?: { syncOptions?: string[] } };
}

const manifest = <T>(file: string): T => parse(readFileSync(join(root, 'argocd', file), 'utf8')) as T;

test('the CRD fixtures are the upstream files SOURCE.md names, with the sums it records', () => {
  const source = readFileSync(join(CRDS, 'SOURCE.md'), 'utf8');
  assert.match(source, new RegExp(`^# Argo CD's CRDs, ${ARGOCD_VERSION.replace(/\./g, '\\.')}$`, 'm'));
  const rows = [...source.matchAll(/^\| (\S+\.yaml) \| (\S+) \| ([0-9a-f]{64}) \|$/gm)];
  const files = readdirSync(CRDS).filter((f) => f.endsWith('.yaml')).sort();
  assert.deepEqual(rows.map((r) => r[1]).sort(), files);
  assert.deepEqual(files, ['application-crd.yaml', 'applicationset-crd.yaml', 'appproject-crd.yaml']);
  for (const [, file, url, sum] of rows) {
    assert.equal(url, `https://github.com/argoproj/argo-cd/blob/${ARGOCD_VERSION}/manifests/crds/${file}`);
    assert.equal(createHash('sha256').update(readFileSync(join(CRDS, file!))).digest('hex'), sum, `${file} is not the recorded upstream file`);
  }
});

test('every manifest of argocd/ that is an Argo CD kind is one ARGOCD_MANIFESTS lists (so the e2e dry-runs it)', () => {
  const argo = readdirSync(join(root, 'argocd')).filter((f) => f.endsWith('.yaml'))
    .filter((f) => argoObjects(readFileSync(join(root, 'argocd', f), 'utf8')).length > 0).map((f) => `argocd/${f}`).sort();
  assert.deepEqual(argo, [...ARGOCD_MANIFESTS].sort());
  assert.deepEqual(argoObjects('apiVersion: v1\nkind: ConfigMap\n---\napiVersion: argoproj.io/v1alpha1\nkind: AppProject\n').map((o) => o.kind), ['AppProject']);
});

test('the operator Application installs the chart this release publishes, from its OCI registry, at this version', () => {
  const app = manifest<Application>('operator-application.yaml');
  const names = releaseNames({ version: VERSION, registry: parseRegistry('ghcr.io/apiserver-upgrade-operator'), downloadBase: 'https://example.com/d' });
  // Argo CD's Helm OCI source: the registry path without oci:// in repoURL, the chart's name in chart.
  assert.equal(`oci://${app.spec.source.repoURL}/${app.spec.source.chart}`, names.chartInstallRef);
  assert.doesNotMatch(app.spec.source.repoURL, /^[a-z]+:\/\//, 'a scheme makes Argo CD treat it as a Helm HTTP repository or an OCI image, not an OCI Helm chart');
  assert.equal(app.spec.source.targetRevision, VERSION);
  assert.equal(app.metadata.annotations?.['argocd.argoproj.io/sync-wave'], '-1', 'before the upgrades, in an app of apps');
  assert.ok(app.spec.syncPolicy?.syncOptions?.includes('ServerSideApply=true'));
});

/** Every leaf of `values` with the schema's type for it; a key the schema does not know fails. */
function untyped(values: unknown, schema: Schema, path: string[] = []): string[] {
  if (typeof values === 'object' && values !== null && !Array.isArray(values)) {
    return Object.entries(values).flatMap(([k, v]) => untyped(v, schema, [...path, k]));
  }
  const s = schemaAt(schema, path);
  if (s === undefined) return [`${path.join('.')}: not in values.schema.json`];
  if (s === 'open') return [];
  const types = [s.type ?? []].flat();
  const t = Array.isArray(values) ? 'array' : Number.isInteger(values) ? 'integer' : typeof values;
  const ok = types.length === 0 || types.includes(t) || (t === 'integer' && types.includes('number'));
  return ok ? [] : [`${path.join('.')}: ${t}, the schema wants ${types.join(' or ')}`];
}

test('the operator Application\'s values: typed by values.schema.json, and labelled for kube-prometheus-stack\'s default selectors', () => {
  const values = manifest<Application>('operator-application.yaml').spec.source.helm?.valuesObject;
  assert.ok(values);
  const { schema } = readChart();
  assert.deepEqual(untyped(values, schema), []);
  assert.deepEqual(untyped({ serviceMonitor: { enabled: 'yes' }, nope: 1 }, schema), ['serviceMonitor.enabled: string, the schema wants boolean', 'nope: not in values.schema.json']);
  const v = values as { serviceMonitor: { enabled: boolean; labels: Record<string, string> }; prometheusRule: { enabled: boolean; labels: Record<string, string> } };
  assert.equal(v.serviceMonitor.enabled, true);
  assert.equal(v.prometheusRule.enabled, true);
  // kube-prometheus-stack selects both by release: <its release name> (docs/monitoring.md).
  assert.equal(v.serviceMonitor.labels.release, 'kube-prometheus-stack');
  assert.equal(v.prometheusRule.labels.release, 'kube-prometheus-stack');
});

test('the ApplicationSet: RollingSync, one canary cluster in the first wave, every other cluster in the second', () => {
  const set = manifest<ApplicationSet>('upgrade-waves-applicationset.yaml');
  assert.equal(set.spec.strategy?.type, 'RollingSync');
  const waves = rollingSyncWaves(set);
  assert.equal(waves.length, 2);
  assert.equal(waves[0]!.length, 1, `the first wave is one canary cluster, not ${waves[0]!.join(', ')}`);
  assert.equal(set.spec.strategy?.rollingSync?.steps[0]?.maxUpdate, 1);
  const clusters = set.spec.generators.flatMap((g) => g.list?.elements ?? []).map((e) => String(e.cluster));
  assert.deepEqual([...waves.flat()].sort(), [...clusters].sort(), 'every cluster is in exactly one wave');
  assert.ok(waves[1]!.length >= 1);
  // RollingSync turns automated sync off on the Applications it generates; the template does not ask for it.
  assert.equal((set.spec.template.spec as { syncPolicy?: { automated?: unknown } }).syncPolicy?.automated, undefined);
});

test('rollingSyncWaves: In and NotIn (NotIn wins), every expression must hold, an unmatched Application is in no wave', () => {
  const set = (parseAllDocuments(`
spec:
  goTemplate: true
  generators: [{list: {elements: [{cluster: a, env: dev}, {cluster: b, env: prod}, {cluster: c, env: prod}, {cluster: d, env: qa}]}}]
  strategy:
    type: RollingSync
    rollingSync:
      steps:
        - matchExpressions: [{key: env, operator: In, values: [dev, prod]}, {key: env, operator: NotIn, values: [prod]}]
        - matchExpressions: [{key: env, operator: In, values: [prod]}]
  template: {metadata: {name: "x-{{.cluster}}", labels: {env: "{{.env}}"}}, spec: {}}
`)[0]!.toJS() as ApplicationSet);
  assert.deepEqual(rollingSyncWaves(set), [['a'], ['b', 'c']]);
});

test('the waves ApplicationSet generates one Application per cluster, named after it, labelled with its wave, aimed at its server', () => {
  const set = manifest<ApplicationSet & { metadata: { namespace: string } }>('upgrade-waves-applicationset.yaml');
  const elements = set.spec.generators.flatMap((g) => g.list?.elements ?? []);
  const apps = generatedApplications(set) as unknown as { metadata: { name: string; namespace: string; labels: Record<string, string> }; spec: { destination: { server: string } } }[];
  assert.deepEqual(apps.map((a) => a.metadata.name), elements.map((e) => `apiserver-upgrades-${String(e.cluster)}`));
  assert.deepEqual(apps.map((a) => a.metadata.labels['upgrade.apiserver.dev/wave']), elements.map((e) => e.wave));
  assert.deepEqual(apps.map((a) => a.spec.destination.server), elements.map((e) => e.url));
  for (const a of apps) assert.equal(a.metadata.namespace, 'argocd');
});

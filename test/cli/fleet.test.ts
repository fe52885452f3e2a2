// `list --all-contexts | --contexts a,b`: the flags, which contexts are asked, why a cluster could not be read, the
// table and the machine view, the exit status, the bound on clusters in flight and each cluster's deadline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYaml } from 'yaml';
import { CLUSTER_TIMEOUT_MS, parseCommandLine, parseContextList, UsageError, type Options } from '../../src/cli/args.ts';
import { CliError, CrdNotServedError, type Connection, type UpgradeApi } from '../../src/cli/client.ts';
import { clusterError, fleetExitCode, fleetView, renderFleet, selectContexts, type ClusterResult, type FleetView } from '../../src/cli/fleet-view.ts';
import { queryFleet } from '../../src/cli/fleet.ts';
import { KubeApiError } from '../../src/runtime/kube.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import { FakeApi, cli } from './fake-api.ts';
import { NOW, ago, paused, upgrading } from './fixtures.ts';

function options(argv: string[]): Options {
  const p = parseCommandLine(argv);
  assert.equal(p.help, false);
  return (p as { options: Options }).options;
}

test('flags: --all-contexts, --contexts a,b (each name once, in order), --cluster-timeout as a Go duration', () => {
  assert.deepEqual(options(['list', '--all-contexts']).fleet, { select: { all: true }, timeoutMs: CLUSTER_TIMEOUT_MS });
  assert.deepEqual(options(['ls', '--contexts', ' b, a,,b ', '--cluster-timeout', '1m30s']).fleet, { select: { all: false, names: ['b', 'a'] }, timeoutMs: 90_000 });
  assert.equal(options(['list']).fleet, undefined, 'without the flags list is the one-cluster list');
  assert.deepEqual(parseContextList('x,,y , x'), ['x', 'y']);
  const refused: [string[], RegExp][] = [
    [['get', '--all-contexts'], /--all-contexts is for list, not get/],
    [['pause', 'x', '--contexts', 'a'], /--contexts is for list, not pause/],
    [['list', '--all-contexts', '--contexts', 'a'], /cannot both be given/],
    [['list', '--contexts', 'a', '--context', 'b'], /--context and --contexts cannot both be given/],
    [['list', '--contexts', ' , '], /at least one context name/],
    [['list', '--cluster-timeout', '5s'], /--cluster-timeout is for list with --all-contexts or --contexts/],
    [['list', '--all-contexts', '--cluster-timeout', '10'], /--cluster-timeout must be a duration such as 10s or 1m, not "10"/],
    [['list', '--all-contexts', '--cluster-timeout', '0s'], /--cluster-timeout must be a duration/],
    [['list', '--all-contexts', '-o', 'name'], /-o name names the objects of one cluster/],
  ];
  for (const [argv, why] of refused) assert.throws(() => parseCommandLine(argv), (e: unknown) => e instanceof UsageError && why.test(e.message), argv.join(' '));
});

test('selectContexts: every context sorted by name, or the named ones in order; an unknown name is an error naming it', () => {
  assert.deepEqual(selectContexts(['prod-b', 'dev', 'prod-a'], { all: true }), ['dev', 'prod-a', 'prod-b']);
  assert.deepEqual(selectContexts(['prod-b', 'dev', 'prod-a'], { all: false, names: ['prod-b', 'dev'] }), ['prod-b', 'dev']);
  assert.throws(() => selectContexts(['a', 'b'], { all: false, names: ['a', 'nope'] }), /^CliError: context "nope" is not defined in the kubeconfig \(contexts: a, b\)$/);
  assert.throws(() => selectContexts(['a'], { all: false, names: ['x', 'y'] }), /contexts "x", "y" are not defined/);
  assert.throws(() => selectContexts([], { all: true }), /the kubeconfig defines no contexts/);
});

test('an unknown context name is refused before any cluster is queried', async () => {
  const r = await cli(undefined, ['list', '--contexts', 'a,typo'], { contexts: () => ['a', 'b'] });
  assert.deepEqual([r.code, r.out, r.err], [1, '', 'error: context "typo" is not defined in the kubeconfig (contexts: a, b)\n']);
});

test('clusterError: each way a cluster fails is a reason and a short, plain, redacted message', () => {
  const api = (code: number, body: string): KubeApiError => new KubeApiError('GET', '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades', code, body, undefined);
  assert.deepEqual(clusterError(api(401, '{"kind":"Status","reason":"Unauthorized","message":"Unauthorized"}'), false, 10_000), { reason: 'Unauthorized', message: 'the server refused the credentials (401)' });
  const forbidden = clusterError(api(403, JSON.stringify({ kind: 'Status', reason: 'Forbidden', message: 'apiserverupgrades is forbidden: User "x" cannot list; Authorization: Bearer abcdefghijklmnop\u001b[2J' })), false, 10_000);
  assert.equal(forbidden.reason, 'Forbidden');
  assert.equal(forbidden.message, '403: apiserverupgrades is forbidden: User "x" cannot list; Authorization: [redacted] [2J');
  assert.deepEqual(clusterError(new CrdNotServedError('404'), false, 10_000), { reason: 'CRDNotServed', message: 'the cluster does not serve apiserverupgrades.upgrade.apiserver.dev (is the CRD installed?)' });
  const refused = Object.assign(new Error('GET /apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades: connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  assert.deepEqual(clusterError(refused, false, 10_000), { reason: 'Unreachable', message: 'connect ECONNREFUSED 127.0.0.1:1' });
  assert.deepEqual(clusterError(new Error('aborted'), true, 2_500), { reason: 'Timeout', message: 'no answer within 2.5s' });
  assert.deepEqual(clusterError(new CliError('cannot load the kubeconfig: k: context "c": cluster "gone" is not defined'), false, 1), { reason: 'Config', message: 'cannot load the kubeconfig: k: context "c": cluster "gone" is not defined' });
  const long = clusterError(api(500, 'x'.repeat(5000)), false, 1);
  assert.equal(long.reason, 'Error');
  assert.ok(long.message.length <= 200, 'cut');
});

/** A cluster whose list answers `upgrades`, or throws `error`, or never answers (and records the cancel). */
class Cluster extends FakeApi {
  cancelled = false;
  closed = false;
  private readonly answer: { upgrades?: ApiServerUpgrade[]; error?: unknown; never?: boolean };
  constructor(answer: { upgrades?: ApiServerUpgrade[]; error?: unknown; never?: boolean }) {
    super(...(answer.upgrades ?? []));
    this.answer = answer;
  }
  override async list(signal?: AbortSignal): Promise<ApiServerUpgrade[]> {
    if (this.answer.error !== undefined) throw this.answer.error;
    if (this.answer.never) {
      signal?.addEventListener('abort', () => (this.cancelled = true));
      return new Promise(() => undefined);
    }
    return super.list();
  }
  override close(): void {
    this.closed = true;
  }
}

function waiting(): ApiServerUpgrade {
  const u = upgrading();
  u.metadata!.name = 'in-window';
  u.status!.waiting = { reason: 'OutsideWindow', until: '2026-03-01T13:00:00Z', message: 'next window at 13:00' } as NonNullable<ApiServerUpgrade['status']>['waiting'];
  return u;
}

test('run: one row per upgrade under CLUSTER, WAITING kept; a cluster with none is a <none> row; one that fails is one row with its reason; exit 1', async () => {
  const clusters: Record<string, Cluster> = {
    'prod-a': new Cluster({ upgrades: [upgrading(), waiting()] }),
    'prod-b': new Cluster({ upgrades: [] }),
    gone: new Cluster({ error: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) }),
    stuck: new Cluster({ never: true }),
  };
  const started = Date.now();
  const r = await cli(undefined, ['list', '--all-contexts', '--cluster-timeout', '200ms'], {
    contexts: () => Object.keys(clusters),
    connect: (c: Connection) => clusters[c.context!]!,
  });
  const took = Date.now() - started;
  assert.ok(took < 2_000, `the stuck cluster ends at its deadline (${took} ms)`);
  assert.equal(r.code, 1);
  assert.equal(r.err, 'error: 2 of 4 clusters could not be read: gone, stuck\n');
  const lines = r.out.trimEnd().split('\n');
  assert.match(lines[0]!, /^CLUSTER +NAME +PHASE +FROM +TO +DONE +BATCH +PAUSED +WAITING +AGE +ERROR$/);
  assert.match(lines[1]!, /^gone +- +(- +){8}Unreachable: connect ECONNREFUSED 127\.0\.0\.1:9$/);
  assert.match(lines[2]!, /^prod-a +in-window +Upgrading .* OutsideWindow until 2026-03-01T13:00:00Z +5m +-$/);
  assert.match(lines[3]!, /^prod-a +to-v1-36 +Upgrading +v1\.35\.4 +v1\.36\.3 +1\/3 +2\/3 +- +- +5m +-$/);
  assert.match(lines[4]!, /^prod-b +<none> +(- +){8}-$/);
  assert.match(lines[5]!, /^stuck +- +(- +){8}Timeout: no answer within 200ms$/);
  assert.equal(lines.length, 6);
  assert.ok(clusters.stuck!.cancelled, 'the request past its deadline is cancelled');
  assert.ok(Object.values(clusters).every((c) => c.closed), 'every connection closed');
});

test('run: every cluster answered is exit 0, no ERROR column, nothing on stderr; --contexts keeps the order given', async () => {
  const clusters: Record<string, Cluster> = { b: new Cluster({ upgrades: [paused('AnalysisBreach')] }), a: new Cluster({ upgrades: [] }) };
  const r = await cli(undefined, ['list', '--contexts', 'b,a'], { contexts: () => ['a', 'b', 'c'], connect: (c: Connection) => clusters[c.context!]! });
  assert.deepEqual([r.code, r.err], [0, '']);
  const lines = r.out.trimEnd().split('\n');
  assert.match(lines[0]!, /^CLUSTER +NAME +PHASE +FROM +TO +DONE +BATCH +PAUSED +WAITING +AGE$/);
  assert.match(lines[1]!, /^b +to-v1-36 +Paused .* AnalysisBreach +- +5m$/);
  assert.match(lines[2]!, /^a +<none>/);
});

test('run -o json / -o yaml: each cluster by name with its rows or its error as data', async () => {
  const clusters: Record<string, Cluster> = {
    ok: new Cluster({ upgrades: [upgrading()] }),
    nocrd: new Cluster({ error: new CrdNotServedError('404') }),
    denied: new Cluster({ error: new KubeApiError('GET', '/apis/x', 401, 'Unauthorized', undefined) }),
  };
  const deps = { contexts: () => Object.keys(clusters), connect: (c: Connection) => clusters[c.context!]! };
  const j = await cli(undefined, ['list', '--all-contexts', '-o', 'json'], deps);
  assert.equal(j.code, 1);
  const v = JSON.parse(j.out) as FleetView;
  assert.deepEqual(v.clusters.map((c) => c.cluster), ['denied', 'nocrd', 'ok']);
  assert.deepEqual(v.clusters[0], { cluster: 'denied', error: { reason: 'Unauthorized', message: 'the server refused the credentials (401)' } });
  assert.equal((v.clusters[1] as { error: { reason: string } }).error.reason, 'CRDNotServed');
  const ok = v.clusters[2] as { upgrades: { name: string; phase: string; progress: string }[] };
  assert.deepEqual([ok.upgrades.length, ok.upgrades[0]!.name, ok.upgrades[0]!.phase, ok.upgrades[0]!.progress], [1, 'to-v1-36', 'Upgrading', '1/3']);
  const y = await cli(undefined, ['list', '--all-contexts', '-o', 'yaml'], deps);
  assert.deepEqual(parseYaml(y.out), v);
  const p = await cli(undefined, ['list', '--all-contexts', '-o', 'jsonpath={.clusters[*].cluster}'], deps);
  assert.equal(p.out, 'denied nocrd ok');
});

test('a context whose kubeconfig entry cannot be loaded is its own row, the others are still read', async () => {
  const r = await cli(undefined, ['list', '--all-contexts'], {
    contexts: () => ['ok', 'broken'],
    connect: (c: Connection) => {
      if (c.context === 'broken') throw new CliError('cannot load the kubeconfig: k: context "broken": user "u" is not defined');
      return new Cluster({ upgrades: [upgrading()] });
    },
  });
  assert.equal(r.code, 1);
  assert.match(r.out, /^broken +- .* Config: cannot load the kubeconfig: k: context "broken": user "u" is not defined$/m);
  assert.match(r.out, /^ok +to-v1-36 +Upgrading/m);
});

test('the single-cluster list is unchanged without the fleet flags', async () => {
  const api = new FakeApi(upgrading());
  const r = await cli(api, ['list'], { contexts: () => assert.fail('contexts read') });
  assert.equal(r.code, 0);
  assert.match(r.out, /^NAME +PHASE +FROM +TO +DONE +BATCH +PAUSED +WAITING +AGE\nto-v1-36 +Upgrading/);
});

test('queryFleet: at most `concurrency` clusters in flight, results in the order asked', async () => {
  let inFlight = 0;
  let most = 0;
  const contexts = Array.from({ length: 20 }, (_, i) => `c${i}`);
  const results = await queryFleet({
    kubeconfig: undefined, contexts, timeoutMs: 5_000, concurrency: 8,
    connect: (c: Connection): UpgradeApi => {
      const api = new FakeApi();
      api.list = async () => {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 10));
        inFlight--;
        const u = upgrading();
        u.metadata!.name = c.context!;
        return [u];
      };
      return api;
    },
  });
  assert.equal(most, 8);
  assert.deepEqual(results.map((r) => r.cluster), contexts);
  assert.deepEqual(results.map((r) => ('upgrades' in r ? r.upgrades[0]!.metadata!.name : 'error')), contexts);
});

test('fleetExitCode and the machine view: 0 only when every cluster answered', () => {
  const ok: ClusterResult = { cluster: 'a', upgrades: [] };
  const bad: ClusterResult = { cluster: 'b', error: { reason: 'Timeout', message: 'no answer within 10s' } };
  assert.equal(fleetExitCode([ok]), 0);
  assert.equal(fleetExitCode([]), 0);
  assert.equal(fleetExitCode([ok, bad]), 1);
  assert.deepEqual(fleetView([ok, bad]), { clusters: [{ cluster: 'a', upgrades: [] }, { cluster: 'b', error: { reason: 'Timeout', message: 'no answer within 10s' } }] });
  const wide = renderFleet(fleetView([{ cluster: 'a', upgrades: [paused('AnalysisBreach')] }]), NOW, true);
  assert.match(wide, /^CLUSTER +NAME .* AGE +DRIVER +MESSAGE\na +to-v1-36 .* 5m +webhook +3 consecutive breaching checks\n$/);
  assert.equal(ago(0), NOW.toISOString());
});

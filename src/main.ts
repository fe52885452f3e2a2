// The operator's entry point: the only place that wires the parts together.
import { hostname } from 'node:os';
import { relative } from 'node:path';
import { parseArgs } from 'node:util';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { createLogger } from './runtime/logger.ts';
import { loadKubeConfig, KubeClient } from './runtime/kube.ts';
import { Informer } from './runtime/informer.ts';
import { WorkQueue } from './runtime/workqueue.ts';
import { LeaderElector } from './runtime/leader.ts';
import { startHealthServer, type MetricsListenerOptions } from './runtime/health.ts';
import { TokenReviewAuth, kubeReviewer } from './runtime/metrics-auth.ts';
import { selfSignedCertificate } from './runtime/self-signed.ts';
import { tryParseDuration } from './api/duration.ts';
import { installSignalHandlers } from './runtime/shutdown.ts';
import { RuntimeMetrics } from './runtime/metrics.ts';
import { APISERVICES_PATH, ENDPOINTSLICES_PATH, FleetObserver, KUBERNETES_SERVICE_SELECTOR } from './observe/fleet.ts';
import { PrometheusAnalysis, httpQuery } from './observe/prometheus-source.ts';
import { observeRunning } from './observe/running.ts';
import { observeGates } from './observe/gates.ts';
import { UpgradeReconciler } from './controller/reconciler.ts';
import { OperatorMetrics } from './controller/metrics.ts';
import { driverFor } from './controller/driver-factory.ts';
import { PolicyFile } from './controller/policy-file.ts';
import { badImage } from './drivers/static-pod-input.ts';
import { GROUP, PLURAL, VERSION } from './api/constants.ts';
import { objectKey, type KubeObject } from './runtime/object-cache.ts';
import { updateNeedsReconcile } from './plan/admission.ts';
import { leaseEventWakes, upgradesToWake } from './plan/wake.ts';
import { CachedUpgrades } from './runtime/upgrade-cache.ts';
import { listThroughCaches, type CachedCollection } from './runtime/cached-list.ts';
import { APISERVER_PODS_COLLECTION, APISERVER_PODS_PATH, APISERVER_PODS_SELECTOR } from './observe/trust.ts';
import { COMPONENT_PODS_PATH, COMPONENT_PODS_SELECTOR } from './observe/components.ts';
import { NODES_PATH, observeKubeadm, trimNode } from './observe/kubeadm.ts';
import { readCollection } from './runtime/read-collection.ts';
import type { V1EndpointSlice, V1Lease, V1Node } from '@kubernetes/client-node';
import type { ApiServerUpgrade } from './api/types.generated.ts';

const OPTIONS = {
  kubeconfig: { type: 'string', default: process.env.KUBECONFIG },
  'in-cluster': { type: 'boolean', default: false },
  'health-port': { type: 'string', default: process.env.HEALTH_PORT ?? '8081' },
  'health-host': { type: 'string', default: '0.0.0.0' },
  // /metrics on its own port (empty: on the health port), behind TokenReview + SubjectAccessReview when
  // --metrics-auth=true (the chart's default; off here so a local run is scraped without a token). The metrics
  // port is HTTPS unless --metrics-secure=false: with the cert and key files given, or a self-signed pair made at
  // start (as controller-runtime's secure metrics serving does). The health port stays plain HTTP (the kubelet).
  'metrics-port': { type: 'string', default: '' },
  'metrics-host': { type: 'string', default: '' },
  'metrics-secure': { type: 'string', default: 'true' },
  'metrics-auth': { type: 'string', default: 'false' },
  'metrics-auth-cache-ttl': { type: 'string', default: '1m' },
  // TokenReview's spec.audiences (comma-separated): only tokens issued for one of them pass. Empty: the apiserver's own.
  'metrics-auth-audiences': { type: 'string', default: '' },
  // Reviews of new tokens in flight at once and per second; beyond them a scrape gets 429 (docs/security.md).
  'metrics-auth-max-concurrent-reviews': { type: 'string', default: '4' },
  'metrics-auth-reviews-per-second': { type: 'string', default: '10' },
  'metrics-tls-cert-file': { type: 'string', default: '' },
  'metrics-tls-key-file': { type: 'string', default: '' },
  'leader-election-namespace': { type: 'string', default: process.env.POD_NAMESPACE ?? 'kube-system' },
  'leader-election-name': { type: 'string', default: 'apiserver-upgrade-operator' },
  'log-level': { type: 'string', default: process.env.LOG_LEVEL ?? 'info' },
  // The operator's policy (docs/policy.md): the images, webhook URLs and token destinations a spec may name.
  // Empty: none, and every spec is allowed (a warning says so); the chart always sets one.
  'policy-file': { type: 'string', default: '' },
  // The operator's own image, which also runs the static Pod driver's node agent (node dist/agent/main.js) when
  // a spec names no spec.driver.staticPod.agentImage. The chart sets it to image.repository:tag. Empty: such a
  // spec's calls are refused, naming this flag.
  'agent-image': { type: 'string', default: process.env.AGENT_IMAGE ?? '' },
  // Write kube-system/kubeadm-config once an upgrade ended (true), or only read it and report in status what to set
  // by hand (false, the default): a token that may update it could rewrite ClusterConfiguration, which kubeadm applies
  // at the next join or upgrade (docs/security.md). The chart's kubeadmConfig.write sets it, with the RBAC to match.
  'kubeadm-config-write': { type: 'string', default: 'false' },
  // Prints the options and exits 0: every module (and production dependency) was loaded by then, so an image
  // that runs `--help` runs the operator's code (e2e/images.e2e.ts).
  help: { type: 'boolean', short: 'h', default: false },
} as const;
const { values } = parseArgs({ options: OPTIONS });
if (values.help) {
  const lines = Object.entries(OPTIONS).map(([name, o]) => `  --${name}${o.type === 'string' ? '=VALUE' : ''}${o.default !== undefined && o.default !== '' && o.type === 'string' ? ` (default ${String(o.default)})` : ''}`);
  // src/main.ts from the sources, dist/main.js in the image.
  process.stdout.write(`usage: node ${relative(process.cwd(), import.meta.filename)} [options]\n${lines.join('\n')}\n`);
  process.exit(0);
}

const log = createLogger(values['log-level']);
// Read before anything starts: a policy file that cannot be read or parsed stops the operator here.
const policyFile = values['policy-file'] ? PolicyFile.open(values['policy-file'], log.child({ component: 'policy' })) : undefined;
if (!policyFile) {
  log.warn('no --policy-file: every ApiServerUpgrade is allowed any apiserver and agent image, webhook URL, token Secret, node path and Prometheus address; whoever may create or patch one decides what this operator runs and where it sends tokens (docs/policy.md)');
}
const agentImageProblem = values['agent-image'] ? badImage(values['agent-image']) : undefined;
if (agentImageProblem) {
  log.error(`--agent-image ${JSON.stringify(values['agent-image'])} ${agentImageProblem}`);
  process.exit(2);
}
const kubeadmConfigWrite = values['kubeadm-config-write'];
if (kubeadmConfigWrite !== 'true' && kubeadmConfigWrite !== 'false') {
  log.error(`--kubeadm-config-write ${JSON.stringify(kubeadmConfigWrite)} is neither true nor false`);
  process.exit(2);
}
const kc = loadKubeConfig(values['in-cluster'] ? { inCluster: true } : values.kubeconfig ? { file: values.kubeconfig } : {});
const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'apiserver_upgrade_operator_' });
const runtimeMetrics = new RuntimeMetrics(registry);
const metrics = new OperatorMetrics(registry);
const kube = new KubeClient(kc, { logger: log });
// spec.analysis.source Prometheus reads the same signals through PromQL; Direct scrapes each server.
const prometheus = new PrometheusAnalysis({ log: log.child({ component: 'prometheus' }) });
// spec.gates' queries: their own client, each answer bounded as the analysis' are.
const gateQuery = httpQuery(5_000);
// The identity Leases: their changes wake the upgrades, and the observer reads them from here instead of a LIST.
const leases = new Informer<V1Lease>({
  kubeConfig: kc, path: '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases', labelSelector: 'apiserver.kubernetes.io/identity=kube-apiserver',
  name: 'identity-leases', logger: log, ...runtimeMetrics.informerHooks('identity-leases'),
  // Every server renews its Lease every 10 s: 30 s without an event is a stuck watch, not a quiet fleet.
  maxSilenceMs: 30_000,
});
// The `kubernetes` EndpointSlices (the servers' addresses): likewise from an informer, not a LIST per observation.
const endpointSlices = new Informer<V1EndpointSlice>({
  kubeConfig: kc, path: ENDPOINTSLICES_PATH, labelSelector: KUBERNETES_SERVICE_SELECTOR,
  name: 'kubernetes-endpointslices', logger: log, ...runtimeMetrics.informerHooks('kubernetes-endpointslices'),
});
// The APIServices (aggregated APIs left out of the storage-hash reads, the coverage report) and the kube-apiserver
// mirror Pods (hostname hints, the trust flags): small collections read at every observation or preflight, held
// by informers so that an upgrade under way makes no LIST (docs/scale.md).
const apiServices = new Informer({
  kubeConfig: kc, path: APISERVICES_PATH, name: 'apiservices', logger: log, ...runtimeMetrics.informerHooks('apiservices'),
});
const mirrorPods = new Informer({
  kubeConfig: kc, path: APISERVER_PODS_COLLECTION, labelSelector: APISERVER_PODS_SELECTOR, name: 'apiserver-mirror-pods', logger: log, ...runtimeMetrics.informerHooks('apiserver-mirror-pods'),
});
// The kube-controller-manager and kube-scheduler Pods (docs/version-skew.md), read at every observation.
const componentPods = new Informer({
  kubeConfig: kc, path: APISERVER_PODS_COLLECTION, labelSelector: COMPONENT_PODS_SELECTOR, name: 'control-plane-component-pods', logger: log, ...runtimeMetrics.informerHooks('control-plane-component-pods'),
});
const cachedList = listThroughCaches((path) => kube.request('GET', path), new Map<string, CachedCollection>([
  [APISERVICES_PATH, { cache: apiServices, apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIServiceList' }],
  [APISERVER_PODS_PATH, { cache: mirrorPods, apiVersion: 'v1', kind: 'PodList' }],
  [COMPONENT_PODS_PATH, { cache: componentPods, apiVersion: 'v1', kind: 'PodList' }],
]));
const observer = new FleetObserver(kc, cachedList, log, { analysisSource: prometheus.source, leaseCache: leases, endpointCache: endpointSlices });
const leaderIdentityHolder: { id: string } = { id: '' };
const upgrades = new Informer<ApiServerUpgrade>({
  kubeConfig: kc, path: `/apis/${GROUP}/${VERSION}/${PLURAL}`, name: 'apiserverupgrades', logger: log, ...runtimeMetrics.informerHooks('apiserverupgrades'),
});
// Every part of the reconciler's wiring is decided here, none left to its defaults.
const reconciler = new UpgradeReconciler({
  kube, observer, metrics, log,
  now: () => new Date(),
  // Each reconcile reads its upgrade (and the others, for one-at-a-time) from the informer: no GET, no LIST.
  // The informer is resynced when its cache is found behind the API (src/runtime/upgrade-cache.ts says when).
  upgrades: new CachedUpgrades(upgrades, kube, { onStale: (why) => upgrades.resync(why) }),
  driverFor: (spec, name) => driverFor(spec, kube, name, values['agent-image']),
  // Without --policy-file every spec is allowed.
  policy: policyFile ? () => policyFile.current() : () => undefined,
  // Preflight reads each server's flags, certificate and peer address, and the APIServices (docs/trust.md).
  preflightFacts: true,
  list: cachedList,
  // The preflight checks for kubeadm clusters, and kubeadm-config kept in line after an upgrade (docs/kubeadm-runbook.md).
  kubeadmFacts: (peers, always) => observeKubeadm(peers, {
    get: (path) => kube.request('GET', path),
    // The mirror Pods from their informer; the Nodes by one streaming list, not worth a watch of every Node.
    list: async <T>(path: string): Promise<T[]> => path === NODES_PATH
      ? (await readCollection<KubeObject>({ kubeConfig: kc, path, logger: log, transform: (n) => trimNode(n as V1Node) as KubeObject })) as T[]
      : (await cachedList<{ items?: T[] }>(path)).items ?? [],
    serverGet: (address, path) => observer.serverClient.get(address, path),
    serverMetrics: (address, families) => observer.serverClient.metrics(address, families),
    always,
  }),
  keepKubeadmConfig: true,
  // spec.gates: the queries against the gates' Prometheus, and the control-plane Nodes (src/observe/gates.ts).
  gates: (reads) => observeGates(reads, {
    query: gateQuery,
    listNodes: async (path) => (await kube.request<{ items?: V1Node[] }>('GET', path)).items ?? [],
    now: () => Date.now(),
  }),
  writeKubeadmConfig: kubeadmConfigWrite === 'true',
  // After each call, the server's own /flagz and /statusz against what the call meant (docs/version-skew.md).
  running: (peers, hostnames) => observeRunning(peers, hostnames, (address, path, accept, max) => observer.serverClient.page(address, path, accept, max)),
  events: { controller: `${GROUP}/operator`, get instance() { return leaderIdentityHolder.id; } },
});

const metricHooks = runtimeMetrics.queueHooks;
const queue = new WorkQueue({
  hooks: {
    ...metricHooks,
    // A failed reconcile is retried with backoff; said once per failure, so that an operator that keeps failing is
    // seen in its logs and not only in apiserver_upgrade_operator_reconcile_errors_total.
    onError: (key, err, delayMs) => {
      metricHooks.onError?.(key, err, delayMs);
      log.warn('reconcile failed; retrying', { upgrade: key, err: err instanceof Error ? err.message : String(err), retryInMs: delayMs });
    },
  },
});
// Every upgrade once when leading starts (a finished one only refreshes its metrics, from the cache).
const enqueueAll = (): void => upgrades.keys().forEach((k) => queue.add(k));
const enqueue = (o: KubeObject): void => queue.add(objectKey(o));
upgrades.addHandlers({ add: enqueue, update: (o, n) => (updateNeedsReconcile(o, n) ? enqueue(n) : undefined), delete: enqueue });
// A server that comes, leaves or restarts (src/plan/wake.ts) wakes the upgrades not finished, so they re-observe
// at once; renewals wake none (the planner's requeue sets their cadence), and finished upgrades never.
const fleetChanged = (old: V1Lease | undefined, cur: V1Lease | undefined): void => {
  if (leaseEventWakes(old, cur)) upgradesToWake(upgrades.list()).forEach(enqueue);
};
leases.addHandlers({ add: (l) => fleetChanged(undefined, l), update: (o, n) => fleetChanged(o, n), delete: (l) => fleetChanged(l, undefined) });

const leader = new LeaderElector({
  kubeConfig: kc,
  namespace: values['leader-election-namespace'],
  name: values['leader-election-name'],
  logger: log,
  onStartedLeading: () => {
    runtimeMetrics.setLeader(true);
    log.info('leading: starting the reconcile loop');
    queue.start(async (key) => reconciler.reconcile(key));
    enqueueAll();
  },
  onStoppedLeading: () => {
    runtimeMetrics.setLeader(false);
    // A replica that lost the lease must not act any more: exit and let the next start campaign again.
    log.warn('lost the leader lease; exiting so that only the leader acts');
    void queue.shutdown(5_000).then(() => process.exit(0));
  },
});
leaderIdentityHolder.id = leader.identity;

const metricsAuthOn = values['metrics-auth'];
const metricsAuthTtlMs = tryParseDuration(values['metrics-auth-cache-ttl']);
const tlsFiles = [values['metrics-tls-cert-file'], values['metrics-tls-key-file']];
if (metricsAuthOn !== 'true' && metricsAuthOn !== 'false') throw new Error(`--metrics-auth must be true or false, not ${JSON.stringify(metricsAuthOn)}`);
if (metricsAuthTtlMs === undefined) throw new Error(`--metrics-auth-cache-ttl: not a duration: ${JSON.stringify(values['metrics-auth-cache-ttl'])}`);
if (tlsFiles.filter(Boolean).length === 1) throw new Error('--metrics-tls-cert-file and --metrics-tls-key-file go together');
if (tlsFiles[0] && !values['metrics-port']) throw new Error('--metrics-tls-cert-file needs --metrics-port (the health port stays plain HTTP for the kubelet)');
const metricsSecure = values['metrics-secure'];
if (metricsSecure !== 'true' && metricsSecure !== 'false') throw new Error(`--metrics-secure must be true or false, not ${JSON.stringify(metricsSecure)}`);
if (tlsFiles[0] && metricsSecure === 'false') throw new Error('--metrics-tls-cert-file and --metrics-secure=false contradict each other');
const positiveInt = (flag: string): number => {
  const n = Number(values[flag as keyof typeof values]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag} must be a positive integer, not ${JSON.stringify(values[flag as keyof typeof values])}`);
  return n;
};
const maxConcurrentReviews = positiveInt('metrics-auth-max-concurrent-reviews');
const reviewsPerSecond = positiveInt('metrics-auth-reviews-per-second');
const audiences = values['metrics-auth-audiences'].split(',').map((a) => a.trim()).filter(Boolean);
let metricsTls: MetricsListenerOptions['tls'];
if (tlsFiles[0]) metricsTls = { certFile: tlsFiles[0], keyFile: tlsFiles[1]! };
else if (values['metrics-port'] && metricsSecure === 'true') {
  // Names a scraper may use: the pod's hostname, the loopback; a scraper that verifies needs a mounted certificate.
  const pair = selfSignedCertificate([hostname(), 'localhost', '127.0.0.1', '::1']);
  metricsTls = { cert: pair.cert, key: pair.key };
  log.info('metrics serving certificate: self-signed, made at start (mount one with --metrics-tls-cert-file to be verifiable)', { sha256: pair.fingerprint256 });
}
const health = await startHealthServer({
  port: Number(values['health-port']), host: values['health-host'], registry, logger: log,
  ...(values['metrics-port'] ? {
    metrics: {
      port: Number(values['metrics-port']), host: values['metrics-host'] || values['health-host'],
      ...(metricsTls ? { tls: metricsTls } : {}),
    },
  } : {}),
  ...(metricsAuthOn === 'true' ? {
    metricsAuth: new TokenReviewAuth({ reviewer: kubeReviewer(kube, audiences), cacheTtlMs: metricsAuthTtlMs, maxConcurrentReviews, reviewsPerSecond, logger: log.child({ component: 'metrics-auth' }) }),
  } : {}),
  readiness: () => [
    { name: 'informer/apiserverupgrades', ready: upgrades.hasSynced },
    { name: 'informer/identity-leases', ready: leases.hasSynced },
    { name: 'informer/kubernetes-endpointslices', ready: endpointSlices.hasSynced },
  ],
});
installSignalHandlers({ logger: log, queue, leader, informers: [upgrades, leases, endpointSlices], health });
upgrades.start();
leases.start();
endpointSlices.start();
apiServices.start();
mirrorPods.start();
componentPods.start();
leader.start();
log.info('apiserver-upgrade-operator started', { identity: leader.identity, healthPort: health.port, metricsPort: health.metricsPort, server: kc.server });

// One upgrade of the fault campaign (issue 26) in nodes mode with the static Pod driver: a fresh 3-node cluster
// (containerd, kubelets, kube-apiserver as kubeadm-shaped static Pods), the operator as processes handing each
// replacement to a node agent Job, a client; the upgrade runs while the schedule's faults are injected and healed,
// among them the node's own components (the kubelet or containerd hung, the target image gone). The history is
// recorded from sources that do not trust the operator: the agent Jobs, each server's own /readyz and /version,
// a watch of the upgrade object, the client's answers.
import { PROXY_GATE, NEW_VERSION, OLD_VERSION, sleep } from '../cluster/index.ts';
import { freePort } from '../cluster/cluster.ts';
import { SECURE_PORT } from '../cluster/apiserver-flags.ts';
import { importImages } from '../cluster/images.ts';
import { MIRROR_REPOSITORY, NodesCluster } from '../cluster/nodes/nodes-cluster.ts';
import { OPERATOR_IMAGE } from '../cluster/operator-image.ts';
import { createUpgrade, installCrd, startOperator } from '../support/operator.ts';
import { NEW_ONLY } from '../support/rig.ts';
import { ReadWriteTraffic } from '../support/rw-traffic.ts';
import { runOk } from '../support/tools.ts';
import { TrafficRecorder } from '../support/traffic.ts';
import { emulationOf } from '../../src/observe/direct-client.ts';
import { EMULATED_VERSION_ANNOTATION, KEY_ANNOTATION } from '../../src/drivers/static-pod.ts';
import type { BreachWindow, DriverOp, ServerRecord, Span } from './history-check.ts';
import { Replicas } from './replicas.ts';
import { awaitRest, judge, runFaults, ServerClaims, type UpgradeResult } from './result.ts';
import { injectShared, isShared, resumeUpgrade } from './shared-faults.ts';
import { StartConditions } from './start-conditions.ts';
import { isLate, LateFaults, phasesStrategy } from './late-faults.ts';
import { StatusRecorder } from './status-recorder.ts';
import type { Fault, Schedule } from './schedule.ts';

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
const NAME = 'campaign';
/** Real kubelets pull and start slowly at load; the agent's Job reports a failure at once. */
const BATCH_TIMEOUT_SECONDS = 180;
const JOBS = '/apis/batch/v1/namespaces/kube-system/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dapiserver-upgrade-operator';
const ACTIONS: Record<string, DriverOp['action']> = { upgrade: 'Upgrade', rollback: 'Rollback', enableproxy: 'EnableProxy', revertproxy: 'RevertProxy' };

const AGENT_PODS = '/api/v1/namespaces/kube-system/pods?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dapiserver-upgrade-operator';

interface JobList {
  items: { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: { suspend?: boolean }; status?: { succeeded?: number; failed?: number } }[];
}

interface PodList { items: { metadata: { labels?: Record<string, string> }; status?: { phase?: string } }[] }

/**
 * The agent Jobs as driver operations, polled: an operation starts when its Job is first seen and ends when it is
 * first seen finished (succeeded: the agent saw the new server ready; failed: it reverted or never touched it), or
 * suspended (stopped by the driver) with no Pod of it left that may run — read after the Jobs, so a Pod seen gone
 * was gone after the Job was seen suspended. One clock for both ends, so a Job created right after the last one
 * finished is not taken for an overlap.
 */
class JobRecorder {
  readonly ops = new Map<string, DriverOp>();
  lastChange = 0;
  private running = true;
  private readonly loop: Promise<void>;
  private readonly c: NodesCluster;

  constructor(c: NodesCluster) {
    this.c = c;
    this.loop = this.run();
  }

  private async poll(): Promise<void> {
    const r = await this.c.request('lb', JOBS, { timeoutMs: 3000 }).catch(() => undefined);
    if (r?.status !== 200) return;
    const jobs = (JSON.parse(r.body) as JobList).items;
    const live = new Set<string>();
    let podsRead = false;
    if (jobs.some((j) => j.spec?.suspend === true)) {
      const p = await this.c.request('lb', AGENT_PODS, { timeoutMs: 3000 }).catch(() => undefined);
      if (p?.status === 200) {
        podsRead = true;
        for (const pod of (JSON.parse(p.body) as PodList).items) {
          const phase = pod.status?.phase;
          const job = pod.metadata.labels?.['batch.kubernetes.io/job-name'];
          if (job && phase !== 'Succeeded' && phase !== 'Failed') live.add(job);
        }
      }
    }
    const now = Date.now();
    for (const j of jobs) {
      const key = j.metadata.annotations?.[KEY_ANNOTATION];
      const server = j.metadata.annotations?.['upgrade.apiserver.dev/server'];
      const action = ACTIONS[j.metadata.labels?.['upgrade.apiserver.dev/action'] ?? ''];
      if (!key || !server || !action) continue;
      let op = this.ops.get(key);
      if (!op) {
        op = { key, server, action, start: now, landed: false, ...(j.metadata.annotations?.[EMULATED_VERSION_ANNOTATION] ? { emulated: true } : {}) };
        this.ops.set(key, op);
        this.lastChange = now;
      }
      if (op.end === undefined && ((j.status?.succeeded ?? 0) > 0 || (j.status?.failed ?? 0) > 0)) {
        op.end = now;
        op.landed = (j.status?.succeeded ?? 0) > 0;
        this.lastChange = now;
      } else if (op.end === undefined && j.spec?.suspend === true && podsRead && !live.has(j.metadata.name)) {
        op.end = now;
        this.lastChange = now;
      }
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      await this.poll();
      await sleep(300);
    }
  }

  /** A replacement of node i's server is in flight (its Job not finished). */
  busy(hostname: string): boolean {
    return [...this.ops.values()].some((o) => o.server === hostname && o.end === undefined);
  }

  get inFlight(): boolean {
    return [...this.ops.values()].some((o) => o.end === undefined);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await this.poll();
  }
}

/** Each server as it answers for itself: up while its /readyz says 200 (down after two failed looks), its release and emulation from /version. */
class ServerRecorder {
  readonly servers: ServerRecord[] = [];
  private readonly last = new Map<string, ServerRecord>();
  private readonly fails = new Map<string, number>();
  private readonly firstFail = new Map<string, number>();
  private running = true;
  private readonly loop: Promise<void>;
  private readonly c: NodesCluster;

  constructor(c: NodesCluster) {
    this.c = c;
    this.loop = this.run();
  }

  private async sampleOne(i: number): Promise<void> {
    const host = this.c.node(i).hostname;
    const prev = this.last.get(host);
    const answered = await this.c.request(i, '/readyz', { timeoutMs: 3000 }).then((r) => r.status === 200, () => false);
    // Down after two failed looks in a row, dated from the first: one slow answer on a loaded machine is no outage.
    const fails = answered ? 0 : (this.fails.get(host) ?? 0) + 1;
    this.fails.set(host, fails);
    if (fails === 1) this.firstFail.set(host, Date.now());
    const ready = answered || (fails < 2 && prev !== undefined && prev.up);
    let version = prev?.version ?? OLD_VERSION;
    let emulation = prev?.emulation;
    if (ready) {
      const v = await this.c.request(i, '/version', { timeoutMs: 3000 }).then((r) => (r.status === 200 ? JSON.parse(r.body) as { gitVersion?: string; emulationMajor?: string; emulationMinor?: string } : undefined), () => undefined);
      if (v?.gitVersion) {
        version = v.gitVersion;
        const emulated = emulationOf(v);
        // Emulating its own minor is no emulation (every 1.31+ server reports one).
        emulation = emulated !== undefined && !version.startsWith(`v${emulated}.`) ? emulated : undefined;
      }
    }
    const rec: ServerRecord = { t: ready ? Date.now() : this.firstFail.get(host) ?? Date.now(), server: host, up: ready, version, ...(emulation ? { emulation } : {}) };
    if (!prev || prev.up !== rec.up || prev.version !== rec.version || prev.emulation !== rec.emulation) {
      this.last.set(host, rec);
      this.servers.push(rec);
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      await Promise.all(this.c.nodes.map((n) => this.sampleOne(n.index)));
      await sleep(250);
    }
  }

  /** Waits (bounded) until node i's server answers /readyz again; returns when it did. */
  async readyAgain(i: number, boundMs: number): Promise<number> {
    const until = Date.now() + boundMs;
    while (Date.now() < until) {
      if (await this.c.request(i, '/readyz', { timeoutMs: 3000 }).then((r) => r.status === 200, () => false)) return Date.now();
      await sleep(250);
    }
    return Date.now();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

const ETCD_PORT = 2379;

/**
 * A policy routing rule in a node's namespace that drops its TCP packets to address:port (blackhole: no answer, the
 * connection hangs as on a cut link). A rule change flushes the routing cache, so open connections are cut too.
 */
function cutRule(address: string, port: number): string[] {
  return ['priority', '90', 'to', `${address}/32`, 'ipproto', 'tcp', 'dport', String(port), 'blackhole'];
}

function ip(netns: string, args: string[]): Promise<string> {
  return runOk('ip', ['-n', netns, ...args], { timeoutMs: 10_000 });
}

/** Adds each (namespace, rule), waits for `heal`, then deletes them whatever happened. */
async function cut(rules: [string, string[]][], heal: () => Promise<void>): Promise<void> {
  for (const [netns, rule] of rules) await ip(netns, ['rule', 'add', ...rule]);
  try {
    await heal();
  } finally {
    for (const [netns, rule] of rules) await ip(netns, ['rule', 'del', ...rule]).catch(() => undefined);
  }
}

/** `ctr` on node i's containerd, bounded: containerd may be the component a fault has hung. */
function ctr(c: NodesCluster, i: number, args: string[]): Promise<string> {
  return runOk('ctr', ['-a', c.containerdSocket(i), '-n', 'k8s.io', ...args], { timeoutMs: 60_000 });
}

async function apiserverContainers(c: NodesCluster, i: number): Promise<string[]> {
  return (await ctr(c, i, ['containers', 'ls', '-q', 'labels."io.kubernetes.container.name"==kube-apiserver'])).split('\n').filter(Boolean);
}

/** Runs one scheduled upgrade in nodes mode with the static Pod driver and judges its history. */
export async function runNodesUpgrade(s: Schedule, log: (m: string) => void = () => undefined): Promise<UpgradeResult> {
  const t0 = Date.now();
  const notes: string[] = [];
  const faultDown: (Span & { server: string })[] = [];
  const breaches: BreachWindow[] = [];
  let healedAt = 0;
  // Resumes of a resting pause after the heal (liveness runs, Schedule.resumeAfterHeal).
  const resumes: number[] = [];
  const c = await NodesCluster.start({ nodes: 3, featureGates: s.spec.gate ? { [PROXY_GATE]: true } : {} });
  const replicas = new Replicas(async () => startOperator(c, { healthPort: await freePort(), extraArgs: ['--agent-image', OPERATOR_IMAGE] }), notes);
  let traffic: TrafficRecorder | undefined;
  let rw: ReadWriteTraffic | undefined;
  let jobs: JobRecorder | undefined;
  let servers: ServerRecorder | undefined;
  let status: StatusRecorder | undefined;
  let createdAt = Date.now();
  let harnessError: string | undefined;
  let batchMax: number = s.spec.batchSize;
  let start: StartConditions | undefined;
  let late: LateFaults | undefined;
  try {
    await installCrd(c);
    await replicas.add();
    traffic = new TrafficRecorder(c, NEW_ONLY, { intervalMs: 100, maxMs: 2 * s.windowMs + 120_000 });
    rw = await ReadWriteTraffic.start((p, o) => c.request('lb', p, o), 'campaign-rw', { intervalMs: 200 });
    jobs = new JobRecorder(c);
    servers = new ServerRecorder(c);
    status = new StatusRecorder(c, NAME);
    start = await StartConditions.prepare(s, c.dir);
    const spec: Record<string, unknown> = {
      targetVersion: NEW_VERSION,
      strategy: { batchSize: s.spec.batchSize, soakDuration: `${s.spec.soakSeconds}s`, batchTimeout: `${BATCH_TIMEOUT_SECONDS}s`, ...phasesStrategy(s) },
      proxy: { gate: 'Auto', allowAlphaGate: true },
      // No agentImage: the agent runs from the operator's own image, as the chart passes it.
      driver: { staticPod: { readyTimeout: '2m' } },
      analysis: { interval: `${s.spec.intervalSeconds}s`, failureLimit: s.spec.failureLimit, onBreach: s.spec.onBreach },
    };
    const windowNote = await start.beforeCreate(spec, undefined, (p, o) => c.request('lb', p, o));
    if (windowNote) log(windowNote);
    await createUpgrade(c, { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: NAME }, spec });
    createdAt = Date.now();
    if (s.spec.standby) await replicas.add();
    const jobRec = jobs;
    late = new LateFaults({ request: (p, o) => c.request('lb', p, o), upgradePath: `${UPGRADES}/${NAME}`, replicas, notes, schedule: s });
    const lateRef = late;
    const statusRef = status;
    const srvRec = servers;
    const conditions = start;
    const shared = {
      request: (p: string, o: Parameters<typeof c.request>[2]) => c.request('lb', p, o),
      upgradePath: `${UPGRADES}/${NAME}`, spec: s.spec, replicas, notes,
      raiseBatch: (n: number) => void (batchMax = Math.max(batchMax, n)),
    };
    // A kill, a freeze or a cut at a time per server, never one the agent is replacing.
    const claims = new ServerClaims((i) => jobRec.busy(c.node(i).hostname), notes);
    /**
     * An outage the harness makes: down until /readyz answers again, and a breach the operator must act on from when
     * the harness first saw the server fail /readyz. A server cut from etcd answers ready for 2-4 s more, until its
     * own etcd checks time out (measured: 4.0 s on a quiet machine, 4.3 s in the replay of seed 102 #4); until it
     * says so, nobody (the operator, the balancer, a kubelet) can tell it is down.
     */
    const outage = async (i: number, make: () => Promise<void>, breach = true): Promise<void> => {
      const from = Date.now();
      const host = c.node(i).hostname;
      await make();
      const to = await srvRec.readyAgain(i, 180_000);
      faultDown.push({ server: host, from, to });
      const seen = srvRec.servers.find((r) => r.server === host && !r.up && r.t >= from && r.t <= to)?.t;
      if (breach && seen !== undefined) breaches.push({ server: host, from: seen, to });
      else if (breach) notes.push(`${host}: never seen failing /readyz during its outage (${((to - from) / 1000).toFixed(1)} s): no breach required`);
    };
    const targetImage = c.images.find((img) => img.name === `${MIRROR_REPOSITORY}/kube-apiserver:${NEW_VERSION}`);

    const inject = async (f: Fault): Promise<void> => {
      if (isShared(f.kind)) return injectShared(f, shared);
      if (conditions.handles(f.kind)) return conditions.inject(f);
      // No component is moved in nodes mode (its kubelets would remove a mirror Pod without a static Pod).
      if (isLate(f.kind)) return lateRef.inject(f, []);
      const heal = (): Promise<void> => sleep(f.durationMs);
      const node = f.server ?? 0;
      switch (f.kind) {
        case 'apiserver-kill':
          // SIGKILL of the container whenever it runs, for the fault's duration: a crash loop (the kubelet alone
          // would start it again within seconds). The kubelet's restart back-off may keep it down after the last kill.
          return claims.with(f, (i) => outage(i, async () => {
            const until = Date.now() + f.durationMs;
            do {
              for (const id of await apiserverContainers(c, i).catch(() => [])) await ctr(c, i, ['tasks', 'kill', '-s', 'SIGKILL', id]).catch(() => undefined);
              await sleep(1000);
            } while (Date.now() < until);
          }));
        case 'apiserver-stop':
          // The container's cgroup frozen: a hung server, as SIGSTOP is in process mode (down, but no breach required).
          return claims.with(f, async (i) => {
            const ids = await apiserverContainers(c, i);
            await outage(i, async () => {
              for (const id of ids) await ctr(c, i, ['tasks', 'pause', id]).catch(() => undefined);
              await heal();
              for (const id of ids) await ctr(c, i, ['tasks', 'resume', id]).catch(() => undefined);
            }, false);
          });
        case 'kubelet-stop':
        case 'containerd-stop': {
          // The node's server keeps running; the node stops acting (a replacement under way there waits).
          const component = f.kind === 'kubelet-stop' ? 'kubelet' : 'containerd';
          c.signalComponent(node, component, 'SIGSTOP');
          try {
            await heal();
          } finally {
            c.signalComponent(node, component, 'SIGCONT');
          }
          return;
        }
        case 'image-missing': {
          // The target image gone from the node (no registry here: a pull of it fails) until the heal imports it again.
          if (!targetImage) return void notes.push(`${f.kind}: the cluster has no ${NEW_VERSION} image to remove`);
          await ctr(c, node, ['images', 'rm', targetImage.name]).catch((err: Error) => notes.push(`${f.kind}: ${err.message.split('\n')[0]}`));
          await heal();
          await importImages(c.containerdSocket(node), [targetImage]);
          return;
        }
        case 'etcd-cut':
          // The node's packets to etcd dropped (a blackhole: connections hang, as on a broken link): its server
          // loses its storage and leaves /readyz.
          return claims.with(f, (i) => outage(i, () => cut([[c.node(i).netns, cutRule(`${c.prefix}.1`, ETCD_PORT)]], heal)));
        case 'peer-cut': {
          // Two servers cannot reach each other (both directions): each still serves, but cannot proxy to the other.
          const a = c.node(node);
          const b = c.node((node + 1) % 3);
          return cut([[a.netns, cutRule(b.address, SECURE_PORT)], [b.netns, cutRule(a.address, SECURE_PORT)]], heal);
        }
        default:
          notes.push(`${f.kind}: not a fault of the nodes mode`);
      }
    };
    const injected = runFaults(s, createdAt, inject, log, notes, (f) => lateRef.when(f, createdAt, statusRef, createdAt + s.windowMs)).then((t) => {
      healedAt = t;
    });
    late.startHuman(status, () => healedAt);
    await awaitRest({
      createdAt, windowMs: s.windowMs, healedAt: () => healedAt, status, lastDriverActivity: () => jobRec.lastChange, inFlight: () => jobRec.inFlight,
      ...(s.resumeAfterHeal ? { resume: () => resumeUpgrade(shared), resumes, notes } : {}),
    });
    await injected;
  } catch (err) {
    harnessError = (err as Error).message.split('\n').slice(0, 3).join(' ');
  }
  const endedAt = Date.now();
  await Promise.all([jobs?.stop(), servers?.stop(), status?.stop(), rw?.stop(), traffic?.stop()]);
  await late?.stop();
  await replicas.stop();
  const result = judge({
    schedule: s, t0, createdAt, endedAt, healedAt, batchMax, ops: [...(jobs?.ops.values() ?? [])], servers: servers?.servers ?? [], statuses: status?.statuses ?? [], checks: status?.checks ?? [],
    batchTimeoutMs: BATCH_TIMEOUT_SECONDS * 1000, breaches, faultDown, blind: replicas.blind, takeoverMs: replicas.takeoverMs, resumes, samples: traffic?.samples ?? [], notes, harnessError,
    callsSeen: status?.callsSeen ?? [], ...start?.recorded(endedAt),
    ...(late ? { late: late.recorded(endedAt) } : {}),
  });
  await c.teardown();
  return result;
}

import { mkdir, readFile, cp, writeFile, readdir, chown, chmod } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { binary, buildCommand, building, builtBinary, clusterBinaries, ensureBinaries, ETCD_VERSION, OLD_VERSION, verifyBinary } from './binaries.ts';
import { createPki, createServingCert, type Pki, type ServingCert } from './pki.ts';
import { createNetns, addHostAddress, type Netns } from './netns.ts';
import { ManagedProcess } from './process.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import { currentSessions, haproxyCommand, haproxySocket, writeHaproxyConfig } from './haproxy.ts';
import { writePrometheusConfig } from './prometheus.ts';
import { apiServerFlags, proxyGateEnabled, SECURE_PORT } from './apiserver-flags.ts';
import { registerTeardown, unregisterTeardown, destroySync, sweepStale, stateDir, writeState, STATE_ROOT, type ClusterState } from './cleanup.ts';
import { adminRequest, type HttpResult } from './http.ts';
import { sleep, waitFor } from './exec.ts';
import { requireCommands } from './requirements.ts';

export interface ServerConfig {
  version: string;
  /** Feature gates passed with --feature-gates; UnknownVersionInteroperabilityProxy defaults per version. */
  featureGates?: Record<string, boolean>;
  extraFlags?: string[];
}

export interface ClusterOptions {
  servers?: number;
  version?: string;
  featureGates?: Record<string, boolean>;
  extraFlags?: string[];
  /** Per-server overrides, by index. */
  perServer?: Partial<ServerConfig>[];
  /** Log lines to stderr as the cluster comes up. */
  verbose?: boolean;
  /**
   * Audit logging on every server: `policy` is the audit Policy (YAML or JSON), written once for the cluster;
   * each server logs to its own file (`ServerInfo.auditLogPath`, kept across restarts).
   */
  audit?: { policy: string };
  /**
   * Servers of a version run as this uid/gid (setpriv, after the hostname is set) instead of root, whenever
   * they start — replacements included. A version's cohort then has its own socket owner, which policy
   * routing can match (`ip rule uidrange`): all servers share one network namespace and leave it from the
   * same source address, so that is how a network rule tells new servers from old ones.
   */
  runAs?: Record<string, { uid: number; gid: number }>;
  /** Days of validity of each server's serving certificate, by index (default 365): a certificate close to expiry. */
  servingCertDays?: (number | undefined)[];
  /** Versions the servers may be replaced with besides the default old and new: built and checked before anything starts. */
  replaceVersions?: string[];
}

export interface ServerInfo {
  index: number;
  name: string;
  hostname: string;
  address: string;
  port: number;
  url: string;
  kubeconfig: string;
  config: Required<ServerConfig>;
  proxyGate: boolean;
  logPath: string;
  /** The kube-apiserver flags of the server's current (or last) run: what a Describe of it answers. */
  flags: string[];
  /** This server's audit log, when the cluster was started with `audit`. */
  auditLogPath?: string;
  running: boolean;
  /**
   * When the current run was last found not ready: the send time of the last /readyz of the start's wait that did not
   * answer ready (the spawn, when the first did). The run answered ready only after this, and up to one poll of the
   * wait before start() returned.
   */
  notReadyAt?: number;
}

interface ServerSlot {
  info: ServerInfo;
  serving: ServingCert;
  proc?: ManagedProcess;
  logSeq: number;
}

/** A TCP port free on 127.0.0.1 right now (the kernel picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * A real HA control plane on one machine: one etcd and N kube-apiservers, each with its own hostname
 * (UTS namespace) and its own address (inside a network namespace), behind haproxy on loopback.
 */
export class Cluster {
  readonly runId: string;
  readonly dir: string;
  readonly pki: Pki;
  readonly netns: Netns;
  /** Admin kubeconfig that goes through the balancer. */
  readonly kubeconfig: string;
  readonly lbUrl: string;
  private slots: ServerSlot[];
  /** Each server's replacement under way (replace): the next one waits for it. */
  private readonly replacing = new Map<number, Promise<void>>();
  private etcd?: ManagedProcess;
  private haproxy?: ManagedProcess;
  private prometheus?: { proc: ManagedProcess; url: string; port: number };
  private state: ClusterState;
  private log: (msg: string) => void;
  private tornDown = false;
  private auditPolicyFile?: string;
  private runAs: Record<string, { uid: number; gid: number }>;

  private constructor(init: { runId: string; dir: string; pki: Pki; netns: Netns; kubeconfig: string; lbUrl: string; slots: ServerSlot[]; state: ClusterState; log: (m: string) => void; auditPolicyFile?: string; runAs?: Record<string, { uid: number; gid: number }> }) {
    this.runId = init.runId;
    this.dir = init.dir;
    this.pki = init.pki;
    this.netns = init.netns;
    this.kubeconfig = init.kubeconfig;
    this.lbUrl = init.lbUrl;
    this.slots = init.slots;
    this.state = init.state;
    this.log = init.log;
    if (init.auditPolicyFile) this.auditPolicyFile = init.auditPolicyFile;
    this.runAs = init.runAs ?? {};
  }

  static async start(opts: ClusterOptions = {}): Promise<Cluster> {
    const t0 = Date.now();
    const log = (m: string): void => {
      if (opts.verbose) process.stderr.write(`[cluster +${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}\n`);
    };
    if (process.getuid?.() !== 0) throw new Error('the e2e cluster must run as root: it creates a network namespace and runs each kube-apiserver under unshare --uts');
    requireCommands(['haproxy', 'openssl', 'ip', 'unshare'], 'the e2e cluster');
    const swept = sweepStale();
    if (swept > 0) log(`removed ${swept} stale cluster(s) left by dead runs`);
    const n = opts.servers ?? 3;
    const configs: Required<ServerConfig>[] = Array.from({ length: n }, (_, i) => {
      const o = opts.perServer?.[i] ?? {};
      return {
        version: o.version ?? opts.version ?? OLD_VERSION,
        featureGates: o.featureGates ?? opts.featureGates ?? {},
        extraFlags: o.extraFlags ?? opts.extraFlags ?? [],
      };
    });
    // Build (or find in the cache) every binary this cluster may run first, the versions it can be replaced
    // with included: a cold build never races a start timeout, and a replacement never waits on a build.
    const versions = [...new Set([...configs.map((c) => c.version), ...(opts.replaceVersions ?? [])])];
    const specs = clusterBinaries(versions);
    log(`binaries: etcd ${ETCD_VERSION}, kube-apiserver ${[...new Set(specs.filter((s) => s.what === 'kube-apiserver').map((s) => s.version))].join(', ')}`);
    const paths = await ensureBinaries(specs);
    await Promise.all(specs.map((s, i) => verifyBinary(s.what as 'kube-apiserver' | 'etcd', paths[i]!, s.version)));

    const runId = randomBytes(3).toString('hex');
    const dir = stateDir(runId);
    await mkdir(dir, { recursive: true });
    const state: ClusterState = { runId, ownerPid: process.pid, dir, netns: `auo-${runId}`, hostVeth: `auo${runId}h`, rootPids: [] };
    writeState(state);
    registerTeardown(runId, () => destroySync(state));

    try {
      const [pki, netns] = await Promise.all([createPki(join(dir, 'pki')), createNetns(runId, STATE_ROOT)]);
      state.prefix = netns.prefix;
      writeState(state);
      const lbPort = await freePort();
      const lbUrl = `https://127.0.0.1:${lbPort}`;
      const kubeconfig = await writeKubeconfig(join(dir, 'admin.kubeconfig'), lbUrl, pki.caCert, pki.adminCert, pki.adminKey);
      const auditPolicyFile = opts.audit ? join(dir, 'audit-policy.yaml') : undefined;
      if (auditPolicyFile) await writeFile(auditPolicyFile, opts.audit!.policy);
      const slots: ServerSlot[] = [];
      for (let i = 0; i < n; i++) {
        const address = `${netns.prefix}.${11 + i}`;
        const hostname = `cp-${i + 1}`;
        await addHostAddress(netns, address);
        const serving = await createServingCert(pki, hostname, [address, '127.0.0.1', '10.96.0.1'], [hostname], opts.servingCertDays?.[i]);
        const url = `https://${address}:${SECURE_PORT}`;
        const cfg = configs[i]!;
        slots.push({
          serving,
          logSeq: 0,
          info: {
            index: i, name: hostname, hostname, address, port: SECURE_PORT, url,
            kubeconfig: await writeKubeconfig(join(dir, `${hostname}.kubeconfig`), url, pki.caCert, pki.adminCert, pki.adminKey),
            config: cfg, proxyGate: proxyGateEnabled(cfg.version, cfg.featureGates), logPath: '', flags: [], running: false,
            ...(auditPolicyFile ? { auditLogPath: join(dir, `${hostname}.audit.log`) } : {}),
          },
        });
      }
      const c = new Cluster({ runId, dir, pki, netns, kubeconfig, lbUrl, slots, state, log, ...(auditPolicyFile ? { auditPolicyFile } : {}), ...(opts.runAs ? { runAs: opts.runAs } : {}) });
      await c.startEtcd();
      await Promise.all(slots.map((_, i) => c.start(i)));
      await c.startHaproxy(lbPort);
      log(`ready: ${n} apiservers behind ${lbUrl}`);
      return c;
    } catch (err) {
      unregisterTeardown(runId);
      destroySync(state);
      throw err;
    }
  }

  get servers(): ServerInfo[] {
    return this.slots.map((s) => ({ ...s.info, running: s.proc !== undefined && !s.proc.exited }));
  }

  server(i: number): ServerInfo {
    const s = this.slots[i];
    if (!s) throw new Error(`no server ${i}; the cluster has ${this.slots.length}`);
    return { ...s.info, running: s.proc !== undefined && !s.proc.exited };
  }

  private inNetns(cmd: string[]): [string, string[]] {
    return ['ip', ['netns', 'exec', this.netns.name, ...cmd]];
  }

  private async startEtcd(): Promise<void> {
    const etcd = await binary('etcd', ETCD_VERSION);
    const [cmd, args] = this.inNetns([etcd, '--name=etcd0', `--data-dir=${join(this.dir, 'etcd')}`,
      '--listen-client-urls=http://127.0.0.1:2379', '--advertise-client-urls=http://127.0.0.1:2379',
      '--listen-peer-urls=http://127.0.0.1:2380', '--initial-advertise-peer-urls=http://127.0.0.1:2380',
      '--initial-cluster=etcd0=http://127.0.0.1:2380', '--unsafe-no-fsync=true', '--log-level=warn']);
    this.etcd = new ManagedProcess(cmd, args, join(this.dir, 'etcd.log'));
    this.log('etcd started');
  }

  private async startHaproxy(port: number): Promise<void> {
    const cfg = await writeHaproxyConfig(this.dir, `127.0.0.1:${port}`, this.slots.map((s) => ({ name: s.info.name, address: s.info.address, port: s.info.port })));
    this.haproxy = new ManagedProcess('haproxy', ['-db', '-f', cfg], join(this.dir, 'haproxy.log'));
    this.state.rootPids.push(this.haproxy.pid);
    writeState(this.state);
    await waitFor('haproxy to route to a ready apiserver', 30_000, async () => {
      const r = await adminRequest(this.pki, `${this.lbUrl}/readyz`, { timeoutMs: 2000 });
      return r.status === 200 ? true : undefined;
    });
  }

  /**
   * Starts a real Prometheus (Debian's `prometheus` binary, or AUO_PROMETHEUS) that scrapes every
   * server, and answers its base URL once all targets are up. Torn down with the cluster. Started again after
   * it died, it listens on the same address (what an ApiServerUpgrade's analysis names).
   */
  async startPrometheus(o: { scrapeIntervalSeconds?: number; ruleFiles?: readonly string[] } = {}): Promise<string> {
    if (this.prometheus && !this.prometheus.proc.exited) return this.prometheus.url;
    if (!process.env.AUO_PROMETHEUS) requireCommands(['prometheus'], 'startPrometheus()');
    const interval = o.scrapeIntervalSeconds ?? 1;
    const cfg = await writePrometheusConfig(this.dir, this.pki, this.slots.map((s) => ({ address: s.info.address, port: s.info.port })), interval, o.ruleFiles ?? []);
    const port = this.prometheus?.port ?? await freePort();
    const url = `http://127.0.0.1:${port}`;
    const proc = new ManagedProcess(process.env.AUO_PROMETHEUS ?? 'prometheus', [
      `--config.file=${cfg}`, `--storage.tsdb.path=${join(this.dir, 'prometheus')}`, `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=1h', '--log.level=warn',
    ], join(this.dir, 'prometheus.log'));
    this.state.rootPids.push(proc.pid);
    writeState(this.state);
    this.prometheus = { proc, url, port };
    const want = this.slots.filter((s) => s.proc && !s.proc.exited).length;
    await waitFor(`prometheus to scrape ${want} apiservers`, 60_000, async () => {
      if (proc.exited) throw new Error(`prometheus exited (${proc.exitCode ?? proc.signal}); see ${proc.logPath}`);
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent('sum(up{job="apiserver"})')}`);
      const doc = (await res.json()) as { data?: { result?: { value: [number, string] }[] } };
      return Number(doc.data?.result?.[0]?.value[1] ?? 0) >= want ? true : undefined;
    }, 500);
    this.log(`prometheus scraping ${want} apiservers every ${interval}s at ${url}`);
    return url;
  }

  /** Signals the Prometheus process: SIGSTOP/SIGCONT for a hung one, SIGKILL for one gone (startPrometheus() brings it back). */
  signalPrometheus(sig: NodeJS.Signals): void {
    const p = this.prometheus?.proc;
    if (!p || p.exited) throw new Error('no Prometheus is running');
    process.kill(p.pid, sig);
  }

  /**
   * The kube-apiserver binary of a version, built and checked to start (`--version`). Never builds: when it is
   * missing this throws, and the caller has touched nothing — a server is never stopped before the binary that
   * replaces it exists (docs/drivers.md asks the same of every webhook).
   */
  async readyBinary(version: string): Promise<string> {
    const bin = builtBinary('kube-apiserver', version);
    if (bin === undefined) {
      const spec = { what: 'kube-apiserver' as const, version };
      throw new Error(`kube-apiserver ${version} is not built on this machine (${building('kube-apiserver', version) ? 'its build is still running' : `build it first: ${buildCommand(spec)}`}); nothing was stopped`);
    }
    await verifyBinary('kube-apiserver', bin, version);
    return bin;
  }

  /** Starts server i with its current config (same hostname and address as before) and waits for /readyz. */
  async start(i: number): Promise<void> {
    const slot = this.slots[i]!;
    if (slot.proc && !slot.proc.exited) throw new Error(`${slot.info.name} is already running`);
    const cfg = slot.info.config;
    const bin = await this.readyBinary(cfg.version);
    const audit = this.auditPolicyFile && slot.info.auditLogPath ? { policyFile: this.auditPolicyFile, logPath: slot.info.auditLogPath } : undefined;
    const flags = apiServerFlags({ version: cfg.version, address: slot.info.address, etcdUrl: 'http://127.0.0.1:2379', pki: this.pki, serving: slot.serving, featureGates: cfg.featureGates, extraFlags: cfg.extraFlags, ...(audit ? { audit } : {}) });
    const runAs = this.runAs[cfg.version];
    if (runAs) await this.shareFilesWith(runAs, slot.info.auditLogPath);
    const drop = runAs ? ['setpriv', `--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, '--clear-groups'] : [];
    // unshare gives the server its own UTS namespace: the identity Lease name derives from the hostname.
    const [cmd, args] = this.inNetns(['unshare', '--uts', '--', 'sh', '-c', 'hostname "$0" && exec "$@"', slot.info.hostname, ...drop, bin, ...flags]);
    slot.logSeq++;
    slot.info.logPath = join(this.dir, `${slot.info.name}.${slot.logSeq}.log`);
    slot.info.proxyGate = proxyGateEnabled(cfg.version, cfg.featureGates);
    slot.info.flags = flags;
    slot.info.notReadyAt = Date.now();
    slot.proc = new ManagedProcess(cmd, args, slot.info.logPath);
    this.log(`${slot.info.name} starting ${cfg.version} at ${slot.info.address} (proxy gate ${slot.info.proxyGate ? 'on' : 'off'})`);
    const proc = slot.proc;
    // An exit ends the wait at once: waitFor retries what its probe throws (a stop by someone else, such as a
    // hook's replacement, held a restart here for the whole 180 s: process seed 201 #13).
    const state = await waitFor(`${slot.info.name} /readyz`, 180_000, async () => {
      if (proc.exited) return 'exited';
      const sent = Date.now();
      const r = await adminRequest(this.pki, `${slot.info.url}/readyz`, { timeoutMs: 2000 }).catch((err: unknown) => {
        slot.info.notReadyAt = sent;
        throw err;
      });
      if (r.status === 200) return 'ready';
      slot.info.notReadyAt = sent;
      return undefined;
    }, 500).catch(async (err: Error) => {
      throw new Error(`${err.message}\nlog tail:\n${await this.logTail(i, 30)}`, { cause: err });
    });
    if (state === 'exited') throw new Error(`${slot.info.name} exited with ${proc.exitCode ?? proc.signal}; log tail:\n${await this.logTail(i, 30)}`);
    this.log(`${slot.info.name} ready`);
  }

  /**
   * What a server running as `runAs` must read or write: the keys it is given (group-readable by its gid; the
   * CA keys stay root's) and its audit log (created and handed over, so restarts as root or not append to it).
   */
  private async shareFilesWith(runAs: { uid: number; gid: number }, auditLogPath: string | undefined): Promise<void> {
    const keys = (await readdir(this.pki.dir)).filter((f) => f.endsWith('.key') && f !== 'ca.key' && f !== 'front-proxy-ca.key');
    await Promise.all(keys.map(async (f) => {
      await chown(join(this.pki.dir, f), 0, runAs.gid);
      await chmod(join(this.pki.dir, f), 0o640);
    }));
    if (auditLogPath) {
      await writeFile(auditLogPath, '', { flag: 'a' });
      await chown(auditLogPath, runAs.uid, runAs.gid);
    }
  }

  /** Graceful stop: SIGTERM, as a kubelet or systemd would, and wait for the exit. */
  async stop(i: number): Promise<void> {
    await this.slots[i]!.proc?.stop();
    this.log(`${this.slots[i]!.info.name} stopped`);
  }

  /** SIGKILL: no graceful shutdown, the identity Lease is left behind as after a crash. */
  async kill(i: number): Promise<void> {
    await this.slots[i]!.proc?.kill();
    this.log(`${this.slots[i]!.info.name} killed`);
  }

  /** Sends a signal to server i's process group (SIGSTOP/SIGCONT: a hung server, as the fault campaign injects). */
  signal(i: number, sig: NodeJS.Signals): void {
    this.slots[i]!.proc?.signalGroup(sig);
    this.log(`${this.slots[i]!.info.name} sent ${sig}`);
  }

  /**
   * Replaces server i in place: check that the new version's binary exists and starts (else throw, touching
   * nothing), drain it at the balancer, graceful stop, start with the new version/gates/flags (same hostname
   * and address), and put it back in rotation once ready.
   * `drain: false` skips the balancer steps, leaving haproxy to notice the stop through /readyz.
   */
  /**
   * One replacement of a server at a time, in the order asked, as a node runs one manifest at a time: the hook's
   * replacement and a campaign fault's restart of the same server interleaved their stops and starts and left it
   * down while both thought it replaced (campaign seed 111 #3).
   */
  replace(i: number, next: Partial<ServerConfig> & { drain?: boolean }): Promise<ServerInfo> {
    const prev = this.replacing.get(i) ?? Promise.resolve();
    const run = prev.then(() => this.replaceNow(i, next), () => this.replaceNow(i, next));
    const settled = run.then(() => undefined, () => undefined);
    this.replacing.set(i, settled);
    void settled.then(() => {
      if (this.replacing.get(i) === settled) this.replacing.delete(i);
    });
    return run;
  }

  private async replaceNow(i: number, next: Partial<ServerConfig> & { drain?: boolean }): Promise<ServerInfo> {
    const slot = this.slots[i];
    if (!slot) throw new Error(`no server ${i}; the cluster has ${this.slots.length}`);
    const target = {
      version: next.version ?? slot.info.config.version,
      featureGates: next.featureGates ?? slot.info.config.featureGates,
      extraFlags: next.extraFlags ?? slot.info.config.extraFlags,
    };
    // Before anything is stopped: the replacement's binary must exist and start (throws, server untouched).
    await this.readyBinary(target.version);
    const drain = next.drain !== false && this.haproxy !== undefined;
    if (drain) await this.drain(i);
    await this.stop(i);
    // The configuration changes once the old process is gone: while it drains and stops it still runs the old one
    // (the fault campaign's process table read the new version 6 s early and judged a correct Succeeded wrong,
    // process seed 331 #21).
    slot.info.config = target;
    await this.start(i);
    if (drain) await this.undrain(i);
    return this.server(i);
  }

  /**
   * Takes server i out of the balancer's rotation for new connections, and waits (at most 2 s) for the
   * connections it has to finish; long-lived ones (watches, kept-alive clients) end when the server stops.
   * Why before SIGTERM: a v1.35.4 server in graceful shutdown can no longer look up its peers' addresses
   * (its storage client is closed at once), so every request it would proxy hangs ~2.5 s and answers 503
   * for the whole --shutdown-delay-duration — measured, see docs/e2e-cluster.md.
   */
  async drain(i: number): Promise<void> {
    const name = this.slots[i]!.info.name;
    const socket = haproxySocket(this.dir);
    await haproxyCommand(socket, `set server apiservers/${name} state drain`);
    const t0 = Date.now();
    while (Date.now() - t0 < 2000 && (currentSessions(await haproxyCommand(socket, 'show stat'), 'apiservers').get(name) ?? 0) > 0) await sleep(50);
    this.log(`${name} drained at the balancer (${Date.now() - t0} ms)`);
  }

  /** Puts server i back in the balancer's rotation (haproxy still requires its /readyz checks to pass). */
  async undrain(i: number): Promise<void> {
    await haproxyCommand(haproxySocket(this.dir), `set server apiservers/${this.slots[i]!.info.name} state ready`);
  }

  async logTail(i: number, lines = 50): Promise<string> {
    const p = this.slots[i]?.info.logPath;
    if (!p) return '';
    try {
      return (await readFile(p, 'utf8')).split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  /** An HTTPS request as admin to server i's own address, or to the balancer with i = 'lb'. */
  request(i: number | 'lb', path: string, opts: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number; newConnection?: boolean } = {}): Promise<HttpResult> {
    const base = i === 'lb' ? this.lbUrl : this.server(i).url;
    return adminRequest(this.pki, base + path, opts);
  }

  /** Stops everything and removes every process, namespace and file. Logs are copied first when AUO_E2E_ARTIFACTS names a folder. */
  async teardown(): Promise<void> {
    if (this.tornDown) return;
    this.tornDown = true;
    const artifacts = process.env.AUO_E2E_ARTIFACTS;
    await Promise.all(this.slots.map((s) => s.proc?.kill()));
    await Promise.all([this.haproxy?.kill(), this.etcd?.kill(), this.prometheus?.proc.kill()]);
    if (artifacts) {
      // Sockets (haproxy's runtime API) cannot be copied: fs.cp stops at the first one, losing the logs after it.
      await cp(this.dir, join(artifacts, this.runId), { recursive: true, filter: (src) => !src.includes('/etcd/') && !src.includes('/pki') && !src.endsWith('.sock') }).catch(() => undefined);
    }
    unregisterTeardown(this.runId);
    destroySync(this.state);
  }
}

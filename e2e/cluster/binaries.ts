import { spawn, execFile, execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync, writeFileSync, renameSync } from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { requireCommands } from './requirements.ts';

/** Default versions of the e2e cluster: an adjacent old/new pair where the proxy gate goes alpha -> beta. */
export const OLD_VERSION = process.env.AUO_OLD_VERSION ?? 'v1.35.4';
export const NEW_VERSION = process.env.AUO_NEW_VERSION ?? 'v1.36.3';
export const ETCD_VERSION = process.env.AUO_ETCD_VERSION ?? 'v3.6.16';
/** helm for the chart tests, built like the rest (it was `go install helm.sh/helm/v3/cmd/helm@…`). */
export const HELM_VERSION = 'v3.22.0';
/**
 * Upstream Prometheus for e2e/alerting.e2e.ts, which runs docs/quickstart.md's scrape configuration as a Prometheus in
 * a cluster would, through kubernetes_sd_configs: Debian's prometheus is built without that service discovery.
 */
export const PROMETHEUS_VERSION = 'v3.16.0';
/**
 * prometheus-operator for e2e/extended/prometheus-operator.e2e.ts: the operator kube-prometheus-stack 77.14.0 (its last
 * chart of this operator version) deploys, built from its Go module (`cmd/operator`) and run as a process.
 */
export const PROMETHEUS_OPERATOR_VERSION = 'v0.85.0';
export const PROMETHEUS_OPERATOR_MODULE = 'github.com/prometheus-operator/prometheus-operator';
/** The reference CNI plugins of the nodes mode's Pod network (github.com/containernetworking/plugins). */
export const CNI_PLUGINS_VERSION = process.env.AUO_CNI_PLUGINS_VERSION ?? 'v1.10.0';
/**
 * crictl for the real-kubeadm cluster (sigs.k8s.io/cri-tools; v1.35.0 is not served by the module proxy here): kubeadm
 * itself talks CRI through k8s.io/cri-client since v1.31 and names crictl only in its error hints, which the harness's
 * own diagnostics follow (`crictl ps -a` of a node whose static Pod did not come up).
 */
export const CRICTL_VERSION = 'v1.36.0';
/** The oldest Go that builds every default version (k8s.io/kubernetes v1.36 says `go 1.26`). */
export const MIN_GO = [1, 26] as const;
/**
 * The exact Go the project names: the install hint's tarball and the release workflow's actions/setup-go
 * go-version (test/release/workflow.test.ts holds the workflow to it).
 */
export const GO_VERSION = '1.26.8';

/** What build-binaries.sh builds; 'cni-plugins' is a folder (bridge, host-local, loopback, portmap), the rest one binary each. */
export type BinaryKind = 'kube-apiserver' | 'etcd' | 'kubectl' | 'helm' | 'kubelet' | 'kube-controller-manager' | 'kube-scheduler' | 'kube-proxy' | 'kubeadm' | 'crictl' | 'cni-plugins' | 'prometheus' | 'prometheus-operator' | ReleaseTool;
/** The release's tools (scripts/release.ts): the SBOM writer, krew (the plugin install test), the workflow linter. */
export type ReleaseTool = 'syft' | 'krew' | 'actionlint';
export const RELEASE_TOOLS: Record<ReleaseTool, { version: string; module: string }> = {
  syft: { version: 'v1.57.2', module: 'github.com/anchore/syft' },
  krew: { version: 'v0.4.3', module: 'sigs.k8s.io/krew' },
  actionlint: { version: 'v1.7.12', module: 'github.com/rhysd/actionlint' },
};
/** The plugins in the cni-plugins folder. */
export const CNI_PLUGINS = ['bridge', 'host-local', 'loopback', 'portmap'] as const;
export interface BinarySpec {
  what: BinaryKind;
  version: string;
}

const buildScript = fileURLToPath(new URL('./build-binaries.sh', import.meta.url));

/** Where built binaries live, keyed by version: $AUO_BIN_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/apiserver-upgrade-operator/bin (as build-binaries.sh). */
export function binCache(): string {
  return process.env.AUO_BIN_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'apiserver-upgrade-operator', 'bin');
}

/** The environment variable that names a prebuilt binary: AUO_KUBE_APISERVER_V1_35_4, AUO_ETCD. */
export function prebuiltVariable(what: BinaryKind, version: string): string | undefined {
  if (what === 'etcd') return 'AUO_ETCD';
  if (what === 'kube-apiserver') return `AUO_KUBE_APISERVER_${version.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
  return undefined;
}

function prebuiltFromEnv(what: BinaryKind, version: string): string | undefined {
  const key = prebuiltVariable(what, version);
  const path = key === undefined ? undefined : process.env[key];
  if (path === undefined || path === '') return undefined;
  if (!existsSync(path)) throw new Error(`${key}=${path} does not exist`);
  return path;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The binary's path if it exists now (prebuilt through the environment, or in the cache); never builds. */
export function builtBinary(what: BinaryKind, version: string): string | undefined {
  const pre = prebuiltFromEnv(what, version);
  if (pre !== undefined) return pre;
  const p = join(binCache(), `${what}-${version}`);
  if (what === 'cni-plugins') return CNI_PLUGINS.every((plugin) => isExecutable(join(p, plugin))) ? p : undefined;
  return isExecutable(p) ? p : undefined;
}

/** The command that builds a binary by hand (what error messages tell a person to run). */
export function buildCommand(s: BinarySpec): string {
  return s.what === 'kube-apiserver' || s.what === 'etcd' ? `npm run cluster -- build ${s.what === 'etcd' ? '' : s.version}`.trimEnd() : `bash e2e/cluster/build-binaries.sh ${s.what} ${s.version}`;
}

// ---------------------------------------------------------------------------------------------------------
// Go

export interface GoToolchain {
  path: string;
  version: string;
  /** PATH with the toolchain's folder in it, for the build script. */
  envPath: string;
}

function goVersion(goBin: string): string | undefined {
  try {
    const out = execFileSync(goBin, ['env', 'GOVERSION'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'local' } });
    return out.trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Go on PATH, else /usr/local/go/bin/go (where the official tarball goes); undefined when neither exists. */
export function findGo(): GoToolchain | undefined {
  const path = process.env.PATH ?? '';
  const candidates = [...path.split(delimiter).filter(Boolean).map((d) => join(d, 'go')), '/usr/local/go/bin/go'];
  for (const c of candidates) {
    if (!isExecutable(c)) continue;
    const version = goVersion(c);
    if (version === undefined) continue;
    const dir = c.slice(0, -'/go'.length);
    return { path: c, version, envPath: path.split(delimiter).includes(dir) ? path : `${dir}${delimiter}${path}` };
  }
  return undefined;
}

function goAtLeast(version: string, min: readonly [number, number]): boolean {
  const m = /^go(\d+)\.(\d+)/.exec(version);
  if (!m) return false;
  const [maj, min2] = [Number(m[1]), Number(m[2])];
  return maj > min[0] || (maj === min[0] && min2 >= min[1]);
}

/** How to get Go: the exact commands (Debian's golang-go is 1.19, too old). */
export function goInstallHint(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch === 'arm64' ? 'arm64' : process.arch;
  const tgz = `go${GO_VERSION}.linux-${arch}.tar.gz`;
  return `install Go ${MIN_GO.join('.')}+: curl -fsSL https://go.dev/dl/${tgz} | tar -C /usr/local -xz  (then /usr/local/go/bin/go is found; Debian's golang-go is too old)`;
}

/** The Go toolchain that builds the binaries, or an error that says how to get one. */
export function requireGo(why: string): GoToolchain {
  const go = findGo();
  if (go === undefined) throw new Error(`Go is needed to build ${why}, and there is none on PATH or in /usr/local/go/bin: ${goInstallHint()}. Or point AUO_KUBE_APISERVER_<VERSION> / AUO_ETCD at prebuilt binaries.`);
  if (!goAtLeast(go.version, MIN_GO)) throw new Error(`${go.path} is ${go.version}; building ${why} needs Go ${MIN_GO.join('.')}+: ${goInstallHint()}`);
  return go;
}

// ---------------------------------------------------------------------------------------------------------
// Build history: how long builds took on this machine, for the next build's ETA.

export interface BuildRecord {
  what: BinaryKind;
  version: string;
  /** Whole build: module resolution, compile, link. */
  seconds: number;
  /** From `go build` starting to the binary: compile and link. */
  compileSeconds: number;
  /** The link alone (from the main package compiled to the binary). */
  linkSeconds?: number;
  /** Packages compiled (not taken from the build cache), and the binary's package count. */
  compiled: number;
  total: number;
  /** What go list's Stale said was left to compile (a few % more than `go build -v` then names). */
  stale?: number;
  modulesDownloaded: number;
  /** Builds running at the same time, and the machine's cores. */
  concurrent: number;
  cores: number;
  at: string;
}

function historyPath(): string {
  return join(binCache(), 'build-times.json');
}

export function buildHistory(): BuildRecord[] {
  try {
    return JSON.parse(readFileSync(historyPath(), 'utf8')) as BuildRecord[];
  } catch {
    return [];
  }
}

function recordBuild(r: BuildRecord): void {
  const all = [...buildHistory(), r].slice(-50);
  mkdirSync(binCache(), { recursive: true });
  const tmp = `${historyPath()}.${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(all, null, 1)}\n`);
  renameSync(tmp, historyPath());
}

/** The record to estimate from: the last build of the same binary and version, else of the same binary. */
function lastBuildLike(what: BinaryKind, version: string): BuildRecord | undefined {
  const h = buildHistory().filter((r) => r.what === what && r.compiled > 0);
  return h.filter((r) => r.version === version).at(-1) ?? h.at(-1);
}

// ---------------------------------------------------------------------------------------------------------
// Progress: one live line per build.

type Phase = 'queued' | 'waiting' | 'resolving' | 'compiling' | 'done' | 'failed';

interface BuildState {
  spec: BinarySpec;
  phase: Phase;
  startedAt: number;
  compileStartedAt?: number;
  doneAt?: number;
  modules: number;
  total?: number;
  stale?: number;
  compiled: number;
  /** When `go build -v` named the main package: everything else is compiled, the link runs. */
  linkingSince?: number;
  concurrent: number;
  last?: BuildRecord;
}

function fmt(seconds: number): string {
  const s = Math.round(seconds);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

function eta(b: BuildState, now: number): string {
  const last = b.last;
  if (b.linkingSince !== undefined) {
    const left = last?.linkSeconds !== undefined ? last.linkSeconds - (now - b.linkingSince) / 1000 : undefined;
    return left === undefined ? 'ETA: when the link ends' : left < 5 ? 'ETA: any moment' : `ETA ~${fmt(left)} (the link took ${fmt(last!.linkSeconds!)} last time)`;
  }
  if (b.phase === 'compiling' && b.stale !== undefined && b.stale > 0) {
    const elapsed = (now - (b.compileStartedAt ?? now)) / 1000;
    // Seconds per compiled package: from the last build here (it includes the link), else from this one so far.
    const perPkg = last ? last.compileSeconds / last.compiled : b.compiled >= 30 ? elapsed / b.compiled : undefined;
    if (perPkg === undefined) return 'ETA: after ~30 packages';
    // Stale over-counts what -v will name; the last build says by how much.
    const expected = b.stale * (last?.stale ? Math.min(1, last.compiled / last.stale) : 1);
    const left = Math.max(0, expected * perPkg - elapsed);
    return left < 5 ? 'ETA: any moment (linking)' : `ETA ~${fmt(left)}`;
  }
  if (last) return `last build here: ${fmt(last.seconds)}${last.concurrent > 1 ? ` (${last.concurrent} at once)` : ''}`;
  return 'no earlier build on this machine to estimate from';
}

function line(b: BuildState, now: number): string {
  const name = `${b.spec.what} ${b.spec.version}`.padEnd(24);
  const el = fmt(((b.doneAt ?? now) - b.startedAt) / 1000);
  switch (b.phase) {
    case 'queued':
      return `  ${name} queued (at most ${buildConcurrency()} builds at once on ${availableParallelism()} cores)`;
    case 'waiting':
      return `  ${name} waiting for another process that is building it  ${el}`;
    case 'resolving':
      return `  ${name} resolving modules${b.modules ? `: ${b.modules} downloaded` : ''}  ${el}  ${eta(b, now)}`;
    case 'compiling': {
      if (b.linkingSince !== undefined) return `  ${name} linking (${b.compiled} packages compiled)  ${el}  ${eta(b, now)}`;
      const of = b.stale !== undefined ? `${b.compiled}/${b.stale} packages to compile (of ${b.total ?? '?'})` : `${b.compiled} packages`;
      return `  ${name} compiling ${of}  ${el}  ${eta(b, now)}`;
    }
    case 'done':
      return `  ${name} built in ${el} (${b.compiled} packages compiled, ${b.modules} modules downloaded)`;
    case 'failed':
      return `  ${name} FAILED after ${el}`;
  }
}

/** Renders every build in flight: redrawn in place on a terminal, a line per build every 20 s (and at each phase change) otherwise. */
class Board {
  private readonly builds: BuildState[] = [];
  private timer?: NodeJS.Timeout;
  private drawn = 0;
  private lastPrint = new Map<BuildState, { at: number; phase: Phase }>();
  private readonly out = process.stderr;

  add(b: BuildState): void {
    this.builds.push(b);
    if (this.builds.length === 1 || this.timer === undefined) {
      this.out.write(`building from the Go module proxy into ${binCache()} (once per version):\n`);
      this.timer = setInterval(() => this.render(), 1000);
    }
    this.render();
  }

  /** A phase changed or a build ended. */
  update(): void {
    this.render();
    if (this.builds.every((b) => b.phase === 'done' || b.phase === 'failed')) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.builds.length = 0;
      this.drawn = 0;
      this.lastPrint.clear();
    }
  }

  private render(): void {
    const now = Date.now();
    if (this.out.isTTY) {
      const width = this.out.columns || 160;
      const text = this.builds.map((b) => line(b, now).slice(0, width - 1));
      this.out.write((this.drawn ? `\x1b[${this.drawn}A` : '') + text.map((t) => `\x1b[2K${t}\n`).join(''));
      this.drawn = text.length;
      return;
    }
    for (const b of this.builds) {
      const p = this.lastPrint.get(b);
      if (p && p.phase === b.phase && (now - p.at < 20_000 || b.phase === 'done' || b.phase === 'failed' || b.phase === 'queued')) continue;
      this.out.write(`${line(b, now)}\n`);
      this.lastPrint.set(b, { at: now, phase: b.phase });
    }
  }
}

const board = new Board();

/** Builds at once: the machine's cores, at least 2 (module downloads overlap the other build's compile). */
export function buildConcurrency(): number {
  return Math.max(2, availableParallelism());
}

let running = 0;
const queue: (() => void)[] = [];
async function slot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= buildConcurrency()) await new Promise<void>((r) => queue.push(r));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    queue.shift()?.();
  }
}

const PACKAGE_LINE = /^[A-Za-z0-9_.~+-]+(\/[A-Za-z0-9_.~+-]+)*$/;

function runBuild(spec: BinarySpec): Promise<string> {
  const state: BuildState = { spec, phase: 'queued', startedAt: Date.now(), modules: 0, compiled: 0, concurrent: 1, last: lastBuildLike(spec.what, spec.version) };
  board.add(state);
  return slot(async () => {
    const go = requireGo(`${spec.what} ${spec.version}`);
    requireCommands(['flock'], `building ${spec.what} ${spec.version}`);
    state.phase = 'resolving';
    state.startedAt = Date.now();
    state.concurrent = running;
    board.update();
    const tail: string[] = [];
    // The package whose compile line means "linking now" (the plugins link one by one: no such single moment).
    const mainPkg = spec.what === 'etcd' ? 'go.etcd.io/etcd/server/v3' : spec.what === 'helm' ? 'helm.sh/helm/v3/cmd/helm' : spec.what === 'prometheus' ? 'github.com/prometheus/prometheus/cmd/prometheus' : spec.what === 'prometheus-operator' ? `${PROMETHEUS_OPERATOR_MODULE}/cmd/operator` : spec.what === 'crictl' ? 'sigs.k8s.io/cri-tools/cmd/crictl' : spec.what === 'cni-plugins' ? undefined : spec.what in RELEASE_TOOLS ? `${RELEASE_TOOLS[spec.what as ReleaseTool].module}/cmd/${spec.what}` : `k8s.io/kubernetes/cmd/${spec.what}`;
    try {
      return await new Promise<string>((resolve, reject) => {
        const child = spawn('bash', [buildScript, spec.what, spec.version], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PATH: go.envPath } });
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        createInterface({ input: child.stderr }).on('line', (l) => {
          state.concurrent = Math.max(state.concurrent, running);
          if (l === '@@waiting') state.phase = 'waiting';
          else if (l.startsWith('@@total ')) state.total = Number(l.slice(8));
          else if (l.startsWith('@@stale ')) state.stale = Number(l.slice(8));
          else if (l === '@@compile') {
            state.phase = 'compiling';
            state.compileStartedAt = Date.now();
          } else if (l.startsWith('go: downloading ')) state.modules++;
          else if (state.phase === 'compiling' && PACKAGE_LINE.test(l)) {
            state.compiled++;
            if (l === mainPkg) {
              state.linkingSince = Date.now();
              board.update();
            }
          } else {
            tail.push(l);
            if (tail.length > 60) tail.shift();
          }
          if (l.startsWith('@@')) board.update();
        });
        child.on('error', reject);
        // 'close', not 'exit': stdout may still hold the path when the process has exited.
        child.on('close', (code) => {
          const path = out.trim().split('\n').pop() ?? '';
          if (code === 0 && existsSync(path) && builtBinary(spec.what, spec.version) !== undefined) return resolve(path);
          reject(new Error(`building ${spec.what} ${spec.version} failed (exit ${code}); to see it again: ${buildCommand(spec)}\n${tail.join('\n')}`));
        });
      }).then((path) => {
        state.phase = 'done';
        state.doneAt = Date.now();
        if (state.compileStartedAt !== undefined && state.compiled > 0) {
          recordBuild({
            what: spec.what, version: spec.version, seconds: (state.doneAt - state.startedAt) / 1000, compileSeconds: (state.doneAt - state.compileStartedAt) / 1000,
            ...(state.linkingSince !== undefined ? { linkSeconds: (state.doneAt - state.linkingSince) / 1000 } : {}),
            compiled: state.compiled, total: state.total ?? 0, ...(state.stale !== undefined ? { stale: state.stale } : {}), modulesDownloaded: state.modules, concurrent: state.concurrent, cores: availableParallelism(), at: new Date().toISOString(),
          });
        }
        return path;
      });
    } catch (err) {
      state.phase = 'failed';
      state.doneAt = Date.now();
      throw err;
    } finally {
      board.update();
    }
  });
}

const inFlight = new Map<string, Promise<string>>();

/**
 * Returns the path of a binary, building it into the cache outside the repo when missing, with a live
 * progress line (packages compiled of those to compile, elapsed, ETA from the last build on this machine).
 */
export function binary(what: BinaryKind, version: string): Promise<string> {
  try {
    const have = builtBinary(what, version);
    if (have !== undefined) return Promise.resolve(have);
  } catch (err) {
    return Promise.reject(err as Error);
  }
  const key = `${what}@${version}`;
  let p = inFlight.get(key);
  if (p === undefined) {
    p = runBuild({ what, version });
    inFlight.set(key, p);
    p.then(() => inFlight.delete(key), () => inFlight.delete(key));
  }
  return p;
}

/** Whether a build of this binary is running in this process. */
export function building(what: BinaryKind, version: string): boolean {
  return inFlight.has(`${what}@${version}`);
}

/** Every binary of the list, built in parallel (at most buildConcurrency() at once) before anything starts. */
export async function ensureBinaries(specs: BinarySpec[]): Promise<string[]> {
  const unique = [...new Map(specs.map((s) => [`${s.what}@${s.version}`, s])).values()];
  const t0 = Date.now();
  const missing = unique.filter((s) => builtBinary(s.what, s.version) === undefined);
  if (missing.length > 0) requireGo(missing.map((s) => `${s.what} ${s.version}`).join(', '));
  const paths = await Promise.all(unique.map((s) => binary(s.what, s.version)));
  if (missing.length > 0) process.stderr.write(`built ${missing.map((s) => `${s.what} ${s.version}`).join(', ')} in ${fmt((Date.now() - t0) / 1000)}\n`);
  const byKey = new Map(unique.map((s, i) => [`${s.what}@${s.version}`, paths[i]!]));
  return specs.map((s) => byKey.get(`${s.what}@${s.version}`)!);
}

/** What every cluster of this repo may run: etcd and the old and new kube-apiserver. */
export function clusterBinaries(extraVersions: string[] = []): BinarySpec[] {
  return [{ what: 'etcd', version: ETCD_VERSION }, ...[OLD_VERSION, NEW_VERSION, ...extraVersions].map((version) => ({ what: 'kube-apiserver' as const, version }))];
}

const verified = new Map<string, Promise<void>>();

/**
 * Checks that a binary starts and reports the version it is expected to be (`--version`), so a replacement is
 * never begun with a binary that cannot run. Cached per path and modification time.
 */
export function verifyBinary(what: 'kube-apiserver' | 'etcd', path: string, version: string): Promise<void> {
  let mtime = 0;
  try {
    mtime = statSync(path).mtimeMs;
  } catch {
    return Promise.reject(new Error(`${what} ${version}: ${path} does not exist`));
  }
  const key = `${path}@${mtime}`;
  let p = verified.get(key);
  if (p === undefined) {
    p = new Promise<void>((resolve, reject) => {
      execFile(path, ['--version'], { timeout: 15_000, encoding: 'utf8' }, (err, stdout, stderr) => {
        const text = `${stdout}${stderr}`;
        const want = what === 'etcd' ? version.replace(/^v/, '') : version;
        if (err) return reject(new Error(`${what} ${version} at ${path} does not run: ${err.message}`));
        if (!text.includes(want)) return reject(new Error(`${path} is not ${what} ${version}: --version says ${text.trim().split('\n')[0]}`));
        resolve();
      });
    });
    verified.set(key, p);
    p.catch(() => verified.delete(key));
  }
  return p;
}

// Everything the README's commands need on a fresh machine, in one place:
//   node scripts/setup.ts test    npm test: Lua 5.1 and 5.4 (Argo CD health check), openssl and flock (their unit tests),
//                                 actionlint (built) and shellcheck for the release workflow's test, helm (built) for
//                                 the chart's tests (test/chart: the admission policies rendered and evaluated)
//   node scripts/setup.ts demo    npm run demo: root, haproxy, openssl, iproute2, util-linux, Go, etcd + both kube-apiservers built
//   node scripts/setup.ts e2e     npm run e2e: the demo's, plus prometheus/promtool, prometheus-alertmanager/amtool, helm, kubectl,
//                                 upstream Prometheus (built: Debian's has no kubernetes_sd_configs)
//   node scripts/setup.ts ci      both (.ci/run)
//   node scripts/setup.ts tools   helm and promtool only (scripts/install-tools.sh)
// `npm test` and `npm run e2e` run it first; the demo imports it. Missing system packages are installed with
// apt-get as root (one line says what and why); otherwise it stops with the exact command to run. Go-built tools
// (binaries for the clusters, helm, kubectl when the machine has none) are built in parallel with live progress
// into the cache outside the repo (AUO_BIN_CACHE). Nothing is skipped: what cannot be set up is an error.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, renameSync, symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusterBinaries, CNI_PLUGINS_VERSION, ensureBinaries, findGo, HELM_VERSION, OLD_VERSION, PROMETHEUS_VERSION, RELEASE_TOOLS, requireGo, builtBinary, type BinarySpec } from '../e2e/cluster/binaries.ts';
import { toolCache } from '../e2e/support/tools.ts';
import { aptCommand, missingSystem, onPath, WHAT, type Profile } from '../e2e/cluster/requirements.ts';

export type { Profile };
const PROFILES: Record<string, Profile[]> = { test: ['test'], demo: ['demo'], e2e: ['e2e'], ci: ['test', 'e2e'], tools: ['tools'] };

const say = (s: string): void => void process.stderr.write(`[setup] ${s}\n`);

const isRoot = (): boolean => process.getuid?.() === 0;

/** Installs the missing system packages of these profiles with apt-get (root), or throws with the command that does. */
function systemPackages(profiles: Profile[]): void {
  const missing = missingSystem(profiles);
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map((m) => m.pkg))];
  const why = missing.map((m) => `${m.command}: ${m.why}`).join('; ');
  const forWhat = [...new Set(missing.flatMap((m) => m.for.filter((f) => profiles.includes(f)).map((f) => WHAT[f])))].join(', ');
  const cmd = aptCommand(pkgs);
  if (onPath('apt-get') === undefined) throw new Error(`${forWhat} needs ${pkgs.join(', ')} (${why}); this machine has no apt-get: install them with its package manager`);
  if (!isRoot()) throw new Error(`${forWhat} needs ${pkgs.join(', ')}, missing (${why}). Run as root: sudo sh -c '${cmd}'`);
  say(`installing ${pkgs.join(' ')} with apt-get for ${forWhat} (${why})`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', ['update', '-qq'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as Error & { stderr?: Buffer; stdout?: Buffer };
    throw new Error(`${cmd} failed: ${e.stderr?.toString().trim() || e.message}`, { cause: err });
  }
  // These packages start their daemon where an init system runs; the tests start their own, on their own ports.
  for (const service of ['prometheus', 'prometheus-alertmanager'].filter((p) => pkgs.includes(p))) {
    for (const stop of [['systemctl', 'stop', service], ['service', service, 'stop']]) {
      try {
        execFileSync(stop[0]!, stop.slice(1), { stdio: 'ignore' });
        break;
      } catch {
        /* no init system */
      }
    }
  }
  const still = missing.filter((m) => onPath(m.command) === undefined);
  if (still.length > 0) throw new Error(`after ${cmd}, still missing: ${still.map((m) => m.command).join(', ')}`);
}

/** Installs a built tool where the tests look: a link in the tool cache (helm), or /usr/local/bin (kubectl, found on PATH). */
function place(src: string, dest: string, copy: boolean): void {
  mkdirSync(join(dest, '..'), { recursive: true });
  const tmp = `${dest}.${process.pid}`;
  if (copy) copyFileSync(src, tmp);
  else symlinkSync(src, tmp);
  try {
    renameSync(tmp, dest);
  } catch (err) {
    unlinkSync(tmp);
    throw err;
  }
}

/**
 * Sets up what the profiles need; throws an Error whose message says what is missing and the command that
 * installs it. Prints one line per thing it installs or builds (builds also show live progress).
 */
export async function setup(profiles: Profile[]): Promise<void> {
  const needsRoot = profiles.filter((p) => p === 'demo' || p === 'e2e');
  if (needsRoot.length > 0 && !isRoot()) {
    throw new Error(`${needsRoot.map((p) => WHAT[p]).join(' and ')} must run as root: it creates a network namespace and runs each kube-apiserver under unshare --uts. Run it as root (e.g. sudo -E env PATH="$PATH" npm run ${needsRoot[0] === 'demo' ? 'demo' : 'e2e'}).`);
  }
  systemPackages(profiles);

  const builds: BinarySpec[] = [];
  if (profiles.includes('demo') || profiles.includes('e2e')) builds.push(...clusterBinaries());
  // The release workflow's linter (test/release/workflow.test.ts). The release's syft and krew (the extended tier's
  // e2e/extended/release*.e2e.ts) are built on first use by binary(), with progress: syft is ~1,700 packages.
  if (profiles.includes('test')) builds.push({ what: 'actionlint', version: RELEASE_TOOLS.actionlint.version });
  const wantHelm = profiles.includes('test') || profiles.includes('e2e') || profiles.includes('tools');
  if (wantHelm) builds.push({ what: 'helm', version: HELM_VERSION });
  // The nodes mode (e2e/static-pod-nodes.e2e.ts): the kubelet, kube-proxy and the other control-plane components of
  // the old version, the CNI plugins of its Pod network, and the static kubectl e2e/pod-network.e2e.ts runs in a Pod.
  if (profiles.includes('e2e')) {
    builds.push(...(['kubelet', 'kube-proxy', 'kube-controller-manager', 'kube-scheduler'] as const).map((what) => ({ what, version: OLD_VERSION })));
    builds.push({ what: 'cni-plugins', version: CNI_PLUGINS_VERSION }, { what: 'kubectl', version: OLD_VERSION });
    // Upstream Prometheus with kubernetes_sd_configs, which Debian's lacks (e2e/alerting.e2e.ts).
    builds.push({ what: 'prometheus', version: PROMETHEUS_VERSION });
  }
  // kubectl: the API tests run it from PATH (or $KUBECTL); where the machine has none, one is built and installed.
  const wantKubectl = profiles.includes('e2e') && !process.env.KUBECTL && onPath('kubectl') === undefined;
  if (wantKubectl) {
    if (!isRoot()) throw new Error(`npm run e2e needs kubectl 1.32+ on PATH (or KUBECTL=/path): install one, or run as root to have it built from k8s.io/kubernetes ${OLD_VERSION}`);
    builds.push({ what: 'kubectl', version: OLD_VERSION });
  }
  const toBuild = builds.filter((b) => builtBinary(b.what, b.version) === undefined);
  if (toBuild.length > 0) {
    const go = requireGo(toBuild.map((b) => `${b.what} ${b.version}`).join(', '));
    say(`building ${toBuild.map((b) => `${b.what} ${b.version}`).join(', ')} with ${go.version} (${go.path}): once per version, then cached`);
  }
  const paths = new Map((await ensureBinaries(builds)).map((p, i) => [builds[i]!.what, p]));

  if (wantHelm) {
    place(paths.get('helm')!, join(toolCache(), 'helm'), false);
    const promtool = onPath('promtool');
    if (promtool) place(promtool, join(toolCache(), 'promtool'), false);
  }
  if (wantKubectl) {
    place(paths.get('kubectl')!, '/usr/local/bin/kubectl', true);
    say(`installed kubectl ${OLD_VERSION} (built from k8s.io/kubernetes) as /usr/local/bin/kubectl: the API tests run kubectl and this machine had none`);
  }
  if (findGo() === undefined && (profiles.includes('demo') || profiles.includes('e2e'))) {
    say('note: no Go toolchain; the cached binaries are used, but another version cannot be built');
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => !(a in PROFILES));
  if (args.length === 0 || unknown.length > 0) {
    process.stderr.write(`usage: node scripts/setup.ts ${Object.keys(PROFILES).join('|')} ...${unknown.length ? ` (unknown: ${unknown.join(' ')})` : ''}\n`);
    process.exit(2);
  }
  try {
    await setup([...new Set(args.flatMap((a) => PROFILES[a]!))]);
  } catch (err) {
    process.stderr.write(`[setup] ${(err as Error).message}\n`);
    process.exit(1);
  }
}

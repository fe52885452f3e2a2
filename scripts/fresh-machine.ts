// Makes this machine a fresh one for what the project's set-up installs (issue 23: a fresh clone is not a fresh
// machine): purges every system package of e2e/cluster/requirements.ts SYSTEM (read from there, so the list cannot
// drift), and clears the project's caches of installed tools (the tool cache: helm and promtool links; a kubectl
// that setup.ts copied to /usr/local/bin). It keeps the Go binary cache, whose builds would not fit CI's time.
// .ci/run runs it with --apply, as root, before the README's set-up paths; without --apply it only prints the plan.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SYSTEM, type SystemNeed } from '../e2e/cluster/requirements.ts';
import { builtBinary, OLD_VERSION } from '../e2e/cluster/binaries.ts';
import { toolCache } from '../e2e/support/tools.ts';

/**
 * Packages of SYSTEM that stay although dpkg does not count them in the base system, and why: removing them would
 * break the machine, not test the set-up.
 */
export const KEEP: Record<string, string> = {
  openssl: 'ca-certificates depends on it: purging it takes the CA roots that apt, npm\'s registry and the Go module proxy need, which `--no-install-recommends` does not bring back',
};

/** Why a package is part of the base system every Debian machine has, from dpkg's own fields; undefined when it is not. */
export type BaseSystem = (pkg: string) => string | undefined;

/**
 * dpkg's answer for the installed packages: Essential or Priority required is the base system (apt-get refuses to
 * purge Essential packages, and the required ones hold dpkg, apt and coreutils), so a new machine has them too.
 * A package dpkg does not know is not installed, hence not base: the purge skips nothing it should do.
 */
export function dpkgBaseSystem(pkgs: readonly string[]): BaseSystem {
  const base = new Map<string, string>();
  // dpkg-query exits 1 when one of the packages is unknown and still prints the others: its output is what counts.
  const run = spawnSync('dpkg-query', ['-W', '-f', '${Package}\t${Essential}\t${Priority}\n', ...pkgs], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 20 });
  if (run.error !== undefined) throw new Error(`dpkg-query did not run (${run.error.message}): the purge needs dpkg to know the base system`);
  const out = run.stdout;
  for (const line of out.split('\n')) {
    const [pkg, essential, priority] = line.split('\t');
    if (pkg === undefined || pkg === '') continue;
    if (essential === 'yes') base.set(pkg, 'Essential in dpkg: every Debian machine has it, and apt-get refuses to purge it');
    else if (priority === 'required') base.set(pkg, 'Priority required in dpkg: part of every Debian machine\'s base system, and the Essential packages depend on it');
  }
  return (pkg) => base.get(pkg);
}

export interface PurgePlan {
  purge: string[];
  keep: { pkg: string; why: string }[];
}

export function purgePlan(system: readonly SystemNeed[], baseSystem: BaseSystem): PurgePlan {
  const pkgs = [...new Set(system.map((n) => n.pkg))].sort();
  const why = (p: string): string | undefined => baseSystem(p) ?? KEEP[p];
  return { purge: pkgs.filter((p) => why(p) === undefined), keep: pkgs.flatMap((pkg) => { const w = why(pkg); return w === undefined ? [] : [{ pkg, why: w }]; }) };
}

/** The plan for this machine: SYSTEM's packages, the base system as dpkg says. */
export function machinePurgePlan(system: readonly SystemNeed[] = SYSTEM): PurgePlan {
  return purgePlan(system, dpkgBaseSystem([...new Set(system.map((n) => n.pkg))]));
}

/** The apt-get runs that carry the plan out: purge (config files too), then what only they had pulled in. */
export function purgeCommands(plan: PurgePlan): string[][] {
  if (plan.purge.length === 0) return [];
  return [['apt-get', 'purge', '-y', '-q', ...plan.purge], ['apt-get', 'autoremove', '--purge', '-y', '-q']];
}

/**
 * The installed tools of the project's own caches: the tool cache folder, and /usr/local/bin/kubectl when it is
 * the copy setup.ts made of a cached build (a kubectl the machine had of its own stays).
 */
export function toolPaths(opts: { toolCache: string; kubectl?: { installed: string; built: string | undefined } } = { toolCache: toolCache(), kubectl: { installed: '/usr/local/bin/kubectl', built: builtBinary('kubectl', OLD_VERSION) } }): string[] {
  const out = [opts.toolCache];
  const k = opts.kubectl;
  if (k?.built !== undefined && existsSync(k.installed) && readFileSync(k.installed).equals(readFileSync(k.built))) out.push(k.installed);
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const apply = process.argv.includes('--apply');
  const plan = machinePurgePlan();
  const paths = toolPaths();
  const say = (s: string): void => void process.stderr.write(`[fresh-machine] ${s}\n`);
  say(`purge: ${plan.purge.join(' ')}`);
  for (const k of plan.keep) say(`keep ${k.pkg}: ${k.why}`);
  say(`clear: ${paths.join(' ')} (the Go binary cache stays)`);
  if (!apply) {
    say('dry run: --apply (as root) does it');
  } else {
    if (process.getuid?.() !== 0) {
      say('--apply must run as root (apt-get purge)');
      process.exit(1);
    }
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    for (const cmd of purgeCommands(plan)) execFileSync(cmd[0]!, cmd.slice(1), { env, stdio: ['ignore', 'inherit', 'inherit'] });
    for (const p of paths) rmSync(p, { recursive: true, force: true });
    say('done');
  }
}

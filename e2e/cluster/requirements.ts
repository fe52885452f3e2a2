// The one list of system packages the repo's commands need. scripts/setup.ts installs what is missing (as root,
// with apt-get); the cluster harness checks the same list before it starts anything, so a run that skipped the
// set-up fails at once with the command that fixes it, never halfway through a cluster start.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type Profile = 'test' | 'demo' | 'e2e' | 'tools';

export interface SystemNeed {
  /** What must be on PATH. */
  command: string;
  /** The Debian package that has it. */
  pkg: string;
  why: string;
  for: Profile[];
}

export const SYSTEM: SystemNeed[] = [
  { command: 'lua5.1', pkg: 'lua5.1', why: 'the Argo CD health check test runs in Lua 5.1 (Argo CD\'s dialect)', for: ['test'] },
  { command: 'lua5.4', pkg: 'lua5.4', why: 'the Argo CD health check test also runs in Lua 5.4', for: ['test'] },
  { command: 'shellcheck', pkg: 'shellcheck', why: 'actionlint checks the release workflow\'s shell steps with it (test/release/workflow.test.ts)', for: ['test'] },
  { command: 'haproxy', pkg: 'haproxy', why: 'the load balancer in front of the kube-apiservers', for: ['demo', 'e2e'] },
  { command: 'openssl', pkg: 'openssl', why: 'the cluster\'s certificates, and the unit tests\' TLS servers', for: ['test', 'demo', 'e2e'] },
  { command: 'ip', pkg: 'iproute2', why: 'the network namespace the servers run in', for: ['demo', 'e2e'] },
  { command: 'ss', pkg: 'iproute2', why: 'e2e/registry.e2e.ts checks what listens on the registry\'s address', for: ['e2e'] },
  { command: 'unshare', pkg: 'util-linux', why: 'a hostname per kube-apiserver', for: ['demo', 'e2e'] },
  { command: 'flock', pkg: 'util-linux', why: 'one build per binary across processes (and its unit test)', for: ['test', 'demo', 'e2e', 'tools'] },
  { command: 'nsenter', pkg: 'util-linux', why: 'commands run inside a node\'s network namespace in the nodes mode', for: ['e2e'] },
  { command: 'promtool', pkg: 'prometheus', why: 'the chart\'s alert rules are checked with promtool', for: ['e2e', 'tools'] },
  { command: 'prometheus', pkg: 'prometheus', why: 'the Prometheus-source e2e tests scrape through a real Prometheus', for: ['e2e', 'tools'] },
  { command: 'prometheus-alertmanager', pkg: 'prometheus-alertmanager', why: 'e2e/alerting.e2e.ts routes the chart\'s alerts through a real Alertmanager', for: ['e2e'] },
  { command: 'amtool', pkg: 'prometheus-alertmanager', why: 'e2e/alerting.e2e.ts checks the documented Alertmanager routing with amtool', for: ['e2e'] },
  { command: 'containerd', pkg: 'containerd', why: 'the container runtime of each node in the nodes mode', for: ['e2e'] },
  { command: 'ctr', pkg: 'containerd', why: 'images are imported into each node\'s containerd with ctr', for: ['e2e'] },
  { command: 'runc', pkg: 'runc', why: 'the OCI runtime under containerd in the nodes mode', for: ['e2e'] },
  { command: 'iptables', pkg: 'iptables', why: 'kube-proxy (iptables mode) and the CNI bridge plugin\'s masquerade program each node\'s network namespace', for: ['e2e'] },
  { command: 'iptables-restore', pkg: 'iptables', why: 'kube-proxy writes its rules with iptables-restore', for: ['e2e'] },
  { command: 'docker-registry', pkg: 'docker-registry', why: 'the harness registry (distribution 2.8) the nodes pull the chart\'s and kubeadm\'s images from (e2e/cluster/registry.ts)', for: ['e2e'] },
  { command: 'skopeo', pkg: 'skopeo', why: 'pushes the harness\'s OCI image tars to a registry (e2e/cluster/registry.ts, npm run release)', for: ['e2e'] },
  { command: 'busybox', pkg: 'busybox-static', why: 'the e2e images of the nodes mode are made from a static busybox', for: ['e2e'] },
  { command: 'losetup', pkg: 'mount', why: 'the real-kubeadm cluster gives each node a loop-mounted /var/lib (e2e/extended/kubeadm-cluster.e2e.ts)', for: ['e2e'] },
  { command: 'apt-get', pkg: 'apt', why: 'the image\'s Debian packages are downloaded at their pinned versions (e2e/cluster/runtime-packages.ts); the fresh-machine purge is simulated with apt-get -s (test/e2e-cluster/fresh-machine.test.ts)', for: ['test', 'demo', 'e2e'] },
  { command: 'dpkg-query', pkg: 'dpkg', why: 'the fresh-machine purge keeps what dpkg calls the base system (Essential, Priority required: scripts/fresh-machine.ts)', for: ['test', 'demo', 'e2e', 'tools'] },
  { command: 'apt-cache', pkg: 'apt', why: 'e2e/cluster/runtime-packages.ts reads where a pinned package is offered', for: ['demo', 'e2e'] },
  { command: 'dpkg-deb', pkg: 'dpkg', why: 'the image\'s pinned .debs are unpacked into its file system (e2e/cluster/runtime-packages.ts)', for: ['demo', 'e2e'] },
  { command: 'mkfifo', pkg: 'coreutils', why: 'the agent\'s unit tests make a named pipe where it must refuse to write (test/agent/trust.test.ts)', for: ['test'] },
  { command: 'ps', pkg: 'procps', why: 'the nodes-mode tests look for processes left behind', for: ['e2e'] },
  { command: 'pgrep', pkg: 'procps', why: 'the runtime e2e finds the server processes it disrupts', for: ['e2e'] },
];

export const WHAT: Record<Profile, string> = { test: 'npm test', demo: 'npm run demo', e2e: 'npm run e2e', tools: 'the chart tests' };

/** The path of a command on PATH, or undefined. */
export function onPath(cmd: string): string | undefined {
  for (const d of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const p = join(d, cmd);
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

/** What the profiles need that is not on PATH (optionally only some commands). */
export function missingSystem(profiles: Profile[], only?: string[]): SystemNeed[] {
  return SYSTEM.filter((n) => n.for.some((f) => profiles.includes(f)) && (only === undefined || only.includes(n.command)) && onPath(n.command) === undefined);
}

export function aptCommand(pkgs: string[]): string {
  return `apt-get update && apt-get install -y --no-install-recommends ${[...new Set(pkgs)].join(' ')}`;
}

/** Throws, naming the command that installs them, when any of these commands is missing. */
export function requireCommands(commands: string[], forWhat: string): void {
  const missing = SYSTEM.filter((n) => commands.includes(n.command) && onPath(n.command) === undefined);
  if (missing.length === 0) return;
  throw new Error(`${forWhat} needs ${missing.map((m) => `${m.command} (${m.why})`).join(', ')}, not on PATH: run \`${aptCommand(missing.map((m) => m.pkg))}\` as root (scripts/setup.ts, which npm test, npm run e2e and npm run demo run first, does it)`);
}

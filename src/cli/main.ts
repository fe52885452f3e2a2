// The entry point of `kubectl apiserver-upgrade` (run by the kubectl-apiserver_upgrade launcher next to it).
import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { parseCommandLine, usage, UsageError } from './args.ts';

const argv = process.argv.slice(2);

/** --help and command lines that cannot run are answered before the Kubernetes client is even loaded. */
function quick(): number | undefined {
  try {
    const parsed = parseCommandLine(argv);
    if (!parsed.help) return undefined;
    process.stdout.write(usage(parsed.command));
    return 0;
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`error: ${err.message}\nSee 'kubectl apiserver-upgrade --help'.\n`);
    return 2;
  }
}

async function full(): Promise<number> {
  const [{ run }, { KubeUpgradeApi, contextNames }] = await Promise.all([import('./cli.ts'), import('./client.ts')]);
  return run(argv, {
    out: (s) => void process.stdout.write(s),
    err: (s) => void process.stderr.write(s),
    connect: (c) => KubeUpgradeApi.connect(c),
    contexts: (kubeconfig) => contextNames(kubeconfig),
    now: () => new Date(),
    readFile: (path) => (path === '-' ? text(process.stdin) : readFile(path, 'utf8')),
    isTTY: process.stdout.isTTY === true,
    interrupted: () => new Promise((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    }),
  });
}

const code = quick() ?? (await full());
// Pooled connections may keep the event loop alive: exit once the output is flushed.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));

// The entry point of `kubectl apiserver-upgrade` (run by the kubectl-apiserver_upgrade launcher next to it).
import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { run, type CliDeps } from './cli.ts';
import { KubeUpgradeApi } from './client.ts';

const deps: CliDeps = {
  out: (s) => void process.stdout.write(s),
  err: (s) => void process.stderr.write(s),
  connect: (c) => KubeUpgradeApi.connect(c),
  now: () => new Date(),
  readFile: (path) => (path === '-' ? text(process.stdin) : readFile(path, 'utf8')),
  isTTY: process.stdout.isTTY === true,
  interrupted: () => new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  }),
};

const code = await run(process.argv.slice(2), deps);
// Pooled connections may keep the event loop alive: exit once the output is flushed.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));

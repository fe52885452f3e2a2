// A stand-in for an operator replica in the campaign's harness tests: a node process running `code`, never leading;
// stop() ends it with `stopSignal`.
import { spawn } from 'node:child_process';
import type { OperatorProcess } from '../../e2e/support/operator.ts';

export function standInProcess(code: string, stopSignal: NodeJS.Signals): OperatorProcess {
  const child = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  const exits: OperatorProcess['exits'] = [];
  child.on('exit', (c, signal) => exits.push({ code: c, signal }));
  return {
    child, logPath: '', healthPort: 0, exits, logLines: () => [],
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill(stopSignal);
      await done;
    },
  };
}

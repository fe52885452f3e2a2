import { existsSync, writeFileSync } from 'node:fs';
import type { Logger } from '../runtime/logger.ts';

/**
 * Crash points for the e2e suite's kill tests, off unless AUO_FAULT names one: `before-call` (the call is
 * recorded Requested in status but not sent) or `after-call` (sent, outcome not recorded). The process
 * kills itself with SIGKILL there, once per AUO_FAULT_ONCE_FILE (a file created on the first hit), so the
 * restarted operator runs through.
 */
export function faultPoint(point: 'before-call' | 'after-call', log: Logger): void {
  if (process.env.AUO_FAULT !== point) return;
  const once = process.env.AUO_FAULT_ONCE_FILE;
  if (once !== undefined) {
    if (existsSync(once)) return;
    writeFileSync(once, `${point} ${new Date().toISOString()}\n`);
  }
  log.warn('fault injection: SIGKILL', { point });
  process.kill(process.pid, 'SIGKILL');
}

// `kubectl apiserver-upgrade list`: every upgrade, one row each. Pure.
import type { ApiServerUpgrade } from '../api/types.generated.ts';
import { batchStates } from './get-view.ts';
import { age, iso, printable, table, truncate } from './format.ts';

export interface ListRow {
  name: string;
  phase: string;
  from: string | undefined;
  to: string;
  /** Batches done / planned, e.g. 1/3; undefined before preflight froze a plan. */
  progress: string | undefined;
  batch: { current: number; total: number; done: number };
  pauseReason: string | undefined;
  /** Why it waits without pausing (status.waiting.reason), and until when (the next window start), if known. */
  waiting: string | undefined;
  specPaused: boolean;
  createdAt: string | undefined;
  /** Which driver the spec names. */
  driver: 'webhook' | 'staticPod' | undefined;
  /** The pause's message, else the Progressing condition's (what it is doing now). */
  message: string | undefined;
}

export function listRows(items: readonly ApiServerUpgrade[]): ListRow[] {
  return [...items]
    .sort((a, b) => (iso(a.metadata?.creationTimestamp) ?? '').localeCompare(iso(b.metadata?.creationTimestamp) ?? '') || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
    .map((u) => {
      const st = u.status;
      const batches = batchStates(st);
      const total = batches.length || st?.batch?.total || 0;
      const done = batches.length ? batches.filter((b) => b.state === 'done').length : st?.phase === 'Succeeded' ? total : 0;
      return {
        name: u.metadata?.name ?? '',
        phase: st?.phase ?? 'Pending',
        from: st?.fromVersion,
        to: st?.targetVersion ?? u.spec?.targetVersion ?? '',
        progress: total > 0 ? `${done}/${total}` : undefined,
        batch: { current: st?.batch?.current ?? 0, total, done },
        pauseReason: st?.pause?.reason,
        waiting: st?.waiting ? `${st.waiting.reason}${st.waiting.until ? ` until ${st.waiting.until}` : ''}` : undefined,
        specPaused: u.spec?.paused === true,
        createdAt: iso(u.metadata?.creationTimestamp),
        driver: u.spec?.driver?.webhook ? 'webhook' : u.spec?.driver?.staticPod ? 'staticPod' : undefined,
        message: st?.pause?.message ?? st?.waiting?.message ?? st?.conditions?.find((c) => c.type === 'Progressing')?.message,
      };
    });
}

/** The table's headers; `wide` adds the driver and what the upgrade is doing (or why it paused). */
export function listHeaders(wide: boolean): string[] {
  return ['NAME', 'PHASE', 'FROM', 'TO', 'DONE', 'BATCH', 'PAUSED', 'WAITING', 'AGE', ...(wide ? ['DRIVER', 'MESSAGE'] : [])];
}

/** One row's cells under listHeaders; `r` has been through printable already. */
export function listCells(r: ListRow, now: Date, wide: boolean): (string | undefined)[] {
  return [
    r.name,
    r.phase,
    r.from,
    r.to,
    r.progress,
    r.batch.total > 0 ? `${r.batch.current}/${r.batch.total}` : undefined,
    r.pauseReason ?? (r.specPaused ? 'spec.paused' : undefined),
    r.waiting,
    age(r.createdAt, now),
    ...(wide ? [r.driver, truncate(r.message, 80)] : []),
  ];
}

/** The table; `wide` adds the driver and what the upgrade is doing (or why it paused). */
export function renderList(listed: readonly ListRow[], now: Date, wide = false): string {
  if (listed.length === 0) return 'No ApiServerUpgrades found.\n';
  // Every string from the cluster goes through terminalText before it is laid out.
  const rows = printable(listed);
  return table(listHeaders(wide), rows.map((r) => listCells(r, now, wide)));
}

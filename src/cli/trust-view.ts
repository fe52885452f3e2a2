// The trust checks and the coverage report (docs/trust.md) as the plugin prints them, in `get` and `plan`. Pure.
import type { CoverageReport, TrustReport } from '../api/types.generated.ts';
import { table, truncate } from './format.ts';

/** status.trust: counts, then every row that is not Verified (all rows with `all`). */
export function renderTrust(t: TrustReport | undefined, verdict: { status: string; reason: string } | undefined, all = false): string {
  if (!t) return 'Trust: not checked (preflight reads it)\n';
  const head = `Trust${verdict ? ` (ProxyTrustVerified=${verdict.status} ${verdict.reason})` : ''}: ${t.verified ?? 0} verified, ${t.findings ?? 0} finding(s), ${t.unknown ?? 0} unknown across ${t.servers ?? 0} server(s)${t.truncated ? ' (table truncated)' : ''}\n`;
  const rows = (t.checks ?? []).filter((r) => all || r.result !== 'Verified');
  if (rows.length === 0) return head;
  return head + table(['SERVER', 'CHECK', 'RESULT', 'REASON', 'FLAG', 'SOURCE', 'MESSAGE'], rows.map((r) => [r.server, r.check, r.result, r.reason, r.flag, r.source, truncate(r.message, 90)]), '  ');
}

/** status.coverage: the summary, one line per kind of what a client sees, and the named entries. */
export function renderCoverage(c: CoverageReport | undefined): string {
  if (!c) return 'Coverage: not reported (preflight freezes it)\n';
  let s = `Coverage (from ${c.fromSource ?? '?'}, target ${c.targetSource ?? '?'}): ${c.message ?? ''}\n`;
  for (const v of c.clientView ?? []) s += `  ${v.kind} (${v.count ?? 0}): ${v.sees}\n`;
  const entries = c.entries ?? [];
  if (entries.length > 0) s += table(['KIND', 'NAME', 'RESOURCE KIND', 'DETAIL'], entries.map((e) => [e.kind, e.name, e.resourceKind, e.detail]), '  ');
  if (c.truncated) s += '  (more entries than shown; the counts are complete)\n';
  return s;
}

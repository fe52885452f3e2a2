// `kubectl apiserver-upgrade list --all-contexts | --contexts a,b`: which contexts, what each cluster answered (its
// upgrades, or why it could not be read), the table, the machine view and the exit status. Pure.
import type { ApiServerUpgrade } from '../api/types.generated.ts';
import { formatDuration } from '../api/duration.ts';
import { safeMessage } from '../plan/redact.ts';
import { KubeApiError } from '../runtime/kube-request.ts';
import type { FleetSelection } from './args.ts';
import { CliError, CrdNotServedError } from './client.ts';
import { printable, table } from './format.ts';
import { listCells, listHeaders, listRows, type ListRow } from './list-view.ts';

/** Why a cluster could not be read. */
export type ClusterErrorReason = 'Unreachable' | 'Timeout' | 'Unauthorized' | 'Forbidden' | 'CRDNotServed' | 'Config' | 'Error';

export interface ClusterError {
  reason: ClusterErrorReason;
  /** Short, plain and redacted: never the server's text as it came. */
  message: string;
}

/** One cluster's answer: its upgrades, or why there is none. */
export type ClusterResult = { cluster: string; upgrades: readonly ApiServerUpgrade[] } | { cluster: string; error: ClusterError };

/** The machine view (-o json/yaml/jsonpath): every cluster asked, in order, with its rows or its error. */
export interface FleetView {
  clusters: ({ cluster: string; upgrades: ListRow[] } | { cluster: string; error: ClusterError })[];
}

/** The most of an error's text a row shows. */
const MESSAGE_MAX = 200;

/**
 * The contexts to query: every context of the kubeconfig (sorted by name, as `kubectl config get-contexts` shows
 * them), or the named ones in the order given. A name the kubeconfig does not define is an error that names it,
 * before anything is queried.
 */
export function selectContexts(available: readonly string[], selection: FleetSelection): string[] {
  if (selection.all) {
    if (available.length === 0) throw new CliError('the kubeconfig defines no contexts');
    return [...new Set(available)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
  const known = new Set(available);
  const missing = selection.names.filter((n) => !known.has(n));
  if (missing.length > 0) {
    const list = missing.map((n) => `"${n}"`).join(', ');
    throw new CliError(`${missing.length === 1 ? 'context' : 'contexts'} ${list} ${missing.length === 1 ? 'is' : 'are'} not defined in the kubeconfig (contexts: ${available.join(', ') || 'none'})`);
  }
  return [...selection.names];
}

/** A socket or TLS failure's code, on the error or its cause. */
function codeOf(err: Error): string | undefined {
  const code = (err as { code?: unknown }).code ?? (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The message of a Kubernetes Status body (who may not do what, for a 403), if the body is one. */
function statusMessage(body: string): string | undefined {
  try {
    const m = (JSON.parse(body) as { message?: unknown } | null)?.message;
    return typeof m === 'string' ? m : undefined;
  } catch {
    return undefined;
  }
}

const UNREACHABLE = /^(ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EPIPE)$/;

/**
 * Why a cluster could not be read, from what its query threw: `timedOut` when the cluster's deadline (`timeoutMs`)
 * ended it. The message is made plain, redacted and cut (safeMessage) whatever it holds.
 */
export function clusterError(err: unknown, timedOut: boolean, timeoutMs: number): ClusterError {
  // Without the request line (`GET /apis/...: `) that every request error starts with: the same for every cluster.
  const safe = (s: string): string => safeMessage(s.replace(/^[A-Z]+ \/\S*: /, ''), { maxChars: MESSAGE_MAX });
  if (timedOut) return { reason: 'Timeout', message: `no answer within ${formatDuration(timeoutMs)}` };
  if (err instanceof CrdNotServedError) return { reason: 'CRDNotServed', message: 'the cluster does not serve apiserverupgrades.upgrade.apiserver.dev (is the CRD installed?)' };
  if (err instanceof KubeApiError) {
    if (err.statusCode === 401) return { reason: 'Unauthorized', message: 'the server refused the credentials (401)' };
    if (err.statusCode === 403) return { reason: 'Forbidden', message: safe(`403: ${statusMessage(err.body) ?? err.body}`) };
    return { reason: 'Error', message: safe(err.message) };
  }
  // Loading the context (its kubeconfig entries, files, a proxy it would need) failed before any request.
  if (err instanceof CliError) return { reason: 'Config', message: safe(err.message) };
  if (err instanceof Error) {
    if (err.name === 'TimeoutError') return { reason: 'Timeout', message: safe(err.message) };
    const code = codeOf(err);
    if (code !== undefined && UNREACHABLE.test(code)) return { reason: 'Unreachable', message: safe(err.message) };
    return { reason: 'Error', message: safe(err.message) };
  }
  return { reason: 'Error', message: safe(String(err)) };
}

/** The machine view: each cluster's list rows (as `list -o json` shows one cluster's), or its error. */
export function fleetView(results: readonly ClusterResult[]): FleetView {
  return { clusters: results.map((r) => ('error' in r ? { cluster: r.cluster, error: r.error } : { cluster: r.cluster, upgrades: listRows(r.upgrades) })) };
}

/** 0 when every cluster answered (with or without upgrades), 1 when any could not be read. */
export function fleetExitCode(results: readonly ClusterResult[]): number {
  return results.some((r) => 'error' in r) ? 1 : 0;
}

/** The clusters that could not be read, for one line on stderr; undefined when every cluster answered. */
export function fleetFailureLine(results: readonly ClusterResult[]): string | undefined {
  const failed = results.filter((r) => 'error' in r);
  if (failed.length === 0) return undefined;
  return `${failed.length} of ${results.length} clusters could not be read: ${failed.map((r) => r.cluster).join(', ')}`;
}

/**
 * The table: list's columns after a CLUSTER column, one row per upgrade; a cluster without upgrades is one row with
 * NAME <none>, and one that could not be read is one row whose ERROR column says why (the column is there when
 * some cluster failed). Every string passes through terminalText (printable) before it is laid out.
 */
export function renderFleet(view: FleetView, now: Date, wide = false): string {
  if (view.clusters.length === 0) return 'No contexts.\n';
  const v = printable(view);
  const failed = v.clusters.some((c) => 'error' in c);
  const columns = listHeaders(wide);
  const headers = ['CLUSTER', ...columns, ...(failed ? ['ERROR'] : [])];
  /** A row of a cluster without upgrades: NAME `name`, the other columns empty, and the ERROR column. */
  const alone = (cluster: string, name: string, error?: ClusterError): (string | undefined)[] => [
    cluster, name, ...Array<undefined>(columns.length - 1), ...(failed ? [error ? `${error.reason}: ${error.message}` : undefined] : []),
  ];
  const rows: (string | undefined)[][] = [];
  for (const c of v.clusters) {
    if ('error' in c) rows.push(alone(c.cluster, '-', c.error));
    else if (c.upgrades.length === 0) rows.push(alone(c.cluster, '<none>'));
    else for (const r of c.upgrades) rows.push([c.cluster, ...listCells(r, now, wide), ...(failed ? [undefined] : [])]);
  }
  return table(headers, rows);
}

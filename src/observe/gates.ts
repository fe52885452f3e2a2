/**
 * The facts of spec.gates (src/plan/start-gates.ts judges them): each PromQL gate's answer from the gates'
 * Prometheus, and the control-plane Nodes' Ready condition. A read that fails is kept as its error — the planner
 * counts it as a gate that does not hold (unknown is unsafe) — never as an empty answer.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { GateReads, ObservedGateQuery, ObservedGates } from '../plan/observation.ts';
import { parseQueryResponse, type QueryFn } from './prometheus-source.ts';

export const CONTROL_PLANE_NODES_PATH = '/api/v1/nodes?labelSelector=node-role.kubernetes.io%2Fcontrol-plane';
/** Series kept per query: a gate is judged on them, and the message names a few. */
const MAX_SAMPLES = 100;
const QUERY_TIMEOUT_MS = 5_000;

export interface GateObserverDeps {
  query: QueryFn;
  /** GET of a collection path, answering its items. */
  listNodes: (path: string) => Promise<V1Node[]>;
  /** Now, in ms: the instant the queries are evaluated at. */
  now: () => number;
}

function text(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function observeGates(reads: GateReads, deps: GateObserverDeps): Promise<ObservedGates> {
  const at = deps.now() / 1000;
  const queries = await Promise.all(reads.queries.map(async (q): Promise<ObservedGateQuery> => {
    if (!reads.prometheus) return { name: q.name, error: 'no gates.prometheus.address' };
    try {
      const body = await deps.query({ address: reads.prometheus.address, selector: '', ...(reads.prometheus.caBundle ? { caBundle: reads.prometheus.caBundle } : {}) }, q.query, at, QUERY_TIMEOUT_MS);
      const samples = parseQueryResponse(body);
      return { name: q.name, samples: samples.slice(0, MAX_SAMPLES).map((s) => ({ labels: s.labels, value: s.value })) };
    } catch (err) {
      return { name: q.name, error: text(err).slice(0, 512) };
    }
  }));
  if (!reads.controlPlaneNodes) return { queries };
  try {
    const nodes = await deps.listNodes(CONTROL_PLANE_NODES_PATH);
    const controlPlaneNodes = nodes.map((n) => ({ name: n.metadata?.name ?? '', ready: n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true }));
    return { queries, controlPlaneNodes };
  } catch (err) {
    return { queries, controlPlaneNodes: { error: text(err).slice(0, 512) } };
  }
}

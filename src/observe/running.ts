/**
 * Reads `/flagz` and `/statusz` of the servers whose calls are in flight (src/plan/running-process.ts judges them):
 * asked for JSON (v1beta1, else v1alpha1), each body capped at ZPAGE_MAX_BYTES and parsed strictly
 * (src/plan/zpages.ts). 404 is a page the server does not serve; any other answer, none, or a body that does not
 * parse is a failed read (the planner holds the call on it). A server not up (not ready, stale, no address) is not
 * asked: it is not at its call's goal, so nothing is judged on it.
 */
import type { ObservedPeer } from '../plan/observation.ts';
import { FLAGZ_ACCEPT, parseFlagz, parseStatusz, STATUSZ_ACCEPT, ZPAGE_MAX_BYTES, type ObservedRunning, type PageAnswer } from '../plan/zpages.ts';

/** One GET of a server's page with its body capped at `maxBytes` (DirectClient.page). */
export type PageGet = (address: string, path: string, accept: string, maxBytes: number) => Promise<{ status: number; body: string }>;

function text(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 300);
}

async function readPage<T>(get: PageGet, address: string, path: string, accept: string, parse: (body: string) => T): Promise<PageAnswer<T>> {
  let r: { status: number; body: string };
  try {
    r = await get(address, path, accept, ZPAGE_MAX_BYTES);
  } catch (err) {
    return { kind: 'failed', message: text(err) };
  }
  if (r.status === 404) return { kind: 'notServed' };
  // The body of a refusal is the server's text: only its status is kept.
  if (r.status !== 200) return { kind: 'failed', message: `HTTP ${r.status}` };
  try {
    return { kind: 'read', value: parse(r.body) };
  } catch (err) {
    return { kind: 'failed', message: `the page does not parse: ${text(err)}` };
  }
}

export async function observeRunning(peers: readonly ObservedPeer[], hostnames: readonly string[], get: PageGet): Promise<Record<string, ObservedRunning>> {
  const out: Record<string, ObservedRunning> = {};
  await Promise.all([...new Set(hostnames)].map(async (h) => {
    const p = peers.find((x) => x.hostname === h);
    if (!p?.address || !p.ready || p.stale || p.version === undefined) return;
    const [flagz, statusz] = await Promise.all([
      readPage(get, p.address, '/flagz', FLAGZ_ACCEPT, parseFlagz),
      readPage(get, p.address, '/statusz', STATUSZ_ACCEPT, parseStatusz),
    ]);
    out[h] = { flagz, statusz };
  }));
  return out;
}

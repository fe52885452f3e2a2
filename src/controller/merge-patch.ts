type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The RFC 7386 JSON merge patch that turns `from` into `to`: removed keys become null (a merge patch
 * without them would keep them), objects recurse, arrays and scalars are replaced whole. Undefined
 * when nothing changed, so an unchanged status is not written.
 */
export function createMergePatch(from: unknown, to: unknown): Json | undefined {
  if (!isObject(from) || !isObject(to)) {
    return JSON.stringify(from) === JSON.stringify(to) ? undefined : ((to ?? null) as Json);
  }
  const patch: Record<string, Json> = {};
  for (const k of Object.keys(from)) if (to[k] === undefined && from[k] !== undefined) patch[k] = null;
  for (const [k, v] of Object.entries(to)) {
    if (v === undefined) continue;
    const d = createMergePatch(from[k], v);
    if (d !== undefined) patch[k] = d;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}

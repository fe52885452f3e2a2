/**
 * `spec.analysis.prometheus.address` before the operator sends anything to it: an absolute http(s) URL of a host,
 * with no user:password part (a credential in a spec is readable by every `view` holder, and would be sent on
 * every query), no query and no fragment (the operator appends `/api/v1/query?...`; a path prefix is kept).
 * Which hosts are allowed is the policy's (src/plan/policy.ts); this is the shape any host must have.
 * Undefined when it is fine, else why not.
 */
export function prometheusAddressProblem(address: string): string | undefined {
  if (address.length > 2048) return 'longer than 2048 characters';
  // Control characters and spaces never belong in a URL; `new URL` would silently strip some of them.
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i);
    if (c <= 0x20 || (c >= 0x7f && c <= 0x9f)) return 'contains a space or control character';
  }
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    return 'not an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `scheme ${url.protocol.slice(0, -1)} is not http or https`;
  if (url.username !== '' || url.password !== '' || /^[a-z]+:\/\/[^/]*@/iu.test(address)) return 'carries a user or password (put credentials elsewhere; they would be readable in the spec)';
  if (url.hostname === '') return 'has no host';
  if (url.search !== '' || address.includes('?')) return 'has a query string';
  if (url.hash !== '' || address.includes('#')) return 'has a fragment';
  return undefined;
}

// HTTPS_PROXY / NO_PROXY as kubectl reads them (Go's golang.org/x/net/http/httpproxy): the plugin does not tunnel
// through a proxy, so where kubectl would use one it refuses with a clear error instead of connecting around it
// (issue 23: silently ignoring the proxy reached the API server another way than kubectl does, or not at all).
// Pure: the decision from the server URL and the environment.
import { isIP } from 'node:net';

/** The proxy kubectl would use for `server` (an https URL), with the variable that named it; undefined for none. */
export function proxyFor(server: string, env: Record<string, string | undefined>): { proxy: string; variable: string } | undefined {
  const pick = (names: string[]): { value: string; name: string } | undefined => {
    for (const name of names) if (env[name]) return { value: env[name]!, name };
    return undefined;
  };
  const url = new URL(server);
  const proxy = url.protocol === 'http:' ? pick(['HTTP_PROXY', 'http_proxy']) : pick(['HTTPS_PROXY', 'https_proxy']);
  if (!proxy) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (url.protocol === 'http:' ? '80' : '443');
  // Go never proxies localhost or a loopback address.
  if (host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.')) || host === '::1') return undefined;
  const noProxy = pick(['NO_PROXY', 'no_proxy'])?.value ?? '';
  for (const raw of noProxy.split(',').map((e) => e.trim().toLowerCase()).filter(Boolean)) {
    if (raw === '*') return undefined;
    if (raw.includes('/') && isIP(host) && inCidr(host, raw)) return undefined;
    const [name, entryPort] = splitPort(raw);
    let entry = name;
    if (entryPort !== undefined && entryPort !== port) continue;
    if (isIP(entry.replace(/^\[|\]$/g, ''))) {
      if (entry.replace(/^\[|\]$/g, '') === host) return undefined;
      continue;
    }
    // "example.com" matches it and its subdomains; ".example.com" (and "*.example.com") the subdomains only.
    if (entry.startsWith('*.')) entry = entry.slice(1);
    if (entry.startsWith('.') ? host.endsWith(entry) : host === entry || host.endsWith(`.${entry}`)) return undefined;
  }
  return { proxy: proxy.value, variable: proxy.name };
}

function splitPort(entry: string): [string, string | undefined] {
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry);
  return m ? [m[1]!, m[2]!] : [entry, undefined];
}

function inCidr(ip: string, cidr: string): boolean {
  const [net, bitsText] = cidr.split('/');
  const bits = Number(bitsText);
  if (isIP(ip) !== 4 || isIP(net ?? '') !== 4 || !Number.isInteger(bits) || bits < 0 || bits > 32) return false;
  const n = (a: string): number => a.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const mask = bits === 0 ? 0 : 2 ** 32 - 2 ** (32 - bits);
  return (n(ip) & mask) >>> 0 === (n(net!) & mask) >>> 0;
}

/** The error the plugin gives where kubectl would go through a proxy, naming the way around it; undefined otherwise. */
export function proxyRefusal(server: string, env: Record<string, string | undefined>): string | undefined {
  const p = proxyFor(server, env);
  if (!p) return undefined;
  const host = new URL(server).hostname;
  return `${p.variable} is set (${p.proxy}) and kubectl would reach ${server} through it, but this plugin does not go through proxies: ` +
    `add ${host} to NO_PROXY if the API server is reachable directly, or run it where no proxy is needed`;
}

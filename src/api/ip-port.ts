import { isIP } from 'node:net';

/**
 * IP literals with a port, as servers advertise them (`10.0.0.1:6443`, `[fd00::1]:6443`): the only addresses
 * the static Pod driver hands its node agent, which puts them in a kube-apiserver flag and a URL. Anything else
 * (a host name, a zone, a path, a second colon pair, spaces) is not an address here.
 */

/** The characters an IP literal has (no IPv6 zone: `%eth0` names an interface of one node only). */
const IP_CHARS = /^[0-9A-Fa-f:.]{2,45}$/;
const PORT = /^[1-9][0-9]{0,4}$/;

/**
 * Whether `s` is an IP address as Kubernetes' CEL isIP() takes it (k8s.io/apiserver pkg/cel/library/ip.go): IPv4
 * or IPv6, no zone, and not IPv4-mapped IPv6 (`::ffff:10.0.0.1`, which names an IPv4 host by another spelling).
 * The admission policy checks the agent's PEER_IP with isIP(), so the driver accepts no address the policy refuses.
 */
export function isKubernetesIP(s: string): boolean {
  if (s.includes('%')) return false;
  const family = isIP(s);
  if (family === 4) return true;
  if (family !== 6) return false;
  const groups = ipv6Groups(s);
  return !(groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff);
}

/** The eight 16-bit groups of a valid IPv6 literal. */
function ipv6Groups(s: string): number[] {
  let text = s;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a = 0, b = 0, c = 0, d = 0] = v4.slice(1).map(Number);
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (x: string): number[] => (x === '' ? [] : x.split(':').map((g) => parseInt(g, 16)));
  const h = part(head);
  if (tail === undefined) return h;
  const t = part(tail);
  return [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
}

/** `s` as an IPv4 or IPv6 literal (as isKubernetesIP takes it), or undefined. */
export function ipLiteral(s: string): string | undefined {
  return IP_CHARS.test(s) && isKubernetesIP(s) ? s : undefined;
}

/** `s` as a TCP port 1-65535 written in decimal without a leading zero, or undefined. */
export function portNumber(s: string): number | undefined {
  if (!PORT.test(s)) return undefined;
  const n = Number(s);
  return n <= 65535 ? n : undefined;
}

/**
 * `ip:port`, `[v6]:port`, or a bare IP (then `defaultPort`) into its IP (no brackets) and port; undefined when
 * it is not one of those with an IP literal and a port 1-65535.
 */
export function parseIpPort(address: string, defaultPort = 6443): { ip: string; port: number } | undefined {
  const bracketed = /^\[([^\]]*)\](?::([^:]*))?$/.exec(address);
  if (bracketed) {
    const ip = ipLiteral(bracketed[1]!);
    const port = bracketed[2] === undefined ? defaultPort : portNumber(bracketed[2]);
    return ip !== undefined && isIP(ip) === 6 && port !== undefined ? { ip, port } : undefined;
  }
  const colons = address.split(':').length - 1;
  if (colons === 1) {
    const [host = '', p = ''] = address.split(':');
    const ip = ipLiteral(host);
    const port = portNumber(p);
    return ip !== undefined && isIP(ip) === 4 && port !== undefined ? { ip, port } : undefined;
  }
  // No port: a bare IPv4, or a bare IPv6 address (its colons are its own).
  const ip = ipLiteral(address);
  return ip === undefined ? undefined : { ip, port: defaultPort };
}

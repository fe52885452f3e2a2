import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';

export interface Backend {
  name: string;
  address: string;
  port: number;
}

/**
 * TCP balancing with HTTPS health checks on /readyz, as in kubeadm's HA guide: a server that is
 * shutting down fails /readyz first and leaves the rotation before it closes connections.
 */
export async function writeHaproxyConfig(dir: string, listen: string, backends: Backend[]): Promise<string> {
  const path = join(dir, 'haproxy.cfg');
  const cfg = [
    'global',
    '  maxconn 4000',
    // The runtime API: a replacement drains its server here before stopping it (see Cluster.replace).
    `  stats socket ${haproxySocket(dir)} mode 600 level admin`,
    'defaults',
    '  mode tcp',
    '  timeout connect 3s',
    '  timeout client 1h',
    '  timeout server 1h',
    '  timeout tunnel 1h',
    '  timeout check 2s',
    'frontend apiserver',
    `  bind ${listen}`,
    '  default_backend apiservers',
    'backend apiservers',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    '  default-server inter 1s fastinter 500ms downinter 1s rise 2 fall 2 check check-ssl verify none',
    ...backends.map((b) => `  server ${b.name} ${b.address}:${b.port}`),
    '',
  ].join('\n');
  await writeFile(path, cfg);
  return path;
}

export function haproxySocket(dir: string): string {
  return join(dir, 'haproxy.sock');
}

/** One command on haproxy's runtime API (the stats socket); answers its output. */
export function haproxyCommand(socket: string, command: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect({ path: socket });
    let out = '';
    const timer = setTimeout(() => c.destroy(new Error(`haproxy runtime API: no answer to "${command}" within ${timeoutMs} ms`)), timeoutMs);
    c.setEncoding('utf8');
    c.on('connect', () => c.end(`${command}\n`));
    c.on('data', (d: string) => (out += d));
    c.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    c.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

/** Current sessions per server of a backend, from `show stat` (CSV: pxname,svname,qcur,qmax,scur,...). */
export function currentSessions(showStat: string, backend: string): Map<string, number> {
  const out = new Map<string, number>();
  const lines = showStat.split('\n');
  const header = (lines[0] ?? '').replace(/^# /, '').split(',');
  const scur = header.indexOf('scur');
  for (const line of lines.slice(1)) {
    const f = line.split(',');
    if (f[0] === backend && f[1] && f[1] !== 'BACKEND' && f[1] !== 'FRONTEND') out.set(f[1], Number(f[scur] ?? 0));
  }
  return out;
}

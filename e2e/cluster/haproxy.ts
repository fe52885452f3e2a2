import { writeFile } from 'node:fs/promises';
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

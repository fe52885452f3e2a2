import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pki } from './pki.ts';

/**
 * Job of the operator's own /metrics (plain HTTP): its targets are read from the JSON files (Prometheus
 * file_sd format) that a test writes into `operatorTargetsDir(cluster.dir)`, picked up within a second.
 */
export const OPERATOR_JOB = 'apiserver-upgrade-operator';
export const operatorTargetsDir = (dir: string): string => join(dir, 'operator-targets');

export interface ScrapeTarget {
  address: string;
  port: number;
}

/**
 * A Prometheus that scrapes every apiserver's /metrics directly (job `apiserver`, `instance` = the
 * server's address:port, as the kube-prometheus ServiceMonitor labels them), over TLS with the
 * cluster CA and the admin client certificate. A short scrape interval lets `increase()` over a
 * window of seconds see the two samples it needs.
 */
export async function writePrometheusConfig(dir: string, pki: Pki, targets: ScrapeTarget[], scrapeIntervalSeconds: number, ruleFiles: readonly string[] = []): Promise<string> {
  const path = join(dir, 'prometheus.yml');
  const cfg = [
    'global:',
    `  scrape_interval: ${scrapeIntervalSeconds}s`,
    `  scrape_timeout: ${scrapeIntervalSeconds}s`,
    // Rules (a test's alerts) are evaluated as often as the servers are scraped.
    `  evaluation_interval: ${scrapeIntervalSeconds}s`,
    ...(ruleFiles.length ? ['rule_files:', ...ruleFiles.map((f) => `  - '${f}'`)] : []),
    'scrape_configs:',
    '  - job_name: apiserver',
    '    scheme: https',
    '    tls_config:',
    `      ca_file: ${pki.caCert}`,
    `      cert_file: ${pki.adminCert}`,
    `      key_file: ${pki.adminKey}`,
    '    static_configs:',
    `      - targets: [${targets.map((t) => `'${t.address}:${t.port}'`).join(', ')}]`,
    `  - job_name: ${OPERATOR_JOB}`,
    '    file_sd_configs:',
    `      - files: ['${join(operatorTargetsDir(dir), '*.json')}']`,
    '        refresh_interval: 1s',
    '',
  ].join('\n');
  await mkdir(operatorTargetsDir(dir), { recursive: true });
  await writeFile(path, cfg);
  return path;
}

import type { Pki, ServingCert } from './pki.ts';
import { PROXY_GATE } from '../../src/api/constants.ts';
import { parseVersion } from '../../src/plan/version.ts';
import { proxyGateOnByDefault } from '../../src/plan/version-facts.ts';

export { PROXY_GATE };
export const SERVICE_CIDR = '10.96.0.0/16';
export const SERVICE_IP = '10.96.0.1';
export const SECURE_PORT = 6443;

/** The gate as a server of `version` runs it: explicit --feature-gates, else the version's default. */
export function proxyGateEnabled(version: string, featureGates: Record<string, boolean>): boolean {
  const v = parseVersion(version);
  if (!v) throw new Error(`not a Kubernetes version: ${version}`);
  const byDefault = proxyGateOnByDefault(v);
  if (featureGates[PROXY_GATE] === undefined && byDefault === undefined) throw new Error(`the ${PROXY_GATE} default of ${version} is unknown (src/plan/version-facts.ts): set it in featureGates`);
  return featureGates[PROXY_GATE] ?? byDefault!;
}

export interface ApiServerFlagInput {
  version: string;
  address: string;
  etcdUrl: string;
  pki: Pki;
  serving: ServingCert;
  featureGates: Record<string, boolean>;
  extraFlags: string[];
  /** Audit logging: the policy file (shared) and this server's own log file. */
  audit?: { policyFile: string; logPath: string };
}

/**
 * The flags of a kubeadm-like HA member with every Mixed Version Proxy flag set.
 * The --peer-* flags make startup fail when the gate is off, so they are only passed with it on;
 * the proxy-client cert and requestheader flags are always set, as in kubeadm (aggregation uses them too).
 * `extraFlags` override a default of the same name (see withOverrides) and are appended otherwise.
 */
export function apiServerFlags(i: ApiServerFlagInput): string[] {
  const gateOn = proxyGateEnabled(i.version, i.featureGates);
  const gates = Object.entries(i.featureGates).map(([k, v]) => `${k}=${v}`).join(',');
  const flags = [
    `--advertise-address=${i.address}`,
    `--bind-address=${i.address}`,
    `--secure-port=${SECURE_PORT}`,
    `--etcd-servers=${i.etcdUrl}`,
    `--tls-cert-file=${i.serving.cert}`,
    `--tls-private-key-file=${i.serving.key}`,
    `--client-ca-file=${i.pki.caCert}`,
    `--service-account-issuer=https://kubernetes.default.svc.cluster.local`,
    `--service-account-key-file=${i.pki.saPub}`,
    `--service-account-signing-key-file=${i.pki.saKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    `--authorization-mode=RBAC`,
    `--allow-privileged=true`,
    `--profiling=false`,
    `--proxy-client-cert-file=${i.pki.proxyClientCert}`,
    `--proxy-client-key-file=${i.pki.proxyClientKey}`,
    `--requestheader-client-ca-file=${i.pki.frontProxyCaCert}`,
    `--requestheader-allowed-names=front-proxy-client`,
    `--requestheader-username-headers=X-Remote-User`,
    `--requestheader-group-headers=X-Remote-Group`,
    `--requestheader-extra-headers-prefix=X-Remote-Extra-`,
    `--enable-priority-and-fairness=true`,
    // Without it a graceful stop waits the full 60 s server shutdown timeout for open watches (measured:
    // 60.0 s with one watch open, 1.1 s with this flag); real control planes hit the same wall.
    `--shutdown-watch-termination-grace-period=5s`,
    // /readyz fails at once on SIGTERM while the server keeps serving for 3 s: haproxy (checks every
    // second, down after 2 failures) takes it out of rotation before the listener closes, as a real LB
    // in front of kubeadm's control plane needs. Without it clients saw connection errors mid-upgrade.
    `--shutdown-delay-duration=3s`,
    `--v=2`,
  ];
  if (gates !== '') flags.push(`--feature-gates=${gates}`);
  if (i.audit) flags.push(`--audit-policy-file=${i.audit.policyFile}`, `--audit-log-path=${i.audit.logPath}`);
  if (gateOn) {
    flags.push(`--peer-ca-file=${i.pki.caCert}`, `--peer-advertise-ip=${i.address}`, `--peer-advertise-port=${SECURE_PORT}`);
  }
  return withOverrides(flags, i.extraFlags);
}

/**
 * The defaults with `extra` applied: an extra `--name=value` whose name a default already has replaces that
 * default in place (so `--requestheader-allowed-names=` empties it: repeating a slice flag would append to it);
 * every other extra flag is appended.
 */
export function withOverrides(defaults: readonly string[], extra: readonly string[]): string[] {
  const nameOf = (f: string): string => (f.includes('=') ? f.slice(0, f.indexOf('=')) : f);
  const overrides = new Map(extra.map((f) => [nameOf(f), f]));
  const out = defaults.map((f) => overrides.get(nameOf(f)) ?? f);
  const taken = new Set(defaults.map(nameOf));
  return [...out, ...extra.filter((f) => !taken.has(nameOf(f)))];
}

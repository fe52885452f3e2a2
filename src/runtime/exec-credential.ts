/**
 * A kubeconfig's exec credential plugin (user.exec: aws eks get-token, gke-gcloud-auth-plugin, kubelogin, ...):
 * run it, check its ExecCredential, and keep the credential until it expires. The kubeconfig side (validating
 * user.exec, resolving the command's path) is in kubeconfig.ts.
 */
import { execFile } from 'node:child_process';
import { safeMessage } from '../plan/redact.ts';

export const EXEC_API_VERSIONS: readonly string[] = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];

/** user.exec, validated; `command` is already resolved against the kubeconfig's directory when it had a path. */
export interface ExecConfig {
  apiVersion: string;
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  installHint?: string;
  provideClusterInfo: boolean;
}

/** spec.cluster of KUBERNETES_EXEC_INFO, with client-go's JSON names; empty fields are left out as Go's omitempty does. */
export interface ExecCluster {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  /** base64, as in a kubeconfig. */
  'certificate-authority-data'?: string;
  /** The cluster's `client.authentication.k8s.io/exec` extension. */
  config?: unknown;
}

/** What the plugin returned: a token, a client certificate, or both. */
export interface ExecCredential {
  token?: string;
  cert?: Buffer;
  key?: Buffer;
  /** Epoch milliseconds; undefined: good until the server refuses it. */
  expiresAt?: number;
}

/** The plugin could not be run or did not answer with a credential. */
export class ExecCredentialError extends Error {
  override readonly name = 'ExecCredentialError';
}

export interface ExecPluginOptions {
  /** Asked at each run, so that a rotated CA file is what the plugin is told. Only used with provideClusterInfo. */
  cluster?: () => ExecCluster;
  now?: () => number;
  /** Default 60 s: a plugin that waits for a browser login never finishes without a terminal. */
  timeoutMs?: number;
}

export class ExecPlugin {
  private readonly config: ExecConfig;
  private readonly cluster: (() => ExecCluster) | undefined;
  private readonly now: () => number;
  private readonly timeoutMs: number;
  private cached: ExecCredential | undefined;
  private running: Promise<ExecCredential> | undefined;

  constructor(config: ExecConfig, opts: ExecPluginOptions = {}) {
    this.config = config;
    this.cluster = opts.cluster;
    this.now = opts.now ?? Date.now;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
  }

  /** The cached credential, or a fresh one; callers that arrive while the plugin runs wait for that same run. */
  get(): Promise<ExecCredential> {
    const c = this.cached;
    if (c && (c.expiresAt === undefined || this.now() < c.expiresAt)) return Promise.resolve(c);
    // A failed run is not cached: the next request tries again.
    this.running ??= this.run()
      .then((cred) => (this.cached = cred))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  /** The server refused the credential (revoked before its expiry): the next get() runs the plugin again. */
  reset(): void {
    this.cached = undefined;
  }

  private async run(): Promise<ExecCredential> {
    const { config } = this;
    const what = `exec plugin ${JSON.stringify(config.command)}`;
    const info = {
      apiVersion: config.apiVersion,
      kind: 'ExecCredential',
      // We never have a terminal to hand the plugin: the operator runs in a pod, the CLI's output may be piped.
      spec: { interactive: false, ...(config.provideClusterInfo && this.cluster ? { cluster: this.cluster() } : {}) },
    };
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const e of config.env) env[e.name] = e.value;
    env.KUBERNETES_EXEC_INFO = JSON.stringify(info);

    return new Promise((resolve, reject) => {
      const child = execFile(config.command, config.args, { env, timeout: this.timeoutMs, windowsHide: true }, (err, stdout, stderr) => {
        if (err) {
          reject(new ExecCredentialError(failure(what, err, stderr, config.installHint, this.timeoutMs)));
          return;
        }
        try {
          resolve(parseExecCredential(stdout, config.apiVersion, what));
        } catch (e) {
          reject(e as Error);
        }
      });
      // execFile has no stdio option: closing stdin at once gives a plugin that reads it EOF instead of a hang.
      child.stdin?.on('error', () => {});
      child.stdin?.end();
    });
  }
}

function failure(what: string, err: Error & { code?: unknown; killed?: boolean; signal?: NodeJS.Signals | null }, stderr: string, installHint: string | undefined, timeoutMs: number): string {
  const shown = safeMessage(stderr, { maxChars: 500 }).trim();
  const tail = shown ? `: ${shown}` : '';
  if (err.code === 'ENOENT') return `${what} was not found${installHint ? `. ${installHint.trim()}` : ''}`;
  if (typeof err.code === 'string') return `${what} could not be run: ${err.code}`;
  if (err.killed) return `${what} did not finish within ${timeoutMs / 1000} s and was killed${tail}`;
  if (typeof err.code === 'number') return `${what} failed with exit code ${err.code}${tail}`;
  if (err.signal) return `${what} was killed by ${err.signal}${tail}`;
  return `${what} failed: ${err.message}`;
}

/** stdout of the plugin: an ExecCredential of the version we asked for, with a token or a certificate and key. */
export function parseExecCredential(stdout: string, apiVersion: string, what = 'exec plugin'): ExecCredential {
  const bad = (why: string): ExecCredentialError => new ExecCredentialError(`${what} did not return a usable ExecCredential: ${why}`);
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    throw bad(`its output is not JSON: ${JSON.stringify(stdout.slice(0, 100))}`);
  }
  if (!isObject(doc)) throw bad('its output is not a JSON object');
  if (doc.kind !== 'ExecCredential') throw bad(`kind is ${JSON.stringify(doc.kind)}`);
  if (doc.apiVersion !== apiVersion) throw bad(`apiVersion is ${JSON.stringify(doc.apiVersion)}, the kubeconfig asked for ${apiVersion}`);
  const status = doc.status;
  if (!isObject(status)) throw bad('it has no status');
  const cred: ExecCredential = {};
  const { token, clientCertificateData: cert, clientKeyData: key, expirationTimestamp: exp } = status;
  if (token !== undefined && token !== '') {
    if (typeof token !== 'string') throw bad('status.token is not a string');
    cred.token = token;
  }
  if ((cert !== undefined && cert !== '') || (key !== undefined && key !== '')) {
    if (typeof cert !== 'string' || !cert) throw bad('status.clientKeyData without status.clientCertificateData');
    if (typeof key !== 'string' || !key) throw bad('status.clientCertificateData without status.clientKeyData');
    cred.cert = Buffer.from(cert);
    cred.key = Buffer.from(key);
  }
  if (!cred.token && !cred.cert) throw bad('status has neither a token nor clientCertificateData and clientKeyData');
  if (exp !== undefined && exp !== null) {
    const t = typeof exp === 'string' ? Date.parse(exp) : NaN;
    if (Number.isNaN(t)) throw bad(`status.expirationTimestamp ${JSON.stringify(exp)} is not an RFC 3339 time`);
    cred.expiresAt = t;
  }
  return cred;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The operator's and the CLI's kubeconfig: which server, and the credentials for each request. Read with the `yaml`
 * package and Node's own modules, not client-node's KubeConfig, whose module loads undici, openid-client, socks
 * and more for features the operator does not use (~13 MiB of RSS; docs/scale.md).
 *
 * Loading validates everything the chosen context uses, so that a broken kubeconfig fails at start with the file and
 * the field named, not at the first request with a TLS or 401 error. Files (CA, client certificate and key, token
 * files) are read again later so that rotated ones are picked up.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { EXEC_API_VERSIONS, ExecPlugin, type ExecCluster, type ExecConfig } from './exec-credential.ts';

/** TLS material and headers for one request; asked for per request so that rotating tokens and certificates keep working. */
export interface Credentials {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** Authorization, Impersonate-*; an array is sent as repeated headers (Impersonate-Group). */
  headers: Record<string, string | string[]>;
  /** Only false when the kubeconfig says insecure-skip-tls-verify. */
  rejectUnauthorized: boolean;
  /** tls-server-name: the name to verify the server's certificate against, instead of the URL's host. */
  serverName?: string;
}

/** A kubeconfig that cannot be used, with what is wrong and where. */
export class KubeconfigError extends Error {
  override readonly name = 'KubeconfigError';
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** client-go's period for token files: bound service account tokens are rotated well before they expire. */
const TOKEN_FILE_PERIOD_MS = 60_000;
const EXEC_EXTENSION = 'client.authentication.k8s.io/exec';

type Obj = Record<string, unknown>;

/** Everything credentials() needs, resolved at load. */
interface Auth {
  ca?: Material;
  cert?: Material;
  key?: Material;
  insecure: boolean;
  serverName?: string;
  token?: string;
  tokenFile?: TokenFile;
  /** The whole header value, `Basic ...`. */
  basic?: string;
  impersonate: Record<string, string | string[]>;
  exec?: ExecPlugin;
}

export class KubeAccess {
  /** The API server's URL without a trailing slash, e.g. https://10.0.0.1:6443. */
  readonly server: string;
  /** The context in use ("in-cluster" for the pod's service account). */
  readonly contextName: string;
  /** The context's namespace, or the pod's own in-cluster; undefined when neither says. */
  readonly namespace: string | undefined;
  private readonly auth: Auth;

  /** Milliseconds since the epoch, for the token files' re-reads and exec credentials' expiry; tests move it. */
  static now: () => number = () => Date.now();

  private constructor(server: string, contextName: string, namespace: string | undefined, auth: Auth) {
    this.server = server;
    this.contextName = contextName;
    this.namespace = namespace;
    this.auth = auth;
  }

  /** One kubeconfig file; it must exist. */
  static fromFile(file: string, context?: string): KubeAccess {
    return KubeAccess.select(mergeFile(file), context);
  }

  /** $KUBECONFIG's list, merged as kubectl does: missing files are skipped, and for each name the first file that sets it wins. */
  static fromFiles(files: readonly string[], context?: string): KubeAccess {
    return KubeAccess.select(mergeFiles(files), context);
  }

  /**
   * The context names of the kubeconfig kubectl would read: `file` (which must exist), else $KUBECONFIG's list merged,
   * else ~/.kube/config; in the order the files define them, each name once. A pod's service account has no contexts:
   * without a kubeconfig this throws, naming where it looked.
   */
  static contextNames(file?: string): string[] {
    if (file) return [...mergeFile(file).contexts.keys()];
    const list = (process.env.KUBECONFIG ?? '').split(path.delimiter).filter((f) => f !== '');
    if (list.length > 0) return [...mergeFiles(list).contexts.keys()];
    const home = path.join(homedir(), '.kube', 'config');
    if (existsSync(home)) return [...mergeFile(home).contexts.keys()];
    throw new KubeconfigError(`no kubeconfig: $KUBECONFIG is not set and ${home} does not exist`);
  }

  /** A parsed kubeconfig; relative paths in it resolve against `dir`, and errors name it `source`. */
  static fromObject(doc: unknown, dir: string, context?: string, source = '<object>'): KubeAccess {
    const m = new Merged();
    m.add(doc, path.resolve(dir), source);
    return KubeAccess.select(m, context);
  }

  /** The pod's service account. `root` prefixes its directory, for tests. */
  static fromCluster(root = ''): KubeAccess {
    const host = process.env.KUBERNETES_SERVICE_HOST;
    const port = process.env.KUBERNETES_SERVICE_PORT;
    if (!host || !port) throw new KubeconfigError('in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set (they are in every pod)');
    const dir = `${root}${SERVICE_ACCOUNT_DIR}`;
    const server = `https://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
    const ca = new WatchedFile(`${dir}/ca.crt`, 'in-cluster: the service account CA');
    ca.read();
    let namespace: string | undefined;
    try {
      namespace = readFileSync(`${dir}/namespace`, 'utf8').trim() || undefined;
    } catch {
      // Not mounted (a projected volume without it): the namespace is then the caller's to choose.
    }
    const tokenFile = new TokenFile(`${dir}/token`, 'in-cluster: the service account token');
    return new KubeAccess(server, 'in-cluster', namespace, { ca, insecure: false, tokenFile, impersonate: {} });
  }

  /**
   * kubectl's and client-go's order: $KUBECONFIG, else ~/.kube/config, else the pod's service account.
   * `root` prefixes the service account's directory, for tests.
   */
  static fromDefault(context?: string, root = ''): KubeAccess {
    const list = (process.env.KUBECONFIG ?? '').split(path.delimiter).filter((f) => f !== '');
    if (list.length > 0) return KubeAccess.fromFiles(list, context);
    const home = path.join(homedir(), '.kube', 'config');
    if (existsSync(home)) return KubeAccess.fromFile(home, context);
    const token = `${root}${SERVICE_ACCOUNT_DIR}/token`;
    if (existsSync(token) && process.env.KUBERNETES_SERVICE_HOST) {
      // The service account has no contexts: a context asked for by name is a kubeconfig the user expected to be there.
      if (context) throw new KubeconfigError(`context "${context}" was asked for, but there is no kubeconfig: $KUBECONFIG is not set and ${home} does not exist`);
      return KubeAccess.fromCluster(root);
    }
    throw new KubeconfigError(`no kubeconfig: $KUBECONFIG is not set, ${home} does not exist, and this is not a pod with a service account (${token} and $KUBERNETES_SERVICE_HOST)`);
  }

  /** TLS material and headers for the next request; runs the exec plugin when its credential is missing or expired. */
  async credentials(): Promise<Credentials> {
    const a = this.auth;
    const headers: Record<string, string | string[]> = {};
    const creds: Credentials = { headers, rejectUnauthorized: !a.insecure };
    if (a.serverName !== undefined) creds.serverName = a.serverName;
    if (a.ca) creds.ca = a.ca.read();
    if (a.cert && a.key) {
      creds.cert = a.cert.read();
      creds.key = a.key.read();
    }
    // userAuth keeps one of token and tokenFile (the file, as in client-go), and sets exec only without a static credential.
    const token = a.tokenFile?.read() ?? a.token;
    if (token !== undefined) headers.Authorization = `Bearer ${token}`;
    else if (a.basic !== undefined) headers.Authorization = a.basic;
    else if (a.exec) {
      const e = await a.exec.get();
      if (e.token !== undefined) headers.Authorization = `Bearer ${e.token}`;
      if (e.cert && e.key) {
        creds.cert = e.cert;
        creds.key = e.key;
      }
    }
    for (const [name, value] of Object.entries(a.impersonate)) headers[name] = Array.isArray(value) ? [...value] : value;
    return creds;
  }

  /** The server answered 401: run the exec plugin again, and re-read a token file, at the next request. */
  credentialsRejected(): void {
    this.auth.exec?.reset();
    this.auth.tokenFile?.expire();
  }

  private static select(m: Merged, context: string | undefined): KubeAccess {
    const all = m.sources.join(', ');
    const name = context || m.currentContext;
    if (!name) throw new KubeconfigError(`${all}: no context: current-context is not set and no context was given`);
    const ctx = m.contexts.get(name);
    if (!ctx) throw new KubeconfigError(`${all}: context "${name}" is not defined (contexts: ${[...m.contexts.keys()].join(', ') || 'none'})`);
    const c = new Fields(ctx.value, ctx.where);
    const clusterName = c.str('cluster');
    if (!clusterName) throw new KubeconfigError(`${ctx.where}: cluster is not set`);
    const userName = c.str('user');
    if (!userName) throw new KubeconfigError(`${ctx.where}: user is not set`);
    const cluster = m.clusters.get(clusterName);
    if (!cluster) throw new KubeconfigError(`${ctx.where}: cluster "${clusterName}" is not defined in ${all}`);
    const user = m.users.get(userName);
    if (!user) throw new KubeconfigError(`${ctx.where}: user "${userName}" is not defined in ${all}`);
    const { server, tls, execCluster } = clusterConfig(new Fields(cluster.value, cluster.where), cluster.dir);
    const auth = userAuth(new Fields(user.value, user.where), user.dir, execCluster);
    return new KubeAccess(server, name, c.str('namespace'), { ...tls, ...auth });
  }
}

/** The kubeconfig files' clusters, users and contexts by name, each with the file it came from. */
class Merged {
  readonly sources: string[] = [];
  readonly clusters = new Map<string, Entry>();
  readonly users = new Map<string, Entry>();
  readonly contexts = new Map<string, Entry>();
  currentContext: string | undefined;

  add(doc: unknown, dir: string, source: string): void {
    this.sources.push(source);
    if (doc === undefined || doc === null) return; // an empty file is an empty kubeconfig, for kubectl too
    if (!isObject(doc)) throw new KubeconfigError(`${source}: not a kubeconfig (a YAML mapping was expected)`);
    const lists = [['clusters', 'cluster', this.clusters], ['users', 'user', this.users], ['contexts', 'context', this.contexts]] as const;
    for (const [list, kind, map] of lists) {
      const entries = doc[list];
      if (entries === undefined || entries === null) continue;
      if (!Array.isArray(entries)) throw new KubeconfigError(`${source}: ${list} must be a list`);
      entries.forEach((e: unknown, i) => {
        if (!isObject(e) || typeof e.name !== 'string' || e.name === '') throw new KubeconfigError(`${source}: ${list}[${i}] has no name`);
        const where = `${source}: ${kind} "${e.name}"`;
        const value = e[kind] ?? {};
        if (!isObject(value)) throw new KubeconfigError(`${where}: ${kind} must be a mapping`);
        // kubectl's merge: the first file that defines a name wins, and relative paths stay relative to that file.
        if (!map.has(e.name)) map.set(e.name, { value, dir, where });
      });
    }
    const current = doc['current-context'];
    if (current !== undefined && current !== null && typeof current !== 'string') throw new KubeconfigError(`${source}: current-context must be a string`);
    if (!this.currentContext && current) this.currentContext = current;
  }
}

interface Entry {
  value: Obj;
  /** Relative paths in the entry resolve against it. */
  dir: string;
  /** `file: kind "name"`, for errors. */
  where: string;
}

/** One kubeconfig file, which must exist. */
function mergeFile(file: string): Merged {
  const m = new Merged();
  const doc = readKubeconfig(file);
  if (doc === undefined) throw new KubeconfigError(`${file}: the kubeconfig does not exist`);
  m.add(doc, path.dirname(path.resolve(file)), file);
  return m;
}

/** A list of kubeconfig files merged as kubectl merges $KUBECONFIG's: missing ones skipped, at least one must exist. */
function mergeFiles(files: readonly string[]): Merged {
  const m = new Merged();
  for (const file of files) {
    const doc = readKubeconfig(file);
    if (doc !== undefined) m.add(doc, path.dirname(path.resolve(file)), file);
  }
  if (m.sources.length === 0) throw new KubeconfigError(`none of the kubeconfig files exists: ${files.join(', ') || '(no files given)'}`);
  return m;
}

/** The parsed file, or undefined when it does not exist. */
function readKubeconfig(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new KubeconfigError(`${file}: cannot read the kubeconfig: ${(err as Error).message}`);
  }
  try {
    return parse(text) as unknown;
  } catch (err) {
    throw new KubeconfigError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
}

function clusterConfig(f: Fields, dir: string): { server: string; tls: Pick<Auth, 'ca' | 'insecure' | 'serverName'>; execCluster: () => ExecCluster } {
  if (f.str('proxy-url') !== undefined) throw new KubeconfigError(`${f.where}: proxy-url is not supported; reach the API server without a proxy (or through one the network routes transparently)`);
  const raw = f.str('server');
  if (raw === undefined) throw new KubeconfigError(`${f.where}: server is not set`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new KubeconfigError(`${f.where}: server ${JSON.stringify(raw)} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new KubeconfigError(`${f.where}: server ${JSON.stringify(raw)} must be an https:// or http:// URL`);
  const server = raw.replace(/\/+$/, '');
  const insecure = f.bool('insecure-skip-tls-verify');
  const ca = material(f, 'certificate-authority', 'certificate-authority-data', dir);
  // Which of the two was meant cannot be known; client-go refuses the pair too.
  if (insecure && ca) throw new KubeconfigError(`${f.where}: insecure-skip-tls-verify and a certificate authority cannot both be set (kubectl refuses this too)`);
  const serverName = f.str('tls-server-name');
  const tls = { insecure, ...(ca ? { ca } : {}), ...(serverName !== undefined ? { serverName } : {}) };

  const extensions = f.get('extensions');
  const ext = Array.isArray(extensions) ? extensions.find((e: unknown) => isObject(e) && e.name === EXEC_EXTENSION) as Obj | undefined : undefined;
  const execCluster = (): ExecCluster => ({
    server,
    ...(serverName !== undefined ? { 'tls-server-name': serverName } : {}),
    ...(insecure ? { 'insecure-skip-tls-verify': true } : {}),
    ...(ca ? { 'certificate-authority-data': ca.read().toString('base64') } : {}),
    ...(ext?.extension !== undefined ? { config: ext.extension } : {}),
  });
  return { server, tls, execCluster };
}

function userAuth(f: Fields, dir: string, execCluster: () => ExecCluster): Omit<Auth, 'ca' | 'insecure' | 'serverName'> {
  if (f.has('auth-provider')) {
    throw new KubeconfigError(`${f.where}: auth-provider plugins (oidc, gcp, azure) are not supported; use an exec credential plugin instead (e.g. kubelogin), as kubectl does since 1.26`);
  }
  const auth: Omit<Auth, 'ca' | 'insecure' | 'serverName'> = { impersonate: impersonation(f) };

  const cert = material(f, 'client-certificate', 'client-certificate-data', dir);
  const key = material(f, 'client-key', 'client-key-data', dir);
  if (cert && !key) throw new KubeconfigError(`${f.where}: client-certificate is set without client-key`);
  if (key && !cert) throw new KubeconfigError(`${f.where}: client-key is set without client-certificate`);
  if (cert && key) {
    auth.cert = cert;
    auth.key = key;
  }

  const token = f.str('token');
  const tokenFile = f.str('tokenFile');
  const username = f.str('username');
  const password = f.str('password');
  const basic = username !== undefined || password !== undefined;
  if ((token !== undefined || tokenFile !== undefined) && basic) throw new KubeconfigError(`${f.where}: both a token and username/password are set; kubectl refuses this too, keep one`);
  if (tokenFile !== undefined) auth.tokenFile = new TokenFile(path.resolve(dir, tokenFile), `${f.where}: tokenFile`);
  else if (token !== undefined) auth.token = token;
  if (basic) auth.basic = `Basic ${Buffer.from(`${username ?? ''}:${password ?? ''}`).toString('base64')}`;

  const exec = f.get('exec');
  if (exec !== undefined && exec !== null) {
    const config = execConfig(new Fields(exec, `${f.where}: exec`), dir);
    // client-go runs the plugin only when the user has no credential of its own (token, token file, username and
    // password, client certificate), so that `--token` and friends win; its exec.go says why. We do the same.
    if (!auth.token && !auth.tokenFile && !auth.basic && !auth.cert) auth.exec = new ExecPlugin(config, { cluster: execCluster, now: () => KubeAccess.now() });
  }
  return auth;
}

function execConfig(f: Fields, dir: string): ExecConfig {
  const apiVersion = f.str('apiVersion');
  if (apiVersion === undefined || !EXEC_API_VERSIONS.includes(apiVersion)) {
    throw new KubeconfigError(`${f.where}: apiVersion ${JSON.stringify(apiVersion ?? '')} is not supported (${EXEC_API_VERSIONS.join(', ')})`);
  }
  const command = f.str('command');
  if (command === undefined) throw new KubeconfigError(`${f.where}: command is not set`);
  const mode = f.str('interactiveMode');
  if (mode === 'Always') throw new KubeconfigError(`${f.where}: interactiveMode Always needs a terminal, which is never given to the plugin here; use a plugin that logs in without one`);
  if (mode !== undefined && mode !== 'Never' && mode !== 'IfAvailable') throw new KubeconfigError(`${f.where}: interactiveMode ${JSON.stringify(mode)} is not Never, IfAvailable or Always`);
  const rawEnv = f.get('env') ?? [];
  if (!Array.isArray(rawEnv)) throw new KubeconfigError(`${f.where}: env must be a list of {name, value}`);
  const env = rawEnv.map((e: unknown, i) => {
    if (!isObject(e) || typeof e.name !== 'string' || e.name === '' || typeof (e.value ?? '') !== 'string') throw new KubeconfigError(`${f.where}: env[${i}] must have a name and a string value`);
    return { name: e.name, value: (e.value ?? '') as string };
  });
  const installHint = f.str('installHint');
  return {
    apiVersion,
    // client-go: a command with a path in it is relative to the kubeconfig's directory; a bare name is found on PATH.
    command: path.basename(command) === command ? command : path.resolve(dir, command),
    args: f.strings('args'),
    env,
    ...(installHint !== undefined ? { installHint } : {}),
    provideClusterInfo: f.bool('provideClusterInfo'),
  };
}

function impersonation(f: Fields): Record<string, string | string[]> {
  const h: Record<string, string | string[]> = {};
  const user = f.str('as');
  const uid = f.str('as-uid');
  const groups = f.strings('as-groups');
  const extra = f.get('as-user-extra') ?? {};
  if (!isObject(extra)) throw new KubeconfigError(`${f.where}: as-user-extra must be a mapping of lists of strings`);
  if (user === undefined) {
    // The API server cannot impersonate groups of nobody; client-go refuses this too.
    if (uid !== undefined || groups.length > 0 || Object.keys(extra).length > 0) throw new KubeconfigError(`${f.where}: as-uid, as-groups and as-user-extra need as (the user to impersonate)`);
    return h;
  }
  h['Impersonate-User'] = user;
  if (uid !== undefined) h['Impersonate-Uid'] = uid;
  if (groups.length > 0) h['Impersonate-Group'] = groups;
  for (const [k, v] of Object.entries(extra)) {
    const values = v === null ? [] : v;
    if (!Array.isArray(values) || !values.every((x) => typeof x === 'string')) throw new KubeconfigError(`${f.where}: as-user-extra.${k} must be a list of strings`);
    if (values.length > 0) h[`Impersonate-Extra-${headerKeyEscape(k)}`] = values as string[];
  }
  return h;
}

/** RFC 7230 token characters other than %: what client-go leaves unescaped in an Impersonate-Extra- key. */
const HEADER_KEY_BYTE = /^[A-Za-z0-9!#$&'*+\-.^_`|~]$/;

/** client-go's headerKeyEscape: every other byte of the UTF-8 key as %XX, so that the server can unescape it. */
export function headerKeyEscape(key: string): string {
  let out = '';
  for (const b of Buffer.from(key, 'utf8')) {
    const c = String.fromCharCode(b);
    out += HEADER_KEY_BYTE.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

interface Material {
  read(): Buffer;
}

/** CA, client certificate or key: inline data, decoded once; or a file, read at each request (WatchedFile). */
function material(f: Fields, fileKey: string, dataKey: string, dir: string): Material | undefined {
  const data = f.str(dataKey);
  // -data wins over the file, as in client-go.
  if (data !== undefined) {
    const compact = data.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) throw new KubeconfigError(`${f.where}: ${dataKey} is not base64 (PEM text goes in ${fileKey}, as a file)`);
    const buf = Buffer.from(compact, 'base64');
    return { read: () => buf };
  }
  const file = f.str(fileKey);
  if (file === undefined) return undefined;
  const w = new WatchedFile(path.resolve(dir, file), `${f.where}: ${fileKey}`);
  w.read(); // a missing file is a kubeconfig error now rather than a TLS error at the first request
  return w;
}

/**
 * A file read whenever it changed: a stat per request, and the same Buffer while it did not, so that a connection
 * pool keyed on the TLS material keeps its connections. Secret mounts swap a symlink, which changes the inode.
 */
class WatchedFile implements Material {
  private readonly file: string;
  private readonly what: string;
  private stamp = '';
  private data: Buffer | undefined;

  constructor(file: string, what: string) {
    this.file = file;
    this.what = what;
  }

  read(): Buffer {
    try {
      const s = statSync(this.file);
      const stamp = `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`;
      if (this.data === undefined || stamp !== this.stamp) {
        this.data = readFileSync(this.file);
        this.stamp = stamp;
      }
      return this.data;
    } catch (err) {
      throw new KubeconfigError(`${this.what}: cannot read ${this.file}: ${(err as Error).message}`);
    }
  }
}

/** A bearer token in a file, read again at most every minute. */
class TokenFile {
  private readonly file: string;
  private readonly what: string;
  private token = '';
  private readAt = -Infinity;

  constructor(file: string, what: string) {
    this.file = file;
    this.what = what;
    this.read();
  }

  read(): string {
    const now = KubeAccess.now();
    if (now - this.readAt < TOKEN_FILE_PERIOD_MS) return this.token;
    this.readAt = now;
    try {
      const token = readFileSync(this.file, 'utf8').trim();
      if (token === '') throw new Error('the file is empty');
      this.token = token;
    } catch (err) {
      // As client-go: once there was a token, a failed re-read (a rotation half done) keeps using it.
      if (this.token === '') throw new KubeconfigError(`${this.what}: cannot read a token from ${this.file}: ${(err as Error).message}`);
    }
    return this.token;
  }

  expire(): void {
    this.readAt = -Infinity;
  }
}

/** Typed fields of one kubeconfig entry; a wrong type is an error naming the entry and the field. */
class Fields {
  readonly where: string;
  private readonly o: Obj;

  constructor(o: unknown, where: string) {
    if (!isObject(o)) throw new KubeconfigError(`${where} must be a mapping`);
    this.o = o;
    this.where = where;
  }

  has(key: string): boolean {
    return this.o[key] !== undefined && this.o[key] !== null;
  }

  get(key: string): unknown {
    return this.o[key] ?? undefined;
  }

  /** Empty is unset, as client-go reads every string field. */
  str(key: string): string | undefined {
    const v = this.o[key];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') throw new KubeconfigError(`${this.where}: ${key} must be a string`);
    return v;
  }

  bool(key: string): boolean {
    const v = this.o[key];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') throw new KubeconfigError(`${this.where}: ${key} must be true or false`);
    return v;
  }

  strings(key: string): string[] {
    const v = this.o[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new KubeconfigError(`${this.where}: ${key} must be a list of strings`);
    return v as string[];
  }
}

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

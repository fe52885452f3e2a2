/**
 * The operator's own trust limits (docs/policy.md): which images, webhook URLs, token destinations, node paths
 * and Prometheus addresses any ApiServerUpgrade may make it use. Whoever may create (or patch) an ApiServerUpgrade otherwise chooses the
 * image the static Pod driver runs as root with hostPath mounts on every control-plane node, the
 * kube-apiserver image, and where the webhook driver sends its bearer token. The policy is the operator's
 * configuration (--policy-file), not the spec's: the spec is checked against it on every reconcile, and a spec
 * outside it makes no driver call (the preflight is refused; a run under way pauses, and goes on by itself once
 * the spec and the policy agree again).
 *
 * Pure: parsing a policy document and checking a resolved spec against it read nothing but their arguments.
 * Images are compared as parsed references (the distribution grammar, Docker's normalisation), URLs as parsed
 * WHATWG URLs — the parser node's https.request uses for the call itself — never as strings.
 */
import { shownValue } from '../api/shown.ts';
import type { ResolvedSpec, ResolvedStaticPod } from '../api/defaults.ts';

// ---------------------------------------------------------------------------------------------------------
// Image references

/** A parsed image reference, normalised as Docker does (`busybox` is `docker.io/library/busybox`). */
export interface ImageRef {
  /** The registry host (lower case), with its port when given: `registry.k8s.io`, `localhost:5000`. */
  domain: string;
  /** The repository path inside the registry: `kube-apiserver`, `library/busybox`. */
  path: string;
  tag?: string;
  digest?: string;
}

const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = new RegExp(`^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]{1,5})?$`);
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
/** The digests a runtime verifies: sha256 and sha512, in lower-case hex of their exact length. */
const DIGEST = /^(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/;
const NAME_MAX = 255;

export class PolicyError extends Error {
  override readonly name = 'PolicyError';
}

/** Whether the first component of a name is a registry host (Docker's rule), not the start of a Docker Hub path. */
function isDomain(component: string): boolean {
  return component.includes('.') || component.includes(':') || component === 'localhost' || component !== component.toLowerCase();
}

/** Splits `name` (no tag, no digest) into a normalised domain and path; throws PolicyError. */
function parseName(name: string, what: string, opts: { explicitDomain?: boolean; allowEmptyPath?: boolean } = {}): { domain: string; path: string } {
  if (name.length === 0) throw new PolicyError(`${what}: empty`);
  if (name.length > NAME_MAX) throw new PolicyError(`${what}: longer than ${NAME_MAX} characters`);
  const parts = name.split('/');
  let domain: string;
  let rest: string[];
  if (parts.length > 1 && isDomain(parts[0]!)) {
    domain = parts[0]!;
    rest = parts.slice(1);
  } else if (opts.explicitDomain && parts.length === 1 && isDomain(parts[0]!)) {
    domain = parts[0]!;
    rest = [];
  } else {
    if (opts.explicitDomain) throw new PolicyError(`${what}: ${shownValue(name)} must start with its registry host (e.g. registry.example.com/team)`);
    domain = 'docker.io';
    rest = parts;
  }
  if (!DOMAIN.test(domain)) throw new PolicyError(`${what}: ${shownValue(domain)} is not a registry host`);
  domain = domain.toLowerCase();
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (rest.length === 0 && !opts.allowEmptyPath) throw new PolicyError(`${what}: ${shownValue(name)} names no repository`);
  for (const c of rest) {
    if (!PATH_COMPONENT.test(c)) throw new PolicyError(`${what}: ${shownValue(c)} in ${shownValue(name)} is not a repository path component (lower case letters, digits and single separators . _ __ -)`);
  }
  // Docker Hub's official images: `busybox` is library/busybox. A prefix is taken as written (docker.io/library).
  if (domain === 'docker.io' && rest.length === 1 && !opts.explicitDomain) rest = ['library', ...rest];
  return { domain, path: rest.join('/') };
}

/**
 * Parses an image reference `[registry[:port]/]path[:tag][@digest]` by the distribution reference grammar,
 * normalised as the container runtimes read it. Throws PolicyError for anything else (`..`, upper case in
 * the path, an empty component, a digest of an unknown algorithm or the wrong length).
 */
export function parseImageRef(ref: string, what = 'image'): ImageRef {
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw new PolicyError(`${what}: ${shownValue(ref)} has a digest that is not sha256:<64 hex> or sha512:<128 hex>`);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw new PolicyError(`${what}: ${shownValue(ref)} has an invalid tag`);
  }
  const { domain, path } = parseName(rest, what);
  return { domain, path, ...(tag === undefined ? {} : { tag }), ...(digest === undefined ? {} : { digest }) };
}

export function repositoryOf(r: Pick<ImageRef, 'domain' | 'path'>): string {
  return r.path === '' ? r.domain : `${r.domain}/${r.path}`;
}

export function formatImageRef(r: ImageRef): string {
  return `${repositoryOf(r)}${r.tag === undefined ? '' : `:${r.tag}`}${r.digest === undefined ? '' : `@${r.digest}`}`;
}

/** One entry of an image allowlist. */
export type ImageRule =
  /** Exactly this image: same repository, tag and digest (with a digest in the rule, the spec may leave the tag out). */
  | { kind: 'image'; ref: ImageRef; text: string }
  /** Any tag or digest of exactly this repository. */
  | { kind: 'repository'; repository: { domain: string; path: string }; text: string }
  /** Any repository of this registry under this path, by whole path components. */
  | { kind: 'repositoryPrefix'; repository: { domain: string; path: string }; text: string };

function matchesImage(rule: ImageRule, ref: ImageRef): boolean {
  switch (rule.kind) {
    case 'image': {
      const r = rule.ref;
      if (r.domain !== ref.domain || r.path !== ref.path) return false;
      // The digest decides what runs; a tag next to it may be left out, but must not contradict the rule's.
      if (r.digest !== undefined) return ref.digest === r.digest && (ref.tag === undefined || r.tag === undefined || ref.tag === r.tag);
      // Without a digest in the rule the spec may not add one: a digest picks content the tag may never have named.
      return ref.digest === undefined && (ref.tag ?? 'latest') === (r.tag ?? 'latest');
    }
    case 'repository':
      return rule.repository.domain === ref.domain && rule.repository.path === ref.path;
    case 'repositoryPrefix': {
      const p = rule.repository;
      return p.domain === ref.domain && (p.path === '' || ref.path === p.path || ref.path.startsWith(`${p.path}/`));
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// URLs

/** One entry of a URL allowlist. */
export type UrlRule =
  /** Exactly this URL (after WHATWG normalisation: lower-case host, no default port, dot segments resolved). */
  | { kind: 'url'; href: string; text: string }
  /** Same origin (scheme, host, port) and a path equal to `path` or under it, by whole segments. */
  | { kind: 'prefix'; origin: string; path: string; text: string };

/** Percent-encodings of `/`, `\` and `%` in a path: servers and proxies disagree on decoding them. */
const ENCODED_SEPARATOR = /%(?:2f|5c|25)/i;

/** The schemes a URL of each list may use: hooks carry tokens (https only); Prometheus is queried over either. */
export type UrlSchemes = 'https' | 'http or https';

/**
 * Parses a URL the way the webhook driver's https.request (or the Prometheus client) does and refuses what a
 * prefix check could be fooled by. Returns the URL or why it is refused.
 */
export function parseHookUrl(raw: string, schemes: UrlSchemes = 'https'): URL | string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  const ok = u.protocol === 'https:' || (schemes === 'http or https' && u.protocol === 'http:');
  if (!ok) return `uses ${u.protocol.replace(/:$/, '')}, not ${schemes}`;
  if (u.username !== '' || u.password !== '') return `has userinfo (${u.username}${u.password ? ':…' : ''}@): the host is ${u.host}, and node would send it as Basic credentials`;
  if (u.hash !== '') return 'has a fragment (#…), which is never sent: write the URL without it';
  if (ENCODED_SEPARATOR.test(u.pathname)) return 'has an encoded /, \\ or % in its path (%2F, %5C, %25), which servers decode differently';
  return u;
}

function compileUrlRule(kind: 'url' | 'prefix', text: string, what: string, schemes: UrlSchemes): UrlRule {
  if (typeof text !== 'string' || text === '') throw new PolicyError(`${what}: must be a non-empty string`);
  const u = parseHookUrl(text, schemes);
  if (typeof u === 'string') throw new PolicyError(`${what}: ${shownValue(text)} ${u}`);
  if (kind === 'url') return { kind, href: u.href, text };
  if (u.search !== '') throw new PolicyError(`${what}: ${shownValue(text)} has a query; a prefix is a scheme, host, port and path`);
  const path = u.pathname.endsWith('/') ? u.pathname : `${u.pathname}/`;
  return { kind, origin: u.origin, path, text };
}

function matchesUrl(rule: UrlRule, u: URL): boolean {
  if (rule.kind === 'url') return u.href === rule.href;
  if (u.origin !== rule.origin) return false;
  return u.pathname === rule.path || u.pathname === rule.path.slice(0, -1) || u.pathname.startsWith(rule.path);
}

// ---------------------------------------------------------------------------------------------------------
// Paths on the control-plane nodes

/** One entry of a node path allowlist. */
export type PathRule =
  /** Exactly this path. */
  | { kind: 'path'; path: string; text: string }
  /** This folder or anything under it, by whole segments (`/etc/kubernetes` is not a prefix of `/etc/kubernetes2`). */
  | { kind: 'prefix'; path: string; text: string };

/** An absolute path of plain segments: letters, digits, `.`, `_`, `-`; no `//`, no trailing `/`. */
const NODE_PATH = /^(?:\/[A-Za-z0-9._-]+)+$/;
const NODE_PATH_MAX = 1024;

/**
 * Why `raw` is not a path the policy can judge, or undefined when it is one: absolute, of plain segments,
 * with no `.` or `..` segment (a prefix check on `/etc/kubernetes/manifests/../../root` would pass what the
 * node resolves elsewhere). Nothing is normalised: a path that needs it is refused.
 */
export function badNodePath(raw: string): string | undefined {
  if (raw.length > NODE_PATH_MAX) return `is longer than ${NODE_PATH_MAX} characters`;
  if (!NODE_PATH.test(raw)) return 'is not an absolute path of plain segments (letters, digits, . _ -, separated by single /)';
  if (raw.split('/').some((seg) => seg === '.' || seg === '..')) return 'has a . or .. segment';
  return undefined;
}

function compilePathRule(item: unknown, what: string): PathRule {
  const [kind, text] = oneOf(item, ['path', 'prefix'], what);
  const bad = badNodePath(text);
  if (bad !== undefined) throw new PolicyError(`${what}.${kind}: ${shownValue(text)} ${bad}`);
  return { kind: kind as PathRule['kind'], path: text, text };
}

function matchesPath(rule: PathRule, path: string): boolean {
  return path === rule.path || (rule.kind === 'prefix' && path.startsWith(`${rule.path}/`));
}

/** The folder of a checked node path (`/etc/kubernetes/manifests` of `/etc/kubernetes/manifests/kube-apiserver.yaml`). */
function folderOf(path: string): string {
  return path.slice(0, path.lastIndexOf('/')) || '/';
}

// ---------------------------------------------------------------------------------------------------------
// The policy

export interface SecretRef {
  namespace: string;
  name: string;
  /** Absent: any key of the Secret. */
  key?: string;
}

export interface TokenRule {
  secret: SecretRef;
  urls: UrlRule[];
}

export interface Policy {
  /** Where it came from, for messages: the file's path. */
  source: string;
  /** Set when the policy could not be read or parsed: then nothing is allowed (fail closed). */
  error?: string;
  apiserverImages: ImageRule[];
  agentImages: ImageRule[];
  webhooks: UrlRule[];
  webhookTokens: TokenRule[];
  /** spec.driver.staticPod.manifestPath: the manifest the agent rewrites (its folder is mounted). */
  manifestPaths: PathRule[];
  /** spec.driver.staticPod.backupDir: the folder the agent writes backups to (created when missing). */
  backupDirs: PathRule[];
  /** spec.driver.staticPod.peerCAFile: the file the kube-apiserver then trusts for its peers (--peer-ca-file). */
  peerCAFiles: PathRule[];
  /** spec.analysis.prometheus.address and spec.gates.prometheus.address: where the operator sends its queries (and whose answers it reports). */
  prometheusAddresses: UrlRule[];
  /**
   * The explicit opt-in (the chart's admissionPolicy.anyKubeApiserverRepository): the kube-apiserver image a node
   * runs may keep its repository, whatever it is, as long as it is a `<registry>/<path>/kube-apiserver` (what the
   * chart's admission policy then admits). False (the default): that repository must be listed in apiserverImages.
   * Never widens spec.driver.staticPod.image, which the spec's author chooses.
   */
  anyKubeApiserverRepository: boolean;
}

export const POLICY_KIND = 'OperatorPolicy';
export const POLICY_API_VERSION = 'upgrade.apiserver.dev/v1alpha1';
const TOP_KEYS = ['apiVersion', 'kind', 'apiserverImages', 'agentImages', 'webhooks', 'webhookTokens', 'manifestPaths', 'backupDirs', 'peerCAFiles', 'prometheusAddresses', 'anyKubeApiserverRepository'];

/** A policy that refuses everything, saying why: an unreadable or invalid policy file must not allow more. */
export function brokenPolicy(source: string, error: string): Policy {
  return { source, error, apiserverImages: [], agentImages: [], webhooks: [], webhookTokens: [], manifestPaths: [], backupDirs: [], peerCAFiles: [], prometheusAddresses: [], anyKubeApiserverRepository: false };
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function onlyKeys(o: Record<string, unknown>, allowed: string[], what: string): void {
  const unknown = Object.keys(o).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) throw new PolicyError(`${what}: unknown field ${unknown.map((k) => shownValue(k)).join(', ')} (known: ${allowed.join(', ')})`);
}

function list(doc: Record<string, unknown>, key: string): unknown[] {
  const v = doc[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new PolicyError(`${key}: must be a list`);
  return v;
}

/** The one key of a rule object among `kinds`, and its string value. */
function oneOf(item: unknown, kinds: string[], what: string): [string, string] {
  if (!isObject(item)) throw new PolicyError(`${what}: must be an object with one of ${kinds.join(', ')}`);
  onlyKeys(item, kinds, what);
  const set = kinds.filter((k) => item[k] !== undefined);
  if (set.length !== 1) throw new PolicyError(`${what}: must set exactly one of ${kinds.join(', ')}`);
  const value = item[set[0]!];
  if (typeof value !== 'string' || value === '') throw new PolicyError(`${what}.${set[0]}: must be a non-empty string`);
  return [set[0]!, value];
}

function compileImageRule(item: unknown, what: string, kinds: ImageRule['kind'][]): ImageRule {
  const [kind, text] = oneOf(item, kinds, what);
  const at = `${what}.${kind}`;
  if (kind === 'image') {
    const ref = parseImageRef(text, at);
    if (ref.tag === undefined && ref.digest === undefined) throw new PolicyError(`${at}: ${shownValue(text)} has neither tag nor digest: name the exact image (a digest where you can)`);
    return { kind, ref, text };
  }
  if (kind === 'repository') {
    if (text.includes('@') || /:[^/]*$/.test(text.replace(/^[^/]*\//, ''))) throw new PolicyError(`${at}: ${shownValue(text)} must be a repository without tag or digest`);
    return { kind, repository: parseName(text, at), text };
  }
  const trimmed = text.replace(/\/+$/, '');
  if (trimmed.includes('@') || trimmed.split('/').slice(1).some((c) => c.includes(':'))) throw new PolicyError(`${at}: ${shownValue(text)} must be a registry host and path, without tag or digest`);
  return { kind: 'repositoryPrefix', repository: parseName(trimmed, at, { explicitDomain: true, allowEmptyPath: true }), text };
}

function compileSecretRef(x: unknown, what: string): SecretRef {
  if (!isObject(x)) throw new PolicyError(`${what}: must be an object {namespace, name, key?}`);
  onlyKeys(x, ['namespace', 'name', 'key'], what);
  for (const k of ['namespace', 'name'] as const) if (typeof x[k] !== 'string' || x[k] === '') throw new PolicyError(`${what}.${k}: must be a non-empty string`);
  if (x.key !== undefined && (typeof x.key !== 'string' || x.key === '')) throw new PolicyError(`${what}.key: must be a non-empty string when set`);
  return { namespace: x.namespace as string, name: x.name as string, ...(x.key === undefined ? {} : { key: x.key as string }) };
}

/**
 * Reads a policy document (the parsed YAML or JSON of the policy file). Every field is optional and a missing
 * list allows nothing of its kind; an unknown field, a rule that names no exact thing or a malformed entry is
 * an error (PolicyError, naming the entry), never ignored.
 */
export function parsePolicy(doc: unknown, source: string): Policy {
  if (doc === null || doc === undefined) doc = {};
  if (!isObject(doc)) throw new PolicyError('the policy must be a mapping');
  onlyKeys(doc, TOP_KEYS, 'policy');
  if (doc.apiVersion !== undefined && doc.apiVersion !== POLICY_API_VERSION) throw new PolicyError(`apiVersion: must be ${POLICY_API_VERSION}`);
  if (doc.kind !== undefined && doc.kind !== POLICY_KIND) throw new PolicyError(`kind: must be ${POLICY_KIND}`);
  const urlRules = (items: unknown[], what: string, schemes: UrlSchemes = 'https'): UrlRule[] => items.map((item, i) => {
    const [kind, text] = oneOf(item, ['url', 'prefix'], `${what}[${i}]`);
    return compileUrlRule(kind as 'url' | 'prefix', text, `${what}[${i}].${kind}`, schemes);
  });
  const pathRules = (key: string): PathRule[] => list(doc, key).map((x, i) => compilePathRule(x, `${key}[${i}]`));
  const anyRepository = doc.anyKubeApiserverRepository ?? false;
  if (typeof anyRepository !== 'boolean') throw new PolicyError('anyKubeApiserverRepository: must be true or false');
  return {
    source,
    apiserverImages: list(doc, 'apiserverImages').map((x, i) => compileImageRule(x, `apiserverImages[${i}]`, ['repository', 'repositoryPrefix'])),
    agentImages: list(doc, 'agentImages').map((x, i) => compileImageRule(x, `agentImages[${i}]`, ['image', 'repository', 'repositoryPrefix'])),
    webhooks: urlRules(list(doc, 'webhooks'), 'webhooks'),
    webhookTokens: list(doc, 'webhookTokens').map((x, i) => {
      const what = `webhookTokens[${i}]`;
      if (!isObject(x)) throw new PolicyError(`${what}: must be an object {secret, urls}`);
      onlyKeys(x, ['secret', 'urls'], what);
      if (!Array.isArray(x.urls) || x.urls.length === 0) throw new PolicyError(`${what}.urls: must list at least one {url} or {prefix} the token may be sent to`);
      return { secret: compileSecretRef(x.secret, `${what}.secret`), urls: urlRules(x.urls, `${what}.urls`) };
    }),
    manifestPaths: pathRules('manifestPaths'),
    backupDirs: pathRules('backupDirs'),
    peerCAFiles: pathRules('peerCAFiles'),
    prometheusAddresses: urlRules(list(doc, 'prometheusAddresses'), 'prometheusAddresses', 'http or https'),
    anyKubeApiserverRepository: anyRepository,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Checking a spec

/** One field of the spec outside the policy. */
export interface PolicyViolation {
  /** The spec field, e.g. `spec.driver.webhook.url`. */
  field: string;
  /** Its value as written (never a token: the Secret is named, never read). */
  value: string;
  /** The policy list that decided, e.g. `webhooks`, `webhookTokens`, `agentImages`. */
  rule: string;
  /** Why, for the condition and the event. */
  message: string;
}

const SHOWN_RULES = 5;

function shown(rules: { text: string; kind: string }[]): string {
  if (rules.length === 0) return 'the list is empty';
  const texts = rules.slice(0, SHOWN_RULES).map((r) => `${r.kind} ${r.text}`);
  return `allowed: ${texts.join(', ')}${rules.length > SHOWN_RULES ? `, and ${rules.length - SHOWN_RULES} more` : ''}`;
}

function checkImage(field: string, value: string, rules: ImageRule[], listName: string, repositoryOnly: boolean): PolicyViolation | undefined {
  let ref: ImageRef;
  try {
    ref = parseImageRef(value, field);
  } catch (err) {
    return { field, value, rule: listName, message: `${field} ${shownValue(value)} is not an image reference the policy can judge: ${(err as Error).message}` };
  }
  if (repositoryOnly && (ref.tag !== undefined || ref.digest !== undefined)) {
    return { field, value, rule: listName, message: `${field} ${shownValue(value)} must be a repository without tag or digest` };
  }
  if (rules.some((r) => matchesImage(r, ref))) return undefined;
  return { field, value, rule: listName, message: `${field} ${shownValue(value)} (${formatImageRef(ref)}) matches no entry of ${listName} (${shown(rules)})` };
}

function sameSecret(a: SecretRef, ns: string, name: string, key: string): boolean {
  return a.namespace === ns && a.name === name && (a.key === undefined || a.key === key);
}

function checkPath(field: string, value: string, rules: PathRule[], listName: string): PolicyViolation | undefined {
  const bad = badNodePath(value);
  if (bad !== undefined) return { field, value, rule: listName, message: `${field} ${shownValue(value)} ${bad}` };
  if (rules.some((r) => matchesPath(r, value))) return undefined;
  return { field, value, rule: listName, message: `${field} ${shownValue(value)} matches no entry of ${listName} (${shown(rules)})` };
}

/**
 * The static Pod driver's paths: each within its list, and the backup folder outside the manifest folder — the
 * kubelet runs every file there as a static Pod, so a backup written into it would start a second kube-apiserver.
 */
function checkStaticPodPaths(policy: Policy, p: ResolvedStaticPod): PolicyViolation[] {
  const out: PolicyViolation[] = [];
  const manifest = checkPath('spec.driver.staticPod.manifestPath', p.manifestPath, policy.manifestPaths, 'manifestPaths');
  const backup = checkPath('spec.driver.staticPod.backupDir', p.backupDir, policy.backupDirs, 'backupDirs');
  const ca = checkPath('spec.driver.staticPod.peerCAFile', p.peerCAFile, policy.peerCAFiles, 'peerCAFiles');
  for (const v of [manifest, backup, ca]) if (v) out.push(v);
  if (!manifest && !backup) {
    const folder = folderOf(p.manifestPath);
    if (p.backupDir === folder || p.backupDir.startsWith(`${folder}/`)) {
      out.push({
        field: 'spec.driver.staticPod.backupDir', value: p.backupDir, rule: 'backupDirs',
        message: `spec.driver.staticPod.backupDir ${shownValue(p.backupDir)} is inside the manifest folder ${folder}: the kubelet would run the backups as static Pods`,
      });
    }
  }
  return out;
}

/**
 * spec.analysis.prometheus.address, when the signals come from Prometheus, and spec.gates.prometheus.address, where the
 * gates' queries go: http(s) URLs the policy lists (the same list: each is a Prometheus the operator sends queries to).
 */
function checkPrometheus(policy: Policy, spec: ResolvedSpec): PolicyViolation[] {
  const out: PolicyViolation[] = [];
  const addresses: [string, string | undefined][] = [
    ['spec.analysis.prometheus.address', spec.analysis.prometheus?.address],
    ['spec.gates.prometheus.address', spec.gates.queries.length > 0 ? spec.gates.prometheus?.address : undefined],
  ];
  for (const [field, address] of addresses) {
    if (address === undefined) continue;
    const u = parseHookUrl(address, 'http or https');
    if (typeof u === 'string') out.push({ field, value: address, rule: 'prometheusAddresses', message: `${field} ${shownValue(address)} ${u}` });
    else if (!policy.prometheusAddresses.some((r) => matchesUrl(r, u))) out.push({ field, value: address, rule: 'prometheusAddresses', message: `${field} ${shownValue(address)} (${u.href}) matches no entry of prometheusAddresses (${shown(policy.prometheusAddresses)})` });
  }
  return out;
}

/**
 * The fields of `spec` outside `policy`; empty when the spec is allowed. For the webhook driver: without a
 * token, the URL must match `webhooks` or a URL some token may be sent to; with one, the Secret (namespace,
 * name, key) must be listed under `webhookTokens` and the URL must match one of that entry's URLs.
 */
export function checkSpec(policy: Policy, spec: ResolvedSpec): PolicyViolation[] {
  if (policy.error !== undefined) {
    return [{ field: 'spec', value: '', rule: 'policy', message: `the operator's policy ${policy.source} cannot be used (${policy.error}): nothing is allowed until it is fixed` }];
  }
  const out: PolicyViolation[] = checkPrometheus(policy, spec);
  if (spec.driver.kind === 'staticPod') {
    const p = spec.driver.staticPod;
    // Empty: the node's own repository is kept (the driver reads it from the mirror Pod), so only the tag
    // changes, to the spec's targetVersion: nothing the spec's author chose reaches the node's image.
    const image = p.image === '' ? undefined : checkImage('spec.driver.staticPod.image', p.image, policy.apiserverImages, 'apiserverImages', true);
    if (image) out.push(image);
    // Empty: the operator's own image runs the agent, which its installer chose, not the spec's author.
    const agent = p.agentImage === '' ? undefined : checkImage('spec.driver.staticPod.agentImage', p.agentImage, policy.agentImages, 'agentImages', false);
    if (agent) out.push(agent);
    out.push(...checkStaticPodPaths(policy, p));
    return out;
  }
  const w = spec.driver.webhook;
  const field = 'spec.driver.webhook.url';
  const u = parseHookUrl(w.url);
  if (typeof u === 'string') return [...out, { field, value: w.url, rule: 'webhooks', message: `${field} ${shownValue(w.url)} ${u}` }];
  const ref = w.authSecretRef;
  if (ref === undefined) {
    const rules = [...policy.webhooks, ...policy.webhookTokens.flatMap((t) => t.urls)];
    if (!rules.some((r) => matchesUrl(r, u))) {
      out.push({ field, value: w.url, rule: 'webhooks', message: `${field} ${shownValue(w.url)} (${u.href}) matches no entry of webhooks (${shown(policy.webhooks)})` });
    }
    return out;
  }
  const key = ref.key ?? 'token';
  const secret = `${ref.namespace}/${ref.name} key ${key}`;
  const bindings = policy.webhookTokens.filter((t) => sameSecret(t.secret, ref.namespace, ref.name, key));
  if (bindings.length === 0) {
    return [...out, { field: 'spec.driver.webhook.authSecretRef', value: secret, rule: 'webhookTokens', message: `spec.driver.webhook.authSecretRef: the Secret ${secret} is not listed under webhookTokens: the operator sends it nowhere` }];
  }
  const urls = bindings.flatMap((t) => t.urls);
  if (!urls.some((r) => matchesUrl(r, u))) {
    out.push({ field, value: w.url, rule: 'webhookTokens', message: `${field} ${shownValue(w.url)} (${u.href}) is not a URL the Secret ${secret} may be sent to (webhookTokens: ${shown(urls)})` });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// The kube-apiserver image a node keeps

/** A kube-apiserver version tag: what the chart's admission policy asks of an image it admits only by the opt-in. */
const VERSION_TAG = /^v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?$/;

/** The repository of an image reference as written: without its digest and tag (src/drivers/static-pod.ts splitImage). */
function repositoryAsWritten(ref: string): string {
  let rest = ref.trim();
  const at = rest.indexOf('@');
  if (at >= 0) rest = rest.slice(0, at);
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) rest = rest.slice(0, colon);
  return rest;
}

/** The verdict on the image a node's agent Job would pull when the spec names none. */
export type NodeImageVerdict =
  | { allowed: true; image: string; repository: string; by: 'apiserverImages' | 'anyKubeApiserverRepository' }
  | { allowed: false; image: string; repository: string; why: 'NotListed' }
  | { allowed: false; image: string; why: 'Unparseable'; message: string };

/**
 * The image the static Pod driver pulls on a node when spec.driver.staticPod.image is empty: the repository the node
 * runs (its mirror Pod's image), as written, at `version` — what src/drivers/static-pod.ts targetImage builds — judged
 * as the chart's admission policy judges the agent Job's pull, so that preflight refuses what the apiserver would deny
 * at call time. Allowed when an apiserverImages entry covers its repository (compared parsed: registry host case and
 * index.docker.io normalised, whole path components), or, only with anyKubeApiserverRepository, when it is a
 * `<registry>/<path>/kube-apiserver` at a version tag. A reference the policy cannot parse is refused: unknown is unsafe.
 */
export function nodeImageVerdict(policy: Pick<Policy, 'apiserverImages' | 'anyKubeApiserverRepository'>, running: string, version: string): NodeImageVerdict {
  const image = `${repositoryAsWritten(running)}:${version}`;
  let ref: ImageRef;
  try {
    ref = parseImageRef(image, 'the target image');
  } catch (err) {
    return { allowed: false, image, why: 'Unparseable', message: (err as Error).message };
  }
  const repository = repositoryOf(ref);
  if (ref.digest === undefined && policy.apiserverImages.some((r) => matchesImage(r, ref))) return { allowed: true, image, repository, by: 'apiserverImages' };
  const namedKubeApiserver = ref.path === 'kube-apiserver' || ref.path.endsWith('/kube-apiserver');
  if (policy.anyKubeApiserverRepository && namedKubeApiserver && ref.digest === undefined && VERSION_TAG.test(ref.tag ?? '')) {
    return { allowed: true, image, repository, by: 'anyKubeApiserverRepository' };
  }
  return { allowed: false, image, repository, why: 'NotListed' };
}

/** The policy's apiserverImages as a message shows them. */
export function shownApiserverImages(policy: Pick<Policy, 'apiserverImages'>): string {
  return shown(policy.apiserverImages);
}

/** All violations in one line, for a condition message, an event or an error. */
export function describeViolations(policy: Pick<Policy, 'source'>, vs: readonly PolicyViolation[]): string {
  return `not allowed by the operator's policy (${policy.source}): ${vs.map((v) => v.message).join('; ')}`;
}

/**
 * The structured answers of a kube-apiserver's `/flagz` and `/statusz` (k8s.io/apiserver pkg/server/flagz and
 * statusz, behind the ComponentFlagz and ComponentStatusz gates: alpha in 1.35, beta and on from 1.36), read strictly.
 * The shell asks for JSON (`FLAGZ_ACCEPT`, `STATUSZ_ACCEPT`: v1beta1 first, v1alpha1 for 1.35) with the body capped
 * at `ZPAGE_MAX_BYTES`; anything else than the documented shape throws, and the caller records the page as Failed.
 * Only the values a decision compares are kept, each checked against its own pattern: no server text reaches a
 * message. Fixtures from real servers: test/fixtures/zpages/ (scripts/capture-zpages.ts).
 */
import { PROXY_GATE } from '../api/constants.ts';

/** The largest page read: /flagz of v1.35.4–v1.37.2 is 6.3 KB as JSON, /statusz 0.3 KB. */
export const ZPAGE_MAX_BYTES = 65_536;
/** Flags kept at most; the real pages list 177. */
const MAX_FLAGS = 1024;
const MAX_VALUE_CHARS = 16_384;
const API_VERSIONS: ReadonlySet<string> = new Set(['config.k8s.io/v1beta1', 'config.k8s.io/v1alpha1']);

/** Content negotiation of the structured pages: a bare application/json is refused (406) by every version. */
export const FLAGZ_ACCEPT = 'application/json;as=Flagz;v=v1beta1;g=config.k8s.io, application/json;as=Flagz;v=v1alpha1;g=config.k8s.io';
export const STATUSZ_ACCEPT = 'application/json;as=Statusz;v=v1beta1;g=config.k8s.io, application/json;as=Statusz;v=v1alpha1;g=config.k8s.io';

/** What the decision reads of /flagz: the proxy gate in --feature-gates, and the kube entry of --emulated-version. */
export interface RunningFlags {
  /** UnknownVersionInteroperabilityProxy as --feature-gates sets it; undefined: not set there (its default runs). */
  proxyGate: boolean | undefined;
  /** --emulated-version for kube ("1.35"); undefined: none. */
  emulatedVersion: string | undefined;
}

/** What the decision reads of /statusz. */
export interface RunningStatus {
  /** "1.36.3" (no leading v, as the page writes it). */
  binaryVersion: string;
  /** "1.35"; undefined when the page has none. */
  emulationVersion: string | undefined;
}

/** One page as the shell read it: parsed, not served (404), or failed (another answer, none, a body that did not parse). */
export type PageAnswer<T> = { kind: 'read'; value: T } | { kind: 'notServed' } | { kind: 'failed'; message: string };

/** One server's pages, read after its call came back (Observation.running). */
export interface ObservedRunning {
  flagz: PageAnswer<RunningFlags>;
  statusz: PageAnswer<RunningStatus>;
}

const BINARY_VERSION = /^\d{1,4}\.\d{1,4}\.\d{1,6}(?:-[0-9A-Za-z.-]{1,40})?(?:\+[0-9A-Za-z.-]{1,40})?$/;
const MINOR_VERSION = /^\d{1,4}\.\d{1,4}$/;
const FLAG_NAME = /^[a-z0-9][a-z0-9-]{0,127}$/;
const GATE_NAME = /^[A-Za-z0-9]{1,128}$/;
const COMPONENT = /^[a-z0-9-]{0,63}$/;

function object(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${what} is not an object`);
  return v as Record<string, unknown>;
}

function envelope(body: string, kind: 'Flagz' | 'Statusz'): Record<string, unknown> {
  if (body.length > ZPAGE_MAX_BYTES) throw new Error(`larger than ${ZPAGE_MAX_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new Error('not JSON');
  }
  const doc = object(parsed, 'the page');
  if (doc.kind !== kind) throw new Error(`not a ${kind}`);
  if (typeof doc.apiVersion !== 'string' || !API_VERSIONS.has(doc.apiVersion)) throw new Error('not config.k8s.io/v1beta1 or v1alpha1');
  return doc;
}

/**
 * The proxy gate in a --feature-gates value as /flagz prints it: `:Gate=true,:Other=false` (the component before the
 * colon, empty for kube), or `Gate=true` as given. The last entry for kube wins, as the flag's map does; an entry
 * of the gate that is not `=true`/`=false` throws.
 */
export function proxyGateIn(value: string): boolean | undefined {
  let gate: boolean | undefined;
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const colon = entry.indexOf(':');
    const component = colon < 0 ? '' : entry.slice(0, colon);
    const pair = colon < 0 ? entry : entry.slice(colon + 1);
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (!COMPONENT.test(component) || !GATE_NAME.test(name)) throw new Error('--feature-gates has an entry that is not [component:]Gate=value');
    if (name !== PROXY_GATE || (component !== '' && component !== 'kube')) continue;
    const v = eq < 0 ? '' : pair.slice(eq + 1);
    if (v !== 'true' && v !== 'false') throw new Error(`--feature-gates sets ${PROXY_GATE} to neither true nor false`);
    gate = v === 'true';
  }
  return gate;
}

/** The kube entry of --emulated-version as /flagz prints it: `[]`, `[1.35]` or `[kube=1.35,other=1.2]`. */
export function emulatedVersionIn(value: string): string | undefined {
  const m = /^\[(.*)\]$/.exec(value);
  if (!m) throw new Error('--emulated-version is not a [..] list');
  let kube: string | undefined;
  for (const raw of m[1]!.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const eq = entry.indexOf('=');
    const component = eq < 0 ? 'kube' : entry.slice(0, eq);
    const v = eq < 0 ? entry : entry.slice(eq + 1);
    if (!COMPONENT.test(component) || !MINOR_VERSION.test(v)) throw new Error('--emulated-version has an entry that is not [component=]major.minor');
    if (component === 'kube') kube = v;
  }
  return kube;
}

/** A `Flagz` (config.k8s.io/v1beta1 or v1alpha1): every flag a string, at most MAX_FLAGS; throws on anything else. */
export function parseFlagz(body: string): RunningFlags {
  const flags = object(envelope(body, 'Flagz').flags, 'flags');
  const entries = Object.entries(flags);
  if (entries.length > MAX_FLAGS) throw new Error(`more than ${MAX_FLAGS} flags`);
  for (const [k, v] of entries) {
    if (!FLAG_NAME.test(k)) throw new Error('a flag name is not a flag name');
    if (typeof v !== 'string' || v.length > MAX_VALUE_CHARS) throw new Error('a flag value is not a string of its size');
  }
  const gates = flags['feature-gates'];
  const emulated = flags['emulated-version'];
  if (typeof gates !== 'string' || typeof emulated !== 'string') throw new Error('no feature-gates or emulated-version flag');
  return { proxyGate: proxyGateIn(gates), emulatedVersion: emulatedVersionIn(emulated) };
}

/** A `Statusz` (config.k8s.io/v1beta1 or v1alpha1): its binaryVersion and emulationVersion; throws on anything else. */
export function parseStatusz(body: string): RunningStatus {
  const doc = envelope(body, 'Statusz');
  const binary = doc.binaryVersion;
  if (typeof binary !== 'string' || !BINARY_VERSION.test(binary)) throw new Error('binaryVersion is not a version');
  const emulation = doc.emulationVersion;
  if (emulation !== undefined && (typeof emulation !== 'string' || !MINOR_VERSION.test(emulation))) throw new Error('emulationVersion is not major.minor');
  return { binaryVersion: binary, emulationVersion: emulation };
}

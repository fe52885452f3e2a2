/**
 * What the operator knows about Kubernetes minors it has not watched run, read from the sources of the newest
 * release it was built with (scripts/version-facts.ts; the table is docs/versions.md, the raw facts
 * test/fixtures/version-facts.json, which test/plan/version-facts.test.ts holds this file to).
 *
 * Only what a decision needs before any server runs the target lives here: the Mixed Version Proxy gate's
 * default (proxy.revertAfter) and the range of --emulated-version a binary accepts (TwoPhase). A minor newer
 * than NEWEST_KNOWN is unknown: its facts are read from the servers once they run it (discovery, storage
 * hashes, the gate's state in /metrics), or the step that needs them before then is refused with a reason.
 */
import { parseVersion, type KubeVersion } from './version.ts';

/** The release whose sources these facts were read from. */
export const FACTS_READ_FROM = 'v1.37.2';
/** The newest minor (of major 1) these facts cover. */
export const NEWEST_KNOWN_MINOR = 37;

/** UnknownVersionInteroperabilityProxy's versioned spec in FACTS_READ_FROM, oldest first (by minor of major 1). */
export const PROXY_GATE_SPEC: readonly { minor: number; preRelease: 'Alpha' | 'Beta' | 'GA'; default: boolean; lockToDefault: boolean }[] = [
  { minor: 28, preRelease: 'Alpha', default: false, lockToDefault: false },
  { minor: 36, preRelease: 'Beta', default: true, lockToDefault: false },
];

/** k8s.io/apiserver kubeEffectiveVersionFloors, the same in 1.34 to 1.37: a binary emulates down to its minor minus 3, never below 1.31. */
export const EMULATION_RULE = { minorsBack: 3, minimumMinor: 31 } as const;

export type Unknown = { known: false; message: string };
export type GateFact = { known: true; present: boolean; preRelease?: 'Alpha' | 'Beta' | 'GA'; default: boolean; lockToDefault: boolean } | Unknown;

const toVersion = (v: string | KubeVersion): KubeVersion | undefined => (typeof v === 'string' ? parseVersion(v) : v);

function unknownMinor(v: string | KubeVersion): Unknown | undefined {
  const k = toVersion(v);
  if (!k) return { known: false, message: `${String(typeof v === 'string' ? v : v.raw)} is not a Kubernetes version` };
  if (k.major !== 1 || k.minor > NEWEST_KNOWN_MINOR) {
    return { known: false, message: `this operator knows Kubernetes up to 1.${NEWEST_KNOWN_MINOR} (facts read from ${FACTS_READ_FROM}); ${k.major}.${k.minor} is newer` };
  }
  return undefined;
}

/** The proxy gate as a server of `v` runs it by default; every pre-release and vendor build of a minor counts as that minor. */
export function proxyGateFact(v: string | KubeVersion): GateFact {
  const unknown = unknownMinor(v);
  if (unknown) return unknown;
  const spec = PROXY_GATE_SPEC.filter((s) => s.minor <= toVersion(v)!.minor).at(-1);
  if (!spec) return { known: true, present: false, default: false, lockToDefault: false };
  return { known: true, present: true, preRelease: spec.preRelease, default: spec.default, lockToDefault: spec.lockToDefault };
}

/** The --emulated-version values ("1.34".."1.37") a binary of `v` accepts. */
export function emulationRange(v: string | KubeVersion): { known: true; floor: string; ceiling: string } | Unknown {
  const unknown = unknownMinor(v);
  if (unknown) return unknown;
  const minor = toVersion(v)!.minor;
  return { known: true, floor: `1.${Math.max(minor - EMULATION_RULE.minorsBack, EMULATION_RULE.minimumMinor)}`, ceiling: `1.${minor}` };
}

/**
 * Whether the proxy gate is on by default at `v`: off through 1.35 (alpha), on from 1.36 (beta); undefined for a
 * minor newer than these facts know. A string that is not a Kubernetes version throws a RangeError.
 */
export function proxyGateOnByDefault(v: string | KubeVersion): boolean | undefined {
  if (toVersion(v) === undefined) throw new RangeError(`proxyGateOnByDefault: not a Kubernetes version: ${JSON.stringify(v)}`);
  const f = proxyGateFact(v);
  return f.known ? f.default : undefined;
}

/**
 * Whether a server of `v` keeps its identity Lease's holderIdentity across a restart. Before 1.35 the Lease is
 * not deleted when a server starts or stops, and the lease controller (k8s.io/component-helpers lease.newLease)
 * copies an existing Lease, holder included: a restarted v1.34 server renews the old holder. From 1.35 the
 * controller deletes the Lease at start and at graceful stop, so each process writes its own holder. A version
 * that cannot be parsed counts as keeping it (the restart is then told by the process start time).
 */
export function leaseHolderSurvivesRestart(v: string | undefined): boolean {
  const k = v === undefined ? undefined : parseVersion(v);
  return k === undefined || (k.major === 1 && k.minor < 35);
}

// Kubernetes versions, read the way the operator needs them. The rules are written down in
// docs/versions.md; in short:
//
//  - A Kubernetes version is `v` + semver: v1.36.3, v1.36.0-rc.1, v1.36.0-alpha.2.15+0123abcd.
//    The leading `v` is required (every kube-apiserver's /version gitVersion has it).
//  - Build metadata (`+rke2r1`, `+k3s1`, OpenShift's `+f67aeb3`, a dev build's `+<commit>`) is ignored
//    for matching and ordering, as semver says.
//  - A pre-release whose first identifier is `alpha`, `beta` or `rc` is an *upstream* pre-release,
//    ordered as semver orders it: v1.36.0-alpha.1 < v1.36.0-beta.0 < v1.36.0-rc.1 < v1.36.0.
//  - Anything else after `-` is a *vendor suffix* (EKS `v1.30.4-eks-a737599`, GKE `v1.30.5-gke.1014001`):
//    semver would read it as a pre-release and put v1.30.4-eks-a737599 *before* v1.30.4, but the
//    server runs the release v1.30.4 rebuilt by its vendor. The version counts as the release it
//    decorates, for matching, ordering and skew; two vendor builds of one release are the same release.
//  - A suffix that looks like an upstream pre-release but is not written the upstream way
//    (`-RC.1`, `-beta2`) is refused rather than guessed: taken as a vendor suffix it would turn a
//    release candidate into the release.
//  - Pre-release targets are refused unless the spec allows them (`checkTargetVersion`).
import semver from 'semver';

/** A Kubernetes version, parsed. `major`, `minor` and `patch` keep the shape the planner has always used. */
export interface KubeVersion {
  /** The string as given, e.g. "v1.30.4-eks-a737599". */
  readonly raw: string;
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  /** Upstream pre-release identifiers, e.g. ['rc', 1]; empty for a release (including a vendor build of one). */
  readonly prerelease: readonly (string | number)[];
  /** The vendor suffix after '-', e.g. "eks-a737599" or "gke.1014001"; undefined when there is none. */
  readonly vendor: string | undefined;
  /** Build metadata identifiers after '+', e.g. ['rke2r1']; ignored for matching and ordering. */
  readonly build: readonly string[];
  /** The upstream version this one is or decorates, without vendor suffix or build metadata: "v1.30.4", "v1.36.0-rc.1". */
  readonly release: string;
}

/** What may follow a Kubernetes version's `-` or `+`: dot-separated, non-empty semver identifiers. */
const IDENTIFIERS = /^[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*$/;
/** v<core>[-<pre-release or vendor suffix>][+<build>]; the core and an upstream pre-release are checked by semver. */
const SHAPE = /^v(\d+\.\d+\.\d+)(?:-([^+]*))?(?:\+(.*))?$/;
const UPSTREAM_PRERELEASE = new Set(['alpha', 'beta', 'rc']);
/** Upstream pre-release words written another way: RC.1, Beta.0, rc1, beta-2. Refused, never read as a vendor suffix. */
const MISSPELT_PRERELEASE = /^(?:alpha|beta|rc)(?:$|[-_]?\d)/i;

/**
 * Parses a Kubernetes version ("v1.36.3", "v1.36.0-rc.1", "v1.36.3+rke2r1", "v1.30.4-eks-a737599").
 * Undefined when the string is not one: no leading `v`, not semver, or a misspelt upstream pre-release.
 */
export function parseVersion(v: string): KubeVersion | undefined {
  if (typeof v !== 'string') return undefined;
  const m = SHAPE.exec(v);
  if (!m) return undefined;
  const core = m[1]!;
  const suffix = m[2];
  const build = m[3];
  if (suffix !== undefined && !IDENTIFIERS.test(suffix)) return undefined;
  if (build !== undefined && !IDENTIFIERS.test(build)) return undefined;
  const first = suffix?.split('.')[0];
  const upstream = first !== undefined && UPSTREAM_PRERELEASE.has(first);
  if (first !== undefined && !upstream && MISSPELT_PRERELEASE.test(first)) return undefined;
  // semver checks the numbers (no leading zeros, safe integers) and an upstream pre-release's identifiers.
  const parsed = semver.parse(upstream ? `${core}-${suffix}` : core);
  if (!parsed) return undefined;
  return {
    raw: v,
    major: parsed.major,
    minor: parsed.minor,
    patch: parsed.patch,
    prerelease: parsed.prerelease,
    vendor: upstream ? undefined : suffix,
    build: build === undefined ? [] : build.split('.'),
    release: `v${parsed.version}`,
  };
}

function toVersion(v: string | KubeVersion, what: string): KubeVersion {
  if (typeof v !== 'string') return v;
  const parsed = parseVersion(v);
  if (!parsed) throw new RangeError(`${what}: ${JSON.stringify(v)} is not a Kubernetes version`);
  return parsed;
}

/** The upstream version as a semver string ("1.36.0-rc.1"), for semver's comparisons. */
function upstream(v: KubeVersion): string {
  return v.prerelease.length === 0 ? `${v.major}.${v.minor}.${v.patch}` : `${v.major}.${v.minor}.${v.patch}-${v.prerelease.join('.')}`;
}

/**
 * Orders two versions: negative when `a` is older, 0 when they are the same release, positive when newer.
 * Semver order of the upstream versions, build metadata and vendor suffixes ignored:
 * v1.36.0-alpha.1 < v1.36.0-beta.0 < v1.36.0-rc.1 < v1.36.0 = v1.36.0+rke2r1 = v1.36.0-eks-abc < v1.36.1.
 * Strings that are not Kubernetes versions throw a RangeError; parse first when that can happen.
 */
export function compareVersions(a: string | KubeVersion, b: string | KubeVersion): -1 | 0 | 1 {
  return semver.compare(upstream(toVersion(a, 'compareVersions')), upstream(toVersion(b, 'compareVersions')));
}

/** Whether `v` is an upstream pre-release (alpha, beta or rc). A vendor build of a release is not. */
export function isPrerelease(v: string | KubeVersion): boolean {
  return toVersion(v, 'isPrerelease').prerelease.length > 0;
}

/**
 * Whether a server reporting `observed` counts as running `target`: the same upstream release, build
 * metadata and vendor suffixes ignored (v1.36.3+rke2r1 and v1.36.3-eks-1234 run v1.36.3), an upstream
 * pre-release matched exactly (v1.36.0-rc.1.5+abc, a build after rc.1, does not run v1.36.0-rc.1).
 * False when either string is not a Kubernetes version.
 */
export function sameRelease(observed: string, target: string): boolean {
  const o = parseVersion(observed);
  const t = parseVersion(target);
  return o !== undefined && t !== undefined && compareVersions(o, t) === 0;
}

export type TargetRefusal = 'InvalidTargetVersion' | 'PrereleaseTarget';
export type UpgradeRefusal = TargetRefusal | 'UnknownVersion' | 'Downgrade' | 'SkipsMinor' | 'MajorVersionChange';
export type UpgradeKind = 'patch' | 'minor' | 'none';

export type TargetVerdict = { ok: true; version: KubeVersion } | { ok: false; reason: TargetRefusal; message: string };
export type UpgradeVerdict = { ok: true; kind: UpgradeKind } | { ok: false; reason: UpgradeRefusal; message: string };

/**
 * Whether `target` may be a spec's targetVersion, before looking at any server: it must be a Kubernetes
 * version, and an upstream pre-release only when `allowPrerelease` is set. A vendor build of a release
 * (v1.30.4-eks-a737599) is not a pre-release.
 */
export function checkTargetVersion(target: string, opts: { allowPrerelease: boolean }): TargetVerdict {
  const version = parseVersion(target);
  if (!version) {
    return { ok: false, reason: 'InvalidTargetVersion', message: `target ${JSON.stringify(target)} is not a Kubernetes version such as v1.36.3` };
  }
  if (version.prerelease.length > 0 && !opts.allowPrerelease) {
    return { ok: false, reason: 'PrereleaseTarget', message: `target ${target} is a pre-release; set allowPrerelease to upgrade to it` };
  }
  return { ok: true, version };
}

/**
 * The version-skew verdict for moving every server from `from` to `to`. Checked in this order:
 * the target (InvalidTargetVersion, PrereleaseTarget), the running version (UnknownVersion), already
 * there (ok, kind 'none', by `sameRelease`), MajorVersionChange, Downgrade (any move back in semver order,
 * v1.36.0 -> v1.36.0-rc.1 included), SkipsMinor (one minor at a time).
 *
 * kind is 'minor' when the minor number changes, and also when either end is an upstream pre-release:
 * a pre-release's API surface is not that of the release (alpha.1 is cut long before the minor's API
 * freeze), so moving to or from one is treated like a minor change — the cautious side, under which
 * `proxy.gate: Auto` turns the Mixed Version Proxy on. Otherwise 'patch'.
 */
export function classifyUpgrade(from: string, to: string, opts: { allowPrerelease: boolean }): UpgradeVerdict {
  const target = checkTargetVersion(to, opts);
  if (!target.ok) return target;
  const t = target.version;
  const f = parseVersion(from);
  if (!f) return { ok: false, reason: 'UnknownVersion', message: `servers report ${JSON.stringify(from)}, which is not a Kubernetes version` };
  const cmp = compareVersions(t, f);
  if (cmp === 0) return { ok: true, kind: 'none' };
  if (t.major !== f.major) return { ok: false, reason: 'MajorVersionChange', message: `${from} -> ${to} changes the major version` };
  if (cmp < 0) {
    return {
      ok: false,
      reason: 'Downgrade',
      message: `${to} is older than the running ${from}; control-plane downgrades are not supported (roll back an upgrade instead)`,
    };
  }
  if (t.minor > f.minor + 1) {
    return { ok: false, reason: 'SkipsMinor', message: `${from} -> ${to} skips ${t.minor - f.minor - 1} minor version(s); upgrade one minor at a time` };
  }
  const minor = t.minor !== f.minor || t.prerelease.length > 0 || f.prerelease.length > 0;
  return { ok: true, kind: minor ? 'minor' : 'patch' };
}

/**
 * The "major.minor" a server of this version emulates unless told otherwise ("v1.36.3" -> "1.36"), the form
 * `--emulated-version` and `/version`'s emulationMajor/Minor use (KEP-4330). Undefined for a non-version.
 */
export function minorOf(v: string): string | undefined {
  const k = parseVersion(v);
  return k ? `${k.major}.${k.minor}` : undefined;
}

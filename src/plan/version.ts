/** A Kubernetes release version, "v1.36.3", as numbers. */
export interface KubeVersion {
  major: number;
  minor: number;
  patch: number;
}

const RE = /^v(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/;

export function parseVersion(v: string): KubeVersion | undefined {
  const m = RE.exec(v);
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) };
}

export function compareVersions(a: KubeVersion, b: KubeVersion): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** The Mixed Version Proxy gate is alpha (off by default) through 1.35 and beta (on) from 1.36. */
export function proxyGateOnByDefault(v: KubeVersion): boolean {
  return v.major > 1 || v.minor >= 36;
}

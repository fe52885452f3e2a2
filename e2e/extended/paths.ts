// The upgrade paths the extended tier runs (docs/versions.md, docs/timings.md "Extended tier"). Their
// kube-apiserver binaries are built only when that tier runs (scripts/e2e.ts), never by `setup.ts ci`.

export interface UpgradePath {
  from: string;
  to: string;
  /**
   * What the client asks the balancer for throughout: a resource only `to` serves where the step adds one
   * (docs/versions.md's table), else one every version serves.
   */
  probe: string;
  /** Whether `probe` is served only by `to`: then no 404 is allowed once the first batch converged, and 404s before are expected. */
  probeIsNew: boolean;
}

export const PATCH_V1_36: UpgradePath = { from: 'v1.36.1', to: 'v1.36.3', probe: '/api/v1/namespaces', probeIsNew: false };
export const MINOR_V1_37: UpgradePath = { from: 'v1.36.3', to: 'v1.37.2', probe: '/apis/storagemigration.k8s.io/v1/storageversionmigrations', probeIsNew: true };
/** 1.35 adds no built-in resource to 1.34 (docs/versions.md). */
export const MINOR_V1_35_FROM_V1_34: UpgradePath = { from: 'v1.34.4', to: 'v1.35.4', probe: '/api/v1/namespaces', probeIsNew: false };

export const EXTENDED_PATHS: readonly UpgradePath[] = [PATCH_V1_36, MINOR_V1_37, MINOR_V1_35_FROM_V1_34];

/** Every kube-apiserver version the extended tier runs, oldest first. */
export function extendedVersions(): string[] {
  return [...new Set(EXTENDED_PATHS.flatMap((p) => [p.from, p.to]))].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

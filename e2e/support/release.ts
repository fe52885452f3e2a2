// The release as the e2e tests run it: `npm run release`'s function into the harness registry, which stands in for
// ghcr.io (--mirror-of): the chart it pushes names ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:<v>,
// exactly as a real release's does, and nodes with the harness's containerd mirrors pull that name from it.
import { release, type ReleaseResult } from '../../scripts/release.ts';
import { DEFAULT_DOWNLOAD_BASE, parseRegistry } from '../../scripts/release/plan.ts';
import { readFileSync } from 'node:fs';
import type { Registry } from '../cluster/registry.ts';

/** The operator's version, package.json's: what `npm run release` publishes. */
export const RELEASE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
/** What the harness registry mirrors for the release: the project's ghcr.io path. */
export const PUBLISHED = 'ghcr.io/apiserver-upgrade-operator';

export function releaseToHarness(registry: Registry, out: string): Promise<ReleaseResult> {
  return release({
    version: RELEASE_VERSION,
    registry: parseRegistry(`${registry.address}/${PUBLISHED}`),
    mirrorOf: parseRegistry(PUBLISHED),
    downloadBase: DEFAULT_DOWNLOAD_BASE,
    plainHttp: true,
    out,
  });
}

// The release's pure part: its inputs checked against strict patterns before anything runs, the names of
// everything it publishes, and the edits of the chart and the krew manifest (structured, on parsed YAML).
// scripts/release.ts runs the steps; test/release/plan.test.ts tests this file.
import { parseDocument, parseAllDocuments, isMap, isSeq, type Document } from 'yaml';

export const CHART_NAME = 'apiserver-upgrade-operator';
/** The operator image's repository name under the release's registry path (the node agent runs from it too). */
export const IMAGE_NAME = 'apiserver-upgrade-operator';
/** Where the project's GitHub releases keep their assets: <base>/v<version>/<file>. */
export const DEFAULT_DOWNLOAD_BASE = 'https://github.com/apiserver-upgrade-operator/apiserver-upgrade-operator/releases/download';
/**
 * Where the project's docs are read at a tag: <base>/v<version>/docs/<page>. The release workflow runs on that tag of
 * this repository, so the page exists as soon as the release does; the released chart's alerts link there.
 */
export const DEFAULT_DOCS_BASE = 'https://github.com/apiserver-upgrade-operator/apiserver-upgrade-operator/blob';
/** The repository prefix of the images this project publishes by default: what the chart's defaults name before a release edits them. */
export const PROJECT_REPOSITORY_PREFIX = 'ghcr.io/apiserver-upgrade-operator/';

/**
 * A release version: semver MAJOR.MINOR.PATCH with an optional pre-release (`0.2.0`, `1.0.0-rc.1`), no `v` and no
 * build metadata (a `+` is not allowed in an OCI tag). It becomes an image tag, a chart version and a file name.
 */
const VERSION = /^(?:0|[1-9][0-9]{0,5})\.(?:0|[1-9][0-9]{0,5})\.(?:0|[1-9][0-9]{0,5})(?:-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?$/;

export function checkVersion(v: string): string {
  if (v.length > 64 || !VERSION.test(v)) throw new Error(`--version must be MAJOR.MINOR.PATCH[-PRERELEASE] without a v (e.g. 0.2.0), not ${JSON.stringify(v)}`);
  return v;
}

/**
 * The release's version: the operator's, `version` in package.json, which every page, the chart and the krew manifest
 * name too (test/release/version.test.ts). `--version`, when given (the release workflow passes its tag's), must be
 * that one: a tag that package.json does not say would publish a chart whose docs name another version.
 */
export function releaseVersion(given: string | undefined, packageVersion: string): string {
  const own = checkVersion(packageVersion);
  if (given === undefined) return own;
  if (checkVersion(given) !== own) throw new Error(`--version ${given} is not package.json's ${own}: set the version in package.json first (and the chart, the krew manifest and the docs: test/release/version.test.ts names every place), or leave --version out`);
  return own;
}

const HOST = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)$/;
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;

export interface RegistryPath {
  /** host or host:port */
  host: string;
  /** The repository path under it, e.g. apiserver-upgrade-operator (at least one component). */
  path: string;
  /** host[:port]/path */
  text: string;
}

/** `HOST[:PORT]/PATH`: a lower-case DNS name or IPv4 address, an optional port, and one or more OCI path components. */
export function parseRegistry(s: string, flag = '--registry'): RegistryPath {
  const bad = (): Error => new Error(`${flag} must be HOST[:PORT]/PATH (e.g. ghcr.io/apiserver-upgrade-operator), lower case, not ${JSON.stringify(s)}`);
  if (s.length > 200) throw bad();
  const slash = s.indexOf('/');
  if (slash <= 0) throw bad();
  const hostPort = s.slice(0, slash);
  const parts = s.slice(slash + 1).split('/');
  const m = /^([^:]+)(?::([0-9]{1,5}))?$/.exec(hostPort);
  if (m === null || !HOST.test(m[1]!)) throw bad();
  if (m[2] !== undefined && (Number(m[2]) < 1 || Number(m[2]) > 65535)) throw bad();
  if (/^[0-9.]+$/.test(m[1]!) && (m[1]!.split('.').length !== 4 || m[1]!.split('.').some((o) => Number(o) > 255))) throw bad();
  if (parts.length === 0 || parts.some((p) => !PATH_COMPONENT.test(p))) throw bad();
  return { host: hostPort, path: parts.join('/'), text: s };
}

/** The base URL of the release's downloads: https, a host, an optional port and path, nothing else (no query, no user). */
export function checkDownloadBase(s: string, flag = '--download-base'): string {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new Error(`${flag} is not a URL: ${JSON.stringify(s)}`);
  }
  const clean = s.replace(/\/+$/, '');
  if (u.protocol !== 'https:' || u.username !== '' || u.password !== '' || u.search !== '' || u.hash !== '' || !/^https:\/\/[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:\/[A-Za-z0-9._~-]+)*$/.test(clean)) {
    throw new Error(`${flag} must be an https URL with a host and a plain path (e.g. ${flag === '--download-base' ? DEFAULT_DOWNLOAD_BASE : DEFAULT_DOCS_BASE}), not ${JSON.stringify(s)}`);
  }
  return clean;
}

export interface ReleaseInput {
  version: string;
  /** Where the image and the chart are pushed. */
  registry: RegistryPath;
  /**
   * The registry the pushed one stands in for, if any (the harness registry mirrors ghcr.io): the chart's defaults
   * name this one, which the nodes resolve through their mirrors. Absent: the pushed registry itself.
   */
  mirrorOf?: RegistryPath;
  downloadBase: string;
  /** The base of the docs' URLs at the release's tag (DEFAULT_DOCS_BASE); absent: the default. */
  docsBase?: string;
}

export interface ReleaseNames {
  version: string;
  /** The image as pushed: <registry>/apiserver-upgrade-operator:<version>. */
  pushImage: string;
  /** The image's repository as the chart's default names it (image.repository). */
  imageRepository: string;
  /** The image as the chart's default names it: imageRepository:<version>. */
  image: string;
  /** `helm push` destination: oci://<registry>/charts. */
  chartPushTarget: string;
  /** The chart as `helm install` takes it: oci://<registry>/charts/apiserver-upgrade-operator. */
  chartInstallRef: string;
  /** The packaged chart's file name. */
  chartFile: string;
  /** The krew archive's file name and its download URL. */
  archiveFile: string;
  archiveUrl: string;
  krewManifestFile: string;
  sbomFile: string;
  /** The runbook the released chart's alerts link to (prometheusRule.runbookUrl): docs/operations.md at the release's tag. */
  runbookUrl: string;
}

export function releaseNames(r: ReleaseInput): ReleaseNames {
  const v = checkVersion(r.version);
  const published = r.mirrorOf ?? r.registry;
  const archiveFile = `kubectl-apiserver_upgrade-v${v}.tar.gz`;
  return {
    version: v,
    pushImage: `${r.registry.text}/${IMAGE_NAME}:${v}`,
    imageRepository: `${published.text}/${IMAGE_NAME}`,
    image: `${published.text}/${IMAGE_NAME}:${v}`,
    chartPushTarget: `oci://${r.registry.text}/charts`,
    chartInstallRef: `oci://${r.registry.text}/charts/${CHART_NAME}`,
    chartFile: `${CHART_NAME}-${v}.tgz`,
    archiveFile,
    archiveUrl: `${checkDownloadBase(r.downloadBase)}/v${v}/${archiveFile}`,
    krewManifestFile: 'apiserver-upgrade.yaml',
    sbomFile: `${IMAGE_NAME}-${v}.spdx.json`,
    runbookUrl: `${checkDownloadBase(r.docsBase ?? DEFAULT_DOCS_BASE, '--docs-base')}/v${v}/docs/operations.md`,
  };
}

function yamlDoc(text: string, what: string): Document {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`${what}: ${doc.errors[0]!.message}`);
  return doc;
}

/** Chart.yaml with version and appVersion set to the release's (comments kept). */
export function releaseChartYaml(text: string, version: string): string {
  const doc = yamlDoc(text, 'Chart.yaml');
  if (doc.get('name') !== CHART_NAME) throw new Error(`Chart.yaml names the chart ${JSON.stringify(doc.get('name'))}, not ${CHART_NAME}`);
  doc.set('version', checkVersion(version));
  doc.set('appVersion', version);
  return doc.toString({ lineWidth: 0 });
}

/**
 * values.yaml with the defaults the release produces: image.repository is where the image was published, the tag
 * stays empty (the chart's appVersion, the release's version), and each policy.agentImages entry that names one of
 * this project's images (ghcr.io/apiserver-upgrade-operator/...) names the published operator image, which carries
 * the node agent; prometheusRule.runbookUrl is the release's docs/operations.md. Comments are kept.
 */
export function releaseValues(text: string, n: Pick<ReleaseNames, 'imageRepository' | 'image' | 'runbookUrl'>): string {
  const doc = yamlDoc(text, 'values.yaml');
  if (!doc.hasIn(['prometheusRule', 'runbookUrl'])) throw new Error('values.yaml has no prometheusRule.runbookUrl');
  doc.setIn(['prometheusRule', 'runbookUrl'], n.runbookUrl);
  if (!doc.hasIn(['image', 'repository'])) throw new Error('values.yaml has no image.repository');
  doc.setIn(['image', 'repository'], n.imageRepository);
  const tag = doc.getIn(['image', 'tag']);
  if (tag !== '' && tag !== undefined && tag !== null) throw new Error(`values.yaml pins image.tag ${JSON.stringify(tag)}: the release's tag is the chart's appVersion, leave it empty`);
  const agents = doc.getIn(['policy', 'agentImages']);
  if (!isSeq(agents)) throw new Error('values.yaml has no policy.agentImages list');
  agents.items.forEach((item, i) => {
    if (!isMap(item)) throw new Error(`values.yaml policy.agentImages[${i}] is not a map`);
    for (const key of ['image', 'repository', 'repositoryPrefix'] as const) {
      const v = item.get(key);
      if (typeof v === 'string' && v.startsWith(PROJECT_REPOSITORY_PREFIX)) {
        item.delete(key);
        item.set('image', n.image);
      }
    }
  });
  return doc.toString({ lineWidth: 0 });
}

/**
 * Every image a default install runs or lets the operator run, from `helm template` output: each container's and
 * init container's image, an `--agent-image=` argument, and each policy.agentImages `image` in the policy ConfigMap. Repositories the policy
 * allows (apiserverImages: the user's own kube-apiserver images) are not images of the release.
 */
export function defaultImages(rendered: string): string[] {
  const out = new Set<string>();
  for (const d of parseAllDocuments(rendered)) {
    const o = d.toJS() as { kind?: string; spec?: { template?: { spec?: PodSpec } }; data?: Record<string, string> } | null;
    if (o === null || typeof o !== 'object') continue;
    const pod = o.spec?.template?.spec;
    for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) {
      if (typeof c.image === 'string') out.add(c.image);
      // The image the operator runs its node agent Jobs from when a spec names none.
      for (const a of [...(c.args ?? []), ...(c.command ?? [])]) if (typeof a === 'string' && a.startsWith('--agent-image=')) out.add(a.slice('--agent-image='.length));
    }
    if (o.kind === 'ConfigMap' && typeof o.data?.['policy.yaml'] === 'string') {
      const policy = parseDocument(o.data['policy.yaml']).toJS() as { agentImages?: { image?: unknown }[] } | null;
      for (const a of policy?.agentImages ?? []) if (typeof a.image === 'string') out.add(a.image);
    }
  }
  return [...out].sort();
}
interface Container {
  image?: unknown;
  args?: unknown[];
  command?: unknown[];
}
interface PodSpec {
  containers?: Container[];
  initContainers?: Container[];
}

/** The krew manifest for this release: spec.version v<version>, and every platform's uri and sha256 the archive's real ones (comments kept). */
export function releaseKrewManifest(template: string, o: { version: string; url: string; sha256: string }): string {
  if (!/^[0-9a-f]{64}$/.test(o.sha256)) throw new Error(`not a sha256: ${JSON.stringify(o.sha256)}`);
  const doc = yamlDoc(template, 'the krew manifest');
  if (doc.get('kind') !== 'Plugin') throw new Error('the krew manifest is not a krew Plugin');
  doc.setIn(['spec', 'version'], `v${checkVersion(o.version)}`);
  const platforms = doc.getIn(['spec', 'platforms']);
  if (!isSeq(platforms) || platforms.items.length === 0) throw new Error('the krew manifest has no spec.platforms');
  for (const p of platforms.items) {
    if (!isMap(p)) throw new Error('a krew platform is not a map');
    p.set('uri', o.url);
    p.set('sha256', o.sha256);
  }
  return doc.toString({ lineWidth: 0 });
}

/**
 * The Argo CD files a release publishes beside the chart: the argocd-cm entries of the ApiServerUpgrade health check
 * and actions (argocd/argocd-cm.ts writes both forms), and the manifests that deploy the operator and roll upgrades in
 * waves (docs/argocd.md). `source` is the repository's file, `name` the release's.
 */
export const ARGOCD_ASSETS: readonly { source: string; name: string }[] = [
  { source: 'argocd/argocd-cm.yaml', name: 'argocd-cm.yaml' },
  { source: 'argocd/argocd-cm.helm-values.yaml', name: 'argocd-cm.helm-values.yaml' },
  { source: 'argocd/operator-application.yaml', name: 'argocd-operator-application.yaml' },
  { source: 'argocd/upgrade-waves-applicationset.yaml', name: 'argocd-upgrade-waves-applicationset.yaml' },
];

/**
 * The operator's Argo CD Application as released: its Helm OCI source names the chart where this release pushed it
 * (repoURL: the registry path without oci://, chart: the chart's name) at this release's version. Comments are kept.
 */
export function releaseArgocdApplication(text: string, n: Pick<ReleaseNames, 'version' | 'chartInstallRef'>): string {
  const doc = yamlDoc(text, 'the operator Application');
  if (doc.get('kind') !== 'Application' || !doc.hasIn(['spec', 'source', 'chart'])) throw new Error('the operator Application is not an Argo CD Application with a Helm chart source');
  const ref = n.chartInstallRef.replace(/^oci:\/\//, '');
  const suffix = `/${CHART_NAME}`;
  if (!ref.endsWith(suffix)) throw new Error(`the chart reference ${n.chartInstallRef} does not end in ${suffix}`);
  doc.setIn(['spec', 'source', 'repoURL'], ref.slice(0, -suffix.length));
  doc.setIn(['spec', 'source', 'chart'], CHART_NAME);
  doc.setIn(['spec', 'source', 'targetRevision'], checkVersion(n.version));
  return doc.toString({ lineWidth: 0 });
}

// A container registry of the harness: Debian's `docker-registry` (distribution 2.8), plain HTTP, with its own
// config file, storage folder and address. The nodes' containerd pull through it by hosts.toml mirrors
// (mirrorHostsToml), so images keep their upstream names (ghcr.io/..., registry.k8s.io/...) and nothing is
// rewritten: the registry holds each image under its full name as the repository path
// (<address>/registry.k8s.io/pause:3.10), and a mirror entry with override_path maps registry.k8s.io's /v2/ onto
// <address>/v2/registry.k8s.io/.
//
// The address: by default a /32 of a claimed 10.77.<n>.0/24 on a dummy link in the root namespace, port 5000. Every
// node's network namespace routes to the root namespace (its default route), and a local address of any link
// answers there, so one registry serves every cluster on the machine, started before or after them. With
// `loopback: true`, 127.0.0.1 on a free port (no root needed; only this machine's own clients reach it).
//
// It is recorded like a cluster (cleanup.ts's state file: its pid, its link, its subnet), so a killed test's
// registry is removed by the next run's sweep or `npm run cluster -- down`.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from './cluster.ts';
import { run, waitFor } from './exec.ts';
import { claimSubnet, usedPrefixes } from './netns.ts';
import { ManagedProcess } from './process.ts';
import { requireCommands } from './requirements.ts';
import { destroySync, registerTeardown, stateDir, sweepStale, unregisterTeardown, writeState, STATE_ROOT, type ClusterState } from './cleanup.ts';

/** The registries whose names the nodes resolve through the harness registry: the chart's images, kubeadm's, the harness's private mirror name. */
export const MIRRORED_REGISTRIES = ['ghcr.io', 'registry.k8s.io', 'registry.auo.test'] as const;

/** The registry's port on its own address. */
export const REGISTRY_PORT = 5000;

export interface RegistryOptions {
  /** 127.0.0.1 on a free port instead of an address the node namespaces reach. */
  loopback?: boolean;
  verbose?: boolean;
}

export interface Pushed {
  /** `<address>/<name>`, as pushed. */
  reference: string;
  /** sha256:… of the manifest as the registry stores it. */
  digest: string;
}

export interface Registry {
  /** host:port, e.g. 10.77.7.1:5000. */
  readonly address: string;
  /** The registry's access log (one line per request, with the client's User-Agent). */
  readonly logPath: string;
  /** Pushes an OCI image-layout tar under `name` (e.g. registry.k8s.io/pause:3.10, stored as <address>/registry.k8s.io/pause:3.10). */
  push(ociTar: string, name: string): Promise<Pushed>;
  /** Stops the registry and removes its storage, link and address. */
  stop(): Promise<void>;
}

/**
 * An image reference as the harness pushes it: lower-case path components separated by `/` (the first may be a
 * host with a port), then a tag. Strict, because it becomes a skopeo argument and a repository path.
 */
const NAME = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]{1,5})?(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

export function checkImageName(name: string): string {
  if (name.length > 255 || !NAME.test(name)) throw new Error(`not an image name with a tag: ${JSON.stringify(name)}`);
  return name;
}

/** `address` is host:port with an IPv4 host or localhost: nothing else goes into the hosts.toml files or a URL. */
export function checkAddress(address: string): string {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3}|localhost):(\d{1,5})$/.exec(address);
  if (m === null || Number(m[2]) < 1 || Number(m[2]) > 65535 || (m[1] !== 'localhost' && m[1]!.split('.').some((o) => Number(o) > 255))) {
    throw new Error(`not a registry address (IPv4:port): ${JSON.stringify(address)}`);
  }
  return address;
}

/** The registry's config (distribution 2.8's YAML): filesystem storage, plain HTTP on `address`, no auth, access log on. */
export function registryConfig(o: { address: string; storage: string }): string {
  return stringify({
    version: 0.1,
    log: { level: 'info', formatter: 'text', accesslog: { disabled: false }, fields: { service: 'registry' } },
    storage: { filesystem: { rootdirectory: o.storage }, delete: { enabled: true }, maintenance: { uploadpurging: { enabled: false } } },
    http: { addr: checkAddress(o.address), headers: { 'X-Content-Type-Options': ['nosniff'] } },
  });
}

/**
 * containerd's hosts.toml for one mirrored registry (certs.d/<namespace>/hosts.toml): pulls and tag resolution go to
 * the harness registry over plain HTTP under /v2/<namespace>/ (override_path: the URL's path is the API root), and
 * the upstream `server` is that same mirror, so containerd never tries the real registry (no internet here).
 */
export function mirrorHostsToml(namespace: string, address: string): string {
  if (!/^[a-z0-9]+(?:[.-][a-z0-9]+)*$/.test(namespace)) throw new Error(`not a registry host name: ${JSON.stringify(namespace)}`);
  const url = `http://${checkAddress(address)}/v2/${namespace}`;
  return [
    `server = "${url}"`,
    'override_path = true',
    '',
    `[host."${url}"]`,
    '  capabilities = ["pull", "resolve"]',
    '  override_path = true',
    '',
  ].join('\n');
}

/** Writes <certsDir>/<namespace>/hosts.toml for each mirrored registry (the folder containerd's registry config_path names). */
export async function writeMirrorHosts(certsDir: string, address: string, namespaces: readonly string[] = MIRRORED_REGISTRIES): Promise<void> {
  await Promise.all(namespaces.map(async (ns) => {
    await mkdir(join(certsDir, ns), { recursive: true });
    await writeFile(join(certsDir, ns, 'hosts.toml'), mirrorHostsToml(ns, address));
  }));
}

/** Pushes an OCI image-layout tar to `<address>/<name>` over plain HTTP with skopeo; returns the reference and the digest the registry stores. */
export async function pushOciTar(ociTar: string, address: string, name: string): Promise<Pushed> {
  return skopeoPush(ociTar, `${checkAddress(address)}/${checkImageName(name)}`, { plainHttp: true });
}

/**
 * `skopeo copy oci-archive:<tar> docker://<reference>`. Uncompressed layers as they are (the digest stays the tar's
 * manifest digest) unless `compress`, as a release does; `plainHttp` for a registry without TLS. Credentials are
 * skopeo's own (`skopeo login`, REGISTRY_AUTH_FILE).
 */
export async function skopeoPush(ociTar: string, reference: string, o: { plainHttp: boolean; compress?: boolean }): Promise<Pushed> {
  requireCommands(['skopeo'], 'pushing an image to a registry');
  if (!existsSync(ociTar)) throw new Error(`no image tar at ${ociTar}`);
  checkImageName(reference);
  const digestFile = `${ociTar}.digest-${process.pid}-${randomBytes(3).toString('hex')}`;
  try {
    await run('skopeo', ['copy', '--retry-times', '2', `--dest-tls-verify=${!o.plainHttp}`, ...(o.compress ? [] : ['--preserve-digests']), '--digestfile', digestFile, `oci-archive:${ociTar}`, `docker://${reference}`]);
    const digest = readFileSync(digestFile, 'utf8').trim();
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`skopeo wrote no digest for ${reference} (${JSON.stringify(digest.slice(0, 80))})`);
    return { reference, digest };
  } finally {
    rmSync(digestFile, { force: true });
  }
}

/** Starts a registry (see the file's comment for the address); resolves once GET /v2/ answers 200. */
export async function startRegistry(opts: RegistryOptions = {}): Promise<Registry> {
  requireCommands(['docker-registry', 'skopeo'], 'the harness registry');
  if (!opts.loopback && process.getuid?.() !== 0) throw new Error('the harness registry on a node-reachable address must run as root (it adds a link and an address); use { loopback: true } otherwise');
  sweepStale();
  const runId = randomBytes(3).toString('hex');
  const dir = stateDir(runId);
  await mkdir(join(dir, 'storage'), { recursive: true });
  const link = `auo${runId}r`;
  // No network namespace: `netns` names none that exists, so cleanup's netns steps find nothing; hostVeth is the dummy link.
  const state: ClusterState = { runId, ownerPid: process.pid, dir, netns: `auo-${runId}-none`, hostVeth: link, rootPids: [] };
  writeState(state);
  registerTeardown(runId, () => destroySync(state));
  try {
    let address: string;
    if (opts.loopback) {
      address = `127.0.0.1:${await freePort()}`;
    } else {
      const third = claimSubnet(STATE_ROOT, runId, await usedPrefixes());
      const prefix = `10.77.${third}`;
      state.prefix = prefix;
      writeState(state);
      await run('ip', ['link', 'add', link, 'type', 'bridge']);
      await run('ip', ['addr', 'add', `${prefix}.1/32`, 'dev', link]);
      await run('ip', ['link', 'set', link, 'up']);
      address = `${prefix}.1:${REGISTRY_PORT}`;
    }
    const config = join(dir, 'registry.yml');
    await writeFile(config, registryConfig({ address, storage: join(dir, 'storage') }));
    const logPath = join(dir, 'registry.log');
    const proc = new ManagedProcess('docker-registry', ['serve', config], logPath);
    state.rootPids.push(proc.pid);
    writeState(state);
    await waitFor(`the registry's /v2/ on ${address}`, 30_000, async () => {
      if (proc.exited) throw new Error(`docker-registry exited (${proc.exitCode ?? proc.signal}); log:\n${(await readFile(logPath, 'utf8').catch(() => '')).slice(-2000)}`);
      const r = await fetch(`http://${address}/v2/`, { signal: AbortSignal.timeout(2000) });
      await r.body?.cancel();
      return r.status === 200 ? true : undefined;
    }, 200);
    if (opts.verbose) process.stderr.write(`[registry] ${address} (${dir})\n`);
    let stopped = false;
    return {
      address,
      logPath,
      push: (ociTar, name) => pushOciTar(ociTar, address, name),
      stop: async () => {
        if (stopped) return;
        stopped = true;
        if (process.env.AUO_E2E_ARTIFACTS) {
          const { cp } = await import('node:fs/promises');
          await mkdir(join(process.env.AUO_E2E_ARTIFACTS, runId), { recursive: true });
          await cp(logPath, join(process.env.AUO_E2E_ARTIFACTS, runId, 'registry.log')).catch(() => undefined);
        }
        await proc.stop(10_000);
        unregisterTeardown(runId);
        destroySync(state);
      },
    };
  } catch (err) {
    unregisterTeardown(runId);
    destroySync(state);
    throw err;
  }
}

/**
 * The manifest requests (HEAD or GET, answered 200) of the registry's access log whose User-Agent is containerd's:
 * `repository:reference` for each, reference a tag (containerd resolves it) or a digest (then fetches it). A pull
 * by a node, not a push or a test's own request.
 */
export function containerdPulls(accessLog: string): string[] {
  const out: string[] = [];
  for (const line of accessLog.split('\n')) {
    const m = /"(?:GET|HEAD) \/v2\/([a-z0-9._/-]+)\/manifests\/([A-Za-z0-9_.:-]+)(?:\?[^ "]*)? HTTP\/[0-9.]+" (\d{3}) .*"containerd\//.exec(line);
    if (m !== null && m[3] === '200') out.push(`${m[1]}:${m[2]}`);
  }
  return out;
}

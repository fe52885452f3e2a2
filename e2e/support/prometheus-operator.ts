// The real prometheus-operator (built from its Go module) as a process against the e2e cluster, and what a kubelet
// would do with the StatefulSets it writes: their Secret and ConfigMap volumes laid out as files, and the
// configuration the config-reloader sidecar would hand Prometheus (gunzipped, `$(VAR)` expanded from its env).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, normalize, posix, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ManagedProcess } from '../cluster/process.ts';
import { freePort } from '../cluster/cluster.ts';
import { requireGo, PROMETHEUS_OPERATOR_MODULE } from '../cluster/binaries.ts';
import { untilReady } from './ready-process.ts';

/** The CRDs of prometheus-operator at a version: example/prometheus-operator-crd/ of its module, from the Go module cache. */
export function prometheusOperatorCrdDir(version: string): string {
  const go = requireGo(`the prometheus-operator ${version} CRDs`);
  const out = execFileSync(go.path, ['mod', 'download', '-json', `${PROMETHEUS_OPERATOR_MODULE}@${version}`], {
    encoding: 'utf8', maxBuffer: 1024 * 1024, env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' }, cwd: '/',
  });
  const dir = (JSON.parse(out) as { Dir?: string; Error?: string });
  if (!dir.Dir) throw new Error(`go mod download ${PROMETHEUS_OPERATOR_MODULE}@${version}: ${dir.Error ?? out}`);
  return join(dir.Dir, 'example', 'prometheus-operator-crd');
}

export interface PrometheusOperatorProcess {
  proc: ManagedProcess;
  url: string;
  stop(): Promise<void>;
}

/** Starts the operator with the admin's client certificate (it has no --kubeconfig), answering once its /healthz does. */
export async function startPrometheusOperator(o: { bin: string; dir: string; apiserver: string; caFile: string; certFile: string; keyFile: string; args: string[] }): Promise<PrometheusOperatorProcess> {
  mkdirSync(o.dir, { recursive: true });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = new ManagedProcess(o.bin, [`--apiserver=${o.apiserver}`, `--ca-file=${o.caFile}`, `--cert-file=${o.certFile}`, `--key-file=${o.keyFile}`,
    `--web.listen-address=127.0.0.1:${port}`, '--log-level=debug', ...o.args], join(o.dir, 'prometheus-operator.log'));
  const stop = await untilReady(proc, 'prometheus-operator', url, 60_000, '/healthz');
  return { proc, url, stop };
}

interface KeyToPath { key: string; path: string }
interface Volume {
  name: string;
  secret?: { secretName: string; items?: KeyToPath[] };
  configMap?: { name: string; items?: KeyToPath[] };
  projected?: { sources: { secret?: { name: string; items?: KeyToPath[] }; configMap?: { name: string; items?: KeyToPath[] } }[] };
  emptyDir?: object;
}
interface Container { name: string; args?: string[]; env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[]; volumeMounts?: { name: string; mountPath: string; subPath?: string }[] }
export interface StatefulSet { metadata: { name: string; namespace: string }; spec: { template: { spec: { containers: Container[]; initContainers?: Container[]; volumes?: Volume[] } } } }

/** What get() answers: a Secret's data (base64) or a ConfigMap's data, by kind and name. */
export type Getter = (kind: 'Secret' | 'ConfigMap', name: string) => Promise<Record<string, Buffer>>;

/** A relative path that stays inside its folder (a key or item path from the server is data, not a path to follow). */
function inside(root: string, rel: string): string {
  const p = normalize(join(root, rel));
  if (!p.startsWith(root + sep)) throw new Error(`${rel} leaves ${root}`);
  return p;
}

/**
 * Lays out, under `root` (standing for `/`), every Secret, ConfigMap and projected volume the container mounts below
 * `under`, as the kubelet would; emptyDir volumes become empty folders. Answers the mount paths written.
 */
export async function materializeMounts(sts: StatefulSet, container: string, under: string, root: string, get: Getter): Promise<string[]> {
  const c = sts.spec.template.spec.containers.find((x) => x.name === container);
  if (!c) throw new Error(`${sts.metadata.name} has no container ${container}`);
  const volumes = new Map((sts.spec.template.spec.volumes ?? []).map((v) => [v.name, v]));
  const written: string[] = [];
  for (const m of c.volumeMounts ?? []) {
    const mountPath = posix.normalize(m.mountPath);
    if (!mountPath.startsWith(`${under}/`)) continue;
    const v = volumes.get(m.name);
    if (!v) continue;
    const target = inside(root, mountPath.slice(1));
    // With subPath the mount is one file of the volume (a key of its Secret or ConfigMap): laid out in a folder of
    // its own, then that file put at the mount path.
    const dir = m.subPath ? inside(root, `.subpath/${m.name}`) : target;
    mkdirSync(dir, { recursive: true });
    const sources: { kind: 'Secret' | 'ConfigMap'; name: string; items?: KeyToPath[] }[] = [];
    if (v.secret) sources.push({ kind: 'Secret', name: v.secret.secretName, items: v.secret.items });
    if (v.configMap) sources.push({ kind: 'ConfigMap', name: v.configMap.name, items: v.configMap.items });
    for (const s of v.projected?.sources ?? []) {
      if (s.secret) sources.push({ kind: 'Secret', name: s.secret.name, items: s.secret.items });
      if (s.configMap) sources.push({ kind: 'ConfigMap', name: s.configMap.name, items: s.configMap.items });
    }
    for (const s of sources) {
      const data = await get(s.kind, s.name);
      const files = s.items ?? Object.keys(data).map((key) => ({ key, path: key }));
      for (const f of files) {
        const value = data[f.key];
        if (value === undefined) continue;
        const path = inside(dir, f.path);
        mkdirSync(join(path, '..'), { recursive: true });
        writeFileSync(path, value, { mode: 0o600 });
      }
    }
    if (m.subPath) {
      mkdirSync(join(target, '..'), { recursive: true });
      writeFileSync(target, readFileSync(inside(dir, m.subPath)), { mode: 0o600 });
    }
    written.push(mountPath);
  }
  return written;
}

/** The container's environment as the kubelet sets it for Pod `pod` (values and the metadata.name field only). */
export function containerEnv(sts: StatefulSet, container: string, pod: string): Record<string, string> {
  const c = [...sts.spec.template.spec.containers, ...(sts.spec.template.spec.initContainers ?? [])].find((x) => x.name === container);
  const env: Record<string, string> = {};
  for (const e of c?.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = pod;
  }
  return env;
}

/**
 * What prometheus-config-reloader writes for Prometheus from the operator's gzipped configuration: gunzipped, each
 * `$(NAME)` replaced by NAME's value in its environment. A `$(` left over throws: the file would not be Prometheus's.
 */
export function reloaderOutput(gz: Buffer, env: Record<string, string>): string {
  const text = gunzipSync(gz, { maxOutputLength: 16 * 1024 * 1024 }).toString('utf8');
  const out = text.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole);
  const left = /\$\([A-Za-z_][A-Za-z0-9_]*\)/.exec(out);
  if (left) throw new Error(`the configuration keeps ${left[0]}, which the config-reloader's environment does not set`);
  return out;
}

/** The arguments of a StatefulSet's container. */
export function containerArgs(sts: StatefulSet, container: string): string[] {
  return sts.spec.template.spec.containers.find((x) => x.name === container)?.args ?? [];
}

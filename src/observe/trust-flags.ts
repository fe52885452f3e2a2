/**
 * A kube-apiserver's effective flags, from what can be read of its command line (docs/trust.md). Pure.
 *
 * kubeadm writes the static Pod `kube-apiserver` with every flag in `command` as `--name=value`; other
 * tools write `args`, or `--name value`. The kubelet's mirror Pod `kube-system/kube-apiserver-<node>` carries
 * the same spec, so reading it reads the flags the server was started with (as long as the manifest and
 * the running container agree: a manifest edited since is what the mirror Pod shows once the kubelet acts).
 */
import type { V1Pod, V1PodList } from '@kubernetes/client-node';

/**
 * Flags that pflag declares as string slices: a repeated flag appends (`--x=a --x=b` is `a,b`) where every
 * other flag keeps its last value. Only the ones the trust checks read matter here.
 */
const SLICE_FLAGS: ReadonlySet<string> = new Set(['--requestheader-allowed-names', '--requestheader-username-headers', '--requestheader-group-headers', '--requestheader-extra-headers-prefix', '--requestheader-uid-headers']);

/**
 * `--name=value` and `--name value` forms into `{ '--name': 'value' }`. A flag followed by another flag (or by
 * nothing) is a boolean: `'true'`. Anything before the first flag (the binary, `kube-apiserver`) and any
 * positional word after a value is ignored. A slice flag given twice is joined with a comma, as pflag
 * appends; any other flag keeps its last value, as pflag does. `--name=` keeps the empty value.
 *
 * The `--name value` form is ambiguous for a boolean flag followed by a positional word; kube-apiserver takes
 * no positional arguments, so a word after a flag is that flag's value.
 */
export function parseCommandFlags(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const set = (name: string, value: string): void => {
    const prev = out[name];
    out[name] = prev !== undefined && SLICE_FLAGS.has(name) ? [prev, value].filter((x) => x !== '').join(',') : value;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('-') || a === '-' || a === '--') continue;
    // kube-apiserver (pflag) accepts -name as well as --name for long flags; normalize to --name.
    const body = a.replace(/^--?/, '');
    const eq = body.indexOf('=');
    if (eq >= 0) {
      set(`--${body.slice(0, eq)}`, body.slice(eq + 1));
      continue;
    }
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith('-')) {
      set(`--${body}`, next);
      i++;
    } else {
      set(`--${body}`, 'true');
    }
  }
  return out;
}

/** The kube-apiserver container's command and args, parsed; undefined when the Pod has no such container. */
export function flagsFromPod(pod: V1Pod): Record<string, string> | undefined {
  const containers = pod.spec?.containers ?? [];
  const c = containers.find((x) => x.name === 'kube-apiserver') ?? (containers.length === 1 ? containers[0] : undefined);
  if (!c) return undefined;
  return parseCommandFlags([...(c.command ?? []), ...(c.args ?? [])]);
}

/** The annotation the kubelet sets on a mirror Pod (the API's copy of a static Pod). */
export const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/**
 * The mirror Pod of the kube-apiserver on `hostname`: kubeadm's `kube-apiserver-<node>` in kube-system, matched
 * by `spec.nodeName` (the node name is the hostname, lowercased, unless kubeadm was told otherwise) or by name.
 * Only mirror Pods count: a Pod someone created with that name is not what the kubelet runs. Undefined when
 * none, or when two match (ambiguous: nothing is guessed).
 */
export function mirrorPodFor(pods: V1PodList, hostname: string): V1Pod | undefined {
  const host = hostname.toLowerCase();
  const matches = pods.items.filter((p) => p.metadata?.annotations?.[MIRROR_ANNOTATION] !== undefined && (p.spec?.nodeName?.toLowerCase() === host || p.metadata?.name === `kube-apiserver-${host}`));
  return matches.length === 1 ? matches[0] : undefined;
}

/**
 * A Describe answer's `flags` (docs/drivers.md): an object of `--name` -> string. Names without the leading
 * dashes are accepted and normalized. Undefined for anything else: a malformed answer is "unknown", not "no flags".
 */
export function flagsFromDescribe(body: unknown): Record<string, string> | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const flags = (body as { flags?: unknown }).flags;
  if (typeof flags !== 'object' || flags === null || Array.isArray(flags)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(flags)) {
    if (typeof v !== 'string' || k.replace(/^--?/, '') === '') return undefined;
    out[`--${k.replace(/^--?/, '')}`] = v;
  }
  return out;
}

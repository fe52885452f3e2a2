/**
 * kubeadm's layout of the kube-apiserver command, as the rules both writers follow — the node agent's manifest edit
 * (src/agent/flags.ts) and the kubeadm-config edit (kubeadm-config.ts) — so that `kubeadm upgrade apply`/`node` to
 * the same version renders a manifest equal to the one the operator left and skips the restart
 * (docs/kubeadm-runbook.md "kubeadm finds nothing to do"). Pure.
 *
 * What kubeadm renders (v1.35 and v1.36, cmd/kubeadm/app/phases/controlplane/manifests.go getAPIServerCommand and
 * util/arguments.go ArgumentsToCommand): `kube-apiserver`, its base flags sorted by name (those that
 * `apiServer.extraArgs` does not override), then `apiServer.extraArgs` in their order (v1beta4: the list's; v1beta3:
 * sorted by name), each as `--name=value`. What it compares (phases/upgrade/staticpods.go, util/staticpod/utils.go
 * ManifestFilesAreEqual): the whole Pod as read from the file, so flag order counts.
 *
 * Hence:
 *  - a flag the operator adds is appended after the last flag, as kubeadm appends an extraArg the kubeadm-config
 *    edit adds at the end of the list, in the same order (`--feature-gates`, then `--peer-ca-file`);
 *  - a gate added to `--feature-gates` is appended to its list, other gates kept verbatim where they are, on both
 *    sides ({@link mergeGate});
 *  - `--peer-advertise-ip`/`--peer-advertise-port` are left out where kube-apiserver's own fallback gives the same
 *    peer address ({@link peerAdvertiseImplied}): kubeadm-config cannot carry per-node values, so a manifest that
 *    has them differs from kubeadm's unless a per-node kubeadm patch adds them.
 */

/** kube-apiserver's `--secure-port` when the flag is not given. */
export const DEFAULT_SECURE_PORT = 6443;

/**
 * A `--feature-gates` value with `gate` set to `on`: every item naming it (whitespace around the name ignored)
 * replaced by `gate=on`, else `gate=on` appended; every other item kept as written, in its place.
 */
export function mergeGate(gates: string, gate: string, on: boolean): string {
  const items = gates === '' ? [] : gates.split(',');
  const want = `${gate}=${on}`;
  let found = false;
  const out = items.map((x) => {
    if (x.split('=')[0]!.trim() !== gate) return x;
    found = true;
    return want;
  });
  if (!found) out.push(want);
  return out.join(',');
}

/** The value of the last `--name=value` entry of a command (what kube-apiserver uses), or undefined. */
function lastValue(command: readonly string[], name: string): string | undefined {
  let v: string | undefined;
  for (const e of command.slice(1)) if (e.startsWith(`${name}=`)) v = e.slice(name.length + 1);
  return v;
}

/** An IP literal in one spelling per address (IPv6 lower case, `::` expanded); undefined when it is not one. */
export function canonicalIP(s: string): string | undefined {
  if (/^(\d{1,3})(\.\d{1,3}){3}$/.test(s)) {
    const parts = s.split('.').map(Number);
    return parts.every((p, i) => p <= 255 && String(p) === s.split('.')[i]) ? parts.join('.') : undefined;
  }
  if (!/^[0-9A-Fa-f:]+$/.test(s) || s.length > 39) return undefined;
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const group = (h: string): string[] => (h === '' ? [] : h.split(':'));
  const head = group(halves[0]!);
  const tail = halves.length === 2 ? group(halves[1]!) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return undefined;
  const all = [...head, ...Array<string>(fill).fill('0'), ...tail];
  if (!all.every((g) => /^[0-9A-Fa-f]{1,4}$/.test(g))) return undefined;
  return all.map((g) => parseInt(g, 16).toString(16)).join(':');
}

/**
 * Whether kube-apiserver advertises `ip:port` to its peers without `--peer-advertise-ip`/`--peer-advertise-port`:
 * with them unset it advertises its `--advertise-address` and the port it serves on (`--secure-port`, 6443 when
 * not given; pkg/controlplane/apiserver/peer.go getPeerAddress). False when the command has no readable
 * `--advertise-address` (kube-apiserver would pick an address itself: unknown, so the flags are written), or when a
 * flag is given in the two-entry form (`--name value`), which this does not read.
 */
export function peerAdvertiseImplied(command: readonly string[], ip: string, port: number): boolean {
  const twoEntry = (name: string): boolean => command.slice(1).includes(name);
  if (twoEntry('--advertise-address') || twoEntry('--secure-port')) return false;
  const advertised = lastValue(command, '--advertise-address');
  if (advertised === undefined) return false;
  const a = canonicalIP(advertised);
  if (a === undefined || a !== canonicalIP(ip)) return false;
  const portText = lastValue(command, '--secure-port');
  if (portText === undefined) return port === DEFAULT_SECURE_PORT;
  return /^[1-9]\d{0,4}$/.test(portText) && Number(portText) === port;
}

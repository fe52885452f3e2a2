// The flag edits of the node agent, on a kube-apiserver command list (`kube-apiserver`, then one flag per entry)
// as structured data: entries are read, replaced, inserted and removed whole, never spliced as text. Edits are in
// place, so a manifest edited back and forth comes back byte for byte (an Upgrade, then its Rollback):
//  - a flag that is there keeps its position: `--feature-gates` gets the gate merged into its list,
//    `--peer-*` and `--emulated-version` get their value replaced where they are (a flag repeated: the first
//    is set, the others removed, as kube-apiserver would only use the last);
//  - a new flag goes where kubeadm puts the `apiServer.extraArgs` that the kubeadm-config edit adds: after the last
//    `--` entry (kubeadm renders its base flags sorted, then the extraArgs in their order; src/plan/kubeadm-layout.ts);
//  - a removed flag is removed, with its value entry when it was written as `--flag value`;
//  - `--peer-advertise-ip`/`--peer-advertise-port` are not written (and removed) where the server's
//    `--advertise-address` and `--secure-port` already give its peers that address (kubeadm-layout.ts
//    peerAdvertiseImplied): kubeadm cannot render per-node flags from kubeadm-config.
import { mergeGate, peerAdvertiseImplied } from '../plan/kubeadm-layout.ts';

/** A list of strings that can be edited in place (a YAML sequence of scalars, or a plain array in tests). */
export interface FlagList {
  values(): readonly string[];
  set(index: number, value: string): void;
  insert(index: number, value: string): void;
  remove(index: number): void;
}

export const PROXY_GATE_NAME = 'UnknownVersionInteroperabilityProxy';
export const PEER_FLAGS = ['--peer-ca-file', '--peer-advertise-ip', '--peer-advertise-port'] as const;

/** An array as a FlagList. */
export function arrayFlags(a: string[]): FlagList {
  return {
    values: () => a,
    set: (i, v) => void (a[i] = v),
    insert: (i, v) => void a.splice(i, 0, v),
    remove: (i) => void a.splice(i, 1),
  };
}

/** `--name` of an entry `--name=value` or `--name`; undefined for anything else (the command, a value). */
export function flagName(entry: string): string | undefined {
  if (!entry.startsWith('--') || entry.length < 3) return undefined;
  const eq = entry.indexOf('=');
  return eq < 0 ? entry : entry.slice(0, eq);
}

/** Where `name`'s value is: the entry itself (`--name=v`) or the next one (`--name v`). */
interface Occurrence { index: number; valueIndex: number; value: string }

function occurrences(list: FlagList, name: string): Occurrence[] {
  const v = list.values();
  const out: Occurrence[] = [];
  for (let i = 1; i < v.length; i++) {
    const e = v[i]!;
    if (e.startsWith(`${name}=`)) out.push({ index: i, valueIndex: i, value: e.slice(name.length + 1) });
    // The two-entry form: the value is the next entry, unless that is another flag (or there is none).
    else if (e === name) out.push({ index: i, valueIndex: i + 1 < v.length && flagName(v[i + 1]!) === undefined ? i + 1 : -1, value: i + 1 < v.length && flagName(v[i + 1]!) === undefined ? v[i + 1]! : '' });
  }
  return out;
}

/** Removes one occurrence, its separate value entry too. */
function removeOccurrence(list: FlagList, o: Occurrence): void {
  if (o.valueIndex > o.index) list.remove(o.valueIndex);
  list.remove(o.index);
}

/** Where a new flag goes: after the last `--` entry (and its value entry), as kubeadm appends an extraArg. */
function endPosition(list: FlagList): number {
  const v = list.values();
  let afterLast = v.length === 0 ? 0 : 1;
  for (let i = 1; i < v.length; i++) {
    const n = flagName(v[i]!);
    if (n === undefined) continue;
    afterLast = i + 1;
    // A flag written as `--name value`: its value entry goes with it.
    if (v[i] === n && i + 1 < v.length && flagName(v[i + 1]!) === undefined) afterLast = i + 2;
  }
  return afterLast;
}

/** Sets `name` to `value`: in place when it is there (repeats removed), else appended after the last flag. */
export function setFlag(list: FlagList, name: string, value: string): void {
  const found = occurrences(list, name);
  // From the last: removing an entry does not move the ones before it.
  for (const o of found.slice(1).reverse()) removeOccurrence(list, o);
  const first = found[0];
  if (first === undefined) {
    list.insert(endPosition(list), `${name}=${value}`);
  } else if (first.valueIndex === first.index) {
    if (list.values()[first.index] !== `${name}=${value}`) list.set(first.index, `${name}=${value}`);
  } else if (first.valueIndex > first.index) {
    if (list.values()[first.valueIndex] !== value) list.set(first.valueIndex, value);
  } else {
    // `--name` with no value after it: the value goes into the entry.
    list.set(first.index, `${name}=${value}`);
  }
}

/** Removes every occurrence of `name`. */
export function removeFlag(list: FlagList, name: string): void {
  for (const o of occurrences(list, name).reverse()) removeOccurrence(list, o);
}

/** A `--feature-gates` value with `gate` set to `on`: in place when listed, else appended (kubeadm-layout.ts mergeGate). */
export function withGate(gates: string, gate: string, on: boolean): string {
  return mergeGate(gates, gate, on);
}

/**
 * Sets the proxy gate in `--feature-gates`: in each occurrence that lists it (feature gates of repeated flags
 * merge), else in the last one, else a new flag.
 */
export function setGate(list: FlagList, on: boolean): void {
  const found = occurrences(list, '--feature-gates');
  const listing = found.filter((o) => o.value.split(',').some((x) => x.split('=')[0]!.trim() === PROXY_GATE_NAME));
  const targets = listing.length > 0 ? listing : found.slice(-1);
  if (targets.length === 0) {
    list.insert(endPosition(list), `--feature-gates=${PROXY_GATE_NAME}=${on}`);
    return;
  }
  for (const o of targets) {
    const next = withGate(o.value, PROXY_GATE_NAME, on);
    if (next === o.value) continue;
    if (o.valueIndex === o.index) list.set(o.index, `--feature-gates=${next}`);
    else if (o.valueIndex > o.index) list.set(o.valueIndex, next);
    else list.set(o.index, `--feature-gates=${next}`);
  }
}

/** What one call changes in the flags. */
export interface FlagEdit {
  /** undefined: leave the gate and the peer flags alone. */
  gate: boolean | undefined;
  peerCA: string;
  peerIP: string;
  peerPort: number;
  /** undefined: no --emulated-version (removed when there is one). */
  emulatedVersion: string | undefined;
}

/**
 * The call's flags: the gate; with it on, --peer-ca-file set and --peer-advertise-ip/--peer-advertise-port set, or
 * removed where the command's --advertise-address and --secure-port already advertise that address; with it off,
 * none of the three (kube-apiserver refuses to start with peer flags and the gate off); --emulated-version set or
 * removed.
 */
export function editFlags(list: FlagList, e: FlagEdit): void {
  if (e.gate !== undefined) {
    setGate(list, e.gate);
    if (e.gate) {
      setFlag(list, '--peer-ca-file', e.peerCA);
      if (peerAdvertiseImplied(list.values(), e.peerIP, e.peerPort)) {
        removeFlag(list, '--peer-advertise-ip');
        removeFlag(list, '--peer-advertise-port');
      } else {
        setFlag(list, '--peer-advertise-ip', e.peerIP);
        setFlag(list, '--peer-advertise-port', String(e.peerPort));
      }
    } else {
      for (const f of PEER_FLAGS) removeFlag(list, f);
    }
  }
  if (e.emulatedVersion === undefined) removeFlag(list, '--emulated-version');
  else setFlag(list, '--emulated-version', e.emulatedVersion);
}

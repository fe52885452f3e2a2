// The command line a flag proof runs (docs/flag-proof.md): a node's kube-apiserver command as its manifest holds it
// (the mirror Pod's copy of the manifest's container), edited exactly as the node agent will edit it for the call
// (src/agent/flags.ts editFlags: the proxy gate and its --peer-* flags, --emulated-version), then PROOF_SENTINEL
// appended last. Only the command's entries are handled, as data: nothing here is a shell or a pattern.
//
// One value may be substituted: --service-account-signing-key-file, the only file kube-apiserver reads before it
// validates its options (measured on v1.35.4, v1.36.3, v1.37.2; every other file flag is read later). A probe
// that runs where the node's files are not (a Pod without the node's pki) points it at a throwaway key instead of
// the cluster's signing key, which never leaves the node.
import { arrayFlags, editFlags, flagName, setFlag, type FlagEdit } from '../agent/flags.ts';
import { PROOF_SENTINEL } from '../plan/flag-proof.ts';
import { PROXY_GATE } from '../api/constants.ts';
import { parseIpPort } from '../api/ip-port.ts';
import type { ResolvedStaticPod } from '../api/defaults.ts';
import type { DriverRequest } from '../plan/actions.ts';

export const SIGNING_KEY_FLAG = '--service-account-signing-key-file';

export interface ProofCommandOptions {
  /** Where the signing key is read instead of the manifest's path; absent: the manifest's path is kept. */
  signingKeyPath?: string;
}

/** The flags to run the target binary with (without the binary), or why they cannot be built. */
export type ProofCommand = { args: string[]; substituted: string[] } | { error: string };

function isKubeApiserver(entry: string): boolean {
  return entry === 'kube-apiserver' || entry.endsWith('/kube-apiserver');
}

/**
 * The flags of the proof for `command` (the manifest's `kube-apiserver` command list, binary first) under the
 * call's flag edit. Refused (an error) when the command does not start with kube-apiserver, or when its last entry
 * is a flag without a value (`--name` alone), which would take the sentinel as its value.
 */
export function proofCommand(command: readonly string[], edit: FlagEdit | undefined, opts: ProofCommandOptions = {}): ProofCommand {
  if (command.length === 0 || !isKubeApiserver(command[0]!)) {
    return { error: `the container's command does not start with kube-apiserver (${command.length === 0 ? 'it is empty' : JSON.stringify(command[0]).slice(0, 200)})` };
  }
  const list = [...command];
  const flags = arrayFlags(list);
  if (edit !== undefined) editFlags(flags, edit);
  const substituted: string[] = [];
  if (opts.signingKeyPath !== undefined && list.slice(1).some((e) => flagName(e) === SIGNING_KEY_FLAG)) {
    setFlag(flags, SIGNING_KEY_FLAG, opts.signingKeyPath);
    substituted.push(SIGNING_KEY_FLAG);
  }
  const last = list.length > 1 ? list[list.length - 1]! : undefined;
  if (last !== undefined && last.startsWith('-') && !last.includes('=')) {
    return { error: `the command line ends in ${JSON.stringify(last).slice(0, 200)} without a value: write it as ${last.startsWith('--') ? last : '--name'}=<value> so that nothing after it is read as its value` };
  }
  return { args: [...list.slice(1), PROOF_SENTINEL], substituted };
}

/**
 * The flag edit a call makes, as the node agent will make it from the Job agentJob() renders for the call: the
 * proxy gate from featureGates (absent: left alone), the peer address from the server's address, the peer CA from
 * the spec, the emulated version (absent: removed). Undefined when the server's address is not an ip:port (agentJob
 * refuses such a call too).
 */
export function callFlagEdit(spec: Pick<ResolvedStaticPod, 'peerCAFile'>, r: Pick<DriverRequest, 'featureGates' | 'server' | 'emulatedVersion'>): FlagEdit | undefined {
  const at = parseIpPort(r.server.address ?? '');
  if (at === undefined) return undefined;
  return { gate: r.featureGates[PROXY_GATE], peerCA: spec.peerCAFile, peerIP: at.ip, peerPort: at.port, emulatedVersion: r.emulatedVersion };
}

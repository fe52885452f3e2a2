/**
 * kubeadm kept consistent (docs/kubeadm-runbook.md), pure: what the `kube-system/kubeadm-config` ConfigMap's
 * ClusterConfiguration must say once an upgrade ended, and that text edited in place — every other key,
 * comment and the layout kept (the `yaml` package's Document API) — or a refusal with its reason. The
 * reconciler reads the ConfigMap, calls these, and writes the result with the ConfigMap's resourceVersion.
 *
 * What is written (only what the operator itself changed on the servers):
 *  - `kubernetesVersion`: the target once the upgrade Succeeded; the from-version once it RolledBack (the
 *    servers run it again).
 *  - `apiServer.extraArgs` `feature-gates`: UnknownVersionInteroperabilityProxy=true merged in (other gates
 *    kept, in their order) when the operator's calls left the gate on on every server they set it on.
 *  - `apiServer.extraArgs` `peer-ca-file`: the static Pod driver's peerCAFile, with the gate. The driver's
 *    --peer-advertise-ip and --peer-advertise-port are per server: ClusterConfiguration's extraArgs are the
 *    same for every control-plane node, so they are never written (a server without them advertises its
 *    --advertise-address and --secure-port, which kubeadm sets per node).
 *
 * Refused, nothing written, the reason in the KubeadmConfigUpdated condition: text that is not one YAML
 * document, a kind other than ClusterConfiguration, an apiVersion other than kubeadm.k8s.io/v1beta3 (extraArgs a
 * map) or v1beta4 (extraArgs a list of {name, value}), an extraArgs of the wrong shape, or a flag the operator
 * would set listed twice in v1beta4 (which of them kubeadm passes last is not the operator's to guess).
 */
import { isDeepStrictEqual } from 'node:util';
import { isMap, isScalar, isSeq, parseDocument, YAMLMap, YAMLSeq, type Document } from 'yaml';
import type { ApiServerUpgradeStatus, KubeadmConfigStatus } from '../api/types.generated.ts';
import type { ResolvedSpec } from '../api/defaults.ts';
import { PROXY_GATE } from '../api/constants.ts';
import { setCondition, type ConditionInput } from '../api/conditions.ts';
import type { Action } from './actions.ts';
import { mergeGate } from './kubeadm-layout.ts';

export const KUBEADM_CONFIG_NAMESPACE = 'kube-system';
export const KUBEADM_CONFIG_NAME = 'kubeadm-config';
export const KUBEADM_CONFIG_KEY = 'ClusterConfiguration';
export const KUBEADM_API_VERSIONS = ['kubeadm.k8s.io/v1beta3', 'kubeadm.k8s.io/v1beta4'] as const;

/** What the run changed on the servers that kubeadm-config must carry. */
export interface KubeadmIntent {
  /** The phase the intent is for (Succeeded or RolledBack): recorded, so a restart neither redoes nor misses it. */
  phase: 'Succeeded' | 'RolledBack';
  kubernetesVersion: string;
  /** Gates to merge into apiServer.extraArgs feature-gates; empty: the gates are left as they are. */
  featureGates: Record<string, boolean>;
  /** apiServer.extraArgs to set (flag name without dashes -> value). */
  extraArgs: Record<string, string>;
  /** Why some of what the operator set is not written (per-server flags; a gate not left on everywhere). */
  notes: string[];
}

export type KubeadmEdit =
  | { kind: 'updated'; text: string; changes: string[] }
  | { kind: 'unchanged' }
  | { kind: 'refused'; reason: string; message: string };

/** The reasons of the KubeadmConfigUpdated condition, each with its entry in docs/troubleshooting.md. */
export const KUBEADM_CONFIG_REASONS = {
  updated: { reason: 'KubeadmConfigUpdated' },
  unchanged: { reason: 'KubeadmConfigConsistent' },
  absent: { reason: 'NotKubeadmCluster' },
  unparseable: { reason: 'KubeadmConfigUnparseable' },
  unknownVersion: { reason: 'KubeadmConfigUnknownAPIVersion' },
  ambiguous: { reason: 'KubeadmConfigAmbiguous' },
  forbidden: { reason: 'KubeadmConfigForbidden' },
  notWritten: { reason: 'KubeadmConfigNotWritten' },
} as const;

/**
 * The planner's part, when a step ends the upgrade Succeeded or RolledBack: status.kubeadmConfig Pending for
 * that phase, written with the ending itself, so the shell's edit is neither missed by a restart nor made for
 * an upgrade that ended before (without a record). Failed upgrades never changed a server's version (preflight
 * refusals, or the last batch reverted) and get none.
 */
export function markKubeadmConfigPending(status: ApiServerUpgradeStatus): void {
  const phase = status.phase;
  if (phase !== 'Succeeded' && phase !== 'RolledBack') return;
  status.kubeadmConfig = { phase, result: 'Pending' };
}

/** Whether the shell has kubeadm-config to bring in line: an ending recorded Pending for the phase the upgrade is in. */
export function kubeadmConfigDue(status: ApiServerUpgradeStatus | undefined): boolean {
  const phase = status?.phase;
  if (phase !== 'Succeeded' && phase !== 'RolledBack') return false;
  return status?.kubeadmConfig?.result === 'Pending' && status.kubeadmConfig.phase === phase;
}

/**
 * What kubeadm-config must say after this run, from the status alone (the calls recorded Done). Undefined
 * when the run is not Succeeded or RolledBack, or has no version to write.
 */
export function kubeadmIntent(spec: ResolvedSpec, status: ApiServerUpgradeStatus): KubeadmIntent | undefined {
  const phase = status.phase;
  if (phase !== 'Succeeded' && phase !== 'RolledBack') return undefined;
  const version = phase === 'Succeeded' ? (status.targetVersion ?? spec.targetVersion) : status.fromVersion;
  if (!version) return undefined;
  const notes: string[] = [];
  const featureGates: Record<string, boolean> = {};
  const extraArgs: Record<string, string> = {};
  // The gate each server was left with: its last Done call that set one.
  const last = new Map<string, boolean>();
  const done = (status.driverCalls ?? []).filter((c) => c.result === 'Done' && c.gate !== undefined);
  for (const c of [...done].sort((a, b) => (a.time ?? '').localeCompare(b.time ?? ''))) last.set(c.server, c.gate!);
  const values = [...last.values()];
  if (values.length > 0 && values.every((g) => g)) {
    featureGates[PROXY_GATE] = true;
    if (spec.driver.kind === 'staticPod') {
      extraArgs['peer-ca-file'] = spec.driver.staticPod.peerCAFile;
      notes.push('--peer-advertise-ip and --peer-advertise-port are per server and not written (each server then advertises its --advertise-address and --secure-port)');
    }
  } else if (values.length > 0) {
    const off = [...last].filter(([, g]) => !g).map(([h]) => h).sort();
    notes.push(`the ${PROXY_GATE} gate was set back off on ${off.join(', ')}: the gates are left as kubeadm-config has them`);
  }
  return { phase, kubernetesVersion: version, featureGates, extraArgs, notes };
}

type Refusal = Extract<KubeadmEdit, { kind: 'refused' }>;
const refuse = (reason: string, message: string): Refusal => ({ kind: 'refused', reason, message });

/**
 * "A=true,B=false" with `gates` set: each by kubeadm-layout.ts mergeGate, the rule the node agent's manifest edit
 * follows too (other gates kept as written, in place; a new one appended), so the value kubeadm renders from
 * kubeadm-config equals the one the agent left in the manifest.
 */
export function mergeFeatureGates(value: string, gates: Record<string, boolean>): string {
  return Object.entries(gates).reduce((v, [name, on]) => mergeGate(v, name, on), value);
}

/**
 * The ClusterConfiguration text with `intent` applied, or `unchanged` when it already says so, or a refusal.
 * Only the fields the intent names are touched; comments, key order and everything else stay as written.
 */
export function editClusterConfiguration(text: string, intent: KubeadmIntent): KubeadmEdit {
  let doc: Document;
  try {
    doc = parseDocument(text, { prettyErrors: false });
  } catch (err) {
    return refuse(KUBEADM_CONFIG_REASONS.unparseable.reason, `ClusterConfiguration is not YAML: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (doc.errors.length > 0) return refuse(KUBEADM_CONFIG_REASONS.unparseable.reason, `ClusterConfiguration is not YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
  if (!isMap(doc.contents)) return refuse(KUBEADM_CONFIG_REASONS.unparseable.reason, 'ClusterConfiguration is not a YAML mapping');
  const apiVersion = doc.get('apiVersion');
  const kind = doc.get('kind');
  if (kind !== 'ClusterConfiguration') return refuse(KUBEADM_CONFIG_REASONS.unknownVersion.reason, `kind is ${JSON.stringify(kind)}, not ClusterConfiguration`);
  if (!(KUBEADM_API_VERSIONS as readonly unknown[]).includes(apiVersion)) {
    return refuse(KUBEADM_CONFIG_REASONS.unknownVersion.reason, `apiVersion ${JSON.stringify(apiVersion)} is not one the operator edits (${KUBEADM_API_VERSIONS.join(', ')}): edit it by hand (docs/kubeadm-runbook.md)`);
  }
  const v1beta4 = apiVersion === 'kubeadm.k8s.io/v1beta4';
  const changes: string[] = [];

  const version = doc.get('kubernetesVersion');
  if (version !== intent.kubernetesVersion) {
    doc.set('kubernetesVersion', intent.kubernetesVersion);
    changes.push(`kubernetesVersion ${version === undefined ? '(unset)' : String(version)} -> ${intent.kubernetesVersion}`);
  }

  const wanted: [string, (current: string | undefined) => string][] = [];
  if (Object.keys(intent.featureGates).length > 0) wanted.push(['feature-gates', (cur) => mergeFeatureGates(cur ?? '', intent.featureGates)]);
  for (const [name, value] of Object.entries(intent.extraArgs)) wanted.push([name, () => value]);
  if (wanted.length > 0) {
    let apiServer: unknown = doc.get('apiServer', true);
    if (apiServer === undefined || apiServer === null || (isScalar(apiServer) && apiServer.value === null)) {
      apiServer = new YAMLMap();
      doc.set('apiServer', apiServer);
    }
    if (!isMap(apiServer)) return refuse(KUBEADM_CONFIG_REASONS.unparseable.reason, 'apiServer is not a mapping');
    // kubeadm writes an empty `apiServer: {}`: what is added to it is written in block style, one line per entry.
    blockIfEmpty(apiServer);
    let args: unknown = apiServer.get('extraArgs', true);
    if (args === undefined || args === null || (isScalar(args) && args.value === null)) {
      args = v1beta4 ? new YAMLSeq() : new YAMLMap();
      apiServer.set('extraArgs', args);
    }
    if (isMap(args) || isSeq(args)) blockIfEmpty(args);
    if (v1beta4) {
      if (!isSeq(args)) return refuse(KUBEADM_CONFIG_REASONS.unparseable.reason, 'apiServer.extraArgs is not a list of {name, value} (kubeadm.k8s.io/v1beta4)');
      for (const [name, value] of wanted) {
        const entries = args.items.filter((i) => isMap(i) && i.get('name') === name) as YAMLMap[];
        if (args.items.some((i) => !isMap(i))) return refuse(KUBEADM_CONFIG_REASONS.unparseable.reason, 'apiServer.extraArgs has an item that is not {name, value}');
        if (entries.length > 1) return refuse(KUBEADM_CONFIG_REASONS.ambiguous.reason, `apiServer.extraArgs lists ${name} ${entries.length} times: which one kube-apiserver ends up with is not the operator's to guess; keep one`);
        const cur = entries[0]?.get('value');
        const next = value(cur === undefined || cur === null ? undefined : String(cur));
        if (entries[0] === undefined) {
          args.add(doc.createNode({ name, value: next }));
          changes.push(`apiServer.extraArgs ${name}=${next} (added)`);
        } else if (cur !== next) {
          entries[0].set('value', next);
          changes.push(`apiServer.extraArgs ${name} ${String(cur)} -> ${next}`);
        }
      }
    } else {
      if (!isMap(args)) return refuse(KUBEADM_CONFIG_REASONS.unparseable.reason, 'apiServer.extraArgs is not a map of flag to value (kubeadm.k8s.io/v1beta3)');
      for (const [name, value] of wanted) {
        const cur = args.get(name);
        const next = value(cur === undefined || cur === null ? undefined : String(cur));
        if (cur !== next) {
          args.set(name, next);
          changes.push(cur === undefined ? `apiServer.extraArgs ${name}=${next} (added)` : `apiServer.extraArgs ${name} ${String(cur)} -> ${next}`);
        }
      }
    }
  }
  if (changes.length === 0) return { kind: 'unchanged' };
  const out = readsBackAs(doc, indentsSequences(text));
  if (out === undefined) return refuse(KUBEADM_CONFIG_REASONS.unparseable.reason, 'ClusterConfiguration, edited, would not read back as the edit: edit it by hand (docs/kubeadm-runbook.md)');
  return { kind: 'updated', text: out, changes };
}

/**
 * The edited document as text that reads back as the same data, or undefined. Every field the edit left alone is
 * written again too, and the yaml package folds a long double-quoted string with a line of one space between two line
 * breaks wrong ("\n \n" reads back as "\n\\\n"): such a string is written as JSON writes it (valid YAML) instead.
 */
function readsBackAs(doc: Document, indentSeq: boolean): string | undefined {
  const data: unknown = doc.toJS();
  for (const doubleQuotedAsJSON of [false, true]) {
    const text = doc.toString({ indentSeq, doubleQuotedAsJSON });
    const back = parseDocument(text, { prettyErrors: false });
    if (back.errors.length === 0 && isDeepStrictEqual(back.toJS(), data)) return text;
  }
  return undefined;
}

/** An empty flow collection (`{}`, `[]`) turned to block style, so that entries added to it get a line each. */
function blockIfEmpty(node: YAMLMap | YAMLSeq): void {
  if (node.items.length === 0) node.flow = false;
}

/**
 * Whether the text indents a list under its key (`key:\n  - a`) or not (`key:\n- a`, what kubeadm writes): the
 * output keeps the text's own style, so only the edited lines change.
 */
function indentsSequences(text: string): boolean {
  const m = /^( *)[^\s#-][^\n]*:[ \t]*\n(?:[ \t]*#[^\n]*\n)*( *)- /m.exec(text);
  return m !== null && m[2]!.length > m[1]!.length;
}

/**
 * What the shell found and did with the ConfigMap. `notWritten`: the edit the operator would make, not made because
 * its write is off (the chart's kubeadmConfig.write, --kubeadm-config-write; docs/security.md): the admin's to make.
 */
export type KubeadmConfigOutcome =
  | { kind: 'absent' }
  | { kind: 'forbidden'; message: string }
  | { kind: 'noKey' }
  | { kind: 'edited'; edit: KubeadmEdit; resourceVersion?: string }
  | { kind: 'notWritten'; edit: Extract<KubeadmEdit, { kind: 'updated' }>; resourceVersion?: string };

/** The setting that turns the operator's write of kubeadm-config on, as messages name it. */
export const KUBEADM_CONFIG_WRITE_SETTING = 'the chart value kubeadmConfig.write (--kubeadm-config-write)';

/**
 * The status record, the KubeadmConfigUpdated condition and the event of one outcome. Pure: returns a new
 * status. True means kubeadm-config agrees with what the operator changed (updated, already so, or there is
 * no kubeadm-config: not a kubeadm cluster); False means it does not, and says why and what to edit by hand.
 */
export function recordKubeadmConfig(statusIn: ApiServerUpgradeStatus, intent: KubeadmIntent, outcome: KubeadmConfigOutcome, now: Date, generation: number): { status: ApiServerUpgradeStatus; events: Extract<Action, { kind: 'event' }>[] } {
  const status = structuredClone(statusIn);
  const where = `${KUBEADM_CONFIG_NAMESPACE}/${KUBEADM_CONFIG_NAME}`;
  const wantedText = describeIntent(intent);
  const notes = intent.notes.length > 0 ? `; ${intent.notes.join('; ')}` : '';
  let c: ConditionInput;
  let result: KubeadmConfigStatus['result'];
  let changes: string[] | undefined;
  let resourceVersion: string | undefined;
  switch (outcome.kind) {
    case 'absent':
      result = 'NotFound';
      c = { type: 'KubeadmConfigUpdated', status: 'True', reason: 'NotKubeadmCluster', message: `no ConfigMap ${where}: not a kubeadm cluster, nothing to keep consistent` };
      break;
    case 'forbidden':
      result = 'Refused';
      c = { type: 'KubeadmConfigUpdated', status: 'False', reason: 'KubeadmConfigForbidden', message: `${where} could not be read or written (${outcome.message}); set by hand: ${wantedText}` };
      break;
    case 'noKey':
      result = 'Refused';
      c = { type: 'KubeadmConfigUpdated', status: 'False', reason: 'KubeadmConfigUnparseable', message: `${where} has no ${KUBEADM_CONFIG_KEY} key; set by hand: ${wantedText}` };
      break;
    case 'notWritten':
      result = 'NotWritten';
      if (outcome.resourceVersion !== undefined) resourceVersion = outcome.resourceVersion;
      changes = outcome.edit.changes;
      c = {
        type: 'KubeadmConfigUpdated', status: 'False', reason: 'KubeadmConfigNotWritten',
        message: `${where} not written: the operator does not write it unless ${KUBEADM_CONFIG_WRITE_SETTING} is on; set by hand in ${KUBEADM_CONFIG_KEY}: ${outcome.edit.changes.join('; ')}${notes}`,
      };
      break;
    case 'edited': {
      const e = outcome.edit;
      if (outcome.resourceVersion !== undefined) resourceVersion = outcome.resourceVersion;
      if (e.kind === 'refused') {
        result = 'Refused';
        c = { type: 'KubeadmConfigUpdated', status: 'False', reason: e.reason, message: `${where} not changed: ${e.message}; set by hand: ${wantedText}` };
      } else if (e.kind === 'unchanged') {
        result = 'Unchanged';
        c = { type: 'KubeadmConfigUpdated', status: 'True', reason: 'KubeadmConfigConsistent', message: `${where} already says ${wantedText}${notes}` };
      } else {
        result = 'Updated';
        changes = e.changes;
        c = { type: 'KubeadmConfigUpdated', status: 'True', reason: 'KubeadmConfigUpdated', message: `${where} updated: ${e.changes.join('; ')}${notes}` };
      }
      break;
    }
  }
  c.message = c.message.slice(0, 4096);
  status.conditions = setCondition(status.conditions, { ...c, observedGeneration: generation }, now);
  status.kubeadmConfig = {
    phase: intent.phase,
    result,
    kubernetesVersion: intent.kubernetesVersion,
    time: now.toISOString(),
    ...(changes ? { changes: changes.slice(0, 16).map((x) => x.slice(0, 512)) } : {}),
    ...(resourceVersion !== undefined ? { resourceVersion } : {}),
    message: c.message.slice(0, 1024),
  };
  const type = c.status === 'False' ? 'Warning' : 'Normal';
  return { status, events: [{ kind: 'event', type, reason: c.reason, note: c.message }] };
}

/** One line: what kubeadm-config should say. */
export function describeIntent(intent: KubeadmIntent): string {
  const parts = [`kubernetesVersion: ${intent.kubernetesVersion}`];
  for (const [g, on] of Object.entries(intent.featureGates)) parts.push(`apiServer.extraArgs feature-gates with ${g}=${on}`);
  for (const [n, v] of Object.entries(intent.extraArgs)) parts.push(`apiServer.extraArgs ${n}=${v}`);
  return parts.join(', ');
}

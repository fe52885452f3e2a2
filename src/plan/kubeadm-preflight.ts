/**
 * Preflight for kubeadm clusters (docs/kubeadm-runbook.md), pure: the facts src/observe/kubeadm.ts read into
 * findings, each with its reason and the exact object, into status.kubeadmPreflight and the
 * KubeadmPreflightPassed condition; a blocking finding stops preflight (retried: the cluster may be fixed).
 *
 * The checks apply when the cluster is a kubeadm one (kube-system/kubeadm-config exists) or the driver is the
 * static Pod driver (which is kubeadm's layout). Fail closed: a fact that could not be read blocks, as an
 * unsafe one does. Which findings block and which only warn:
 *
 * | check            | blocks                                                                    | warns                                   |
 * |------------------|---------------------------------------------------------------------------|-----------------------------------------|
 * | KubeletSkew      | a kubelet newer than the target's minor, or more than 3 minors older; unknown | -                                   |
 * | EtcdHealth       | a server's /readyz/etcd not 200; not read                                 | -                                       |
 * | ServingCertificate | expired, or expiring within 7 days; not read                            | expiring within 30 days                 |
 * | DeprecatedAPI    | requested, and removed in a release <= the target's minor; /metrics not read | requested, removed later or never     |
 * | NodeName         | (static Pod driver) no mirror Pod, or its Node's name or kubernetes.io/hostname is not the server's hostname | - |
 * | ApiserverImage   | (static Pod driver, spec.driver.staticPod.image empty, with a policy) the image the node's agent Job would pull — the repository its mirror Pod runs, at the target tag — is not allowed by the policy (policy.ts nodeImageVerdict), or is unknown | - |
 */
import type { KubeadmFinding, KubeadmPreflightReport } from '../api/types.generated.ts';
import type { ConditionInput } from '../api/conditions.ts';
import type { KubeadmCheckName } from '../api/vocabulary.ts';
import { parseVersion } from './version.ts';
import type { PlanContext } from './context.ts';
import type { ObservedDeprecatedApi, ObservedKubeadm, ObservedKubeadmServer } from './observed-preflight.ts';
import { nodeImageVerdict, shownApiserverImages, type Policy } from './policy.ts';
import { shownValue } from '../api/shown.ts';
import { safeMessage } from './redact.ts';

export type { ObservedDeprecatedApi, ObservedKubeadm, ObservedKubeadmServer, ObservedNode } from './observed-preflight.ts';

/** Findings kept in status.kubeadmPreflight.findings (blocking first; the counts cover all). */
export const KUBEADM_FINDINGS_LIMIT = 64;
/** Days of validity left under which a serving certificate blocks, and warns. */
export const CERT_BLOCK_DAYS = 7;
export const CERT_WARN_DAYS = 30;
/** kubelet may be this many minors older than kube-apiserver (the version skew policy since v1.28). */
export const KUBELET_MAX_MINORS_BEHIND = 3;

/** The reasons of the findings and of KubeadmPreflightPassed, each with its entry in docs/troubleshooting.md. */
export const KUBEADM_PREFLIGHT_REASONS = {
  kubeletTooOld: { reason: 'KubeletTooOld' },
  kubeletNewer: { reason: 'KubeletNewerThanTarget' },
  kubeletUnknown: { reason: 'KubeletVersionUnknown' },
  nodesUnknown: { reason: 'NodesNotListed' },
  etcdUnhealthy: { reason: 'EtcdUnhealthy' },
  etcdUnknown: { reason: 'EtcdHealthUnknown' },
  certExpiring: { reason: 'ServingCertificateExpiring' },
  certExpiresSoon: { reason: 'ServingCertificateExpiresSoon' },
  certUnknown: { reason: 'ServingCertificateUnknown' },
  apiRemoved: { reason: 'DeprecatedAPIRemovedByTarget' },
  apiDeprecated: { reason: 'DeprecatedAPIRequested' },
  apiUnknown: { reason: 'DeprecatedAPIsUnknown' },
  nodeName: { reason: 'NodeNameNotHostname' },
  noMirrorPod: { reason: 'MirrorPodNotFound' },
  configUnknown: { reason: 'KubeadmConfigUnreadable' },
  imageNotAllowed: { reason: 'ApiserverImageNotAllowed' },
  imageUnknown: { reason: 'ApiserverImageUnknown' },
} as const;

interface Finding {
  check: KubeadmCheckName;
  severity: 'Block' | 'Warn';
  reason: string;
  object: string;
  message: string;
}

const block = (check: KubeadmCheckName, reason: string, object: string, message: string): Finding => ({ check, severity: 'Block', reason, object, message });
const warn = (check: KubeadmCheckName, reason: string, object: string, message: string): Finding => ({ check, severity: 'Warn', reason, object, message });

export interface KubeadmPreflightInput {
  observed: ObservedKubeadm;
  targetVersion: string;
  staticPod: boolean;
  now: Date;
  /**
   * The operator's policy on the kube-apiserver image, for the ApiserverImage check: set for the static Pod driver when
   * the spec names no image (each node keeps the repository it runs) and the operator has a policy. Absent: not checked
   * (a spec that names the image has it judged as a field of the spec: src/plan/policy.ts checkSpec).
   */
  apiserverImages?: Pick<Policy, 'apiserverImages' | 'anyKubeApiserverRepository'>;
}

/** Whether the kubeadm checks apply: a kubeadm cluster, or the static Pod driver; an unreadable kubeadm-config counts (fail closed). */
export function kubeadmChecksApply(observed: ObservedKubeadm, staticPod: boolean): boolean {
  return staticPod || observed.configMap !== 'absent';
}

/** "1.36" -> [1, 36]; undefined when not major.minor. */
function releaseOf(s: string): [number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.\d+)?$/.exec(s.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

export function kubeletFindings(nodes: ObservedKubeadm['nodes'], target: [number, number]): Finding[] {
  if (nodes === undefined) return [];
  if (!Array.isArray(nodes)) return [block('KubeletSkew', KUBEADM_PREFLIGHT_REASONS.nodesUnknown.reason, 'nodes', `the Nodes could not be listed (${nodes.error}): the kubelets' versions are unknown`)];
  const out: Finding[] = [];
  for (const n of [...nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    const obj = `Node/${n.name}`;
    const v = n.kubeletVersion === undefined ? undefined : parseVersion(n.kubeletVersion);
    if (!v) {
      out.push(block('KubeletSkew', KUBEADM_PREFLIGHT_REASONS.kubeletUnknown.reason, obj, `status.nodeInfo.kubeletVersion ${JSON.stringify(n.kubeletVersion ?? null)} is not a Kubernetes version`));
      continue;
    }
    const t = `v${target[0]}.${target[1]}`;
    if (v.major !== target[0] || v.minor > target[1]) {
      out.push(block('KubeletSkew', KUBEADM_PREFLIGHT_REASONS.kubeletNewer.reason, obj, `kubelet ${n.kubeletVersion} is newer than the target ${t}: a kubelet must never be newer than kube-apiserver`));
    } else if (target[1] - v.minor > KUBELET_MAX_MINORS_BEHIND) {
      out.push(block('KubeletSkew', KUBEADM_PREFLIGHT_REASONS.kubeletTooOld.reason, obj, `kubelet ${n.kubeletVersion} is ${target[1] - v.minor} minors older than the target ${t} (at most ${KUBELET_MAX_MINORS_BEHIND}): upgrade it first`));
    }
  }
  return out;
}

export function etcdFindings(s: ObservedKubeadmServer): Finding[] {
  const obj = `kube-apiserver ${s.hostname} /readyz/etcd`;
  if ('error' in s.etcd) return [block('EtcdHealth', KUBEADM_PREFLIGHT_REASONS.etcdUnknown.reason, obj, `not read: ${s.etcd.error}`)];
  if (s.etcd.status !== 200) return [block('EtcdHealth', KUBEADM_PREFLIGHT_REASONS.etcdUnhealthy.reason, obj, `HTTP ${s.etcd.status}: ${safeMessage(s.etcd.body, { maxChars: 300 }).trim() || 'no body'}`)];
  return [];
}

export function certificateFindings(s: ObservedKubeadmServer, now: Date): Finding[] {
  const obj = `kube-apiserver ${s.hostname} serving certificate`;
  const hs = s.certificate;
  if (!hs) return [block('ServingCertificate', KUBEADM_PREFLIGHT_REASONS.certUnknown.reason, obj, 'the server has no address to connect to')];
  if (!hs.ok) return [block('ServingCertificate', KUBEADM_PREFLIGHT_REASONS.certUnknown.reason, obj, `no TLS handshake: ${hs.error}`)];
  if (hs.notAfter === undefined || Number.isNaN(Date.parse(hs.notAfter))) return [block('ServingCertificate', KUBEADM_PREFLIGHT_REASONS.certUnknown.reason, obj, 'the certificate has no readable notAfter')];
  const days = (Date.parse(hs.notAfter) - now.getTime()) / 86_400_000;
  const left = days < 0 ? `expired on ${hs.notAfter}` : `expires on ${hs.notAfter} (${days.toFixed(1)} days)`;
  const fix = 'renew it first (kubeadm certs renew apiserver, then restart the server)';
  if (days < CERT_BLOCK_DAYS) return [block('ServingCertificate', KUBEADM_PREFLIGHT_REASONS.certExpiresSoon.reason, obj, `${left}, under ${CERT_BLOCK_DAYS} days: ${fix}`)];
  if (days < CERT_WARN_DAYS) return [warn('ServingCertificate', KUBEADM_PREFLIGHT_REASONS.certExpiring.reason, obj, `${left}, under ${CERT_WARN_DAYS} days: ${fix}`)];
  return [];
}

/** group/version/resource[/subresource], "v1" for the core group. */
function gvr(d: ObservedDeprecatedApi): string {
  return `${d.group ? `${d.group}/` : ''}${d.version}/${d.resource}${d.subresource ? `/${d.subresource}` : ''}`;
}

export function deprecatedFindings(s: ObservedKubeadmServer, target: [number, number]): Finding[] {
  if (!Array.isArray(s.deprecated)) {
    return [block('DeprecatedAPI', KUBEADM_PREFLIGHT_REASONS.apiUnknown.reason, `kube-apiserver ${s.hostname} /metrics`, `apiserver_requested_deprecated_apis not read: ${s.deprecated.error}`)];
  }
  const out: Finding[] = [];
  for (const d of s.deprecated) {
    const obj = `${gvr(d)} (requested on ${s.hostname})`;
    const removed = d.removedRelease === '' ? undefined : releaseOf(d.removedRelease);
    if (d.removedRelease !== '' && !removed) {
      out.push(block('DeprecatedAPI', KUBEADM_PREFLIGHT_REASONS.apiRemoved.reason, obj, `removed_release ${JSON.stringify(d.removedRelease)} is not major.minor: counted as removed by the target`));
    } else if (removed && (removed[0] < target[0] || (removed[0] === target[0] && removed[1] <= target[1]))) {
      out.push(block('DeprecatedAPI', KUBEADM_PREFLIGHT_REASONS.apiRemoved.reason, obj, `removed in ${d.removedRelease}, at or before the target v${target[0]}.${target[1]}: its clients break once a new server answers them; move them to a served version first`));
    } else {
      out.push(warn('DeprecatedAPI', KUBEADM_PREFLIGHT_REASONS.apiDeprecated.reason, obj, `deprecated${removed ? `, removed in ${d.removedRelease} (after the target)` : ', no removal planned'}`));
    }
  }
  return out;
}

/** The static Pod driver pins its Job to the node named as the server's hostname (docs/drivers.md). */
export function nodeNameFindings(s: ObservedKubeadmServer, nodes: ObservedKubeadm['nodes']): Finding[] {
  const host = s.hostname.toLowerCase();
  if (!s.mirrorPod) {
    return [block('NodeName', KUBEADM_PREFLIGHT_REASONS.noMirrorPod.reason, `Pod kube-system/kube-apiserver-${host}`, `no kube-apiserver mirror Pod on a node named ${host} (the identity Lease's hostname): the static Pod driver runs its agent on that node, so the node name must be the hostname`)];
  }
  const obj = `Pod kube-system/${s.mirrorPod.name}`;
  if (s.mirrorPod.nodeName.toLowerCase() !== host) {
    return [block('NodeName', KUBEADM_PREFLIGHT_REASONS.nodeName.reason, obj, `spec.nodeName is ${s.mirrorPod.nodeName}, the server's hostname is ${s.hostname}: the agent Job would be pinned to a node that does not run it (kubeadm --node-name differs from the hostname)`)];
  }
  if (!Array.isArray(nodes)) return [];
  const node = nodes.find((n) => n.name === s.mirrorPod!.nodeName);
  if (node?.hostnameLabel !== undefined && node.hostnameLabel.toLowerCase() !== host) {
    return [block('NodeName', KUBEADM_PREFLIGHT_REASONS.nodeName.reason, `Node/${node.name}`, `label kubernetes.io/hostname is ${node.hostnameLabel}, the server's hostname is ${s.hostname}`)];
  }
  return [];
}

/** What a message says to change when the image a node keeps is not allowed. */
const IMAGE_FIX = "list its repository in the chart's policy.apiserverImages (the policy file's apiserverImages), or set spec.driver.staticPod.image to a repository listed there; admissionPolicy.anyKubeApiserverRepository: true would allow any <registry>/<path>/kube-apiserver";

/**
 * The static Pod driver without spec.driver.staticPod.image keeps each node's repository (read from its mirror Pod at
 * call time) and pulls it at the target tag: preflight refuses, naming the node, the image and what to change, what
 * the operator's policy — and so the chart's admission policy, which cannot see the fleet — would not let the agent
 * Job pull, so that no run starts that a Job refused halfway would stop. No mirror Pod: the NodeName check blocks.
 */
export function apiserverImageFindings(s: ObservedKubeadmServer, policy: Pick<Policy, 'apiserverImages' | 'anyKubeApiserverRepository'>, targetVersion: string): Finding[] {
  if (!s.mirrorPod) return [];
  const obj = `Pod kube-system/${s.mirrorPod.name}`;
  const node = `node ${s.mirrorPod.nodeName}`;
  if (s.mirrorPod.image === undefined) {
    return [block('ApiserverImage', KUBEADM_PREFLIGHT_REASONS.imageUnknown.reason, obj, `${node}: the mirror Pod has no kube-apiserver container with an image, so the image its agent Job would pull is unknown; set spec.driver.staticPod.image to a repository listed in the chart's policy.apiserverImages`)];
  }
  const running = shownValue(s.mirrorPod.image);
  const v = nodeImageVerdict(policy, s.mirrorPod.image, targetVersion);
  if (v.allowed) return [];
  if (v.why === 'Unparseable') {
    return [block('ApiserverImage', KUBEADM_PREFLIGHT_REASONS.imageUnknown.reason, obj, `${node} runs ${running}: its agent Job would pull ${shownValue(v.image)}, which the policy cannot judge (${v.message}); set spec.driver.staticPod.image to a repository listed in the chart's policy.apiserverImages`)];
  }
  const opt = policy.anyKubeApiserverRepository ? '; anyKubeApiserverRepository is on but allows only <registry>/<path>/kube-apiserver at a version tag' : '';
  return [block('ApiserverImage', KUBEADM_PREFLIGHT_REASONS.imageNotAllowed.reason, obj,
    `${node} runs ${running}: its agent Job would pull ${v.image}, whose repository ${v.repository} the operator's policy does not allow (apiserverImages: ${shownApiserverImages(policy)}${opt}), nor would the chart's admission policy: ${IMAGE_FIX}`)];
}

/** Every finding, then the report: blocking findings first in the bounded list. */
export function kubeadmPreflightReport(input: KubeadmPreflightInput): KubeadmPreflightReport {
  const o = input.observed;
  const target = releaseOf(parseVersion(input.targetVersion)?.release.replace(/-.*$/, '') ?? input.targetVersion) ?? [0, 0];
  const findings: Finding[] = [];
  if (typeof o.configMap === 'object') findings.push(block('KubeadmConfig', KUBEADM_PREFLIGHT_REASONS.configUnknown.reason, 'ConfigMap kube-system/kubeadm-config', `not read (${o.configMap.error}): whether this is a kubeadm cluster is unknown`));
  findings.push(...kubeletFindings(o.nodes, target));
  const servers = [...(o.servers ?? [])].sort((a, b) => a.hostname.localeCompare(b.hostname));
  for (const s of servers) {
    findings.push(...etcdFindings(s), ...certificateFindings(s, input.now), ...deprecatedFindings(s, target));
    if (input.staticPod) findings.push(...nodeNameFindings(s, o.nodes));
    if (input.staticPod && input.apiserverImages) findings.push(...apiserverImageFindings(s, input.apiserverImages, input.targetVersion));
  }
  const blocking = findings.filter((f) => f.severity === 'Block').length;
  const shown = [...findings].sort((a, b) => (a.severity === b.severity ? 0 : a.severity === 'Block' ? -1 : 1)).slice(0, KUBEADM_FINDINGS_LIMIT);
  return {
    checkedAt: input.now.toISOString(),
    servers: servers.length,
    nodes: Array.isArray(o.nodes) ? o.nodes.length : 0,
    blocking,
    warnings: findings.length - blocking,
    ...(findings.length > KUBEADM_FINDINGS_LIMIT ? { truncated: true } : {}),
    findings: shown.map((f): KubeadmFinding => ({ ...f, object: f.object.slice(0, 512), message: f.message.slice(0, 1024) })),
  };
}

/** KubeadmPreflightPassed from the report: False on the first blocking finding; True (naming the warnings) otherwise. */
export function kubeadmCondition(report: KubeadmPreflightReport): ConditionInput {
  const rows = report.findings ?? [];
  const counts = `${report.blocking ?? 0} blocking, ${report.warnings ?? 0} warning(s) across ${report.servers ?? 0} server(s) and ${report.nodes ?? 0} Node(s)`;
  const first = rows.find((r) => r.severity === 'Block');
  if (first) return { type: 'KubeadmPreflightPassed', status: 'False', reason: first.reason, message: `${first.object}: ${first.message}; ${counts}` };
  const w = rows.find((r) => r.severity === 'Warn');
  if (w) return { type: 'KubeadmPreflightPassed', status: 'True', reason: 'PassedWithWarnings', message: `${w.object}: ${w.message}; ${counts}` };
  return { type: 'KubeadmPreflightPassed', status: 'True', reason: 'AllChecksPassed', message: counts };
}

/**
 * At preflight: writes status.kubeadmPreflight and KubeadmPreflightPassed from the observation's kubeadm facts
 * when the checks apply, and returns them. Nothing written (undefined) when not read or not a kubeadm cluster.
 */
export function reportKubeadmPreflight(ctx: PlanContext): { report: KubeadmPreflightReport; condition: ConditionInput } | undefined {
  const observed = ctx.obs.kubeadm;
  const staticPod = ctx.spec.driver.kind === 'staticPod';
  if (!observed || !kubeadmChecksApply(observed, staticPod)) return undefined;
  // Without spec.driver.staticPod.image each node keeps its own repository: the policy judges it here, per node.
  const keepsRepository = ctx.spec.driver.kind === 'staticPod' && ctx.spec.driver.staticPod.image === '';
  const apiserverImages = keepsRepository && ctx.policy ? ctx.policy : undefined;
  const report = kubeadmPreflightReport({ observed, targetVersion: ctx.spec.targetVersion, staticPod, now: ctx.now, ...(apiserverImages ? { apiserverImages } : {}) });
  const before = ctx.status.conditions?.find((c) => c.type === 'KubeadmPreflightPassed');
  ctx.status.kubeadmPreflight = report;
  const condition = kubeadmCondition(report);
  ctx.condition(condition);
  // One event per change of verdict, not one per preflight reconcile.
  if (before?.status !== condition.status || before.reason !== condition.reason) ctx.event(condition.status === 'False' ? 'Warning' : 'Normal', condition.reason, condition.message);
  return { report, condition };
}

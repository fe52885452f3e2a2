/**
 * The rest of the control plane's version skew (docs/version-skew.md): kube-controller-manager and kube-scheduler
 * must never be newer than the kube-apiservers they talk to. Pure: the shell reads their mirror Pods
 * (src/observe/components.ts) into `Observation.components`; this file decides.
 *
 * - Preflight refuses a target older than any observed component (compared by major.minor, as the skew policy is
 *   written), and a component whose version is unknown: an unreadable mirror Pod must not pass silently.
 * - A rollback that would leave a component newer than the version it returns to pauses instead of starting, naming
 *   the component, its node and version; a component whose version is unknown holds it the same way (fail closed).
 *   The pause re-checks at each step and starts the rollback once the component is back (src/plan/breach.ts).
 */
import type { ComponentStatus } from '../api/types.generated.ts';
import { parseVersion } from './version.ts';

import { CONTROL_PLANE_COMPONENTS, type ControlPlaneComponent } from '../api/vocabulary.ts';

export { CONTROL_PLANE_COMPONENTS, type ControlPlaneComponent };

/** One kube-controller-manager or kube-scheduler Pod as observed. */
export interface ObservedComponent {
  component: ControlPlaneComponent;
  /** kube-system/<name> of its Pod. */
  pod: string;
  /** spec.nodeName; empty when the Pod names none. */
  node: string;
  /** The image its container runs, when it is a valid image reference. */
  image?: string;
  /** The version its image tag names ("v1.36.3"); absent: unknown (no tag, a digest only, not a version). */
  version?: string;
  /** Why the version is unknown, when it is. */
  unknown?: string;
}

/** Every such Pod in kube-system, or why they could not be listed. Absent from an observation: not read. */
export type ObservedComponents = { pods: ObservedComponent[] } | { error: string };

/** One component in the way of a decision: newer than the version compared with, or of unknown version. */
export interface ComponentBlocker {
  component: ObservedComponent;
  kind: 'newer' | 'unknown';
  message: string;
}

/** "v1.36.3" -> [1, 36]; "1.35" -> [1, 35]; undefined otherwise. */
export function releaseOf(v: string): [number, number] | undefined {
  const p = parseVersion(v);
  if (p) return [p.major, p.minor];
  const m = /^(\d{1,4})\.(\d{1,4})$/.exec(v);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

const newer = (a: [number, number], b: [number, number]): boolean => a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);

/** How a component is named in messages: the component, its node and its Pod. */
export function componentName(c: Pick<ObservedComponent, 'component' | 'node' | 'pod'>): string {
  return `${c.component} on node ${c.node || '(none)'} (Pod ${c.pod})`;
}

/**
 * The components in the way of kube-apiservers at `version` ("v1.35.4", or a minor "1.35" for servers emulating it):
 * each one newer than it, and each one whose version is unknown. A list that failed is one unknown blocker.
 */
export function componentBlockers(observed: ObservedComponents, version: string): ComponentBlocker[] | { error: string } {
  if ('error' in observed) return { error: observed.error };
  const limit = releaseOf(version);
  const out: ComponentBlocker[] = [];
  for (const c of [...observed.pods].sort((a, b) => a.component.localeCompare(b.component) || a.node.localeCompare(b.node) || a.pod.localeCompare(b.pod))) {
    const v = c.version === undefined ? undefined : releaseOf(c.version);
    if (!v || !limit) {
      out.push({ component: c, kind: 'unknown', message: `${componentName(c)}: version unknown (${c.unknown ?? (limit ? `${c.version ?? 'none'} is not a version` : `${version} is not a version`)})` });
      continue;
    }
    if (newer(v, limit)) out.push({ component: c, kind: 'newer', message: `${componentName(c)} runs ${c.version}, newer than ${version}` });
  }
  return out;
}

/** Preflight's verdict on the components against the target; ok with a note when there is nothing to check. */
export type ComponentPreflight = { ok: true; note?: string } | { ok: false; reason: 'ComponentNewerThanTarget' | 'ComponentVersionUnknown'; message: string };

const SKEW_RULE = 'kube-controller-manager and kube-scheduler must never be newer than kube-apiserver';

export function componentPreflight(observed: ObservedComponents | undefined, target: string): ComponentPreflight {
  if (observed === undefined) return { ok: true };
  const b = componentBlockers(observed, target);
  if ('error' in b) {
    return { ok: false, reason: 'ComponentVersionUnknown', message: `the kube-controller-manager and kube-scheduler Pods could not be listed (${b.error}): whether the target ${target} is older than one of them is unknown` };
  }
  const newerOnes = b.filter((x) => x.kind === 'newer');
  if (newerOnes.length > 0) {
    return { ok: false, reason: 'ComponentNewerThanTarget', message: `${newerOnes.map((x) => x.message).join('; ')}: the target ${target} is older (${SKEW_RULE}); bring them back to ${target}'s minor or choose a newer target` };
  }
  if (b.length > 0) {
    return { ok: false, reason: 'ComponentVersionUnknown', message: `${b.map((x) => x.message).join('; ')}: whether the target ${target} is older than it is unknown; run an image tagged with its version` };
  }
  if ('pods' in observed && observed.pods.length === 0) return { ok: true, note: 'no kube-controller-manager or kube-scheduler Pod in kube-system: their versions are not checked' };
  return { ok: true };
}

/**
 * What holds a rollback to `goal` (the version, or the emulated minor, the kube-apiservers return to): the
 * components that would be newer than it afterwards, and those of unknown version. Undefined: nothing holds it
 * (or components are not read by this observer). The message names each.
 */
export function rollbackSkew(observed: ObservedComponents | undefined, goal: string): { message: string; blockers: string[] } | undefined {
  if (observed === undefined) return undefined;
  const b = componentBlockers(observed, goal);
  if ('error' in b) return { message: `the kube-controller-manager and kube-scheduler Pods could not be listed (${b.error}): whether a rollback to ${goal} would leave one newer than the kube-apiservers is unknown`, blockers: ['(not listed)'] };
  if (b.length === 0) return undefined;
  return {
    message: `a rollback to ${goal} would leave ${b.map((x) => x.message).join('; ')} (${SKEW_RULE}); bring ${b.length > 1 ? 'them' : 'it'} back to ${goal} first, and the rollback starts by itself`,
    blockers: b.map((x) => `${x.component.component}/${x.component.node || x.component.pod}`),
  };
}

/** status.components from an observation that read them; undefined when it did not (status keeps what it had). */
export function componentStatus(observed: ObservedComponents | undefined): ComponentStatus[] | undefined {
  if (observed === undefined || 'error' in observed) return undefined;
  return [...observed.pods]
    .sort((a, b) => a.component.localeCompare(b.component) || a.node.localeCompare(b.node) || a.pod.localeCompare(b.pod))
    .slice(0, 64)
    .map((c) => ({ component: c.component, pod: c.pod, node: c.node, ...(c.image ? { image: c.image } : {}), ...(c.version ? { version: c.version } : {}) }));
}

/**
 * The shell's read of the rest of the control plane (docs/version-skew.md): every kube-controller-manager and
 * kube-scheduler Pod in kube-system — the mirror Pods a kubelet reports for kubeadm's static Pods, labelled
 * `tier=control-plane` and `component=<name>` — with the version its image tag names. The decisions are
 * src/plan/component-skew.ts's. Every value is checked against a strict pattern before it is kept: a name that is
 * not a DNS subdomain, an image that is not an image reference or a tag that is not a version is kept as unknown,
 * never as text.
 */
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import { CONTROL_PLANE_COMPONENTS, type ControlPlaneComponent, type ObservedComponent, type ObservedComponents } from '../plan/component-skew.ts';
import { compile, IMAGE_REF_MAX_LENGTH, IMAGE_REF_PATTERN, VERSION_PATTERN } from '../api/patterns.ts';
import { APISERVER_PODS_COLLECTION } from './trust.ts';

export const COMPONENT_PODS_SELECTOR = `tier=control-plane,component in (${CONTROL_PLANE_COMPONENTS.join(',')})`;
export const COMPONENT_PODS_PATH = `${APISERVER_PODS_COLLECTION}?labelSelector=${encodeURIComponent(COMPONENT_PODS_SELECTOR)}`;
/** More Pods than this is not a control plane: reported as not listed (fail closed). */
export const MAX_COMPONENT_PODS = 256;

const IMAGE = compile(IMAGE_REF_PATTERN);
const VERSION = compile(VERSION_PATTERN);
/** A DNS subdomain (Pod and Node names). */
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const nameOr = (s: string | undefined, dflt: string): string => (s !== undefined && s.length <= 253 && NAME.test(s) ? s : dflt);

/**
 * The version an image's tag names: `registry.k8s.io/kube-controller-manager:v1.36.3` -> v1.36.3, a digest after
 * the tag ignored. Kubernetes' own build writes a version's `+` as `_` in image tags (`v1.36.0-alpha.1.5_0123abcd`):
 * read back as `+`. Undefined with why, for anything else.
 */
export function versionOfImage(image: string | undefined): { version: string } | { unknown: string } {
  if (image === undefined || image === '') return { unknown: 'the Pod has no container image' };
  if (image.length > IMAGE_REF_MAX_LENGTH || !IMAGE.test(image)) return { unknown: 'its image is not an image reference' };
  const named = image.replace(/@.*$/, '');
  const slash = named.lastIndexOf('/');
  const colon = named.lastIndexOf(':');
  if (colon <= slash) return { unknown: 'its image has no tag' };
  const tag = named.slice(colon + 1);
  const plus = tag.indexOf('_');
  const version = plus >= 0 && tag.indexOf('_', plus + 1) < 0 ? `${tag.slice(0, plus)}+${tag.slice(plus + 1)}` : tag;
  return VERSION.test(version) ? { version } : { unknown: 'its image tag is not a Kubernetes version' };
}

/** The component a Pod runs, by its label; undefined for another. */
function componentOf(pod: V1Pod): ControlPlaneComponent | undefined {
  const c = pod.metadata?.labels?.component;
  return (CONTROL_PLANE_COMPONENTS as readonly string[]).includes(c ?? '') ? (c as ControlPlaneComponent) : undefined;
}

/** One Pod's component, node and version; its container is the one named as the component, or the only one. */
export function componentFromPod(pod: V1Pod): ObservedComponent | undefined {
  const component = componentOf(pod);
  if (!component) return undefined;
  const containers = pod.spec?.containers ?? [];
  const c = containers.find((x) => x.name === component) ?? (containers.length === 1 ? containers[0] : undefined);
  const image = c?.image?.trim();
  const v = versionOfImage(image);
  const validImage = image !== undefined && image.length <= IMAGE_REF_MAX_LENGTH && IMAGE.test(image) ? image : undefined;
  return {
    component,
    pod: `kube-system/${nameOr(pod.metadata?.name, '(invalid name)')}`,
    node: nameOr(pod.spec?.nodeName, ''),
    ...(validImage ? { image: validImage } : {}),
    ...('version' in v ? { version: v.version } : { unknown: c ? v.unknown : `no container named ${component}` }),
  };
}

/** Pods that run: one Succeeded or Failed runs no component (a static Pod's mirror is replaced, not kept Failed). */
const running = (p: V1Pod): boolean => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';

export function componentsFromPods(pods: readonly V1Pod[]): ObservedComponents {
  if (pods.length > MAX_COMPONENT_PODS) return { error: `more than ${MAX_COMPONENT_PODS} Pods match ${COMPONENT_PODS_SELECTOR}` };
  return { pods: pods.filter(running).map(componentFromPod).filter((c): c is ObservedComponent => c !== undefined) };
}

/** Lists them (through the operator's client: its body caps); never rejects: a failed list is the observation's `error`. */
export async function observeComponents(list: <T>(path: string) => Promise<T>): Promise<ObservedComponents> {
  try {
    const l = await list<V1PodList>(COMPONENT_PODS_PATH);
    return componentsFromPods(l.items ?? []);
  } catch (err) {
    return { error: `listing ${COMPONENT_PODS_PATH}: ${err instanceof Error ? err.message : String(err)}`.slice(0, 1024) };
  }
}

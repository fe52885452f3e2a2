import type { ResolvedSpec } from '../api/defaults.ts';
import type { KubeClient } from '../runtime/kube.ts';
import type { Driver } from '../drivers/driver.ts';
import { WebhookDriver } from '../drivers/webhook.ts';
import { StaticPodDriver } from '../drivers/static-pod.ts';

/**
 * Builds the driver the spec names; the webhook's bearer token is read from its Secret on each build.
 * `agentImage`: the operator's own image (--agent-image), which runs the static Pod driver's node agent when
 * the spec names no agentImage.
 */
export async function driverFor(spec: ResolvedSpec, kube: KubeClient, upgradeName: string, agentImage?: string): Promise<Driver> {
  if (spec.driver.kind === 'webhook') {
    const w = spec.driver.webhook;
    let token: string | undefined;
    if (w.authSecretRef) {
      const secret = await kube.request<{ data?: Record<string, string> }>('GET', `/api/v1/namespaces/${encodeURIComponent(w.authSecretRef.namespace)}/secrets/${encodeURIComponent(w.authSecretRef.name)}`);
      const key = w.authSecretRef.key ?? 'token';
      const b64 = secret.data?.[key];
      if (!b64) throw new Error(`secret ${w.authSecretRef.namespace}/${w.authSecretRef.name} has no key ${key}`);
      token = Buffer.from(b64, 'base64').toString('utf8').trim();
    }
    return new WebhookDriver({ url: w.url, timeoutMs: w.timeoutMs, ...(w.caBundle ? { caBundle: w.caBundle } : {}), ...(token ? { token } : {}) });
  }
  return new StaticPodDriver(spec.driver.staticPod, kube, upgradeName, agentImage);
}

// Small HTTPS servers the kube-apiservers call out to: an aggregated API (answering discovery for a made-up
// group) and a validating admission webhook. Both listen on the root namespace's end of the cluster's veth
// pair (`netns.hostAddress`), which every server reaches through its connected route, with serving
// certificates of the cluster CA; each counts the calls it got.
import { createServer, type Server } from 'node:https';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import type { Cluster } from '../cluster/index.ts';
import { createServingCert } from '../cluster/pki.ts';

export interface Backend {
  address: string;
  port: number;
  /** Requests received, by path. */
  calls: Map<string, number>;
  close(): Promise<void>;
}

async function listen(cluster: Cluster, name: string, dnsNames: string[], handle: (path: string, body: string) => { status: number; body: unknown }): Promise<Backend> {
  const address = cluster.netns.hostAddress;
  const cert = await createServingCert(cluster.pki, name, [address], dnsNames);
  const [certPem, keyPem] = await Promise.all([readFile(cert.cert), readFile(cert.key)]);
  const calls = new Map<string, number>();
  const server: Server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      calls.set(path, (calls.get(path) ?? 0) + 1);
      const out = handle(path, body);
      res.writeHead(out.status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(out.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    address, port: (server.address() as AddressInfo).port, calls,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** An aggregated API server for `group`/`version` serving one resource, `widgets`; its Service is `service` in `default`. */
export function startAggregatedApi(cluster: Cluster, o: { group: string; version: string; service: string }): Promise<Backend> {
  const gv = `${o.group}/${o.version}`;
  const group = { name: o.group, versions: [{ groupVersion: gv, version: o.version }], preferredVersion: { groupVersion: gv, version: o.version } };
  // kube-apiserver >= 1.36 checks the backend's certificate against the APIService's caBundle with this name.
  return listen(cluster, `agg-${o.service}`, [`${o.service}.default.svc`], (path) => {
    if (path === '/apis') return { status: 200, body: { kind: 'APIGroupList', apiVersion: 'v1', groups: [group] } };
    if (path === `/apis/${o.group}`) return { status: 200, body: { kind: 'APIGroup', apiVersion: 'v1', ...group } };
    if (path === `/apis/${gv}`) {
      return { status: 200, body: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv, resources: [{ name: 'widgets', singularName: 'widget', namespaced: true, kind: 'Widget', verbs: ['get', 'list'] }] } };
    }
    return { status: 404, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404, reason: 'NotFound' } };
  });
}

/** A validating webhook that allows everything it is asked about. */
export function startAllowingWebhook(cluster: Cluster, name: string): Promise<Backend> {
  return listen(cluster, `webhook-${name}`, [], (_path, body) => {
    const review = JSON.parse(body) as { request?: { uid?: string } };
    return { status: 200, body: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request?.uid ?? '', allowed: true } } };
  });
}

async function create(cluster: Cluster, path: string, obj: unknown): Promise<void> {
  const r = await cluster.request('lb', path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(obj) });
  if (r.status !== 201) throw new Error(`POST ${path}: HTTP ${r.status}: ${r.body}`);
}

/**
 * Registers `backend` as the APIService `<version>.<group>`: a selector-less ClusterIP Service, an
 * EndpointSlice naming the backend's address and port (no controller manager runs in the harness), and the
 * APIService with the cluster CA as caBundle. The servers need `--enable-aggregator-routing=true`: there is no
 * kube-proxy for the Service's cluster IP.
 */
export async function registerApiService(cluster: Cluster, backend: Backend, o: { group: string; version: string; service: string }): Promise<string> {
  const name = `${o.version}.${o.group}`;
  await create(cluster, '/api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: o.service }, spec: { ports: [{ name: 'https', port: 443, targetPort: backend.port }] } });
  await create(cluster, '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name: `${o.service}-1`, labels: { 'kubernetes.io/service-name': o.service } },
    addressType: 'IPv4', endpoints: [{ addresses: [backend.address], conditions: { ready: true } }],
    ports: [{ name: 'https', port: backend.port, protocol: 'TCP' }],
  });
  const ca = await readFile(cluster.pki.caCert);
  await create(cluster, '/apis/apiregistration.k8s.io/v1/apiservices', {
    apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name },
    spec: { group: o.group, version: o.version, service: { namespace: 'default', name: o.service, port: 443 }, caBundle: ca.toString('base64'), groupPriorityMinimum: 1000, versionPriority: 15 },
  });
  return name;
}

/**
 * Registers `backend` as the validating webhook `name` (a URL webhook: no Service needed) for CREATE of
 * ConfigMaps in namespaces labelled `auo-e2e-webhook=on`, so nothing else the cluster does calls it.
 */
export async function registerValidatingWebhook(cluster: Cluster, backend: Backend, name: string, failurePolicy: 'Fail' | 'Ignore'): Promise<void> {
  const ca = await readFile(cluster.pki.caCert);
  await create(cluster, '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name },
    webhooks: [{
      name, failurePolicy, sideEffects: 'None', admissionReviewVersions: ['v1'], timeoutSeconds: 5,
      clientConfig: { url: `https://${backend.address}:${backend.port}/validate`, caBundle: ca.toString('base64') },
      rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'], scope: 'Namespaced' }],
      namespaceSelector: { matchLabels: { 'auo-e2e-webhook': 'on' } },
    }],
  });
}

// The objects kube-prometheus-stack 77.14.0 (the last chart of prometheus-operator v0.85.0) renders with its default
// values for a release `kube-prometheus-stack` in `monitoring`, written out here: the chart itself is not reachable
// from the e2e machine (no registry but the Go module proxy). To compare: `helm template kube-prometheus-stack
// <the chart at tag kube-prometheus-stack-77.14.0> -n monitoring --set grafana.enabled=false,...` (templates
// prometheus/prometheus.yaml, prometheus/clusterrole.yaml, prometheus/serviceaccount.yaml, alertmanager/alertmanager.yaml,
// alertmanager/secret.yaml, alertmanager/service.yaml, prometheus-operator/deployment.yaml): kept are the fields that
// decide what prometheus-operator generates (selectors, alerting, external labels, ServiceAccount, the operator's
// flags); left out are those of the Pods' scheduling and security (affinity, securityContext, images' pull policy).
import { parse } from 'yaml';

export const KPS_CHART_VERSION = '77.14.0';
export const KPS_RELEASE = 'kube-prometheus-stack';
export const KPS_NAMESPACE = 'monitoring';
export const KPS_PROMETHEUS = `${KPS_RELEASE}-prometheus`;
export const KPS_ALERTMANAGER = `${KPS_RELEASE}-alertmanager`;

const labels = (app: string): Record<string, string> => ({
  app, 'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/instance': KPS_RELEASE, 'app.kubernetes.io/version': KPS_CHART_VERSION,
  'app.kubernetes.io/part-of': KPS_RELEASE, chart: `${KPS_RELEASE}-${KPS_CHART_VERSION}`, release: KPS_RELEASE, heritage: 'Helm',
});

/** prometheusOperator.secretFieldSelector's default: the operator watches no ServiceAccount token Secrets. */
export const KPS_SECRET_FIELD_SELECTOR = 'type!=kubernetes.io/dockercfg,type!=kubernetes.io/service-account-token,type!=helm.sh/release.v1';

/** The operator's arguments from prometheus-operator/deployment.yaml with the default values (no admission webhook TLS here). */
export function kpsOperatorArgs(): string[] {
  return [
    `--kubelet-service=kube-system/${KPS_RELEASE}-kubelet`, '--kubelet-endpoints=true', '--kubelet-endpointslice=false',
    '--localhost=127.0.0.1', `--secret-field-selector=${KPS_SECRET_FIELD_SELECTOR}`,
  ];
}

/** alertmanager.config's default (the chart's values.yaml), as the chart writes it into alertmanager-<name>'s alertmanager.yaml. */
export const KPS_ALERTMANAGER_CONFIG = `global:
  resolve_timeout: 5m
inhibit_rules:
- equal:
  - namespace
  - alertname
  source_matchers:
  - severity = critical
  target_matchers:
  - severity =~ warning|info
- equal:
  - namespace
  - alertname
  source_matchers:
  - severity = warning
  target_matchers:
  - severity = info
- equal:
  - namespace
  source_matchers:
  - alertname = InfoInhibitor
  target_matchers:
  - severity = info
- target_matchers:
  - alertname = InfoInhibitor
receivers:
- name: "null"
route:
  group_by:
  - namespace
  group_interval: 5m
  group_wait: 30s
  receiver: "null"
  repeat_interval: 12h
  routes:
  - matchers:
    - alertname = "Watchdog"
    receiver: "null"
templates:
- /etc/alertmanager/config/*.tmpl
`;

export interface AlertmanagerConfig {
  route: { routes?: unknown[] } & Record<string, unknown>;
  receivers: { name: string }[];
  [k: string]: unknown;
}

/**
 * kube-prometheus-stack's alertmanager.config with docs/monitoring.md's routing merged in, as that page says to do:
 * its `routes` entry first in the chart's route tree, its two receivers next to the chart's.
 */
export function kpsAlertmanagerConfigWith(page: AlertmanagerConfig): AlertmanagerConfig {
  const base = parse(KPS_ALERTMANAGER_CONFIG) as AlertmanagerConfig;
  return {
    ...base,
    route: { ...base.route, routes: [...(page.route.routes ?? []), ...(base.route.routes ?? [])] },
    receivers: [...base.receivers, ...page.receivers.filter((r) => r.name !== 'default')],
  };
}

/** Every object, in the order to create them; `prometheusSpec` holds values a reader may set (externalLabels, intervals). */
export function kpsObjects(o: { alertmanagerConfig: string; prometheusSpec?: Record<string, unknown> }): Record<string, unknown>[] {
  const ns = KPS_NAMESPACE;
  const selector = { matchLabels: { release: KPS_RELEASE } };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: KPS_PROMETHEUS, namespace: ns, labels: labels(KPS_PROMETHEUS) }, automountServiceAccountToken: true },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: KPS_ALERTMANAGER, namespace: ns, labels: labels(KPS_ALERTMANAGER) }, automountServiceAccountToken: true },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: KPS_PROMETHEUS, labels: labels(KPS_PROMETHEUS) },
      rules: [
        { apiGroups: [''], resources: ['nodes', 'nodes/metrics', 'services', 'endpoints', 'pods'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['get', 'list', 'watch'] },
        { nonResourceURLs: ['/metrics', '/metrics/cadvisor'], verbs: ['get'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: KPS_PROMETHEUS, labels: labels(KPS_PROMETHEUS) },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: KPS_PROMETHEUS },
      subjects: [{ kind: 'ServiceAccount', name: KPS_PROMETHEUS, namespace: ns }],
    },
    {
      apiVersion: 'v1', kind: 'Secret', metadata: { name: `alertmanager-${KPS_ALERTMANAGER}`, namespace: ns, labels: labels(KPS_ALERTMANAGER) },
      stringData: { 'alertmanager.yaml': o.alertmanagerConfig },
    },
    {
      apiVersion: 'v1', kind: 'Service', metadata: { name: KPS_ALERTMANAGER, namespace: ns, labels: { ...labels(KPS_ALERTMANAGER), 'self-monitor': 'true' } },
      spec: {
        ports: [{ name: 'http-web', port: 9093, targetPort: 9093, protocol: 'TCP' }, { name: 'reloader-web', appProtocol: 'http', port: 8080, targetPort: 'reloader-web' }],
        selector: { 'app.kubernetes.io/name': 'alertmanager', alertmanager: KPS_ALERTMANAGER }, sessionAffinity: 'None', type: 'ClusterIP',
      },
    },
    {
      apiVersion: 'monitoring.coreos.com/v1', kind: 'Alertmanager', metadata: { name: KPS_ALERTMANAGER, namespace: ns, labels: labels(KPS_ALERTMANAGER) },
      spec: {
        image: 'quay.io/prometheus/alertmanager:v0.28.1', version: 'v0.28.1', replicas: 1, listenLocal: false, serviceAccountName: KPS_ALERTMANAGER,
        automountServiceAccountToken: true, externalUrl: `http://${KPS_ALERTMANAGER}.${ns}:9093`, paused: false, logFormat: 'logfmt', logLevel: 'info',
        retention: '120h', alertmanagerConfigSelector: {}, alertmanagerConfigNamespaceSelector: {}, routePrefix: '/', portName: 'http-web',
      },
    },
    {
      apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { name: KPS_PROMETHEUS, namespace: ns, labels: labels(KPS_PROMETHEUS) },
      spec: {
        automountServiceAccountToken: true,
        alerting: { alertmanagers: [{ namespace: ns, name: KPS_ALERTMANAGER, port: 'http-web', pathPrefix: '/', apiVersion: 'v2' }] },
        image: 'quay.io/prometheus/prometheus:v3.6.0', version: 'v3.6.0',
        externalUrl: `http://${KPS_PROMETHEUS}.${ns}:9090`, paused: false, replicas: 1, shards: 1, logLevel: 'info', logFormat: 'logfmt',
        listenLocal: false, enableOTLPReceiver: false, enableAdminAPI: false, retention: '10d', tsdb: { outOfOrderTimeWindow: '0s' }, walCompression: true,
        routePrefix: '/', serviceAccountName: KPS_PROMETHEUS,
        serviceMonitorSelector: selector, serviceMonitorNamespaceSelector: {},
        podMonitorSelector: selector, podMonitorNamespaceSelector: {},
        probeSelector: selector, probeNamespaceSelector: {},
        ruleNamespaceSelector: {}, ruleSelector: selector,
        scrapeConfigSelector: selector, scrapeConfigNamespaceSelector: {},
        portName: 'http-web', hostNetwork: false,
        ...o.prometheusSpec,
      },
    },
  ];
}

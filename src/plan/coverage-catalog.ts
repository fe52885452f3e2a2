// The built-in group/version/resources a kube-apiserver of each minor serves by default, with their kinds: a minor's
// set does not change between patch releases. 1.35, 1.36 and 1.37 were captured from real servers (test/fixtures/<version>/
// discovery-{api,apis}-nopeer.json, npm run fixtures); 1.34 (capturedFrom "<version> source") from
// upstream's own discovery capture in the sources (test/fixtures/version-facts.json, scripts/version-facts.ts), a
// method that gives exactly the real servers' set on every version captured both ways. test/plan/coverage.test.ts
// fails when this table and those disagree. Written as the oldest minor's set and each next minor's changes.

type Resources = Readonly<Record<string, string>>;

const V1_34: Resources = {
  '/v1/bindings': 'Binding',
  '/v1/componentstatuses': 'ComponentStatus',
  '/v1/configmaps': 'ConfigMap',
  '/v1/endpoints': 'Endpoints',
  '/v1/events': 'Event',
  '/v1/limitranges': 'LimitRange',
  '/v1/namespaces': 'Namespace',
  '/v1/nodes': 'Node',
  '/v1/persistentvolumeclaims': 'PersistentVolumeClaim',
  '/v1/persistentvolumes': 'PersistentVolume',
  '/v1/pods': 'Pod',
  '/v1/podtemplates': 'PodTemplate',
  '/v1/replicationcontrollers': 'ReplicationController',
  '/v1/resourcequotas': 'ResourceQuota',
  '/v1/secrets': 'Secret',
  '/v1/serviceaccounts': 'ServiceAccount',
  '/v1/services': 'Service',
  'admissionregistration.k8s.io/v1/mutatingwebhookconfigurations': 'MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/v1/validatingadmissionpolicies': 'ValidatingAdmissionPolicy',
  'admissionregistration.k8s.io/v1/validatingadmissionpolicybindings': 'ValidatingAdmissionPolicyBinding',
  'admissionregistration.k8s.io/v1/validatingwebhookconfigurations': 'ValidatingWebhookConfiguration',
  'apiextensions.k8s.io/v1/customresourcedefinitions': 'CustomResourceDefinition',
  'apiregistration.k8s.io/v1/apiservices': 'APIService',
  'apps/v1/controllerrevisions': 'ControllerRevision',
  'apps/v1/daemonsets': 'DaemonSet',
  'apps/v1/deployments': 'Deployment',
  'apps/v1/replicasets': 'ReplicaSet',
  'apps/v1/statefulsets': 'StatefulSet',
  'authentication.k8s.io/v1/selfsubjectreviews': 'SelfSubjectReview',
  'authentication.k8s.io/v1/tokenreviews': 'TokenReview',
  'authorization.k8s.io/v1/localsubjectaccessreviews': 'LocalSubjectAccessReview',
  'authorization.k8s.io/v1/selfsubjectaccessreviews': 'SelfSubjectAccessReview',
  'authorization.k8s.io/v1/selfsubjectrulesreviews': 'SelfSubjectRulesReview',
  'authorization.k8s.io/v1/subjectaccessreviews': 'SubjectAccessReview',
  'autoscaling/v1/horizontalpodautoscalers': 'HorizontalPodAutoscaler',
  'autoscaling/v2/horizontalpodautoscalers': 'HorizontalPodAutoscaler',
  'batch/v1/cronjobs': 'CronJob',
  'batch/v1/jobs': 'Job',
  'certificates.k8s.io/v1/certificatesigningrequests': 'CertificateSigningRequest',
  'coordination.k8s.io/v1/leases': 'Lease',
  'discovery.k8s.io/v1/endpointslices': 'EndpointSlice',
  'events.k8s.io/v1/events': 'Event',
  'flowcontrol.apiserver.k8s.io/v1/flowschemas': 'FlowSchema',
  'flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations': 'PriorityLevelConfiguration',
  'networking.k8s.io/v1/ingressclasses': 'IngressClass',
  'networking.k8s.io/v1/ingresses': 'Ingress',
  'networking.k8s.io/v1/ipaddresses': 'IPAddress',
  'networking.k8s.io/v1/networkpolicies': 'NetworkPolicy',
  'networking.k8s.io/v1/servicecidrs': 'ServiceCIDR',
  'node.k8s.io/v1/runtimeclasses': 'RuntimeClass',
  'policy/v1/poddisruptionbudgets': 'PodDisruptionBudget',
  'rbac.authorization.k8s.io/v1/clusterrolebindings': 'ClusterRoleBinding',
  'rbac.authorization.k8s.io/v1/clusterroles': 'ClusterRole',
  'rbac.authorization.k8s.io/v1/rolebindings': 'RoleBinding',
  'rbac.authorization.k8s.io/v1/roles': 'Role',
  'resource.k8s.io/v1/deviceclasses': 'DeviceClass',
  'resource.k8s.io/v1/resourceclaims': 'ResourceClaim',
  'resource.k8s.io/v1/resourceclaimtemplates': 'ResourceClaimTemplate',
  'resource.k8s.io/v1/resourceslices': 'ResourceSlice',
  'scheduling.k8s.io/v1/priorityclasses': 'PriorityClass',
  'storage.k8s.io/v1/csidrivers': 'CSIDriver',
  'storage.k8s.io/v1/csinodes': 'CSINode',
  'storage.k8s.io/v1/csistoragecapacities': 'CSIStorageCapacity',
  'storage.k8s.io/v1/storageclasses': 'StorageClass',
  'storage.k8s.io/v1/volumeattachments': 'VolumeAttachment',
  'storage.k8s.io/v1/volumeattributesclasses': 'VolumeAttributesClass',
};

/** Each minor after 1.34: what it adds to and removes from the one before (docs/versions.md, "Facts per version"). */
const STEPS: readonly { minor: string; capturedFrom: string; added: Resources; removed: readonly string[] }[] = [
  {
    minor: '1.35',
    capturedFrom: 'v1.35.4',
    added: {},
    removed: [],
  },
  {
    minor: '1.36',
    capturedFrom: 'v1.36.3',
    added: {
      'admissionregistration.k8s.io/v1/mutatingadmissionpolicies': 'MutatingAdmissionPolicy',
      'admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings': 'MutatingAdmissionPolicyBinding',
    },
    removed: [],
  },
  {
    minor: '1.37',
    capturedFrom: 'v1.37.2',
    added: {
      'certificates.k8s.io/v1/clustertrustbundles': 'ClusterTrustBundle',
      'certificates.k8s.io/v1/podcertificaterequests': 'PodCertificateRequest',
      'resource.k8s.io/v1/devicetaintrules': 'DeviceTaintRule',
      'storagemigration.k8s.io/v1/storageversionmigrations': 'StorageVersionMigration',
    },
    removed: [],
  },
];

function build(): Record<string, { capturedFrom: string; resources: Resources }> {
  const out: Record<string, { capturedFrom: string; resources: Resources }> = { '1.34': { capturedFrom: 'v1.34.4 source', resources: V1_34 } };
  let prev = V1_34;
  for (const s of STEPS) {
    const next: Record<string, string> = { ...prev, ...s.added };
    for (const r of s.removed) delete next[r];
    out[s.minor] = { capturedFrom: s.capturedFrom, resources: next };
    prev = next;
  }
  return out;
}

/** The built-in group/version/resources a kube-apiserver of a minor serves by default, from one captured version. */
export const BUILTIN_CATALOG: Readonly<Record<string, { capturedFrom: string; resources: Resources }>> = build();

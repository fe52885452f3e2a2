// kube-system/kubeadm-config's ClusterConfiguration as `kubeadm init` writes it (v1beta4), for the tests that check
// the operator brings it in line: a leading comment and an existing feature gate that the edit must keep.
export function kubeadmClusterConfiguration(o: { version: string; endpoint: string; comment: string; imageRepository?: string }): string {
  return `# ${o.comment}
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ${o.version}
controlPlaneEndpoint: ${o.endpoint}
${o.imageRepository ? `imageRepository: ${o.imageRepository}\n` : ''}apiServer:
  extraArgs:
  - name: authorization-mode
    value: Node,RBAC
  - name: feature-gates
    value: SomeOtherGate=false
certificatesDir: /etc/kubernetes/pki
`;
}

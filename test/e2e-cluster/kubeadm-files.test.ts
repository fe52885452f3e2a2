import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, parse } from 'yaml';
import { IGNORED_PREFLIGHT, initConfiguration, joinConfiguration, kubeletServiceArgs, parseKubeletFlagsEnv, systemctlShim, upgradeConfiguration, type ClusterInput } from '../../e2e/cluster/kubeadm/kubeadm-files.ts';
import { caCertHash } from '../../e2e/cluster/kubeadm/kubeadm-cluster.ts';
import { etcdImageTag, pauseImageName } from '../../e2e/cluster/kubeadm/kubeadm-images.ts';

const execFileAsync = promisify(execFile);

const input: ClusterInput = {
  version: 'v1.35.4',
  controlPlaneEndpoint: '10.77.9.1:40001',
  etcdImageTag: '3.6.16-0',
  token: 'abc123.0123456789abcdef',
  certificateKey: 'a'.repeat(64),
  kubelet: { failCgroupV1: false, cgroupDriver: 'cgroupfs' },
};
const node = { name: 'cp-1', address: '10.77.9.11', criSocket: 'unix:///tmp/auo-e2e/x/nodes/cp-1/containerd/containerd.sock' };

test('init configuration: v1beta4 Init + Cluster + Kubelet documents, the balancer as controlPlaneEndpoint, stacked etcd at the harness tag, only the listed preflight errors ignored', () => {
  const docs = parseAllDocuments(initConfiguration(input, node)).map((d) => d.toJS() as Record<string, unknown>);
  assert.deepEqual(docs.map((d) => d.kind), ['InitConfiguration', 'ClusterConfiguration', 'KubeletConfiguration']);
  const [init, cluster, kubelet] = docs as [Record<string, any>, Record<string, any>, Record<string, any>]; // eslint-disable-line @typescript-eslint/no-explicit-any -- reading test YAML back
  assert.equal(init.apiVersion, 'kubeadm.k8s.io/v1beta4');
  assert.deepEqual(init.localAPIEndpoint, { advertiseAddress: '10.77.9.11', bindPort: 6443 });
  assert.equal(init.nodeRegistration.criSocket, node.criSocket);
  assert.deepEqual(init.nodeRegistration.ignorePreflightErrors, Object.keys(IGNORED_PREFLIGHT));
  assert.deepEqual(init.nodeRegistration.kubeletExtraArgs, [{ name: 'node-ip', value: '10.77.9.11' }]);
  assert.equal(cluster.controlPlaneEndpoint, '10.77.9.1:40001');
  assert.equal(cluster.kubernetesVersion, 'v1.35.4');
  assert.equal(cluster.etcd.local.imageTag, '3.6.16-0');
  assert.deepEqual(cluster.etcd.local.extraArgs.map((x: { name: string }) => x.name), ['unsafe-no-fsync', 'heartbeat-interval', 'election-timeout'], 'etcd tuned as the rest of the harness runs it (v1beta4: a list)');
  assert.deepEqual([cluster.dns.disabled, cluster.proxy.disabled], [true, true]);
  assert.equal(cluster.apiServer, undefined, 'the apiserver runs with kubeadm\'s own flags');
  assert.equal(kubelet.failCgroupV1, false);
  assert.throws(() => initConfiguration({ ...input, token: 'nope' }, node), /bootstrap token/);
  assert.throws(() => initConfiguration({ ...input, certificateKey: 'xyz' }, node), /certificate key/);
});

test('join configuration: control-plane join through the balancer, pinned to the CA hash', () => {
  const hash = `sha256:${'0'.repeat(64)}`;
  const j = parse(joinConfiguration(input, { ...node, name: 'cp-2', address: '10.77.9.12' }, hash)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- reading test YAML back
  assert.equal(j.kind, 'JoinConfiguration');
  assert.deepEqual(j.discovery.bootstrapToken, { apiServerEndpoint: '10.77.9.1:40001', token: input.token, caCertHashes: [hash] });
  assert.deepEqual(j.controlPlane, { localAPIEndpoint: { advertiseAddress: '10.77.9.12', bindPort: 6443 }, certificateKey: input.certificateKey });
  assert.throws(() => joinConfiguration(input, node, 'sha256:zz'), /CA hash/);
});

test('upgrade configuration: the timeouts of init and join, so kubeadm upgrade renders the same startup probes', () => {
  const up = parse(upgradeConfiguration()) as { apiVersion: string; kind: string; timeouts: Record<string, string> };
  assert.equal(up.kind, 'UpgradeConfiguration');
  assert.equal(up.apiVersion, 'kubeadm.k8s.io/v1beta4');
  const init = parseAllDocuments(initConfiguration(input, { name: 'cp-1', address: '10.0.0.11', criSocket: 'unix:///c.sock' }))[0]!.toJS() as { timeouts: Record<string, string> };
  assert.deepEqual(up.timeouts, init.timeouts);
  assert.equal(up.timeouts.controlPlaneComponentHealthCheck, '10m0s');
});

test('kubeadm-flags.env is parsed, never sourced: plain --name=value flags pass, anything else is refused', () => {
  const env = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/x/containerd.sock --node-ip=10.77.9.11 --pod-infra-container-image=registry.k8s.io/pause:3.10.1"\n';
  assert.deepEqual(parseKubeletFlagsEnv(env), ['--container-runtime-endpoint=unix:///run/x/containerd.sock', '--node-ip=10.77.9.11', '--pod-infra-container-image=registry.k8s.io/pause:3.10.1']);
  assert.deepEqual(kubeletServiceArgs(env).slice(0, 3), ['--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf', '--kubeconfig=/etc/kubernetes/kubelet.conf', '--config=/var/lib/kubelet/config.yaml']);
  assert.throws(() => parseKubeletFlagsEnv('KUBELET_KUBEADM_ARGS="--a=$(reboot)"'), /does not pass on/);
  assert.throws(() => parseKubeletFlagsEnv('KUBELET_KUBEADM_ARGS="--a=b"\nrm -rf /'), /one KUBELET_KUBEADM_ARGS/);
  assert.throws(() => parseKubeletFlagsEnv('KUBELET_KUBEADM_ARGS="-v"'), /does not pass on/);
});

test('the systemctl stand-in: knows the kubelet unit only, answers is-active from the state file, hands start/stop/restart to the harness and waits for it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'auo-systemctl-'));
  try {
    const requests = join(dir, 'requests');
    execFileSync('mkdir', [requests]);
    const state = join(dir, 'state');
    const shim = join(dir, 'systemctl');
    writeFileSync(shim, systemctlShim(requests, state));
    chmodSync(shim, 0o755);
    const sh = (args: string[]): { code: number; out: string } => {
      try {
        return { code: 0, out: execFileSync(shim, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
      } catch (err) {
        const e = err as { status: number; stdout: string };
        return { code: e.status, out: e.stdout };
      }
    };
    assert.equal(sh(['daemon-reload']).code, 0);
    assert.equal(sh(['is-enabled', 'kubelet']).code, 0);
    assert.equal(sh(['is-active', 'kubelet']).code, 3);
    writeFileSync(state, 'active');
    assert.deepEqual(sh(['is-active', 'kubelet']), { code: 0, out: 'active\n' });
    assert.match(sh(['status', 'kubelet']).out, /Loaded: loaded/);
    assert.equal(sh(['restart', 'containerd']).code, 5);
    // A harness that carries out each request (here: removes it) lets restart return 0, after it did.
    const served: string[] = [];
    const timer = setInterval(() => {
      for (const f of readdirSync(requests)) {
        if (f.endsWith('.tmp')) continue;
        served.push(f.split('.')[0]!);
        rmSync(join(requests, f), { force: true });
      }
    }, 20);
    try {
      await execFileAsync(shim, ['restart', 'kubelet']);
      await execFileAsync(shim, ['stop', 'kubelet']);
    } finally {
      clearInterval(timer);
    }
    assert.deepEqual(served, ['restart', 'stop']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.throws(() => systemctlShim('/tmp/a b', '/tmp/s'), /plain absolute path/);
});

test('kubeadm\'s image names: etcd at the harness version in kubeadm\'s tag form, pause per kubeadm minor', () => {
  assert.equal(etcdImageTag('v3.6.16'), '3.6.16-0');
  assert.equal(pauseImageName('v1.35.4'), 'registry.k8s.io/pause:3.10.1');
  assert.equal(pauseImageName('v1.36.3'), 'registry.k8s.io/pause:3.10.2');
  assert.throws(() => pauseImageName('v1.40.0'), /no pause tag/);
});

test('the discovery CA hash is sha256 of the CA\'s SubjectPublicKeyInfo (as `openssl x509 -pubkey | openssl pkey -pubin -outform der | sha256sum`)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'auo-cahash-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'k'), '-out', join(dir, 'c'), '-days', '1', '-subj', '/CN=t'], { stdio: 'ignore' });
    const want = execFileSync('sh', ['-c', `openssl x509 -pubkey -noout -in "${join(dir, 'c')}" | openssl pkey -pubin -outform der | sha256sum`], { encoding: 'utf8' }).split(' ')[0];
    assert.equal(caCertHash(execFileSync('cat', [join(dir, 'c')], { encoding: 'utf8' })), `sha256:${want}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

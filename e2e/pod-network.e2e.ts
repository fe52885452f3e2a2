// The nodes mode's Pod network (issue 14): the reference CNI plugins and kube-proxy (iptables) on every node, so a
// Pod — hostNetwork or not — reaches the API through the `kubernetes` Service exactly as in-cluster config does
// (KUBERNETES_SERVICE_HOST/PORT = 10.96.0.1:443, its ServiceAccount token and CA), which the operator needs to run
// as a Deployment. The client in the Pods is kubectl v1.35.4 (static, built from k8s.io/kubernetes): client-go's
// rest.InClusterConfig, what the operator's in-cluster configuration mirrors.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NodesCluster } from './cluster/nodes/nodes-cluster.ts';
import { POD_CIDR } from './cluster/nodes/kubeadm-layout.ts';
import { binary, OLD_VERSION, waitFor } from './cluster/index.ts';
import { SECURE_PORT, SERVICE_IP } from './cluster/apiserver-flags.ts';
import { TOOLBOX_IMAGE } from './cluster/images.ts';
import { run } from './cluster/exec.ts';
import { runOk } from './support/tools.ts';

const clusters: NodesCluster[] = [];
after(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.teardown()));
});

const NS = 'default';
const SA = 'netcheck';

interface Pod {
  metadata: { name: string; uid: string };
  spec: { nodeName?: string };
  status?: { phase?: string; podIP?: string; hostIP?: string; containerStatuses?: { restartCount: number; state?: Record<string, unknown> }[] };
}

async function create(c: NodesCluster, path: string, obj: Record<string, unknown>): Promise<void> {
  const r = await c.request('lb', path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(obj) });
  assert.equal(r.status, 201, `POST ${path}: ${r.status} ${r.body.slice(0, 300)}`);
}

/**
 * A Pod on `node` that reaches the API through the Service with its ServiceAccount's token (kubectl's in-cluster
 * config), prints what it got on marked lines, then serves HTTP on 8080 (the non-hostNetwork one: for the
 * node-to-Pod check across nodes) and stays running (for the teardown check).
 */
function probePod(name: string, node: string, hostNetwork: boolean, kubectl: string): Record<string, unknown> {
  const script = [
    'export HOME=/tmp',
    'echo "@@env $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"',
    // -v=6 logs the URL each request went to, and its status (stderr, also in the container's log).
    'echo "@@version $(/opt/kubectl get --raw /version -v=6 | tr -d \'\\n \')"',
    'echo "@@whoami $(/opt/kubectl auth whoami -o jsonpath=\'{.status.userInfo.username}\')"',
    'echo "@@readyz $(/opt/kubectl get --raw /readyz)"',
    ...(hostNetwork ? [] : ['mkdir -p /tmp/www && echo "hello from $(hostname)" > /tmp/www/index.html && httpd -p 8080 -h /tmp/www']),
    'echo "@@done"',
    'exec sleep 3600',
  ].join('\n');
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      nodeName: node,
      hostNetwork,
      serviceAccountName: SA,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'probe', image: TOOLBOX_IMAGE, imagePullPolicy: 'Never', command: ['sh', '-c', script],
        volumeMounts: [{ name: 'kubectl', mountPath: '/opt/kubectl', readOnly: true }],
      }],
      // The node's mount namespace is a copy of this machine's: the built kubectl is at the same path there.
      volumes: [{ name: 'kubectl', hostPath: { path: kubectl, type: 'File' } }],
    },
  };
}

/** The container's output, from the CRI log file the kubelet writes under the node's /var/log/pods. */
async function podOutput(c: NodesCluster, nodeIndex: number, pod: Pod): Promise<string> {
  const dir = join(c.node(nodeIndex).root, 'var/log/pods', `${NS}_${pod.metadata.name}_${pod.metadata.uid}`, 'probe');
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.log')) : [];
  const text = (await Promise.all(files.map((f) => readFile(join(dir, f), 'utf8')))).join('');
  // CRI log lines: "<time> <stream> <F|P> <content>".
  return text.split('\n').map((l) => l.split(' ').slice(3).join(' ')).join('\n');
}

function marked(out: string, key: string): string | undefined {
  return out.split('\n').find((l) => l.startsWith(`@@${key} `))?.slice(key.length + 3);
}

/** What kube-proxy programmed for default/kubernetes in a node's network namespace: the jump and the DNAT targets. */
async function serviceRules(netns: string): Promise<{ jump: boolean; targets: string[] }> {
  const rules = await run('ip', ['netns', 'exec', netns, 'iptables-save', '-t', 'nat']);
  const jump = rules.split('\n').some((l) => l.includes(`-d ${SERVICE_IP}/32`) && l.includes('--dport 443') && l.includes('-j KUBE-SVC-'));
  return { jump, targets: [...rules.matchAll(/"default\/kubernetes:https" .*-j DNAT --to-destination (\S+)/g)].map((m) => m[1]!).sort() };
}

/** The DNAT targets kube-proxy programmed for default/kubernetes in a node's network namespace. */
async function serviceTargets(netns: string): Promise<string[]> {
  const { jump, targets } = await serviceRules(netns);
  assert.ok(jump, `${netns}: KUBE-SERVICES sends ${SERVICE_IP}:443 to the Service's chain`);
  return targets;
}

/** Every task's pid in a node's containerd (the control plane, the pause containers and the probes). */
async function taskPids(c: NodesCluster, i: number): Promise<number[]> {
  const out = await runOk('ctr', ['-a', c.containerdSocket(i), '-n', 'k8s.io', 'tasks', 'ls']);
  return out.split('\n').slice(1).map((l) => Number(l.trim().split(/\s+/)[1])).filter((p) => Number.isInteger(p) && p > 0);
}

function inSubnet(ip: string, cidr: string): boolean {
  const [net, bits] = cidr.split('/');
  const n = (a: string): number => a.split('.').reduce((x, o) => x * 256 + Number(o), 0);
  const mask = 2 ** 32 - 2 ** (32 - Number(bits));
  return (n(ip) & mask) >>> 0 === (n(net!) & mask) >>> 0;
}

test('Pod network: a Pod on its node\'s subnet and a hostNetwork Pod reach the API through the kubernetes Service with their ServiceAccount token; kube-proxy programmed the Service on every node; teardown leaves the Pods nothing', { timeout: 6 * 60_000 }, async () => {
  const t0 = Date.now();
  const hostNetnsAtStart = await run('ip', ['netns', 'list']);
  // kubectl for the Pods: built (once per version, cached) while the cluster starts.
  const [kubectl, c] = await Promise.all([binary('kubectl', OLD_VERSION), NodesCluster.start({ nodes: 3, verbose: true })]);
  clusters.push(c);
  const started = (Date.now() - t0) / 1000;
  process.stderr.write(`[pod-network] 3 nodes with the Pod network in ${started.toFixed(1)} s ${JSON.stringify(c.timings)}\n`);

  // kube-proxy: the Service's EndpointSlice names the three apiservers, and every node DNATs 10.96.0.1:443 to them.
  const addresses = c.nodes.map((n) => n.address).sort();
  const slices = await c.json<{ items: { endpoints?: { addresses: string[] }[]; ports?: { port: number }[] }[] }>('/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes');
  assert.deepEqual(slices.items.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses)).sort(), addresses);
  assert.deepEqual(slices.items.flatMap((s) => (s.ports ?? []).map((p) => p.port)), [SECURE_PORT]);
  // kube-proxy answers /healthz before its first sync of the Service rules has necessarily landed (seen in CI):
  // the rules are waited for, then checked.
  for (const n of c.nodes) {
    await waitFor(`${n.name}'s kube-proxy to program the kubernetes Service`, 60_000, async () => {
      const { jump, targets } = await serviceRules(n.netns);
      return jump && targets.length === addresses.length ? true : undefined;
    }, 500);
    assert.deepEqual(await serviceTargets(n.netns), addresses.map((a) => `${a}:${SECURE_PORT}`), `${n.name}'s kube-proxy sends the Service to every apiserver`);
  }

  await create(c, `/api/v1/namespaces/${NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: SA } });
  const podNode = 1;
  const hostNode = 2;
  await create(c, `/api/v1/namespaces/${NS}/pods`, probePod('netcheck-pod', c.node(podNode).name, false, kubectl));
  await create(c, `/api/v1/namespaces/${NS}/pods`, probePod('netcheck-host', c.node(hostNode).name, true, kubectl));

  const results = await Promise.all([['netcheck-pod', podNode], ['netcheck-host', hostNode]].map(async ([name, i]) => {
    const nodeIndex = i as number;
    return waitFor(`${name as string} to report`, 120_000, async () => {
      const pod = await c.json<Pod>(`/api/v1/namespaces/${NS}/pods/${name as string}`);
      if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') throw new Error(`${name as string} ended: ${JSON.stringify(pod.status)}\n${await podOutput(c, nodeIndex, pod)}`);
      const out = await podOutput(c, nodeIndex, pod);
      // The kubelet reports the Pod's IP in its status a moment after the container runs: wait for both.
      return out.includes('@@done') && pod.status?.podIP ? { pod, out } : undefined;
    }, 1000);
  }));
  const [inPod, onHost] = results as [{ pod: Pod; out: string }, { pod: Pod; out: string }];
  process.stderr.write(`[pod-network] both Pods answered ${((Date.now() - t0) / 1000 - started).toFixed(1)} s after the cluster was up\n`);

  // The non-hostNetwork Pod has an address from its node's subnet; the hostNetwork one the node's own.
  const podIP = inPod.pod.status?.podIP ?? '';
  assert.ok(inSubnet(podIP, c.node(podNode).podSubnet), `the Pod's IP ${podIP} is in ${c.node(podNode).name}'s Pod subnet ${c.node(podNode).podSubnet}`);
  assert.ok(inSubnet(podIP, POD_CIDR));
  assert.equal(onHost.pod.status?.podIP, c.node(hostNode).address, 'the hostNetwork Pod has its node\'s address');

  for (const { pod, out } of [inPod, onHost]) {
    const who = pod.metadata.name;
    assert.equal(marked(out, 'env'), `${SERVICE_IP}:443`, `${who}: KUBERNETES_SERVICE_HOST/PORT name the Service's ClusterIP`);
    const version = JSON.parse(marked(out, 'version') || '{}') as { gitVersion?: string };
    assert.equal(version.gitVersion, OLD_VERSION, `${who}: GET /version through the Service answered (output:\n${out})`);
    assert.match(out, new RegExp(`"GET" url="https://${SERVICE_IP.replaceAll('.', '\\.')}:443/version" status="200 OK"`), `${who}: the request went to the ClusterIP`);
    assert.equal(marked(out, 'whoami'), `system:serviceaccount:${NS}:${SA}`, `${who}: authenticated with its ServiceAccount token`);
    assert.equal(marked(out, 'readyz'), 'ok');
  }

  // Across nodes: the hostNetwork side of another node reaches the Pod's address over the routed Pod subnets.
  const other = c.node(0);
  const fetchScript = `fetch('http://${podIP}:8080/', { signal: AbortSignal.timeout(10000) }).then((r) => r.text()).then((t) => process.stdout.write(t))`;
  const page = await runOk('ip', ['netns', 'exec', other.netns, process.execPath, '-e', fetchScript]);
  assert.equal(page.trim(), 'hello from netcheck-pod', `${other.name} reaches ${podIP} on ${c.node(podNode).name}`);

  // host-local's leases live in the node's folder (bound on /var/lib/cni), not on this machine's /var/lib/cni.
  assert.ok(existsSync(join(c.node(podNode).root, 'var/lib/cni/networks/auo-pods', podIP)), 'the lease is in the node\'s folder');
  assert.equal(existsSync('/var/lib/cni/networks/auo-pods'), false, 'no lease on the host');

  // Teardown: the Pods' processes (in their own network namespaces, not the node's) go with the cluster.
  const pids = (await Promise.all(c.nodes.map((_, i) => taskPids(c, i)))).flat();
  assert.ok(pids.length >= 6, `the nodes run containers (${pids.length} tasks)`);
  const netnsBefore = await run('ip', ['netns', 'list']);
  clusters.splice(0);
  await c.teardown();
  // Killed processes may stay zombies for a moment until init reaps them.
  const alive = await waitFor('the cluster\'s container processes to be gone', 10_000, async () => {
    const left = pids.filter((p) => existsSync(`/proc/${p}`));
    return left.length === 0 ? left : undefined;
  }, 200).catch(() => pids.filter((p) => existsSync(`/proc/${p}`)));
  assert.deepEqual(alive, [], 'no container process of the cluster is left');
  const netnsAfter = await run('ip', ['netns', 'list']);
  for (const n of c.nodes) {
    assert.match(netnsBefore, new RegExp(n.netns));
    assert.doesNotMatch(netnsAfter, new RegExp(n.netns));
  }
  const podNetns = (list: string): string[] => list.split('\n').map((l) => l.split(' ')[0]!).filter((l) => l.startsWith('cni-'));
  assert.deepEqual(podNetns(netnsAfter).filter((x) => !hostNetnsAtStart.includes(x)), [], 'no Pod network namespace shows on the host');
  assert.equal(existsSync(c.dir), false);
  process.stderr.write(`[pod-network] whole test ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
});

// The platform team's day (issue 22), as one test, on a control plane made by real kubeadm v1.35.4 (init on cp-1,
// join --control-plane on cp-2 and cp-3, stacked etcd, haproxy as controlPlaneEndpoint):
//   1. the operator installed with the chart, docs/quickstart.md's blocks run as written (only image names, the
//      durations and helm's --wait put in, and kubeadmConfig.write on: the runbook's choice of letting the operator
//      write kubeadm-config, under the chart's admission policy on that ConfigMap);
//   2. the quickstart's ApiServerUpgrade (static Pod driver) to v1.36.3, applied paused, reviewed, let go, while a
//      client keeps reading and writing a ConfigMap through the balancer;
//   3. what docs/kubeadm-runbook.md says next, with kubeadm v1.36.3 itself: `kubeadm upgrade plan`,
//      `kubeadm upgrade apply v1.36.3 -y` on cp-1, `kubeadm upgrade node` on cp-2 and cp-3 (each with an
//      UpgradeConfiguration holding the timeouts the nodes were made with);
//   4. the certificates kubeadm did not renew (it skips a component whose manifest is unchanged, before it renews that
//      component's certificates): `kubeadm certs renew` of the kube-apiserver's and etcd's certificates on each node,
//      which the servers load from disk without a restart.
// It checks that kubeadm accepts what the operator left (no error, the gate and --peer-ca-file kept in the manifests
// kubeadm writes), that kubeadm finds the kube-apiserver manifest the operator left equal to its own and restarts no
// kube-apiserver, and that the renewed certificates are served without a restart; it prints, per step: the
// kube-apiserver restarts (manifest changes, new mirror Pods, container restarts), the client's requests and errors,
// and each certificate's notAfter. docs/kubeadm-runbook.md "Measured" holds the numbers of a run.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { KubeadmCluster } from '../cluster/kubeadm/kubeadm-cluster.ts';
import { IGNORED_UPGRADE_PREFLIGHT, upgradeConfiguration } from '../cluster/kubeadm/kubeadm-files.ts';
import { NEW_VERSION, PROXY_GATE, waitFor } from '../cluster/index.ts';
import { operatorImage, OPERATOR_IMAGE } from '../cluster/operator-image.ts';
import { componentImage } from '../cluster/images.ts';
import { getUpgrade } from '../support/operator.ts';
import { tool, runOk } from '../support/tools.ts';
import { docBlock, substitute } from '../support/doc-blocks.ts';
import { RELEASE_VERSION } from '../support/release.ts';
import { ReadWriteTraffic } from '../support/rw-traffic.ts';
import { ApiServerRestarts, type RestartCounts } from '../support/apiserver-restarts.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const REPO = join(import.meta.dirname, '..', '..');
const QUICKSTART = join(REPO, 'docs', 'quickstart.md');
// The quickstart's blocks are marked for the helm-install test; this one runs the same blocks on real kubeadm.
const DOC_TAG = 'e2e/helm-install.e2e.ts';
const RELEASE = 'apiserver-upgrade-operator';
const NS = 'apiserver-upgrade-operator';
const UPGRADE = 'kubeadm-to-v1-36-3';

let cluster: KubeadmCluster | undefined;
let traffic: ReadWriteTraffic | undefined;
let restarts: ApiServerRestarts | undefined;
after(async () => {
  await traffic?.stop();
  await restarts?.stop();
  await cluster?.teardown();
});

interface Pod { metadata: { name: string }; spec: { nodeName?: string; containers: { image: string; command?: string[] }[] }; status?: { containerStatuses?: { ready: boolean; restartCount: number }[] } }

async function runDocBlock(c: KubeadmCluster, name: string, cwd: string, replacements: [string, string][]): Promise<string> {
  const script = substitute(docBlock(QUICKSTART, DOC_TAG, name), replacements);
  const path = [...new Set([dirname(tool('kubectl')), dirname(tool('helm'))])].join(':');
  const out = await runOk('bash', ['-c', `set -euo pipefail\nexport PATH=${path}:"$PATH" KUBECONFIG=${c.kubeconfig}\n${script}`], { cwd, timeoutMs: 6 * 60_000 });
  process.stderr.write(`[day] ran the quickstart's ${name}:\n${out}`);
  return out;
}

function flags(manifest: string): string[] {
  return (parse(manifest) as Pod).spec.containers[0]!.command ?? [];
}

function gateOn(cmd: string[]): boolean {
  return cmd.some((f) => f.startsWith('--feature-gates=') && f.slice('--feature-gates='.length).split(',').includes(`${PROXY_GATE}=true`));
}

/** The certificates kubeadm renews for kube-apiserver and the local etcd member (phases/upgrade/staticpods.go renewCertsByComponent). */
const RENEWED = ['apiserver', 'apiserver-kubelet-client', 'front-proxy-client', 'apiserver-etcd-client', 'etcd-server', 'etcd-peer', 'etcd-healthcheck-client'] as const;
const CERT_FILES: Record<(typeof RENEWED)[number], string> = {
  'apiserver': 'apiserver.crt', 'apiserver-kubelet-client': 'apiserver-kubelet-client.crt', 'front-proxy-client': 'front-proxy-client.crt',
  'apiserver-etcd-client': 'apiserver-etcd-client.crt', 'etcd-server': 'etcd/server.crt', 'etcd-peer': 'etcd/peer.crt', 'etcd-healthcheck-client': 'etcd/healthcheck-client.crt',
};

/** The notAfter (ISO) of the serving certificate a kube-apiserver presents now. */
function servedNotAfter(host: string, port = 6443): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, rejectUnauthorized: false, timeout: 5000 }, () => {
      const to = socket.getPeerCertificate().valid_to;
      socket.end();
      resolve(new Date(to).toISOString());
    });
    socket.on('timeout', () => socket.destroy(new Error(`TLS to ${host}:${port} timed out`)));
    socket.on('error', reject);
  });
}

interface Step { step: string; seconds: number; restarts: Record<string, RestartCounts>; kubeletStarts: number[]; client: ReturnType<ReadWriteTraffic['window']> }

test('the platform team\'s day on real kubeadm: helm install, the operator upgrades kube-apiserver to v1.36.3 under client traffic, then kubeadm upgrade plan/apply/node v1.36.3 accept what it left', { timeout: 90 * 60_000 }, async () => {
  const steps: Step[] = [];
  // The operator's image also runs the static Pod driver's node agent (issue 21): one image. The target
  // kube-apiserver is kubeadm's name for it: the operator keeps each node's repository and changes the tag.
  const images = await Promise.all([operatorImage(), componentImage('kube-apiserver', NEW_VERSION)]);
  const c = await KubeadmCluster.start({ nodes: 3, images, verbose: true });
  cluster = c;
  // kubeadm v1.36.3 and the other control-plane images it pulls, ready by step 3 (they may still be building).
  const upgradeReady = c.prepareUpgrade(NEW_VERSION);
  upgradeReady.catch(() => undefined);
  process.stderr.write(`[day] kubeadm cluster ready: ${JSON.stringify(c.timings)}\n`);
  const names = c.nodes.map((n) => n.name);
  restarts = new ApiServerRestarts(names, (n) => c.manifest(names.indexOf(n)), () => c.request('lb', '/api/v1/namespaces/kube-system/pods?labelSelector=component%3Dkube-apiserver', { timeoutMs: 3000 }));
  traffic = await ReadWriteTraffic.start((p, o) => c.request('lb', p, o), 'platform-day-client');
  const t = traffic;
  const r = restarts;
  const measure = async <T>(step: string, f: () => Promise<T>): Promise<T> => {
    const from = Date.now();
    const before = r.snapshot();
    const kubelets = c.nodes.map((n) => c.kubeletStarts(n.index));
    const out = await f();
    await new Promise((res) => setTimeout(res, 1000)); // the last poll of the restart counter
    const s: Step = { step, seconds: (Date.now() - from) / 1000, restarts: ApiServerRestarts.since(before, r.snapshot()), kubeletStarts: c.nodes.map((n, i) => c.kubeletStarts(n.index) - kubelets[i]!), client: t.window(from, Date.now()) };
    steps.push(s);
    process.stderr.write(`[day] ${step}: ${s.seconds.toFixed(0)} s; apiserver restarts ${JSON.stringify(s.restarts)}; kubelet (re)starts ${JSON.stringify(s.kubeletStarts)}; client ${s.client.requests} requests, ${s.client.errors} errors ${JSON.stringify(s.client.byStatus)}${s.client.firstErrors.length ? `; first errors: ${s.client.firstErrors.join(' | ')}` : ''}\n`);
    return out;
  };

  // 1. The operator, installed as docs/quickstart.md's Path A says (the images this test built and imported put in).
  await measure('helm install (quickstart)', async () => {
    const tag = OPERATOR_IMAGE.slice(OPERATOR_IMAGE.lastIndexOf(':') + 1);
    // The page installs the release's OCI chart (e2e/extended/release-install-nodes.e2e.ts runs it so); here, as in
    // e2e/helm-install.e2e.ts, the checkout's chart and the image this test built (pushed to the harness registry).
    await runDocBlock(c, 'helm-install.sh', REPO, [
      [`oci://ghcr.io/apiserver-upgrade-operator/charts/apiserver-upgrade-operator --version ${RELEASE_VERSION}`, `charts/apiserver-upgrade-operator --set image.repository=${OPERATOR_IMAGE.slice(0, OPERATOR_IMAGE.lastIndexOf(':'))} --set image.tag=${tag}`],
      ['--create-namespace\n', '--create-namespace --wait --timeout 8m --set kubeadmConfig.write=true\n'],
    ]);
    await waitFor('2 ready operator Pods', 5 * 60_000, async () => {
      const ps = (await c.json<{ items: Pod[] }>(`/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/name=${RELEASE}`)}`)).items;
      return ps.filter((p) => p.status?.containerStatuses?.every((s) => s.ready)).length === 2 ? true : undefined;
    }, 2000);
  });

  // 2. The quickstart's upgrade: paused, reviewed with its commands, let go. Only the durations are shortened.
  const final = await measure('ApiServerUpgrade to v1.36.3 (static Pod driver)', async () => {
    await writeFile(join(c.dir, `${UPGRADE}.yaml`), substitute(docBlock(QUICKSTART, DOC_TAG, `${UPGRADE}.yaml`), [
      ['soakDuration: 5m', 'soakDuration: 5s'], ['interval: 15s', 'interval: 5s'],
    ]));
    await runDocBlock(c, 'apply.sh', c.dir, []);
    await waitFor('preflight to pass while paused', 5 * 60_000, async () => {
      const u = await getUpgrade(c, UPGRADE);
      return u?.status?.conditions?.some((x) => x.type === 'PreflightPassed' && x.status === 'True') ? true : undefined;
    }, 2000);
    const shown = await runDocBlock(c, 'apply.sh', c.dir, [[`kubectl apply -f ${UPGRADE}.yaml\n`, '']]);
    assert.match(shown, /^PreflightPassed=True Passed: /m, shown);
    await runDocBlock(c, 'resume.sh', c.dir, []);
    return await waitFor('Succeeded', 30 * 60_000, async () => {
      const u = await getUpgrade(c, UPGRADE);
      if (u?.status?.phase === 'Paused' || u?.status?.phase === 'Failed') throw new Error(`upgrade ${u.status.phase}: ${JSON.stringify(u.status.pause ?? u.status.conditions)}`);
      return u?.status?.phase === 'Succeeded' ? u : undefined;
    }, 2000) as ApiServerUpgrade;
  });
  const kc = final.status?.conditions?.find((x) => x.type === 'KubeadmConfigUpdated');
  assert.equal(kc?.status, 'True', `kubeadm-config brought in line by the operator: ${JSON.stringify(kc)}`);
  const operatorManifests = await Promise.all(c.nodes.map((n) => c.manifest(n.index)));
  for (const [i, m] of operatorManifests.entries()) {
    assert.ok(gateOn(flags(m)), `${names[i]}: the operator turned the gate on`);
    assert.ok((parse(m) as Pod).spec.containers[0]!.image.endsWith(`:${NEW_VERSION}`), `${names[i]} runs ${NEW_VERSION}`);
  }
  const peersBefore = await peerAddresses();
  const cm = await c.json<{ data: { ClusterConfiguration: string } }>('/api/v1/namespaces/kube-system/configmaps/kubeadm-config');
  process.stderr.write(`[day] kubeadm-config after the operator:\n${cm.data.ClusterConfiguration}\n`);

  /** node -> certificate -> notAfter (ISO) of the files in the node's /etc/kubernetes/pki, and the served one. */
  const certs = async (): Promise<Record<string, Record<string, string>>> => Object.fromEntries(await Promise.all(c.nodes.map(async (n) => {
    const files = await Promise.all(RENEWED.map(async (k) => [k, new Date(new X509Certificate(await readFile(join(n.root, 'etc', 'kubernetes', 'pki', CERT_FILES[k]))).validTo).toISOString()] as const));
    return [n.name, { ...Object.fromEntries(files), served: await servedNotAfter(n.address) }] as const;
  })));
  const certsBefore = await certs();
  process.stderr.write(`[day] certificates' notAfter before kubeadm: ${JSON.stringify(certsBefore)}\n`);

  // 3. The runbook's next step, with kubeadm v1.36.3 itself.
  await upgradeReady;
  // The version named: without it kubeadm asks dl.k8s.io for the latest stable release (no internet here). The
  // preflight checks this harness cannot pass (kubeadm-files.ts says which and why) are named, nothing else.
  const ignore = `--ignore-preflight-errors=${Object.keys(IGNORED_UPGRADE_PREFLIGHT).join(',')}`;
  // The timeouts the nodes were made with (init and join): kubeadm renders the startup probes from them, and
  // `kubeadm upgrade` takes them from its own --config only (kubeadm-files.ts upgradeConfiguration).
  const upgradeConfig = await Promise.all(c.nodes.map(async (n) => {
    const path = join(n.root, 'kubeadm', 'upgrade.yaml');
    await writeFile(path, upgradeConfiguration());
    return `--config=${path}`;
  }));
  const plan = await measure('kubeadm upgrade plan (cp-1)', () => c.kubeadm(0, NEW_VERSION, ['upgrade', 'plan', NEW_VERSION, ignore]));
  process.stderr.write(`[day] kubeadm upgrade plan:\n${plan}\n`);
  const kubeadmFrom = r.snapshot();
  const apply = await measure('kubeadm upgrade apply v1.36.3 -y (cp-1)', () => c.kubeadm(0, NEW_VERSION, ['upgrade', 'apply', NEW_VERSION, '-y', upgradeConfig[0]!, ignore]));
  process.stderr.write(`[day] kubeadm upgrade apply (tail):\n${apply.split('\n').slice(-25).join('\n')}\n`);
  assert.match(apply, /SUCCESS! A control plane node of your cluster was upgraded to "v1\.36\.3"/);
  const outputs = [apply];
  for (const i of [1, 2]) {
    const out = await measure(`kubeadm upgrade node (${names[i]})`, () => c.kubeadm(i, NEW_VERSION, ['upgrade', 'node', upgradeConfig[i]!, ignore]));
    assert.match(out, /The upgrade for this control plane node was successfully completed|upgrade.*successfully/i, out.split('\n').slice(-10).join('\n'));
    outputs.push(out);
  }
  await new Promise((res) => setTimeout(res, 1000)); // the last poll of the restart counter
  // kubeadm compares the manifest it renders with the one the operator left (util/staticpod ManifestFilesAreEqual):
  // equal, it skips the kube-apiserver, so no kube-apiserver restarts during kubeadm's steps.
  const duringKubeadm = ApiServerRestarts.since(kubeadmFrom, r.snapshot());
  process.stderr.write(`[day] kube-apiserver restarts per node during kubeadm upgrade: ${JSON.stringify(duringKubeadm)}\n`);
  for (const [i, out] of outputs.entries()) {
    assert.match(out, /Current and new manifests of kube-apiserver are equal, skipping upgrade/, `${names[i]}: kubeadm skipped the kube-apiserver`);
  }
  for (const [n, k] of Object.entries(duringKubeadm)) assert.deepEqual(k, { manifestChanges: 0, newPods: 0, containerRestarts: 0 }, `${n}: no kube-apiserver restart during kubeadm upgrade`);
  const certsAfterKubeadm = await certs();
  process.stderr.write(`[day] certificates' notAfter after kubeadm upgrade: ${JSON.stringify(certsAfterKubeadm)}\n`);

  // 4. What kubeadm did not renew (it skipped kube-apiserver and etcd before renewing their certificates), renewed by
  // hand, one node at a time (docs/kubeadm-runbook.md): the servers read the new files without a restart.
  await measure('kubeadm certs renew (kube-apiserver\'s and etcd\'s, each node)', async () => {
    for (const [i, n] of c.nodes.entries()) {
      // One certificate a command: `kubeadm certs renew` takes one name (or `all`, which also renews the kubeconfig files).
      for (const k of RENEWED) await c.kubeadm(i, NEW_VERSION, ['certs', 'renew', k]);
      await waitFor(`${n.name} serving its renewed certificate`, 3 * 60_000, async () => {
        const served = await servedNotAfter(n.address).catch(() => undefined);
        return served !== undefined && served > certsAfterKubeadm[n.name]!.served! ? true : undefined;
      }, 2000);
    }
  });
  await new Promise((res) => setTimeout(res, 1000));
  const duringRenew = steps.at(-1)!.restarts;
  const certsAfter = await certs();
  process.stderr.write(`[day] certificates' notAfter after kubeadm certs renew: ${JSON.stringify(certsAfter)}\n`);
  for (const n of names) {
    assert.deepEqual(duringRenew[n], { manifestChanges: 0, newPods: 0, containerRestarts: 0 }, `${n}: the renewal restarted no kube-apiserver`);
    for (const k of RENEWED) assert.ok(certsAfter[n]![k]! > certsAfterKubeadm[n]![k]!, `${n}: ${k} renewed (${certsAfterKubeadm[n]![k]} -> ${certsAfter[n]![k]})`);
    assert.equal(certsAfter[n]!.served, certsAfter[n]!.apiserver, `${n}: the served certificate is the renewed file`);
  }
  await traffic.stop();
  await restarts.stop();

  // What kubeadm left: every manifest at v1.36.3, the gate and --peer-ca-file kept (the operator's kubeadm-config edit).
  const after = await Promise.all(c.nodes.map((n) => c.manifest(n.index)));
  const dropped: string[] = [];
  for (const [i, m] of after.entries()) {
    const cmd = flags(m);
    assert.equal((parse(m) as Pod).spec.containers[0]!.image, `registry.k8s.io/kube-apiserver:${NEW_VERSION}`);
    assert.ok(gateOn(cmd), `${names[i]}: kubeadm kept ${PROXY_GATE}=true: ${cmd.join(' ')}`);
    assert.ok(cmd.includes('--peer-ca-file=/etc/kubernetes/pki/ca.crt'), `${names[i]}: kubeadm kept --peer-ca-file`);
    for (const f of flags(operatorManifests[i]!)) if (!cmd.includes(f)) dropped.push(`${names[i]}: ${f}`);
    for (const comp of ['kube-controller-manager', 'kube-scheduler']) {
      assert.ok((parse(await c.manifest(i, comp)) as Pod).spec.containers[0]!.image.endsWith(`:${NEW_VERSION}`), `${names[i]}'s ${comp} upgraded by kubeadm`);
    }
  }
  process.stderr.write(`[day] flags of the operator's manifests that kubeadm's manifests lack: ${dropped.join('; ') || 'none'}\n`);
  for (const [i, m] of after.entries()) assert.deepEqual(parse(m), parse(operatorManifests[i]!), `${names[i]}: the manifest is still the one the operator left`);
  // The operator left no --peer-advertise-ip/port (each server's peer address is its --advertise-address and
  // --secure-port): the servers advertise the same address to their peers after kubeadm as before.
  const peersAfter = await waitFor('every server advertising a peer address again', 60_000, async () => {
    const m = await peerAddresses();
    return Object.keys(m).length === 3 ? m : undefined;
  }, 2000);
  process.stderr.write(`[day] peer addresses in the identity Leases: after the operator ${JSON.stringify(peersBefore)}, after kubeadm ${JSON.stringify(peersAfter)}\n`);
  assert.deepEqual(peersAfter, peersBefore, 'each server advertises the same peer address after kubeadm');
  for (let i = 0; i < 3; i++) assert.equal((JSON.parse((await c.request(i, '/version')).body) as { gitVersion: string }).gitVersion, NEW_VERSION);
  const whole = traffic.window();
  process.stderr.write(`[day] SUMMARY ${JSON.stringify({ steps: steps.map((s) => ({ step: s.step, seconds: Math.round(s.seconds), restarts: s.restarts, kubeletStarts: s.kubeletStarts, requests: s.client.requests, errors: s.client.errors, byStatus: s.client.byStatus })), day: { requests: whole.requests, errors: whole.errors, byStatus: whole.byStatus }, dropped, kubeletStarts: c.nodes.map((n) => c.kubeletStarts(n.index)), apiserverRestartsDuringKubeadm: duringKubeadm, servedNotAfter: Object.fromEntries(names.map((n) => [n, [certsBefore[n]!.served, certsAfterKubeadm[n]!.served, certsAfter[n]!.served]])) })}\n`);
  assert.ok(whole.requests > 100, 'the client ran through the day');

  /** hostname -> the `kubernetes.io/peer-advertise-address` of its kube-apiserver identity Lease (what peers proxy to). */
  async function peerAddresses(): Promise<Record<string, string>> {
    const leases = await c.json<{ items: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } }[] }>('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?labelSelector=apiserver.kubernetes.io%2Fidentity%3Dkube-apiserver');
    const out: Record<string, string> = {};
    for (const l of leases.items) {
      const host = l.metadata.labels?.['kubernetes.io/hostname'];
      const peer = l.metadata.annotations?.['kubernetes.io/peer-advertise-address'];
      if (host && peer) out[host] = peer;
    }
    return Object.fromEntries(Object.entries(out).sort());
  }
});

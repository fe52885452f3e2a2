// The flag proof's shell reads (src/controller/flag-proof-reads.ts): a node's want built from its mirror Pod with the
// driver's own edit and key, and the upgrade's proof Jobs read into proofs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { resolveSpec } from '../../src/api/defaults.ts';
import { advertised, proofJobsOf, proofWant } from '../../src/controller/flag-proof-reads.ts';
import { PROOF_KEY_PATH, proofKey } from '../../src/drivers/flag-proof-job.ts';
import { PROOF_SENTINEL, PROOF_SENTINEL_ERROR } from '../../src/plan/flag-proof.ts';
import { spec } from '../plan/fleet.ts';

const sp = resolveSpec({ ...spec(), driver: { staticPod: {} } });
if (sp.driver.kind !== 'staticPod') throw new Error('static Pod spec expected');
const staticPod = sp.driver.staticPod;

function mirror(command: string[], extra: { args?: string[] } = {}): V1Pod {
  return {
    metadata: { name: 'kube-apiserver-cp-1', namespace: 'kube-system', annotations: { 'kubernetes.io/config.mirror': 'x' } },
    spec: { nodeName: 'cp-1', containers: [{ name: 'kube-apiserver', image: 'registry.k8s.io/kube-apiserver:v1.35.4', command, ...extra }] },
  };
}

test('proofWant: the mirror Pod\'s command under the call\'s edit, the signing key swapped, the sentinel last, keyed like the Job', () => {
  const cmd = ['kube-apiserver', '--etcd-servers=https://127.0.0.1:2379', '--service-account-signing-key-file=/etc/kubernetes/pki/sa.key', '--feature-gates=ServiceTrafficDistribution=true'];
  const w = proofWant(staticPod, 'uid-1', { hostname: 'cp-1', address: '10.0.0.1:6443', gate: true, targetVersion: 'v1.36.3' }, [mirror(cmd)]);
  assert.ok(!('error' in w), JSON.stringify(w));
  assert.equal(w.image, 'registry.k8s.io/kube-apiserver:v1.36.3');
  assert.equal(w.command.at(-1), PROOF_SENTINEL);
  assert.ok(w.command.includes(`--service-account-signing-key-file=${PROOF_KEY_PATH}`));
  assert.ok(w.command.some((e) => e.startsWith('--feature-gates=') && e.includes('ServiceTrafficDistribution=true') && e.includes('UnknownVersionInteroperabilityProxy=true')));
  assert.ok(w.command.includes('--peer-advertise-ip=10.0.0.1'));
  assert.equal(w.key, proofKey({ upgradeUid: 'uid-1', hostname: 'cp-1', image: w.image, args: w.command }));
  const other = proofWant(staticPod, 'uid-1', { hostname: 'cp-1', address: '10.0.0.1:6443', gate: true, targetVersion: 'v1.36.3' }, [mirror([...cmd, '--audit-log-maxage=3'])]);
  assert.ok(!('error' in other) && other.key !== w.key, 'a changed command line is another key');
});

test('proofWant: no mirror Pod, a container with args, an address that is not ip:port: an error naming why', () => {
  const r = { hostname: 'cp-1', address: '10.0.0.1:6443', targetVersion: 'v1.36.3' };
  assert.match(JSON.stringify(proofWant(staticPod, 'u', r, [])), /mirror Pod/);
  assert.match(JSON.stringify(proofWant(staticPod, 'u', r, [mirror(['kube-apiserver'], { args: ['--x=1'] })])), /has args/);
  assert.match(JSON.stringify(proofWant(staticPod, 'u', { ...r, address: 'nowhere' }, [mirror(['kube-apiserver', '--a=1'])])), /not an ip:port/);
  assert.match(JSON.stringify(proofWant(staticPod, 'u', { hostname: 'cp-1', targetVersion: 'v1.36.3' }, [mirror(['kube-apiserver', '--a=1'])])), /not an ip:port/);
});

test('proofWant: a server not seen up is proven at the address its command line advertises', () => {
  assert.equal(advertised(['kube-apiserver', '--advertise-address=10.0.0.7', '--secure-port=8443']), '10.0.0.7:8443');
  assert.equal(advertised(['kube-apiserver', '--advertise-address=fd00::7']), '[fd00::7]:6443');
  assert.equal(advertised(['kube-apiserver']), undefined);
  const w = proofWant(staticPod, 'u', { hostname: 'cp-1', gate: true, targetVersion: 'v1.36.3' }, [mirror(['kube-apiserver', '--advertise-address=10.0.0.7', '--a=1'])]);
  // The proof's peer address is the advertised one, which kube-apiserver advertises without --peer-advertise-*.
  assert.ok(!('error' in w) && w.command.includes('--peer-ca-file=/etc/kubernetes/pki/ca.crt') && !w.command.some((f) => f.startsWith('--peer-advertise-')), JSON.stringify(w));
  const other = proofWant(staticPod, 'u', { hostname: 'cp-1', gate: true, targetVersion: 'v1.36.3', address: '10.0.0.8:6443' }, [mirror(['kube-apiserver', '--advertise-address=10.0.0.7', '--a=1'])]);
  assert.ok(!('error' in other) && other.command.includes('--peer-advertise-ip=10.0.0.8'), JSON.stringify(other));
});

test('proofJobsOf: only this upgrade\'s Jobs; the verdict from its newest Pod; none while it runs', () => {
  const job = (name: string, upgrade: string) => ({ metadata: { name, labels: { 'upgrade.apiserver.dev/upgrade': upgrade }, annotations: { 'upgrade.apiserver.dev/idempotency-key': `key-${name}`, 'upgrade.apiserver.dev/server': 'cp-1' } } });
  const pod = (jobName: string, t: string, terminated?: { exitCode: number; message: string }) => ({
    metadata: { labels: { 'batch.kubernetes.io/job-name': jobName }, creationTimestamp: t },
    status: { containerStatuses: [{ name: 'kube-apiserver', state: terminated ? { terminated } : { running: {} } }] },
  });
  const got = proofJobsOf('mine', [job('a', 'mine'), job('b', 'mine'), job('c', 'theirs')], [
    pod('a', '2026-12-01T10:00:00Z', { exitCode: 1, message: 'Error: unknown flag: --no-such-flag' }),
    pod('a', '2026-12-01T09:00:00Z', { exitCode: 1, message: `E1201 run.go:72] "command failed" err="${PROOF_SENTINEL_ERROR}"` }),
    pod('b', '2026-12-01T10:00:00Z'),
  ]);
  assert.deepEqual(got.map((j) => j.name), ['a', 'b']);
  const a = got[0]!.proof;
  assert.ok(a !== undefined && 'verdict' in a && a.verdict.result === 'Refused' && a.verdict.flag === '--no-such-flag');
  assert.equal(got[1]!.proof, undefined);
});

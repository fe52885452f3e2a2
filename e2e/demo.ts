// The local demo: a real HA control plane (etcd + 3 kube-apiservers v1.35.4 with the Mixed Version Proxy
// gate off, behind haproxy), the operator running as its own process, and one ApiServerUpgrade to
// v1.36.3 through the webhook driver — while a client keeps asking for a resource only v1.36 serves.
//   npm run demo            run it and tear everything down
//   npm run demo -- --keep  keep the cluster and operator until Ctrl-C (prints KUBECONFIG)
import { parseArgs } from 'node:util';
import { OLD_VERSION, NEW_VERSION, waitFor, sleep } from './cluster/index.ts';
import { createUpgrade, getUpgrade } from './support/operator.ts';
import type { TrafficRecorder } from './support/traffic.ts';
import { startRig, upgradeManifest, NEW_ONLY } from './support/rig.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const { values } = parseArgs({ options: { keep: { type: 'boolean', default: false }, 'health-port': { type: 'string', default: '18080' } } });
const say = (s: string): void => void process.stdout.write(`${s}\n`);

say(`apiserver-upgrade-operator demo: ${OLD_VERSION} -> ${NEW_VERSION} on 3 real kube-apiservers behind haproxy`);
say('(first run builds kube-apiserver and etcd from the Go module proxy: a few minutes; cached afterwards)');
const t0 = Date.now();
const rig = await startRig({ gate: false, healthPort: Number(values['health-port']), trafficMaxMs: 15 * 60_000 });
const { cluster, hook, op, traffic } = rig;
process.once('SIGINT', () => void rig.teardown().then(() => process.exit(130)));

try {
  say(`operator running (pid ${op.child.pid}); logs: ${op.logPath}; metrics: http://127.0.0.1:${op.healthPort}/metrics`);
  const manifest = upgradeManifest('demo-to-v1-36', hook, { proxy: { gate: 'Auto' }, analysis: { onBreach: 'Pause' } });
  // Print it as a user would write it: the CA bundle is a long base64 blob.
  say(`\napplying:\n${JSON.stringify(manifest, null, 2).replace(hook.caBundle, '<the cluster CA, base64>')}\n`);
  await createUpgrade(cluster, manifest);

  let last = '';
  const final = await waitFor('the upgrade to finish', 10 * 60_000, async () => {
    const u = await getUpgrade(cluster, 'demo-to-v1-36');
    if (!u) return undefined;
    const line = render(u, traffic);
    if (line !== last) say(line);
    last = line;
    const phase = u.status?.phase;
    return phase === 'Succeeded' || phase === 'Paused' || phase === 'Failed' || phase === 'RolledBack' ? u : undefined;
  }, 1000);
  await hook.idle();
  await traffic.stop();
  const firstNew = Math.min(...[...hook.calls.values()].filter((c) => c.action === 'Upgrade' && c.doneAt).map((c) => c.doneAt!));
  say(`\n${final.status?.phase} in ${((Date.now() - t0) / 1000).toFixed(0)} s (including the cluster start).`);
  say(`driver calls: ${[...hook.calls.values()].map((c) => `${c.action}:${c.hostname} x${c.deliveries}`).join(', ')}`);
  say(`client answers for ${NEW_ONLY}: before any server ran ${NEW_VERSION} ${JSON.stringify(traffic.summary(0, firstNew))}; after ${JSON.stringify(traffic.summary(firstNew))}`);
  say(`the operator ${op.exits.length === 0 ? 'never restarted' : `exited ${op.exits.length} time(s)`}, though every server it talked to was replaced twice.`);
  if (values.keep) {
    say(`\nkept running. export KUBECONFIG=${cluster.kubeconfig}; kubectl get asu -o wide. Ctrl-C tears it all down.`);
    await new Promise(() => undefined);
  }
} finally {
  if (!values.keep) await rig.teardown();
}
await sleep(0);

function render(u: ApiServerUpgrade, t: TrafficRecorder): string {
  const s = u.status ?? {};
  const servers = (s.peers ?? []).map((p) => `${p.hostname}=${p.version ?? '?'}${p.proxyGate === 'Enabled' ? '+proxy' : ''}${p.ready ? '' : '(down)'}`).join(' ');
  const t404 = t.count((x) => x.status === 404);
  const t200 = t.count((x) => x.status === 200);
  return `${new Date().toISOString().slice(11, 19)} ${String(s.phase ?? 'Pending').padEnd(13)} batch ${s.batch?.progress ?? '-'}  ${servers}  | client 200:${t200} 404:${t404}${s.pause ? `  PAUSED ${s.pause.reason}: ${s.pause.message}` : ''}`;
}

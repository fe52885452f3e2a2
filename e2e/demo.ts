// The local demo: a real HA control plane (etcd + 3 kube-apiservers v1.35.4 with the Mixed Version Proxy
// gate off, behind haproxy), the operator running as its own process, and one ApiServerUpgrade to
// v1.36.3 through the webhook driver — while a client keeps asking for a resource only v1.36 serves.
//   npm run demo            run it and tear everything down; exits 1 unless the upgrade Succeeded
//   npm run demo -- --keep  keep the cluster and operator until Ctrl-C (prints KUBECONFIG)
// First it sets up what it needs (scripts/setup.ts): system packages, and etcd and both kube-apiservers built
// in parallel, with progress, before anything starts. The closing summary is computed from what happened: the
// webhook's own log of the calls it received and carried out, and the phase on the object.
import { parseArgs } from 'node:util';
import { OLD_VERSION, NEW_VERSION, waitFor, sleep } from './cluster/index.ts';
import type { ReceivedCall, ReplaceWebhook } from './cluster/index.ts';
import { createUpgrade, getUpgrade } from './support/operator.ts';
import type { TrafficRecorder } from './support/traffic.ts';
import { startRig, upgradeManifest, NEW_ONLY, type Rig } from './support/rig.ts';
import { setup } from '../scripts/setup.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const { values } = parseArgs({ options: { keep: { type: 'boolean', default: false }, 'health-port': { type: 'string', default: '18080' } } });
const say = (s: string): void => void process.stdout.write(`${s}\n`);
const secs = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
const gate = (on: boolean | undefined): string => (on ? '+proxy' : '');
const TERMINAL = new Set(['Succeeded', 'Paused', 'Failed', 'RolledBack']);
const NAME = 'demo-to-v1-36';

say(`apiserver-upgrade-operator demo: ${OLD_VERSION} -> ${NEW_VERSION} on 3 real kube-apiservers behind haproxy`);
const t0 = Date.now();
try {
  await setup(['demo']);
} catch (err) {
  say(`\ncannot run the demo: ${(err as Error).message}`);
  process.exit(1);
}
const tBuilt = Date.now();

const rig: Rig = await startRig({ gate: false, healthPort: Number(values['health-port']), trafficMaxMs: 15 * 60_000 });
const { cluster, hook, op, traffic } = rig;
process.once('SIGINT', () => void rig.teardown().then(() => process.exit(130)));
const tUp = Date.now();

let ok = false;
try {
  say(`cluster up in ${secs(tUp - tBuilt)}; operator running (pid ${op.child.pid}); logs: ${op.logPath}; metrics: http://127.0.0.1:${op.healthPort}/metrics`);
  const manifest = upgradeManifest(NAME, hook, { proxy: { gate: 'Auto' }, analysis: { onBreach: 'Pause' } });
  // Print it as a user would write it: the CA bundle is a long base64 blob.
  say(`\napplying:\n${JSON.stringify(manifest, null, 2).replace(hook.caBundle, '<the cluster CA, base64>')}\n`);
  await createUpgrade(cluster, manifest);
  const tApplied = Date.now();

  let last = '';
  let seen: ApiServerUpgrade | undefined;
  let final: ApiServerUpgrade | undefined;
  try {
    final = await waitFor('the upgrade to finish', 10 * 60_000, async () => {
      const u = await getUpgrade(cluster, NAME);
      if (!u) return undefined;
      seen = u;
      const l = render(u, traffic);
      if (l !== last) say(l);
      last = l;
      return TERMINAL.has(u.status?.phase ?? '') ? u : undefined;
    }, 1000);
  } catch (err) {
    say(`\n${(err as Error).message}`);
  }
  const tEnd = Date.now();
  await hook.idle();
  await traffic.stop();
  const u = final ?? seen;
  ok = final?.status?.phase === 'Succeeded';
  say('');
  for (const l of summary({ u, finished: final !== undefined, hook, traffic, buildMs: tBuilt - t0, startMs: tUp - tBuilt, upgradeMs: tEnd - tApplied, endedAt: tEnd, exits: op.exits.length })) say(l);
  if (!ok) say(`\nexit 1: the upgrade ended ${u?.status?.phase ?? 'without a status'}${u?.status?.pause ? ` (${u.status.pause.reason})` : ''}, not Succeeded.`);
  if (values.keep) {
    say(`\nkept running. export KUBECONFIG=${cluster.kubeconfig}; kubectl get asu -o wide. Ctrl-C tears it all down.`);
    await new Promise(() => undefined);
  }
} finally {
  if (!values.keep) await rig.teardown();
}
await sleep(0);
process.exitCode = ok ? 0 : 1;

function render(u: ApiServerUpgrade, t: TrafficRecorder): string {
  const s = u.status ?? {};
  const servers = (s.peers ?? []).map((p) => `${p.hostname}=${p.version ?? '?'}${p.proxyGate === 'Enabled' ? '+proxy' : ''}${p.ready ? '' : '(down)'}`).join(' ');
  const t404 = t.count((x) => x.status === 404);
  const t200 = t.count((x) => x.status === 200);
  return `${new Date().toISOString().slice(11, 19)} ${String(s.phase ?? 'Pending').padEnd(13)} batch ${s.batch?.progress ?? '-'}  ${servers}  | client 200:${t200} 404:${t404}${s.pause ? `  PAUSED ${s.pause.reason}: ${s.pause.message}` : ''}`;
}

/** The closing summary, from the object's status and the hook's own log: nothing in it is assumed. */
function summary(o: { u: ApiServerUpgrade | undefined; finished: boolean; hook: ReplaceWebhook; traffic: TrafficRecorder; buildMs: number; startMs: number; upgradeMs: number; endedAt: number; exits: number }): string[] {
  const out: string[] = [];
  const st = o.u?.status;
  const phase = st?.phase ?? '(no status)';
  const succeeded = o.finished && phase === 'Succeeded';
  out.push(`${succeeded ? 'Succeeded' : `NOT SUCCEEDED: phase ${phase}${o.finished ? '' : ' when the demo stopped waiting (10 min)'}`}: upgrade ${secs(o.upgradeMs)}, cluster start ${secs(o.startMs)}, setup and builds ${secs(o.buildMs)}.`);
  if (!succeeded) {
    if (st?.pause) out.push(`  paused: ${st.pause.reason}: ${st.pause.message}`);
    for (const c of st?.conditions ?? []) if (c.type !== 'Complete' && (c.status === 'True') === (c.type === 'Paused' || c.type === 'Degraded')) out.push(`  condition ${c.type}=${c.status} (${c.reason}): ${c.message}`);
  }

  // What the webhook received and did, per server, from its own log.
  const calls = [...o.hook.calls.values()].sort((a, b) => a.at - b.at);
  const byServer = new Map<string, ReceivedCall[]>();
  for (const c of calls) byServer.set(c.hostname, [...(byServer.get(c.hostname) ?? []), c]);
  const refused = o.hook.log.filter((e) => e.event === 'refused' || e.event === 'rejected');
  const replaced = calls.filter((c) => c.outcome === 'done').length;
  out.push(`the replacement webhook received ${calls.length} call(s) and carried out ${replaced}${refused.length ? `; it refused ${refused.length}` : ''} (from its own log${values.keep ? `, ${o.hook.logPath}` : ''}):`);
  for (const [host, cs] of [...byServer].sort(([a], [b]) => a.localeCompare(b))) {
    const steps = cs.map((c) => {
      const took = c.startedAt && c.doneAt ? ` ${secs(c.doneAt - c.startedAt)}` : '';
      const change = c.from && c.to ? `${c.from.version}${gate(c.from.proxyGate)} -> ${c.to.version}${gate(c.to.proxyGate)}` : `-> ${c.targetVersion}`;
      const dup = c.deliveries > 1 ? `, delivered ${c.deliveries} times` : '';
      const late = c.doneAt !== undefined && c.doneAt > o.endedAt ? ' (after the upgrade had stopped)' : '';
      return `${c.action} ${change} ${c.outcome === 'done' ? `done${took}${late}` : c.outcome}${c.error ? ` (${c.error.split('\n')[0]})` : ''}${dup}`;
    });
    out.push(`  ${host}: ${steps.join('; ')}`);
  }
  for (const e of refused) out.push(`  refused ${e.action ?? '?'} ${e.hostname ?? '?'} (HTTP ${e.status}): ${e.detail}`);
  const recorded = st?.driverCalls?.length;
  if (recorded !== undefined && recorded !== calls.length) out.push(`  (status.driverCalls lists ${recorded} call(s); the hook received ${calls.length} distinct key(s))`);

  // Where the servers are now, as the cluster runs them.
  out.push(`servers now: ${cluster.servers.map((s) => `${s.hostname}=${s.config.version}${gate(s.proxyGate)}${s.running ? '' : '(stopped)'}`).join(' ')}`);

  const upgraded = calls.filter((c) => c.action === 'Upgrade' && c.doneAt !== undefined).map((c) => c.doneAt!);
  if (upgraded.length > 0) {
    const firstNew = Math.min(...upgraded);
    out.push(`client answers for ${NEW_ONLY}: before any server ran ${NEW_VERSION} ${JSON.stringify(o.traffic.summary(0, firstNew))}; after ${JSON.stringify(o.traffic.summary(firstNew))}`);
  } else {
    out.push(`client answers for ${NEW_ONLY} (no server reached ${NEW_VERSION}): ${JSON.stringify(o.traffic.summary())}`);
  }
  const servers = new Set(calls.filter((c) => c.outcome === 'done').map((c) => c.hostname)).size;
  out.push(o.exits === 0
    ? `the operator process never exited, through ${replaced} replacement(s) of ${servers} of the ${cluster.servers.length} servers it reaches through haproxy.`
    : `the operator process exited ${o.exits} time(s) during the run (see its log).`);
  return out;
}

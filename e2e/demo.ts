// The local demo: a real HA control plane (etcd + 3 kube-apiservers v1.35.4 with the Mixed Version Proxy
// gate off, behind haproxy), the operator running as its own process, and one ApiServerUpgrade to
// v1.36.3 through the webhook driver — while a client keeps asking for a resource only v1.36 serves.
//   npm run demo             run it and tear everything down; exits 1 unless the upgrade Succeeded
//   npm run demo -- --fault  kill the server upgraded in batch 1 once batch 2 starts: the analysis sees it down
//                            (serverReady), the upgrade pauses (AnalysisBreach), and promtool evaluates the chart's
//                            alert rules on the operator's real apiserver_upgrade_paused series: the page fires.
//                            Exits 0 when the pause and the alert were shown.
//   npm run demo -- --keep   keep the cluster and operator until Ctrl-C (prints KUBECONFIG); with --fault the
//                            killed server is started again, so the upgrade can be resumed by hand
// First it sets up what it needs (scripts/setup.ts): system packages, and etcd and both kube-apiservers built
// in parallel, with progress, before anything starts (with --fault also helm and promtool). While it runs it
// shows the plugin's `get` view (redrawn in place on a terminal, a line per change otherwise). The closing
// summary is computed from what happened: the webhook's own log of the calls it received and carried out,
// and the phase on the object.
import { parseArgs } from 'node:util';
import { OLD_VERSION, NEW_VERSION, waitFor, sleep } from './cluster/index.ts';
import type { ReceivedCall, ReplaceWebhook } from './cluster/index.ts';
import { createUpgrade, getUpgrade } from './support/operator.ts';
import type { TrafficRecorder } from './support/traffic.ts';
import { startRig, upgradeManifest, NEW_ONLY, type Rig } from './support/rig.ts';
import { setup } from '../scripts/setup.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';
import { buildGetView, renderGet, type GetView } from '../src/cli/get-view.ts';
import { LiveView, upgradeEvents } from './demo/live-view.ts';
import { pageFromPause, type PageResult } from './demo/page.ts';

const { values } = parseArgs({ options: { keep: { type: 'boolean', default: false }, fault: { type: 'boolean', default: false }, 'health-port': { type: 'string', default: '18080' } } });
const say = (s: string): void => void process.stdout.write(`${s}\n`);
const secs = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
const gate = (on: boolean | undefined): string => (on ? '+proxy' : '');
const TERMINAL = new Set(['Succeeded', 'Paused', 'Failed', 'RolledBack']);
const NAME = 'demo-to-v1-36';
const FAULT_BATCH = 2;
const PLUGIN = 'src/cli/kubectl-apiserver_upgrade';

interface Fault {
  /** The server killed, and when. */
  host?: string;
  index?: number;
  killedAt?: number;
  /** When the operator's status first said Paused. */
  pausedAt?: number;
  page?: PageResult;
  pageError?: string;
}

say(`apiserver-upgrade-operator demo: ${OLD_VERSION} -> ${NEW_VERSION} on 3 real kube-apiservers behind haproxy${values.fault ? ' (--fault: a server fails during batch 2)' : ''}`);
const t0 = Date.now();
try {
  await setup(values.fault ? ['demo', 'tools'] : ['demo']);
} catch (err) {
  say(`\ncannot run the demo: ${(err as Error).message}`);
  process.exit(1);
}
const tBuilt = Date.now();

const rig: Rig = await startRig({ gate: false, healthPort: Number(values['health-port']), trafficMaxMs: 15 * 60_000 });
const { cluster, hook, op, traffic } = rig;
process.once('SIGINT', () => void rig.teardown().then(() => process.exit(130)));
const tUp = Date.now();
const metricsUrl = `http://127.0.0.1:${op.healthPort}/metrics`;

let ok = false;
const fault: Fault | undefined = values.fault ? {} : undefined;
try {
  say(`cluster up in ${secs(tUp - tBuilt)}; operator running (pid ${op.child.pid}); logs: ${op.logPath}; metrics: ${metricsUrl}`);
  const manifest = upgradeManifest(NAME, hook, { proxy: { gate: 'Auto' }, analysis: { onBreach: 'Pause' } });
  // Print it as a user would write it: the CA bundle is a long base64 blob.
  say(`\napplying:\n${JSON.stringify(manifest, null, 2).replace(hook.caBundle, '<the cluster CA, base64>')}\n`);
  if (fault) say(`fault: once batch ${FAULT_BATCH} starts, the server upgraded in batch 1 is killed (SIGKILL, as a crash): the analysis must notice it (serverReady), pause the upgrade after failureLimit breaching checks, and the chart's ApiServerUpgradePaused alert must fire.\n`);
  await createUpgrade(cluster, manifest);
  const tApplied = Date.now();

  const view = new LiveView(cluster, traffic, `apiserver-upgrade-operator demo: ${OLD_VERSION} -> ${NEW_VERSION}${fault ? ' --fault' : ''}   (the plugin's view: kubectl apiserver-upgrade get ${NAME} -w)`);
  let note: string | undefined;
  let seen: ApiServerUpgrade | undefined;
  let final: ApiServerUpgrade | undefined;
  try {
    final = await waitFor('the upgrade to finish', 10 * 60_000, async () => {
      const u = await getUpgrade(cluster, NAME);
      if (!u) return undefined;
      seen = u;
      if (fault && fault.killedAt === undefined && u.status?.phase === 'Upgrading' && (u.status.batch?.current ?? 0) >= FAULT_BATCH) {
        const host = u.status.plan?.batches?.find((b) => b.index === FAULT_BATCH - 1)?.servers[0];
        const index = cluster.servers.findIndex((s) => s.hostname === host);
        if (host && index >= 0) {
          await cluster.kill(index);
          Object.assign(fault, { host, index, killedAt: Date.now() });
          note = `FAULT ${new Date().toISOString().slice(11, 19)}: killed ${host} (upgraded in batch 1, ready on ${NEW_VERSION}) as batch ${FAULT_BATCH} began`;
        }
      }
      if (fault && u.status?.phase === 'Paused' && fault.pausedAt === undefined) fault.pausedAt = Date.now();
      await view.draw(u, note);
      return TERMINAL.has(u.status?.phase ?? '') ? u : undefined;
    }, 1000);
  } catch (err) {
    say(`\n${(err as Error).message}`);
  }
  const tEnd = Date.now();
  let pausedView: GetView | undefined;
  if (fault && final?.status?.phase === 'Paused') {
    pausedView = buildGetView(final, await upgradeEvents(cluster, NAME), 10);
    if (!view.tty) say(`\nthe pause, as the plugin shows it (kubectl apiserver-upgrade get ${NAME}):\n\n${renderGet(pausedView, new Date())}`);
    say(`\npaging: the chart's PrometheusRule (helm template, prometheusRule.enabled=true) evaluated by promtool on the operator's apiserver_upgrade_paused series, scraped from ${metricsUrl} now, during the pause:`);
    try {
      fault.page = await pageFromPause(metricsUrl);
      const p = fault.page;
      for (const l of p.scraped) say(`  scraped: ${l}`);
      say(`  promtool test rules (the series held for 5m on promtool's clock; the rule waits for: ${p.forDuration}) reports the alert firing at 2m:`);
      say(`    ${/Labels:\{.*\}/.exec(p.got)?.[0] ?? p.got.split('\n')[0]}`);
      say('    Annotations:');
      for (const [k, v] of Object.entries(p.annotations)) say(`      ${k}: ${v}`);
      say(`  ${p.confirmed ? 'confirmed: a second promtool run expecting exactly this alert at 2m, and none at 30s (before its for:), passes' : 'NOT confirmed: promtool did not pass a run expecting exactly this alert'}`);
      say(`\nALERT ${p.labels.severity ?? ''} ApiServerUpgradePaused{upgrade="${p.labels.upgrade ?? ''}", reason="${p.labels.reason ?? ''}"}: ${p.annotations.summary ?? ''}\n  ${p.annotations.description ?? ''}\n  runbook: ${p.annotations.runbook_url ?? p.annotations.runbook ?? ''}`);
    } catch (err) {
      fault.pageError = (err as Error).message;
      say(`  the alert could not be evaluated: ${fault.pageError}`);
    }
    say(`\nwhat an operator does now (KUBECONFIG=${cluster.kubeconfig}):`);
    say(`  see why:  ${PLUGIN} get ${NAME}     (or: kubectl describe asu ${NAME})`);
    say(`  fix the cause (here: start ${fault.host ?? 'the killed server'} again), then resume: ${PLUGIN} resume ${NAME}`);
    say(`  or roll every upgraded server back to ${OLD_VERSION}: ${PLUGIN} abort ${NAME}`);
    if (pausedView?.pause) say(`  (the view says: ${pausedView.pause.howToResume})`);
  }
  await hook.idle();
  await traffic.stop();
  const u = final ?? seen;
  ok = fault
    ? final?.status?.phase === 'Paused' && fault.killedAt !== undefined && fault.page?.confirmed === true
    : final?.status?.phase === 'Succeeded';
  say('');
  for (const l of summary({ u, finished: final !== undefined, hook, traffic, buildMs: tBuilt - t0, startMs: tUp - tBuilt, upgradeMs: tEnd - tApplied, endedAt: tEnd, exits: op.exits.length, fault })) say(l);
  if (!ok) {
    say(fault
      ? `\nexit 1: --fault expected the upgrade to pause after ${fault.host ?? 'the batch-1 server'} was killed and the alert to fire; it ended ${u?.status?.phase ?? 'without a status'}${fault.killedAt === undefined ? ' and the fault was never injected' : ''}${fault.pageError ? `; the alert: ${fault.pageError}` : ''}.`
      : `\nexit 1: the upgrade ended ${u?.status?.phase ?? 'without a status'}${u?.status?.pause ? ` (${u.status.pause.reason})` : ''}, not Succeeded.`);
  }
  if (values.keep) {
    if (fault?.index !== undefined) {
      await cluster.start(fault.index);
      say(`\n${fault.host} started again (on ${cluster.servers[fault.index]!.config.version}): the cause is fixed, the upgrade can be resumed: ${PLUGIN} resume ${NAME} --kubeconfig ${cluster.kubeconfig}`);
    }
    say(`\nkept running. export KUBECONFIG=${cluster.kubeconfig}; kubectl get asu -o wide. Ctrl-C tears it all down.`);
    await new Promise(() => undefined);
  }
} finally {
  if (!values.keep) await rig.teardown();
}
await sleep(0);
process.exitCode = ok ? 0 : 1;

/** The closing summary, from the object's status and the hook's own log: nothing in it is assumed. */
function summary(o: { u: ApiServerUpgrade | undefined; finished: boolean; hook: ReplaceWebhook; traffic: TrafficRecorder; buildMs: number; startMs: number; upgradeMs: number; endedAt: number; exits: number; fault: Fault | undefined }): string[] {
  const out: string[] = [];
  const st = o.u?.status;
  const phase = st?.phase ?? '(no status)';
  const succeeded = o.finished && phase === 'Succeeded';
  const f = o.fault;
  const times = `cluster start ${secs(o.startMs)}, setup and builds ${secs(o.buildMs)}`;
  if (f) {
    const paused = phase === 'Paused' && f.killedAt !== undefined;
    out.push(paused
      ? `Paused, as the fault asked (the upgrade did NOT finish: it stopped with servers on mixed versions and waits for a human): ${secs(o.upgradeMs)} from apply to the end of the run, ${times}.`
      : `NOT as expected: phase ${phase}${f.killedAt === undefined ? ', and the fault was never injected' : ''}${o.finished ? '' : ' when the demo stopped waiting (10 min)'}: ${secs(o.upgradeMs)}, ${times}.`);
    if (f.killedAt !== undefined) {
      const since = st?.pause?.since ? Date.parse(st.pause.since) : f.pausedAt;
      out.push(`  fault: ${f.host} killed at ${new Date(f.killedAt).toISOString().slice(11, 19)}; ${since !== undefined ? `the operator paused ${secs(since - f.killedAt)} later` : 'no pause seen'}${st?.pause ? ` (${st.pause.reason}: ${st.pause.message})` : ''}`);
      const breaches = st?.lastAnalysis?.breaches ?? [];
      if (breaches.length) out.push(`  last analysis: ${st?.lastAnalysis?.verdict}, ${st?.lastAnalysis?.consecutiveBreaches ?? 0} breaching check(s) in a row: ${breaches.map((b) => `${b.signal}${b.server ? `@${b.server}` : ''} ${b.observed ?? '?'} (threshold ${b.threshold ?? '?'})`).join('; ')}`);
    }
    out.push(f.page
      ? `  page: promtool fired ApiServerUpgradePaused ${JSON.stringify(f.page.labels)} on the scraped series${f.page.confirmed ? ' (confirmed by a second run)' : ' (NOT confirmed by the second run)'}`
      : `  page: none${f.pageError ? ` (${f.pageError.split('\n')[0]})` : ''}`);
  } else {
    out.push(`${succeeded ? 'Succeeded' : `NOT SUCCEEDED: phase ${phase}${o.finished ? '' : ' when the demo stopped waiting (10 min)'}`}: upgrade ${secs(o.upgradeMs)}, ${times}.`);
  }
  if (!succeeded && !f) {
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

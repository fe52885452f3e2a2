// The cluster harness from the command line:
//   npm run cluster -- up [--servers 3] [--version v1.35.4]   start a cluster and keep it until Ctrl-C
//   npm run cluster -- down                                   remove every cluster left behind
//   npm run cluster -- build [versions...]                    build/cache the binaries
import { parseArgs } from 'node:util';
import { Cluster } from './cluster.ts';
import { sweepStale } from './cleanup.ts';
import { ensureBinaries, ETCD_VERSION, NEW_VERSION, OLD_VERSION } from './binaries.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { servers: { type: 'string', default: '3' }, version: { type: 'string', default: OLD_VERSION }, gate: { type: 'string' } },
});
const cmd = positionals[0] ?? 'up';

if (cmd === 'down') {
  console.log(`removed ${sweepStale(true)} cluster(s)`);
} else if (cmd === 'build') {
  // etcd and the kube-apiservers, in parallel, each with a live progress line (see binaries.ts).
  const versions = positionals.length > 1 ? positionals.slice(1) : [OLD_VERSION, NEW_VERSION];
  const t0 = Date.now();
  const paths = await ensureBinaries([{ what: 'etcd', version: ETCD_VERSION }, ...versions.map((version) => ({ what: 'kube-apiserver' as const, version }))]);
  console.log(paths.join('\n'));
  console.log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
} else if (cmd === 'up') {
  const featureGates: Record<string, boolean> = values.gate === undefined ? {} : { UnknownVersionInteroperabilityProxy: values.gate === 'on' };
  const t0 = Date.now();
  const c = await Cluster.start({ servers: Number(values.servers), version: values.version, featureGates, verbose: true });
  console.log(`cluster up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`export KUBECONFIG=${c.kubeconfig}`);
  for (const s of c.servers) console.log(`${s.name}\t${s.address}\t${s.config.version}\tgate=${s.proxyGate ? 'on' : 'off'}\tlog=${s.logPath}`);
  console.log('Ctrl-C tears it down.');
  await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  await c.teardown();
} else {
  console.error(`unknown command ${cmd}: up | down | build`);
  process.exit(2);
}

// The operator's direct client in a process of its own with the chart's heap (NODE_OPTIONS
// --max-semi-space-size=4 --max-old-space-size=160), asking a hostile server for everything the fleet observer
// asks, as many times at once as a four-server observation does. Prints one JSON line: each answer's outcome and
// the process's peak RSS (VmHWM). Run by test/observe/hostile-server.test.ts.
import { readFileSync } from 'node:fs';
import { fixtureDirectClient } from '../fixture-server.ts';
import { capExceeded } from '../../../src/runtime/body-limits.ts';
import { SIGNAL_FAMILIES } from '../../../src/observe/signals.ts';
import { DirectClient } from '../../../src/observe/direct-client.ts';

const address = process.argv[2]!;
const client = fixtureDirectClient();
// The slow body: the same client settings but a short deadline, so the test does not wait 10 s.
const ca = Buffer.from(readFileSync(new URL('../tls/cp-1.crt', import.meta.url)));
const impatient = new DirectClient(async () => ({ headers: {}, ca, rejectUnauthorized: true }), { timeoutMs: 2_000 });

const outcome = async (what: string, p: Promise<unknown>): Promise<{ what: string; result: string }> => {
  try {
    await p;
    return { what, result: 'answered' };
  } catch (err) {
    const cap = capExceeded(err);
    return { what, result: cap ? `cap:${cap.cap}` : `error:${err instanceof Error ? err.message : String(err)}` };
  }
};

const asks: Promise<{ what: string; result: string }>[] = [];
// Four servers' worth: own and peer-aggregated, /apis and /api, and a /metrics scrape each.
for (let server = 0; server < 4; server++) {
  for (const peer of [false, true]) {
    asks.push(outcome(`apis peer=${peer}`, client.discovery(address, { peer, core: false })));
    asks.push(outcome(`api peer=${peer}`, client.discovery(address, { peer, core: true })));
  }
  asks.push(outcome('metrics', client.metrics(address, SIGNAL_FAMILIES)));
  asks.push(outcome('storage', client.resourceList(address, '/apis/brackets/v1')));
}
asks.push(outcome('slow', impatient.resourceList(address, '/apis/slow/v1')));
const results = await Promise.all(asks);
client.close();
impatient.close();
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
process.stdout.write(`${JSON.stringify({ results, vmHWMKiB: Number(hwm) })}\n`);

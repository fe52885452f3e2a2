// Issue 21: nothing a server sends can exhaust the operator. One hostile "apiserver" answers /apis with 200 MiB,
// /api with a gzip bomb (1 GiB from ~1 MiB on the wire), /metrics with a bomb (millions of series, then a line
// that never ends), a legacy document of nested brackets, and a body that trickles. The operator's direct client
// asks for all of it as a four-server observation would, in a process with the chart's heap
// (--max-old-space-size=160): it stays up, every oversize answer is a named cap, the slow one ends at its
// deadline, and its peak RSS (VmHWM) is printed and stays under the Pod's 384 Mi limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { tlsMaterial } from './fixture-server.ts';
import { startHostileServer } from '../support/hostile-server.ts';

test('a hostile server: 200 MiB discovery, a gzip bomb, a /metrics bomb, nested JSON and a slow body; the client process stays within the heap', async (t) => {
  const server = await startHostileServer(tlsMaterial(1));
  t.after(() => server.close());
  const { served, address } = server;
  const child = spawn(process.execPath, [new URL('./hostile/client.ts', import.meta.url).pathname, address], {
    env: { ...process.env, NODE_OPTIONS: '--max-semi-space-size=4 --max-old-space-size=160' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  assert.equal(code, 0, `the client process ended: ${err.slice(-2000)}`);
  const report = JSON.parse(out.trim().split('\n').at(-1)!) as { results: { what: string; result: string }[]; vmHWMKiB: number };
  const by = (what: string) => [...new Set(report.results.filter((r) => r.what.startsWith(what)).map((r) => r.result))];
  assert.deepEqual(by('apis'), ['cap:bytes'], JSON.stringify(report.results));
  assert.deepEqual(by('api '), ['cap:bytes']);
  assert.deepEqual(by('metrics'), ['cap:keptSamples']);
  assert.deepEqual(by('storage'), ['cap:jsonContainers']);
  assert.equal(by('slow').length, 1);
  assert.match(by('slow')[0]!, /^error:.*(no answer within 2000ms|aborted)/);
  // Each of the 8 /apis reads stopped soon after its 4 MiB cap (what the server wrote includes its socket
  // buffers): far less than the 1600 MiB offered.
  assert.ok((served.get('/apis') ?? 0) < 128 * 1024 * 1024, `served /apis ${served.get('/apis')}`);
  const mib = Math.round(report.vmHWMKiB / 1024);
  t.diagnostic(`peak RSS (VmHWM) of the client process: ${mib} MiB`);
  console.log(`hostile server: peak RSS (VmHWM) of the client process with --max-old-space-size=160: ${mib} MiB`);
  assert.ok(mib < 384, `peak RSS ${mib} MiB`);
});

// The gate's unknown span around a Prometheus fault (e2e/campaign/start-conditions.ts): a restarted Prometheus is
// unknown to the gate until it answers the gate's query with a sample, neither sooner (its first answers are refusals
// and empty results) nor later (the harness's own wait for every apiserver target ends seconds after).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StartConditions } from '../../e2e/campaign/start-conditions.ts';
import { drawUpgrade, type Schedule } from '../../e2e/campaign/schedule.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A stand-in for Prometheus's query API: refusing (503) until `emptyAt`, empty until `sampleAt`, then a sample. */
async function queryApi(emptyAt: number, sampleAt: number): Promise<{ url: string; close: () => void }> {
  const server = createServer((_req, res) => {
    const now = Date.now();
    if (now < emptyAt) return void res.writeHead(503).end('Service Unavailable');
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: now < sampleAt ? [] : [{ metric: {}, value: [now / 1000, '1'] }] } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

function gated(): Schedule {
  const s = drawUpgrade(1, 0);
  return { ...s, spec: { ...s.spec, startGate: true, window: undefined, expiringCert: undefined }, faults: [] };
}

async function conditions(url: string): Promise<StartConditions> {
  const c = await StartConditions.prepare(gated(), mkdtempSync(join(tmpdir(), 'auo-start-')));
  const spec: Record<string, unknown> = {};
  await c.beforeCreate(spec, url, () => Promise.reject(new Error('no request expected')));
  assert.ok(spec.gates, 'the spec got its gate');
  return c;
}

test('a restarted Prometheus is unknown to the gate until it answers the gate query with a sample', async () => {
  const t0 = Date.now();
  const api = await queryApi(t0 + 400, t0 + 900);
  const c = await conditions(api.url);
  try {
    await c.prometheusOut(async (restarting) => {
      restarting();
      await sleep(50);
    });
    const [span] = c.recorded(Date.now()).gate!.unknown;
    assert.ok(span && span.from >= t0 && span.from < t0 + 50);
    assert.ok(span.to >= t0 + 900, `not before the first sample: ${span.to - t0} ms`);
    assert.ok(span.to < t0 + 1500, `soon after it: ${span.to - t0} ms`);
  } finally {
    api.close();
    await c.close();
  }
});

test('a Prometheus fault that does not restart it is unknown to the gate until the fault ends', async () => {
  const t0 = Date.now();
  const api = await queryApi(t0, t0);
  const c = await conditions(api.url);
  try {
    await c.prometheusOut(() => sleep(300));
    const [span] = c.recorded(Date.now()).gate!.unknown;
    // A timer runs on the event loop's cached millisecond clock, so by Date.now() a 300 ms sleep can end at 299 ms.
    assert.ok(span && span.to - span.from >= 298 && span.to - span.from < 600, JSON.stringify(span));
  } finally {
    api.close();
    await c.close();
  }
});

// Issue 21: every body has a cap counted before it is parsed. The JSON structure bound, the slots that bound how
// many big bodies are in memory at once, and readBody's cap on the decompressed size (a gzip bomb stops at it).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, get as httpGet, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { BodyCapExceeded, capExceeded, checkJsonContainers, parseBoundedJson, Slots } from '../../src/runtime/body-limits.ts';
import { readBody } from '../../src/runtime/https-call.ts';

/** Objects and arrays of a parsed value, counted the slow way. */
function containers(v: unknown): number {
  if (Array.isArray(v)) return 1 + v.reduce((n: number, x) => n + containers(x), 0);
  if (v !== null && typeof v === 'object') return 1 + Object.values(v).reduce((n: number, x) => n + containers(x), 0);
  return 0;
}

describe('checkJsonContainers', () => {
  it('counts exactly the objects and arrays of any JSON, brackets and escapes inside strings included', () => {
    fc.assert(fc.property(fc.jsonValue(), fc.string(), (v, s) => {
      const doc = { v, s: `${s}[{\\"}]`, k: ['"[', '\\', '{'] };
      const text = JSON.stringify(doc);
      const n = containers(JSON.parse(text));
      checkJsonContainers(text, n);
      assert.throws(() => checkJsonContainers(text, n - 1), BodyCapExceeded);
    }), { numRuns: 300 });
  });

  it('refuses `[{},{},...]` of 4 MiB (~90 MiB once parsed) before parsing it', () => {
    const text = `[${'{},'.repeat(1_400_000)}{}]`;
    assert.throws(() => parseBoundedJson(text), (err: unknown) => err instanceof BodyCapExceeded && err.cap === 'jsonContainers');
  });

  it('finds the cap behind a wrapping error', () => {
    const inner = new BodyCapExceeded('bytes', 10, 'x');
    assert.equal(capExceeded(new Error('outer', { cause: inner })), inner);
    assert.equal(capExceeded(new Error('plain')), undefined);
  });
});

describe('Slots', () => {
  it('never lets more than its slots run at once, and releases on failure', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(fc.tuple(fc.nat(5), fc.boolean()), { maxLength: 30 }), async (n, jobs) => {
      const slots = new Slots(n);
      let running = 0;
      let most = 0;
      const results = await Promise.allSettled(jobs.map(([ms, fail]) => slots.run(async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, ms));
        running--;
        if (fail) throw new Error('x');
        return ms;
      })));
      assert.ok(most <= n);
      assert.equal(results.filter((r) => r.status === 'rejected').length, jobs.filter(([, f]) => f).length);
    }), { numRuns: 40 });
  });
});

describe('readBody', () => {
  async function serve(handler: (res: ServerResponse) => void, fn: (res: IncomingMessage) => Promise<void>): Promise<void> {
    const server = createServer((_req, res) => handler(res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        httpGet({ host: '127.0.0.1', port, path: '/', headers: { 'Accept-Encoding': 'gzip' } }, resolve).on('error', reject);
      });
      await fn(res);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  }

  it('stops a gzip bomb at the cap on the decompressed size: 1 GiB of zeros from ~1 MiB on the wire', async () => {
    const bomb = gzipSync(Buffer.alloc(32 * 1024 * 1024), { level: 9 });
    await serve((res) => {
      res.writeHead(200, { 'Content-Encoding': 'gzip' });
      // 32 copies of a 32 MiB member: gunzip reads concatenated members as one stream.
      for (let i = 0; i < 31; i++) res.write(bomb);
      res.end(bomb);
    }, async (res) => {
      const before = process.memoryUsage().rss;
      await assert.rejects(readBody(res, 4 * 1024 * 1024, 'a discovery document'), (err: unknown) => err instanceof BodyCapExceeded && /a discovery document: larger than 4194304 bytes/.test(err.message));
      // Far below what the whole body would take.
      assert.ok(process.memoryUsage().rss - before < 200 * 1024 * 1024);
    });
  });

  it('reads a body at its cap, and refuses one byte more', async () => {
    await serve((res) => res.end('x'.repeat(1000)), async (res) => assert.equal((await readBody(res, 1000)).length, 1000));
    await serve((res) => res.end('x'.repeat(1001)), async (res) => assert.rejects(readBody(res, 1000), BodyCapExceeded));
  });
});

// The informer's streaming list on the wire (docs/runtime.md "Relists without a LIST"): the initial events are
// applied only once the end bookmark comes, as one state. Real servers are in e2e/runtime/informer-disruption;
// this server plays the two shapes they cannot be made to produce on demand: a stream cut before its bookmark,
// and a server that ignores sendInitialEvents (sends the objects, never the bookmark).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeAccess } from '../../src/runtime/kubeconfig.ts';
import { Informer, INITIAL_EVENTS_END } from '../../src/runtime/informer.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { localAccess } from './local-access.ts';

type Handler = (kind: 'stream' | 'list' | 'watch', res: ServerResponse, n: number) => void;

const lease = (name: string, rv: string): object => ({ metadata: { name, namespace: 'kube-system', resourceVersion: rv } });
const line = (type: string, object: object): string => `${JSON.stringify({ type, object })}\n`;
const endBookmark = (rv: string): string => line('BOOKMARK', { metadata: { resourceVersion: rv, annotations: { [INITIAL_EVENTS_END]: 'true' } } });

async function withServer(h: Handler, body: (kc: KubeAccess, seen: string[]) => Promise<void>): Promise<void> {
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    const kind = q.get('watch') !== 'true' ? 'list' : q.get('sendInitialEvents') === 'true' ? 'stream' : 'watch';
    if (kind === 'stream') assert.equal(q.get('resourceVersionMatch'), 'NotOlderThan');
    seen.push(kind);
    res.setHeader('Content-Type', 'application/json');
    h(kind, res, seen.filter((k) => k === kind).length);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const kc = localAccess((server.address() as AddressInfo).port);
  try {
    await body(kc, seen);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

/** The fallback's answers: a LIST of `items` at resourceVersion 8, then a watch that stays open and quiet. */
function listThenWatch(kind: 'list' | 'watch', res: ServerResponse, items: object[]): void {
  if (kind === 'list') res.end(JSON.stringify({ metadata: { resourceVersion: '8' }, items }));
  else res.write('');
}

/** Starts the informer, runs `body`, and stops it whatever happened. */
async function running(inf: Informer, body: () => Promise<void>): Promise<void> {
  inf.start();
  try {
    await body();
  } finally {
    await inf.stop();
  }
}

const informerOf = (kc: KubeAccess, listTimeoutMs = 30_000): Informer =>
  new Informer({ kubeConfig: kc, path: '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases', logger: silentLogger(), timeoutSeconds: 60, listTimeoutMs, backoff: { baseMs: 10, maxMs: 10, jitter: 0 } });

/** The informer, and the names of the objects its add handler got, in order. */
function recordingAdds(inf: Informer): { inf: Informer; adds: string[] } {
  const adds: string[] = [];
  inf.addHandlers({ add: (o) => adds.push(o.metadata?.name ?? '') });
  return { inf, adds };
}

test('a streaming list syncs at its end bookmark, from its events only, and the stream goes on as the watch', async () => {
  await withServer((kind, res) => {
    assert.equal(kind, 'stream', 'no LIST and no second watch');
    res.write(line('ADDED', lease('a', '5')) + line('ADDED', lease('b', '6')) + line('DELETED', lease('a', '7')) + endBookmark('9'));
    setTimeout(() => res.write(line('ADDED', lease('c', '10'))), 50);
  }, async (kc, seen) => {
    const { inf, adds } = recordingAdds(informerOf(kc));
    await running(inf, async () => {
      await inf.synced;
      assert.deepEqual(inf.keys(), ['kube-system/b'], 'the initial state as of the bookmark');
      assert.equal(inf.resourceVersion, '9');
      for (let i = 0; i < 100 && !inf.get('kube-system/c'); i++) await new Promise((r) => setTimeout(r, 10));
      assert.deepEqual(adds, ['b', 'c']);
      assert.equal(inf.resourceVersion, '10');
      assert.deepEqual(seen, ['stream']);
      assert.deepEqual({ ...inf.stats(), restarts: undefined }, { restarts: undefined, relists: 1, streamed: 1, listed: 0 });
    });
  });
});

test('a stream cut before its end bookmark applies nothing of it: the informer lists instead', async () => {
  await withServer((kind, res) => {
    if (kind === 'stream') res.end(line('ADDED', lease('ghost', '5')));
    else listThenWatch(kind, res, [lease('real', '8')]);
  }, async (kc, seen) => {
    const { inf, adds } = recordingAdds(informerOf(kc));
    await running(inf, async () => {
      await inf.synced;
      assert.deepEqual(adds, ['real'], 'the half-sent state was never applied');
      assert.deepEqual(seen.slice(0, 2), ['stream', 'list']);
      assert.equal(inf.stats().listed, 1);
    });
  });
});

test('a server that ignores sendInitialEvents (objects, never the bookmark) is listed after listTimeoutMs', async () => {
  await withServer((kind, res) => {
    if (kind === 'stream') res.write(line('ADDED', lease('a', '5')));
    else listThenWatch(kind, res, [lease('a', '8')]);
  }, async (kc, seen) => {
    const inf = informerOf(kc, 1500);
    await running(inf, async () => {
      const t0 = Date.now();
      await inf.synced;
      assert.ok(Date.now() - t0 >= 1400, 'the stream had its listTimeoutMs');
      assert.equal(inf.get('kube-system/a')?.metadata?.resourceVersion, '8', 'the LIST\'s object, not the stream\'s');
      assert.deepEqual(seen.slice(0, 2), ['stream', 'list']);
    });
  });
});

test('transform: what the cache holds is the transformed object, from a streaming list, a LIST and the watch alike', async () => {
  const big = (name: string, rv: string): object => ({ metadata: { name, namespace: 'kube-system', resourceVersion: rv }, spec: { blob: 'x'.repeat(10_000) } });
  const transform = (o: { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }) => ({ metadata: { name: o.metadata?.name, namespace: o.metadata?.namespace, resourceVersion: o.metadata?.resourceVersion } });
  for (const streamingList of [true, false]) {
    await withServer((kind, res) => {
      if (kind === 'stream') {
        res.write(line('ADDED', big('a', '5')) + endBookmark('9'));
        setTimeout(() => res.write(line('ADDED', big('b', '10'))), 50);
      } else if (kind === 'list') res.end(JSON.stringify({ metadata: { resourceVersion: '9' }, items: [big('a', '5')] }));
      else setTimeout(() => res.write(line('ADDED', big('b', '10'))), 50);
    }, async (kc) => {
      const inf = new Informer({ kubeConfig: kc, path: '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases', logger: silentLogger(), timeoutSeconds: 60, streamingList, transform });
      await running(inf, async () => {
        await inf.synced;
        for (let i = 0; i < 100 && !inf.get('kube-system/b'); i++) await new Promise((r) => setTimeout(r, 10));
        assert.deepEqual(inf.list().map((o) => JSON.stringify(o)), [
          '{"metadata":{"name":"a","namespace":"kube-system","resourceVersion":"5"}}',
          '{"metadata":{"name":"b","namespace":"kube-system","resourceVersion":"10"}}',
        ], `streamingList ${streamingList}`);
      });
    });
  }
});

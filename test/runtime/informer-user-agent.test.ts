// Every request of the operator names it (issue 12), the informers' LIST and WATCH included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Informer } from '../../src/runtime/informer.ts';
import { USER_AGENT } from '../../src/runtime/kube-request.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { localAccess } from './local-access.ts';

test('the informer\'s streaming list, LIST and WATCH carry the operator\'s User-Agent and the kubeconfig\'s credentials', async () => {
  const seen: { kind: string; agent: string | undefined; auth: string | undefined }[] = [];
  let sawWatch!: () => void;
  const watched = new Promise<void>((r) => (sawWatch = r));
  const server = createServer((req: IncomingMessage, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    const watch = q.get('watch') === 'true';
    const kind = !watch ? 'list' : q.get('sendInitialEvents') === 'true' ? 'stream' : 'watch';
    seen.push({ kind, agent: req.headers['user-agent'], auth: req.headers.authorization });
    res.setHeader('Content-Type', 'application/json');
    if (kind === 'stream') {
      // As a server with the WatchList gate off answers: the informer falls back to a LIST.
      res.statusCode = 422;
      res.end(JSON.stringify({ kind: 'Status', code: 422, message: 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled' }));
      return;
    }
    if (!watch) {
      res.end(JSON.stringify({ kind: 'LeaseList', metadata: { resourceVersion: '1' }, items: [{ metadata: { name: 'a', namespace: 'kube-system', resourceVersion: '1' } }] }));
      return;
    }
    res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'b', namespace: 'kube-system', resourceVersion: '2' } } })}\n`);
    sawWatch();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const kc = localAccess((server.address() as AddressInfo).port, 'secret-token');
  const inf = new Informer({ kubeConfig: kc, path: '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases', logger: silentLogger(), timeoutSeconds: 60 });
  inf.start();
  try {
    await inf.synced;
    await watched;
    assert.deepEqual(seen.map((s) => s.kind), ['stream', 'list', 'watch']);
    for (const s of seen) {
      assert.equal(s.agent, USER_AGENT);
      assert.equal(s.auth, 'Bearer secret-token');
    }
    assert.match(USER_AGENT, /^apiserver-upgrade-operator\/\d+\.\d+\.\d+/);
  } finally {
    await inf.stop();
    server.closeAllConnections();
    server.close();
  }
});

// A hook on loopback HTTPS for the webhook driver's tests: records each request's headers and body, answers with
// the test's handler.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TestPki } from './tls.ts';

export async function httpsHook(pki: TestPki, handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<{ url: string; seen: { headers: IncomingMessage['headers']; body: string }[]; close: () => Promise<void> }> {
  const seen: { headers: IncomingMessage['headers']; body: string }[] = [];
  const server: Server = createServer({ cert: pki.serving.cert, key: pki.serving.key }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/replace`,
    seen,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

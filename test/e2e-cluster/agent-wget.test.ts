// The node agent's wget (images/node-agent/wget), built as the agent image gets it, against local
// servers: the subset the agent script uses (-q, -O - / -O FILE, --no-check-certificate, -T, http and https),
// exit 0 only on a 2xx, one line on stderr otherwise, and "TLS" in that line for a failed handshake (the
// script's pre-check tells a TLS failure from a server that is down by it).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createServer as createHttps, type Server as HttpsServer } from 'node:https';
import { createServer as createHttp, type Server as HttpServer, type RequestListener } from 'node:http';
import { createServer as createTcp, type AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentWgetBinary, isDynamicElf } from '../../e2e/cluster/images.ts';

interface Result { code: number; stdout: string; stderr: string; seconds: number }

let dir = '';
let wget = '';
let tls: { key: string; cert: string } = { key: '', cert: '' };
const servers: (HttpsServer | HttpServer | ReturnType<typeof createTcp>)[] = [];

function run(args: string[], env: Record<string, string> = {}): Promise<Result> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    execFile(wget, args, { encoding: 'utf8', cwd: dir, env: { PATH: '/usr/bin:/bin', ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr, seconds: (Date.now() - t0) / 1000 });
    });
  });
}

async function listen<S extends HttpsServer | HttpServer | ReturnType<typeof createTcp>>(s: S): Promise<number> {
  servers.push(s);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return (s.address() as AddressInfo).port;
}

/** Answers /readyz with `ok`, /fail with 500, /version with JSON, /redirect with a 302 to /readyz. */
const handler: RequestListener = (req, res) => {
  if (req.url === '/fail') {
    res.writeHead(500, { 'Content-Type': 'text/plain' });
    res.end('[-]etcd failed\n');
  } else if (req.url === '/redirect') {
    res.writeHead(302, { Location: '/readyz' });
    res.end();
  } else if (req.url === '/version') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{\n  "gitVersion": "v1.36.3"\n}');
  } else {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end(`ok ${req.headers['user-agent'] ?? ''}`);
  }
};

function oneErrorLine(r: Result): string {
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `one line on stderr: ${JSON.stringify(r.stderr)}`);
  assert.match(lines[0]!, /^wget: /);
  return lines[0]!;
}

describe('agent wget (images/node-agent/wget)', { timeout: 5 * 60_000 }, () => {
  let https = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'auo-agent-wget-'));
    // Built (or found) where the agent image takes it from: the image cache's bin folder.
    wget = await agentWgetBinary();
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'tls.key'), '-out', join(dir, 'tls.crt'),
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1'], { stdio: 'ignore' });
    tls = { key: readFileSync(join(dir, 'tls.key'), 'utf8'), cert: readFileSync(join(dir, 'tls.crt'), 'utf8') };
    // Node's defaults, no SECLEVEL=0: busybox 1.35's wget needs that to get a TLS 1.2 handshake through.
    https = await listen(createHttps(tls, handler));
  });

  after(async () => {
    for (const s of servers) {
      if ('closeAllConnections' in s) s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('is a static executable (the agent image has no libc)', () => {
    assert.equal(isDynamicElf(wget), false);
  });

  it('200 over https with --no-check-certificate: exit 0, the body on stdout (-O -), nothing on stderr', async () => {
    const r = await run(['-q', '-O', '-', '--no-check-certificate', `https://127.0.0.1:${https}/readyz`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'ok Wget');
    assert.equal(r.stderr, '');
    const v = await run(['-q', '-O', '-', '--no-check-certificate', `https://127.0.0.1:${https}/version`]);
    assert.equal(v.code, 0, v.stderr);
    assert.equal(v.stdout, '{\n  "gitVersion": "v1.36.3"\n}');
  });

  it('-O FILE writes the body there (and -O /dev/null, as the script reads readiness); joined -qO- works too', async () => {
    const out = join(dir, 'body.txt');
    writeFileSync(out, 'old contents, longer than the body');
    const r = await run(['-q', '-O', out, '--no-check-certificate', `https://127.0.0.1:${https}/readyz`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(readFileSync(out, 'utf8'), 'ok Wget');
    const n = await run(['-q', '-O', '/dev/null', '--no-check-certificate', `https://127.0.0.1:${https}/readyz`]);
    assert.deepEqual([n.code, n.stdout, n.stderr], [0, '', '']);
    const j = await run(['-qO-', '--no-check-certificate', `https://127.0.0.1:${https}/readyz`]);
    assert.deepEqual([j.code, j.stdout], [0, 'ok Wget']);
  });

  it('a redirect is followed to its 2xx', async () => {
    const r = await run(['-q', '-O', '-', '--no-check-certificate', `https://127.0.0.1:${https}/redirect`]);
    assert.deepEqual([r.code, r.stdout], [0, 'ok Wget']);
  });

  it('500: non-zero, the status in one line on stderr, no body written (not to stdout, not to the file)', async () => {
    const r = await run(['-q', '-O', '-', '--no-check-certificate', `https://127.0.0.1:${https}/fail`]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(oneErrorLine(r), 'wget: server returned error: HTTP/1.1 500 Internal Server Error');
    const out = join(dir, 'not-written.txt');
    const f = await run(['-q', '-O', out, '--no-check-certificate', `https://127.0.0.1:${https}/fail`]);
    assert.equal(f.code, 1);
    assert.equal(existsSync(out), false);
  });

  it('a closed port: non-zero, "connection refused" in one line, without "TLS" (the script goes on for a server that is down)', async () => {
    const s = createTcp();
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    const port = (s.address() as AddressInfo).port;
    await new Promise<void>((resolve) => s.close(() => resolve()));
    const r = await run(['-q', '-O', '-', '--no-check-certificate', `https://127.0.0.1:${port}/readyz`]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    const line = oneErrorLine(r);
    assert.match(line, /connection refused/);
    assert.doesNotMatch(line, /TLS|SSL|ssl|handshake/);
  });

  it('the self-signed certificate is refused without --no-check-certificate (a TLS failure, said so), and accepted when it is trusted', async () => {
    const r = await run(['-q', '-O', '-', `https://127.0.0.1:${https}/readyz`]);
    assert.notEqual(r.code, 0);
    assert.equal(r.stdout, '');
    assert.match(oneErrorLine(r), /TLS handshake with 127\.0\.0\.1:\d+ failed: .*certificate/);
    // The same request verifying against this certificate as its root passes: the refusal above was the verification.
    const trusted = await run(['-q', '-O', '-', `https://127.0.0.1:${https}/readyz`], { SSL_CERT_FILE: join(dir, 'tls.crt') });
    assert.deepEqual([trusted.code, trusted.stdout, trusted.stderr], [0, 'ok Wget', '']);
  });

  it('a server that refuses the handshake: non-zero with "TLS" in the line (what the script\'s pre-check looks for)', async () => {
    // A client certificate required (TLS 1.2, so the refusal comes in the handshake): refused whatever the client.
    const port = await listen(createHttps({ ...tls, maxVersion: 'TLSv1.2', requestCert: true, rejectUnauthorized: true, ca: tls.cert }, handler));
    const r = await run(['-q', '-O', '/dev/null', '--no-check-certificate', `https://127.0.0.1:${port}/readyz`]);
    assert.equal(r.code, 1);
    assert.match(oneErrorLine(r), /TLS handshake with 127\.0\.0\.1:\d+ failed: /);
    // TLS 1.3: the refusal arrives after the client's side of the handshake is done; still said as TLS.
    const port13 = await listen(createHttps({ ...tls, minVersion: 'TLSv1.3', requestCert: true, rejectUnauthorized: true, ca: tls.cert }, handler));
    const r13 = await run(['-q', '-O', '/dev/null', '--no-check-certificate', `https://127.0.0.1:${port13}/readyz`]);
    assert.equal(r13.code, 1);
    assert.match(oneErrorLine(r13), /TLS/);
  });

  it('speaks no TLS below 1.2', async () => {
    const port = await listen(createHttps({ ...tls, minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT:@SECLEVEL=0' }, handler));
    const r = await run(['-q', '-O', '-', '--no-check-certificate', `https://127.0.0.1:${port}/readyz`]);
    assert.equal(r.code, 1);
    assert.match(oneErrorLine(r), /TLS handshake .*failed/);
  });

  it('plain http works the same', async () => {
    const port = await listen(createHttp(handler));
    const ok = await run(['-q', '-O', '-', `http://127.0.0.1:${port}/readyz`]);
    assert.deepEqual([ok.code, ok.stdout, ok.stderr], [0, 'ok Wget', '']);
    const bad = await run(['-q', '-O', '-', `http://127.0.0.1:${port}/fail`]);
    assert.equal(bad.code, 1);
  });

  it('-T N gives up on a server that never answers, after about N seconds', async () => {
    // Accepts and reads, never answers.
    const port = await listen(createTcp((sock) => sock.on('data', () => undefined)));
    const r = await run(['-q', '-T', '1', '-O', '-', '--no-check-certificate', `https://127.0.0.1:${port}/readyz`]);
    assert.equal(r.code, 1);
    assert.match(oneErrorLine(r), /no answer within 1s/);
    assert.ok(r.seconds >= 0.9 && r.seconds < 5, `${r.seconds} s`);
  });

  it('refuses what it does not implement (exit 2): an unknown option, no URL, two URLs, another scheme', async () => {
    for (const args of [['-x', 'http://127.0.0.1/'], ['--spider', 'http://127.0.0.1/'], ['-q'], ['http://a/', 'http://b/'], ['ftp://127.0.0.1/x'], ['-O']]) {
      const r = await run(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      oneErrorLine(r);
    }
  });
});

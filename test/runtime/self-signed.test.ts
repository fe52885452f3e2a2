// Issue 21: /metrics is HTTPS by default; without a mounted certificate the operator makes a self-signed one at
// start. It must be a certificate TLS clients accept for the names it carries, and only for them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import fc from 'fast-check';
import { certificateSerial, selfSignedCertificate } from '../../src/runtime/self-signed.ts';
import { startHealthServer } from '../../src/runtime/health.ts';
import { Registry } from 'prom-client';
import { createLogger } from '../../src/runtime/logger.ts';

function get(port: number, ca: string, servername: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/metrics', ca, servername }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('selfSignedCertificate', () => {
  it('is a v3 server certificate, not a CA, for exactly its names, valid now for a year', () => {
    const now = new Date('2026-12-03T12:00:00Z');
    const c = selfSignedCertificate(['op-7d9f.example', 'localhost', '127.0.0.1', 'fd00::12'], 365, now);
    const x = new X509Certificate(c.cert);
    assert.equal(x.subject, 'CN=op-7d9f.example');
    assert.equal(x.subjectAltName, 'DNS:op-7d9f.example, DNS:localhost, IP Address:127.0.0.1, IP Address:FD00:0:0:0:0:0:0:12');
    assert.equal(x.ca, false);
    assert.deepEqual(x.keyUsage, ['1.3.6.1.5.5.7.3.1']);
    assert.equal(Date.parse(x.validFrom), now.getTime() - 3_600_000);
    assert.equal(Date.parse(x.validTo), now.getTime() + 365 * 86_400_000);
    assert.ok(x.checkHost('localhost'));
    assert.equal(x.checkHost('other.example'), undefined);
    assert.equal(x.fingerprint256, c.fingerprint256);
  });

  it('serves /metrics over TLS that a client trusting it accepts for its name, and refuses for another', async () => {
    const c = selfSignedCertificate(['localhost', '127.0.0.1']);
    const health = await startHealthServer({ port: 0, host: '127.0.0.1', registry: new Registry(), readiness: () => [], logger: createLogger('error'), metrics: { port: 0, host: '127.0.0.1', tls: { cert: c.cert, key: c.key } } });
    try {
      const ok = await get(health.metricsPort, c.cert, 'localhost');
      assert.equal(ok.status, 200);
      await assert.rejects(get(health.metricsPort, c.cert, 'elsewhere.example'), /does not match|altnames/i);
      await assert.rejects(get(health.metricsPort, selfSignedCertificate(['localhost']).cert, 'localhost'), /self[- ]signed|certificate/i);
    } finally {
      await health.close();
    }
  });
});

describe('certificateSerial', () => {
  it('is a positive, minimal DER INTEGER whatever the random bytes (a first byte 0x00 or 0x80 once made a certificate OpenSSL refused)', () => {
    for (const first of [0x00, 0x80, 0xff, 0x7f]) {
      const s = certificateSerial(Buffer.from([first, 0x01, ...Array.from({ length: 14 }, () => 0)]));
      assert.ok(s[0]! >= 0x40 && s[0]! <= 0x7f, `first byte ${first.toString(16)} -> ${s[0]!.toString(16)}`);
    }
    fc.assert(fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (bytes) => {
      const s = certificateSerial(Buffer.from(bytes));
      return s.length === 16 && (s[0]! & 0x80) === 0 && s[0] !== 0 && s.subarray(1).equals(Buffer.from(bytes).subarray(1));
    }));
    assert.throws(() => certificateSerial(Buffer.alloc(0)), RangeError);
    assert.throws(() => certificateSerial(Buffer.alloc(21)), RangeError);
  });
});

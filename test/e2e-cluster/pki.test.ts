import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPki, createServingCert, LEAF_DAYS } from '../../e2e/cluster/pki.ts';

const dir = await mkdtemp(join(tmpdir(), 'auo-pki-test-'));
after(() => rm(dir, { recursive: true, force: true }));
const pki = await createPki(dir);
const DAY = 86_400_000;

async function daysLeft(path: string): Promise<number> {
  const cert = new X509Certificate(await readFile(path));
  return (Date.parse(cert.validTo) - Date.now()) / DAY;
}

test('a serving certificate is valid for a year unless told otherwise, signed by the cluster CA', async () => {
  const s = await createServingCert(pki, 'cp-1', ['10.0.0.11'], ['cp-1']);
  const left = await daysLeft(s.cert);
  assert.ok(Math.abs(left - LEAF_DAYS) < 1, `${left} days left`);
  const cert = new X509Certificate(await readFile(s.cert));
  assert.ok(cert.verify(new X509Certificate(await readFile(pki.caCert)).publicKey));
  assert.match(cert.subjectAltName ?? '', /DNS:kubernetes\.default\.svc/);
});

test('a serving certificate of a few days (close to expiry, as kubeadm preflight reports it)', async () => {
  const s = await createServingCert(pki, 'cp-2', ['10.0.0.12'], ['cp-2'], 3);
  const left = await daysLeft(s.cert);
  assert.ok(left > 2 && left <= 3, `${left} days left`);
});

test('zero, negative or fractional days are refused: an expired certificate fails every client, the harness included', async () => {
  for (const days of [0, -1, 2.5]) await assert.rejects(createServingCert(pki, 'cp-3', ['10.0.0.13'], ['cp-3'], days), /whole number of days >= 1/);
});

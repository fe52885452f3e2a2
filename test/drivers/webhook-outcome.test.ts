// The webhook's response table (docs/drivers.md, "Response"), row by row.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyNetworkError, classifyStatus, errorCode, statusHint } from '../../src/drivers/webhook-outcome.ts';

test('webhook response table: HTTP statuses', () => {
  const table: [number, 'accepted' | 'rejected' | 'transient'][] = [
    [200, 'accepted'], [201, 'accepted'], [202, 'accepted'], [204, 'accepted'], [299, 'accepted'],
    [409, 'accepted'],
    [300, 'rejected'], [301, 'rejected'], [302, 'rejected'], [303, 'rejected'], [307, 'rejected'], [308, 'rejected'],
    [400, 'rejected'], [401, 'rejected'], [403, 'rejected'], [404, 'rejected'], [405, 'rejected'], [410, 'rejected'],
    [413, 'rejected'], [415, 'rejected'], [422, 'rejected'], [451, 'rejected'],
    [408, 'transient'], [425, 'transient'], [429, 'transient'],
    [500, 'transient'], [502, 'transient'], [503, 'transient'], [504, 'transient'], [599, 'transient'],
    [0, 'rejected'], [101, 'rejected'], [600, 'rejected'],
  ];
  for (const [status, kind] of table) assert.equal(classifyStatus(status), kind, `HTTP ${status}`);
});

test('webhook response table: hints for redirects, 409 and auth', () => {
  assert.match(statusHint(307, 'https://elsewhere/x') ?? '', /redirect to https:\/\/elsewhere\/x; the operator does not follow redirects for a POST carrying a replacement/);
  assert.match(statusHint(409) ?? '', /already holds this idempotency key/);
  assert.match(statusHint(401) ?? '', /authSecretRef/);
  assert.equal(statusHint(200), undefined);
});

test('webhook response table: network and TLS errors', () => {
  const table: [string | undefined, 'rejected' | 'transient', RegExp][] = [
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'rejected', /not signed by a CA the operator trusts.*caBundle/],
    ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'rejected', /unknown CA.*caBundle/],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'rejected', /self-signed.*caBundle/],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'rejected', /self-signed CA.*caBundle/],
    ['CERT_HAS_EXPIRED', 'rejected', /expired.*caBundle/],
    ['CERT_NOT_YET_VALID', 'rejected', /not valid yet/],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'rejected', /hostname mismatch.*caBundle/],
    ['HOSTNAME_MISMATCH', 'rejected', /hostname mismatch/],
    ['CERT_REVOKED', 'rejected', /revoked/],
    ['INVALID_PURPOSE', 'rejected', /server authentication/],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'rejected', /does not speak TLS/],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'rejected', /client certificate/],
    ['ECONNREFUSED', 'transient', /^connection refused \(ECONNREFUSED\)/],
    ['ECONNRESET', 'transient', /^connection reset/],
    ['EPIPE', 'transient', /closed while sending/],
    ['ENOTFOUND', 'transient', /^DNS lookup failed/],
    ['EAI_AGAIN', 'transient', /^DNS lookup failed \(temporary\)/],
    ['ETIMEDOUT', 'transient', /timed out/],
    ['EHOSTUNREACH', 'transient', /host unreachable/],
    ['ENETUNREACH', 'transient', /network unreachable/],
    ['ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC', 'transient', /network error/],
    ['OUT_OF_MEM', 'transient', /network error/],
    [undefined, 'transient', /^network error: socket hang up$/],
  ];
  for (const [code, kind, reason] of table) {
    const v = classifyNetworkError(code, code === undefined ? 'socket hang up' : '');
    assert.equal(v.kind, kind, String(code));
    assert.match(v.reason, reason, String(code));
    if (code !== undefined) assert.ok(v.reason.includes(code), `${code}: ${v.reason}`);
  }
});

test('webhook response table: TLS failures Node reports as EPROTO get their OpenSSL reason as the code', () => {
  const eproto = { code: 'EPROTO', message: 'write EPROTO 401DE361737F0000:error:0A00010B:SSL routines:tls_validate_record_header:wrong version number:../deps/openssl/openssl/ssl/record/methods/tlsany_meth.c:77:\n' };
  assert.equal(errorCode(eproto), 'ERR_SSL_WRONG_VERSION_NUMBER');
  assert.equal(classifyNetworkError(errorCode(eproto), eproto.message).kind, 'rejected');
  assert.ok(!classifyNetworkError(errorCode(eproto), eproto.message).reason.includes('\n'));
  const alert = { code: 'EPROTO', message: 'C0:error:0A00045C:SSL routines:ssl3_read_bytes:tlsv13 alert certificate required:ssl/record/rec_layer_s3.c:1605:SSL alert number 116' };
  assert.equal(errorCode(alert), 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED');
  assert.equal(errorCode({ code: 'ECONNRESET', message: 'socket hang up' }), 'ECONNRESET');
  assert.equal(errorCode({ code: 'EPROTO', message: 'something else' }), 'EPROTO');
  assert.equal(errorCode({ message: 'no code' }), undefined);
});

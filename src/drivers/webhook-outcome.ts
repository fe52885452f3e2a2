import { STATUS_CODES } from 'node:http';
import type { CallOutcome } from '../plan/call-outcome.ts';

/**
 * How the webhook driver reads what happened to one POST. Pure: the table in docs/drivers.md ("Response") is
 * this file, and test/drivers/webhook-outcome.test.ts pins it row by row.
 */
export type Verdict = CallOutcome['kind'];

/** The reading of an HTTP status the hook answered with. */
export function classifyStatus(status: number): Verdict {
  if (status >= 200 && status < 300) return 'accepted';
  // The hook already holds this idempotency key: the replacement was taken by an earlier delivery.
  if (status === 409) return 'accepted';
  // Request Timeout, Too Early, Too Many Requests: the hook asks to be asked again.
  if (status === 408 || status === 425 || status === 429) return 'transient';
  if (status >= 500 && status < 600) return 'transient';
  // 3xx: redirects are not followed for a POST carrying a replacement. Other 4xx: the request itself is
  // wrong (or unauthorised) and sending it again cannot help. Anything else is not an HTTP answer we know.
  return 'rejected';
}

/** A short human reading of a status, e.g. `HTTP 503 Service Unavailable`. */
export function statusText(status: number): string {
  const text = STATUS_CODES[status];
  return text ? `HTTP ${status} ${text}` : `HTTP ${status}`;
}

/** The hint added to a status' message, when there is one worth giving. */
export function statusHint(status: number, location?: string): string | undefined {
  if (status >= 300 && status < 400) {
    return `${location ? `redirect to ${location}; ` : ''}the operator does not follow redirects for a POST carrying a replacement: set spec.driver.webhook.url to the address that answers`;
  }
  if (status === 409) return 'the hook already holds this idempotency key';
  if (status === 401 || status === 403) return 'check spec.driver.webhook.authSecretRef and the token the hook expects';
  return undefined;
}

/**
 * Node's (OpenSSL's) certificate verification codes: the hook's serving certificate is not one the operator
 * trusts. Sending again cannot help until the certificate or spec.driver.webhook.caBundle changes.
 */
const CERT_PROBLEMS: Readonly<Record<string, string>> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'is not signed by a CA the operator trusts',
  UNABLE_TO_GET_ISSUER_CERT: 'is signed by an unknown CA',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'is signed by an unknown CA',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'is self-signed and not trusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'chains to a self-signed CA the operator does not trust',
  CERT_HAS_EXPIRED: 'has expired',
  CERT_NOT_YET_VALID: 'is not valid yet',
  ERROR_IN_CERT_NOT_BEFORE_FIELD: 'has an invalid notBefore date',
  ERROR_IN_CERT_NOT_AFTER_FIELD: 'has an invalid notAfter date',
  ERR_TLS_CERT_ALTNAME_INVALID: "does not name the URL's host (hostname mismatch)",
  HOSTNAME_MISMATCH: "does not name the URL's host (hostname mismatch)",
  CERT_SIGNATURE_FAILURE: 'has an invalid signature',
  UNABLE_TO_DECRYPT_CERT_SIGNATURE: 'has a signature that cannot be decrypted',
  UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY: "has an issuer whose public key cannot be decoded",
  CERT_REVOKED: 'is revoked',
  CERT_UNTRUSTED: 'is not trusted for this purpose',
  CERT_REJECTED: 'is rejected for this purpose',
  INVALID_CA: 'chains through a certificate that is not a valid CA',
  INVALID_PURPOSE: 'is not valid for TLS server authentication',
  PATH_LENGTH_EXCEEDED: "chain exceeds a CA's path length constraint",
  CERT_CHAIN_TOO_LONG: 'chain is too long',
};

/**
 * TLS handshakes that fail the same way every time: the port does not speak TLS, no protocol or cipher in
 * common, or the hook demands a client certificate (the operator sends none).
 */
const TLS_HANDSHAKE_PROBLEMS: Readonly<Record<string, string>> = {
  ERR_SSL_WRONG_VERSION_NUMBER: 'the port does not speak TLS (is it plain HTTP?)',
  ERR_SSL_UNSUPPORTED_PROTOCOL: 'no TLS version in common',
  ERR_SSL_NO_PROTOCOLS_AVAILABLE: 'no TLS version in common',
  ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION: 'no TLS version in common',
  ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE: 'the hook refused the handshake (no cipher in common, or it wants a client certificate)',
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: 'the hook wants a client certificate, which the operator does not send',
  ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE: 'the hook wants a client certificate, which the operator does not send',
  ERR_SSL_TLSV1_ALERT_UNKNOWN_CA: 'the hook wants a client certificate, which the operator does not send',
  ERR_SSL_TLSV1_ALERT_ACCESS_DENIED: 'the hook denied access during the handshake',
  ERR_SSL_TLSV1_UNRECOGNIZED_NAME: 'the hook does not serve the URL\'s host name (SNI)',
  ERR_SSL_TLSV1_ALERT_UNRECOGNIZED_NAME: 'the hook does not serve the URL\'s host name (SNI)',
};

/** What a network failure is, for the message; any code not listed reads as its own code. */
const TRANSIENT_REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed while sending',
  ENOTFOUND: 'DNS lookup failed',
  EAI_AGAIN: 'DNS lookup failed (temporary)',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENETDOWN: 'network down',
  ECONNABORTED: 'connection aborted',
};

/**
 * The code to classify an error by. Node reports some TLS protocol failures as `EPROTO` with OpenSSL's reason
 * only in the message (`…:SSL routines:tls_validate_record_header:wrong version number:…`); those get the
 * `ERR_SSL_<REASON>` code Node gives the same failure elsewhere (`ERR_SSL_WRONG_VERSION_NUMBER`).
 */
export function errorCode(err: { code?: unknown; message?: unknown }): string | undefined {
  const code = typeof err.code === 'string' ? err.code : undefined;
  if (code === 'EPROTO' || code === undefined) {
    const reason = /:SSL routines:[^:]*:([^:]+):/.exec(typeof err.message === 'string' ? err.message : '')?.[1];
    if (reason) return `ERR_SSL_${reason.trim().toUpperCase().replace(/[^A-Z0-9]+/g, '_')}`;
  }
  return code;
}

export interface NetworkVerdict {
  kind: 'rejected' | 'transient';
  /** What went wrong, for people: names the TLS problem and where to fix it. */
  reason: string;
}

/**
 * The reading of an error raised before a complete answer: certificate problems and handshakes that cannot
 * succeed are permanent (rejected); connection refused/reset, DNS failures and anything unknown are transient.
 */
export function classifyNetworkError(code: string | undefined, detail = ''): NetworkVerdict {
  const oneLine = detail.replace(/\s+/g, ' ').trim();
  const suffix = oneLine ? `: ${oneLine}` : '';
  if (code !== undefined && code in CERT_PROBLEMS) {
    return {
      kind: 'rejected',
      reason: `TLS: the hook's serving certificate ${CERT_PROBLEMS[code]} (${code})${suffix}; check the certificate and spec.driver.webhook.caBundle (the CA the operator trusts for the hook; the system roots when empty)`,
    };
  }
  if (code !== undefined && code in TLS_HANDSHAKE_PROBLEMS) {
    return { kind: 'rejected', reason: `TLS handshake failed: ${TLS_HANDSHAKE_PROBLEMS[code]} (${code})${suffix}; check spec.driver.webhook.url and spec.driver.webhook.caBundle` };
  }
  const what = code !== undefined ? (TRANSIENT_REASONS[code] ?? 'network error') : 'network error';
  return { kind: 'transient', reason: `${what}${code !== undefined ? ` (${code})` : ''}${suffix}` };
}

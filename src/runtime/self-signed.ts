/**
 * A self-signed serving certificate made at start, for /metrics over HTTPS when no certificate is mounted — what
 * controller-runtime's secure metrics serving does (`certwatcher` absent: a self-signed pair in memory). The key
 * never leaves the process. node:crypto makes keys and signatures but not certificates, so the X.509 DER is
 * written here: an ECDSA P-256 key, SHA-256 signature, v3 with subjectAltName, serverAuth and no CA.
 */
import { generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';

export interface SelfSigned {
  /** PEM certificate and PKCS#8 PEM key, for tls.createServer. */
  cert: string;
  key: string;
  /** SHA-256 fingerprint, logged so that a scraper can pin it. */
  fingerprint256: string;
}

function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : n < 0x10000 ? Buffer.from([0x82, n >> 8, n & 0xff]) : Buffer.from([0x83, n >> 16, (n >> 8) & 0xff, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

const seq = (...c: Buffer[]): Buffer => der(0x30, ...c);

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const bytes = [parts[0]! * 40 + parts[1]!];
  for (const p of parts.slice(2)) {
    const chunk = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
}

function utcTime(d: Date): Buffer {
  const p = (n: number): string => String(n).padStart(2, '0');
  return der(0x17, Buffer.from(`${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`));
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand `::`, then 8 groups of 16 bits.
  const [head, tail] = ip.includes('::') ? ip.split('::') as [string, string] : [ip, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.concat(groups.map((g) => Buffer.from([parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff])));
}

/**
 * A serial number from random bytes, as DER wants an INTEGER's content: positive (high bit clear) and minimal (a
 * first byte of 0x00 before a byte under 0x80 is padding, which OpenSSL refuses: "illegal padding"). The first
 * byte is kept in 0x40-0x7f; clearing only the high bit made one certificate in 256 unreadable (unit suite,
 * 2026-12-05).
 */
export function certificateSerial(random: Buffer): Buffer {
  if (random.length === 0 || random.length > 20) throw new RangeError(`a serial number has 1 to 20 bytes, got ${random.length}`);
  const serial = Buffer.from(random);
  serial[0] = (serial[0]! & 0x3f) | 0x40;
  return serial;
}

/**
 * A certificate for `names` (DNS names and IP literals; the first is the subject's CN), valid from an hour ago
 * (clock skew) for `validDays`.
 */
export function selfSignedCertificate(names: readonly string[], validDays = 365, now = new Date()): SelfSigned {
  if (names.length === 0) throw new Error('a certificate needs at least one name');
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const ecdsaSha256 = seq(oid('1.2.840.10045.4.3.2'));
  const name = seq(der(0x31, seq(oid('2.5.4.3'), der(0x0c, Buffer.from(names[0]!)))));
  const serial = certificateSerial(randomBytes(16));
  const altNames = seq(...names.map((n) => (isIP(n) ? der(0x87, ipBytes(n)) : der(0x82, Buffer.from(n)))));
  const extension = (id: string, critical: boolean, value: Buffer): Buffer => seq(oid(id), ...(critical ? [der(0x01, Buffer.from([0xff]))] : []), der(0x04, value));
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))),
    der(0x02, serial),
    ecdsaSha256,
    name,
    seq(utcTime(new Date(now.getTime() - 3_600_000)), utcTime(new Date(now.getTime() + validDays * 86_400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, seq(
      extension('2.5.29.19', true, seq()), // basicConstraints: not a CA
      extension('2.5.29.15', true, der(0x03, Buffer.from([0x07, 0x80]))), // keyUsage: digitalSignature
      extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // extKeyUsage: serverAuth
      extension('2.5.29.17', false, altNames),
    )),
  );
  const signature = sign('sha256', tbs, privateKey);
  const certDer = seq(tbs, ecdsaSha256, der(0x03, Buffer.from([0]), signature));
  const cert = `-----BEGIN CERTIFICATE-----\n${certDer.toString('base64').replace(/.{64}/gu, '$&\n').replace(/\n?$/u, '\n')}-----END CERTIFICATE-----\n`;
  const x509 = new X509Certificate(cert);
  if (!x509.verify(publicKey)) throw new Error('the self-signed certificate does not verify with its own key');
  return { cert, key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), fingerprint256: x509.fingerprint256 };
}

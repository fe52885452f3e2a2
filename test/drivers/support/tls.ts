// A throwaway PKI for the webhook tests, made with the openssl CLI like e2e/cluster/pki.ts (Node's crypto
// cannot issue X.509 certificates). Loopback only.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

export interface KeyPair {
  cert: string;
  key: string;
}

export interface TestPki {
  /** The CA the hook's certificates are signed by. */
  ca: KeyPair;
  /** Another CA, which signed nothing the hook serves. */
  otherCa: KeyPair;
  /** Signed by `ca`, for 127.0.0.1 and localhost. */
  serving: KeyPair;
  /** Signed by `ca`, for another host only. */
  wrongHost: KeyPair;
  cleanup(): void;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: 'pipe' });
}

function read(cert: string, key: string): KeyPair {
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
}

function selfSignedCa(dir: string, name: string): { pair: KeyPair; certPath: string; keyPath: string } {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  openssl(['req', '-x509', ...EC, '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature']);
  return { pair: read(certPath, keyPath), certPath, keyPath };
}

function leaf(dir: string, name: string, ca: { certPath: string; keyPath: string }, sans: string): KeyPair {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=serverAuth', `subjectAltName=${sans}`].join('\n') + '\n');
  openssl(['req', '-new', ...EC, '-keyout', key, '-out', csr, '-subj', `/CN=${name}`]);
  openssl(['x509', '-req', '-in', csr, '-CA', ca.certPath, '-CAkey', ca.keyPath, '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', ext]);
  return read(cert, key);
}

export function createTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'auo-webhook-pki-'));
  const ca = selfSignedCa(dir, 'hook-ca');
  const other = selfSignedCa(dir, 'other-ca');
  return {
    ca: ca.pair,
    otherCa: other.pair,
    serving: leaf(dir, 'hook', ca, 'IP:127.0.0.1,DNS:localhost'),
    wrongHost: leaf(dir, 'elsewhere', ca, 'DNS:control-plane-manager.elsewhere.example'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from './exec.ts';

/**
 * The cluster's PKI, made with the openssl CLI (Node's crypto cannot issue X.509 certificates).
 * Layout follows kubeadm: a cluster CA for serving and client certs, a separate front-proxy CA
 * whose client cert the apiservers use when they proxy (aggregation and Mixed Version Proxy),
 * and a service-account key pair.
 */
export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  frontProxyCaCert: string;
  proxyClientCert: string;
  proxyClientKey: string;
  saKey: string;
  saPub: string;
  adminCert: string;
  adminKey: string;
}

export interface ServingCert {
  cert: string;
  key: string;
}

/** Validity of every leaf certificate unless told otherwise (a serving certificate can be given fewer days). */
export const LEAF_DAYS = 365;

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

async function selfSignedCa(dir: string, name: string, cn: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await run('openssl', ['req', '-x509', ...EC, '-keyout', key, '-out', cert, '-days', '3650', '-subj', `/CN=${cn}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature']);
  return { cert, key };
}

async function signedLeaf(dir: string, name: string, ca: { cert: string; key: string }, subject: string, extensions: string[], days = LEAF_DAYS): Promise<ServingCert> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  await writeFile(ext, extensions.join('\n') + '\n');
  await run('openssl', ['req', '-new', ...EC, '-keyout', key, '-out', csr, '-subj', subject]);
  // A random serial of its own, not -CAcreateserial: leaves signed at the same time (Promise.all) would read and
  // write the one shared serial file at once, and openssl fails on a half-written one.
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f; // a positive number, as X.509 wants
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-set_serial', `0x${serial.toString('hex')}`, '-out', cert, '-days', String(days), '-extfile', ext]);
  return { cert, key };
}

export async function createPki(dir: string): Promise<Pki> {
  await mkdir(dir, { recursive: true });
  const [ca, fp] = await Promise.all([selfSignedCa(dir, 'ca', 'auo-e2e-ca'), selfSignedCa(dir, 'front-proxy-ca', 'auo-e2e-front-proxy-ca')]);
  const clientExt = ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=clientAuth'];
  const [proxyClient, admin] = await Promise.all([
    signedLeaf(dir, 'front-proxy-client', fp, '/CN=front-proxy-client', clientExt),
    signedLeaf(dir, 'admin', ca, '/O=system:masters/CN=kubernetes-admin', clientExt),
  ]);
  const saKey = join(dir, 'sa.key');
  const saPub = join(dir, 'sa.pub');
  await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', saKey]);
  await run('openssl', ['pkey', '-in', saKey, '-pubout', '-out', saPub]);
  return {
    dir, caCert: ca.cert, caKey: ca.key, frontProxyCaCert: fp.cert,
    proxyClientCert: proxyClient.cert, proxyClientKey: proxyClient.key,
    saKey, saPub, adminCert: admin.cert, adminKey: admin.key,
  };
}

/**
 * A serving cert for one apiserver. `kubernetes.default.svc` is required: the Mixed Version Proxy
 * verifies a peer's serving cert with that ServerName, not with the peer's address. `days`: its validity from
 * now (a certificate close to expiry, as kubeadm preflight reports; at least 1: an expired one fails every client).
 */
export function createServingCert(pki: Pki, name: string, ips: string[], dnsNames: string[], days = LEAF_DAYS): Promise<ServingCert> {
  if (!Number.isInteger(days) || days < 1) return Promise.reject(new Error(`serving certificate validity must be a whole number of days >= 1, not ${days}`));
  const sans = [
    ...ips.map((ip) => `IP:${ip}`),
    ...['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local', 'localhost', ...dnsNames].map((d) => `DNS:${d}`),
  ];
  return signedLeaf(pki.dir, `serving-${name}`, { cert: pki.caCert, key: pki.caKey }, `/CN=kube-apiserver`, [
    'basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=serverAuth',
    `subjectAltName=${sans.join(',')}`,
  ], days);
}

/**
 * A client certificate for one user, signed by the cluster CA (what `--client-ca-file` authenticates): the
 * CN is the user name and each O a group. `name` names the files in the PKI folder.
 */
export function createClientCert(pki: Pki, name: string, user: string, groups: string[] = []): Promise<ServingCert> {
  const subject = [...groups.map((g) => `/O=${g}`), `/CN=${user}`].join('');
  return signedLeaf(pki.dir, `user-${name}`, { cert: pki.caCert, key: pki.caKey }, subject,
    ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=clientAuth']);
}

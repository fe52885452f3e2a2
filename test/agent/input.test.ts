// The node agent's second check of its environment: anything off stops it (exit 2) before it reads or writes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readInput } from '../../src/agent/input.ts';

const GOOD: Record<string, string> = {
  MANIFEST: '/etc/kubernetes/manifests/kube-apiserver.yaml', BACKUP_DIR: '/etc/kubernetes/apiserver-upgrade-backup',
  KEY: 'upgrade-cp-1.example_x-0123456789abcdef', IMAGE: 'registry.k8s.io/kube-apiserver:v1.36.3', VERSION: 'v1.36.3', GATE: 'true',
  PEER_CA: '/etc/kubernetes/pki/ca.crt', PEER_IP: 'fd00::11', PEER_PORT: '6443', EMULATED_VERSION: '1.35', READY_TIMEOUT: '180',
};

test('a good environment is read, with the defaults for what is not set', () => {
  const r = readInput(GOOD);
  assert.ok(!('error' in r));
  assert.deepEqual({ ...r }, {
    manifest: GOOD.MANIFEST, backupDir: GOOD.BACKUP_DIR, key: GOOD.KEY, image: GOOD.IMAGE, version: 'v1.36.3', gate: true,
    peerCA: GOOD.PEER_CA, peerIP: 'fd00::11', peerPort: 6443, emulatedVersion: '1.35', readyTimeoutMs: 180_000, pollIntervalMs: 2000,
    terminationLog: '/dev/termination-log',
  });
  const r2 = readInput({ ...GOOD, GATE: '', PEER_CA: '', EMULATED_VERSION: '', POLL_INTERVAL: '0.2', VERSION: 'v1.36.0-rc.1+k3s1' });
  assert.ok(!('error' in r2) && r2.gate === undefined && r2.emulatedVersion === undefined && r2.pollIntervalMs === 200 && r2.peerCA === '');
});

test('every variable is checked against its pattern; the message names it and shows the value escaped', () => {
  const bad: [string, string, RegExp][] = [
    ['PEER_CA', '/etc/kubernetes/pki/ca.crt\n    - --authorization-mode=AlwaysAllow', /^PEER_CA must be an absolute path .* got: "\/etc\/kubernetes\/pki\/ca\.crt\\n {4}- --authorization-mode=AlwaysAllow"$/],
    ['MANIFEST', 'etc/kubernetes/manifests/kube-apiserver.yaml', /^MANIFEST must be an absolute path/],
    ['MANIFEST', '/etc/kubernetes/../../x.yaml', /^MANIFEST must be/],
    ['BACKUP_DIR', '/etc/kubernetes/./backup', /^BACKUP_DIR must be/],
    ['BACKUP_DIR', `/${'a'.repeat(1030)}`, /^BACKUP_DIR must be .*…\(1031 characters\)$/],
    ['KEY', '../../etc/passwd', /^KEY must be an idempotency key/],
    ['KEY', 'upgrade-cp-1-0123456789abcdef/x', /^KEY must be/],
    ['IMAGE', 'registry.k8s.io/kube-apiserver:v1.36.3 --x', /^IMAGE must be an image reference/],
    ['IMAGE', 'x#y', /^IMAGE must be/],
    ['VERSION', 'v1.36.3\n', /^VERSION must be/],
    ['GATE', 'yes', /^GATE must be true, false or empty, got: "yes"$/],
    ['PEER_IP', '10.0.0.1; id', /^PEER_IP must be an IPv4 or IPv6 address/],
    ['PEER_IP', 'fe80::1%eth0', /^PEER_IP must be/],
    ['PEER_IP', 'cp-1.example.com', /^PEER_IP must be/],
    ['PEER_PORT', '65536', /^PEER_PORT must be a port 1-65535/],
    ['PEER_PORT', '0', /^PEER_PORT must be/],
    ['EMULATED_VERSION', '1.35#;d', /^EMULATED_VERSION must be major\.minor/],
    ['READY_TIMEOUT', '1e9', /^READY_TIMEOUT must be a number of seconds/],
    ['POLL_INTERVAL', '0', /^POLL_INTERVAL must be a number of seconds above 0/],
    ['TERMINATION_LOG', '/dev/termination-log\n', /^TERMINATION_LOG must be/],
  ];
  for (const [name, value, why] of bad) {
    const r = readInput({ ...GOOD, [name]: value });
    assert.ok('error' in r, `${name}=${JSON.stringify(value)} refused`);
    assert.match(r.error, why);
  }
  for (const name of ['MANIFEST', 'BACKUP_DIR', 'KEY', 'IMAGE', 'VERSION', 'PEER_IP', 'PEER_PORT', 'READY_TIMEOUT']) {
    const env = { ...GOOD };
    delete env[name];
    const r = readInput(env);
    assert.ok('error' in r && r.error === `${name} is empty`, name);
  }
  const noCA = readInput({ ...GOOD, PEER_CA: '' });
  assert.ok('error' in noCA && noCA.error === 'PEER_CA is empty', 'the CA is needed when the gate is turned on');
});

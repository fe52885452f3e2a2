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
    peerCA: GOOD.PEER_CA, peerIP: 'fd00::11', peerPort: 6443, emulatedVersion: '1.35', readyTimeoutSeconds: 180,
  });
  const r2 = readInput({ ...GOOD, GATE: '', PEER_CA: '', EMULATED_VERSION: '', VERSION: 'v1.36.0-rc.1+k3s1' });
  assert.ok(!('error' in r2) && r2.gate === undefined && r2.emulatedVersion === undefined && r2.peerCA === '');
});

test('READY_TIMEOUT: whole seconds from 10 to 3600 as the driver writes them (the CRD\'s 10s to 1h, rounded up); nothing else', () => {
  for (const [text, seconds] of [['10', 10], ['11', 11], ['180', 180], ['3599', 3599], ['3600', 3600]] as const) {
    const r = readInput({ ...GOOD, READY_TIMEOUT: text });
    assert.ok(!('error' in r), text);
    assert.equal(r.readyTimeoutSeconds, seconds);
  }
  for (const text of ['999999', '3601', '9', '0', '-1', '1e3', '10 ', ' 10', '0x10', '010', '+10', '10.0', '10.5', '１０', 'Infinity', 'NaN', '9'.repeat(400), '1'.repeat(17), '1_000']) {
    const r = readInput({ ...GOOD, READY_TIMEOUT: text });
    assert.ok('error' in r, `READY_TIMEOUT=${JSON.stringify(text)} refused`);
    assert.match(r.error, /^READY_TIMEOUT must be a whole number of seconds from 10 to 3600, got: /);
  }
});

test('only the contract\'s variables are read: TERMINATION_LOG, POLL_INTERVAL and anything else in the environment change nothing', () => {
  const r = readInput(GOOD);
  const other = readInput({ ...GOOD, TERMINATION_LOG: GOOD.MANIFEST!, POLL_INTERVAL: '0', HOME: '/root', KUBERNETES_SERVICE_HOST: '10.96.0.1', X: '$(id)\n- --x' });
  assert.deepEqual(other, r);
});

test('a backup folder that is the manifest\'s own folder is refused (the kubelet would run the backup as a static Pod)', () => {
  const r = readInput({ ...GOOD, BACKUP_DIR: '/etc/kubernetes/manifests' });
  assert.ok('error' in r);
  assert.match(r.error, /^BACKUP_DIR must be a folder other than the manifest's/);
  assert.ok(!('error' in readInput({ ...GOOD, BACKUP_DIR: '/etc/kubernetes/manifests/backup' })), 'a folder inside it: the kubelet does not read subfolders');
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
    ['READY_TIMEOUT', '1e9', /^READY_TIMEOUT must be a whole number of seconds/],
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

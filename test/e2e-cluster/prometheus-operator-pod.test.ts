// What e2e/support/prometheus-operator.ts does in place of a kubelet and a config-reloader for the StatefulSets
// prometheus-operator writes: volumes laid out at their mount paths (a subPath as one file), names from the server
// kept inside the folder, and the reloader's `$(VAR)` expansion.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { containerEnv, materializeMounts, reloaderOutput, type StatefulSet } from '../../e2e/support/prometheus-operator.ts';

function sts(volumes: object[], mounts: object[], env: object[] = []): StatefulSet {
  return {
    metadata: { name: 'prometheus-x', namespace: 'monitoring' },
    spec: { template: { spec: { volumes, containers: [{ name: 'prometheus', volumeMounts: mounts }, { name: 'config-reloader', env }] } } },
  } as StatefulSet;
}

const store: Record<string, Record<string, Buffer>> = {
  'Secret/tls': { 'a.crt': Buffer.from('A') },
  'Secret/web': { 'web-config.yaml': Buffer.from('tls_server_config: {}\n') },
  'ConfigMap/rules-0': { 'ns-rule-uid.yaml': Buffer.from('groups: []\n') },
};
const get = (kind: 'Secret' | 'ConfigMap', name: string): Promise<Record<string, Buffer>> => Promise.resolve(store[`${kind}/${name}`] ?? {});

test('volumes under the folder are laid out at their mount paths; a subPath mount is one file; others are left alone', async () => {
  const root = mkdtempSync(join(tmpdir(), 'auo-pod-'));
  try {
    const s = sts(
      [
        { name: 'tls', projected: { sources: [{ secret: { name: 'tls' } }] } },
        { name: 'web', secret: { secretName: 'web' } },
        { name: 'rules', configMap: { name: 'rules-0' } },
        { name: 'out', emptyDir: {} },
        { name: 'data', emptyDir: {} },
      ],
      [
        { name: 'tls', mountPath: '/etc/prometheus/certs' },
        { name: 'web', mountPath: '/etc/prometheus/web_config/web-config.yaml', subPath: 'web-config.yaml' },
        { name: 'rules', mountPath: '/etc/prometheus/rules/rules-0' },
        { name: 'out', mountPath: '/etc/prometheus/config_out' },
        { name: 'data', mountPath: '/prometheus' },
      ],
    );
    const written = await materializeMounts(s, 'prometheus', '/etc/prometheus', root, get);
    assert.deepEqual(written, ['/etc/prometheus/certs', '/etc/prometheus/web_config/web-config.yaml', '/etc/prometheus/rules/rules-0', '/etc/prometheus/config_out']);
    assert.equal(readFileSync(join(root, 'etc/prometheus/certs/a.crt'), 'utf8'), 'A');
    assert.equal(readFileSync(join(root, 'etc/prometheus/web_config/web-config.yaml'), 'utf8'), 'tls_server_config: {}\n');
    assert.equal(readFileSync(join(root, 'etc/prometheus/rules/rules-0/ns-rule-uid.yaml'), 'utf8'), 'groups: []\n');
    assert.deepEqual(readdirSync(join(root, 'etc/prometheus/config_out')), []);
    assert.ok(!readdirSync(root).includes('prometheus'), 'a mount outside /etc/prometheus is not laid out');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('an item path from the server that leaves the folder is refused; a mount path that resolves outside it is left alone', async () => {
  const root = mkdtempSync(join(tmpdir(), 'auo-pod-'));
  try {
    const escape = sts([{ name: 'tls', secret: { secretName: 'tls', items: [{ key: 'a.crt', path: '../../../outside' }] } }], [{ name: 'tls', mountPath: '/etc/prometheus/certs' }]);
    await assert.rejects(materializeMounts(escape, 'prometheus', '/etc/prometheus', root, get), /leaves/);
    const mount = sts([{ name: 'tls', secret: { secretName: 'tls' } }], [{ name: 'tls', mountPath: '/etc/prometheus/../../outside' }]);
    assert.deepEqual(await materializeMounts(mount, 'prometheus', '/etc/prometheus', root, get), [], 'a mount path that resolves outside the folder is not laid out');
    assert.ok(!readdirSync(root).includes('outside'));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the reloader output: gunzipped, $(NAME) from the environment (values and the Pod name), a name it lacks refused', () => {
  const env = containerEnv(sts([], [], [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }, { name: 'SHARD', value: '0' }, { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }]), 'config-reloader', 'prometheus-x-0');
  assert.deepEqual(env, { POD_NAME: 'prometheus-x-0', SHARD: '0' });
  const cfg = 'global:\n  external_labels:\n    prometheus_replica: $(POD_NAME)\nrelabel: {regex: $(SHARD)}\n';
  assert.equal(reloaderOutput(gzipSync(cfg), env), 'global:\n  external_labels:\n    prometheus_replica: prometheus-x-0\nrelabel: {regex: 0}\n');
  assert.throws(() => reloaderOutput(gzipSync('x: $(NODE)\n'), env), /\$\(NODE\)/);
});

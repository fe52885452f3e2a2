// The node agent's manifest edit, in process: a YAML document edit that keeps everything it does not mean to
// change byte for byte, and that cannot be made to write anything but the call's values, whatever they hold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse } from 'yaml';
import { editManifest, replaceableImage, type ManifestEdit } from '../../src/agent/manifest-edit.ts';
import { assertOnlyIntended, fixtures } from './support/oracle.ts';

const NO_CHANGE: Omit<ManifestEdit, 'image'> = { gate: undefined, peerCA: '/etc/kubernetes/pki/ca.crt', peerIP: '10.0.0.11', peerPort: 6443, emulatedVersion: undefined };
const imageOf = (text: string): string => (parse(text) as { spec: { containers: { image: string }[] } }).spec.containers[0]!.image;
const commandOf = (text: string): string[] => (parse(text) as { spec: { containers: { command: string[] }[] } }).spec.containers[0]!.command;

function ok(text: string, e: ManifestEdit): string {
  const r = editManifest(text, e);
  assert.ok(r.ok, r.ok ? '' : r.message);
  return r.text;
}

test('fixtures: there are kubeadm-shaped manifests, and an edit that changes nothing gives each back byte for byte', () => {
  const all = fixtures();
  assert.ok(all.length >= 3, all.map((f) => f.name).join(', '));
  for (const f of all) {
    const r = editManifest(f.text, { ...NO_CHANGE, image: imageOf(f.text), gate: undefined, emulatedVersion: undefined });
    assert.ok(r.ok && !r.changed && r.text === f.text && r.note === undefined, f.name);
  }
});

test('an Upgrade, then its Rollback, gives every fixture back byte for byte; the peer flags stay where they are (issue 26)', () => {
  for (const f of fixtures()) {
    const old = imageOf(f.text);
    const target = old.replace(/:v1\.35\.4$/, ':v1.36.3');
    assert.notEqual(target, old);
    // The gate pass first (a no-op where the gate and the peer flags are there already), then the two calls.
    const gated = ok(f.text, { ...NO_CHANGE, image: old, gate: true });
    for (const emulatedVersion of [undefined, '1.35']) {
      const up = ok(gated, { ...NO_CHANGE, image: target, gate: true, emulatedVersion });
      assert.equal(imageOf(up), target);
      assertOnlyIntended(gated, up, { ...NO_CHANGE, image: target, gate: true, emulatedVersion }, `${f.name} upgrade`);
      const back = ok(up, { ...NO_CHANGE, image: old, gate: true });
      assert.equal(back, gated, `${f.name}: Upgrade (emulated ${emulatedVersion}) then Rollback is the identity`);
    }
    // The peer advertise flags there say what --advertise-address and --secure-port imply: the gate pass removes them.
    if (f.name.includes('proxy')) assert.equal(gated, f.text.replace('    - --peer-advertise-ip=10.0.0.11\n    - --peer-advertise-port=6443\n', ''), `${f.name}: the gate pass removes only the implied peer flags`);
  }
});

test('kubeadm\'s layout: new flags go after the last flag, where kubeadm renders the extraArgs the kubeadm-config edit adds', () => {
  const f = fixtures().find((x) => x.name === 'kube-apiserver-v1.35.4.yaml')!;
  const edited = ok(f.text, { ...NO_CHANGE, image: 'registry.k8s.io/kube-apiserver:v1.36.3', gate: true, emulatedVersion: '1.35' });
  const flags = commandOf(edited);
  const base = commandOf(f.text);
  assert.deepEqual(flags, [...base, '--feature-gates=UnknownVersionInteroperabilityProxy=true', '--peer-ca-file=/etc/kubernetes/pki/ca.crt', '--emulated-version=1.35']);
  // Only the lines of the new flags and the image differ.
  const added = edited.split('\n').filter((l) => !f.text.split('\n').includes(l));
  assert.deepEqual(added, ['    image: registry.k8s.io/kube-apiserver:v1.36.3', '    - --feature-gates=UnknownVersionInteroperabilityProxy=true',
    '    - --peer-ca-file=/etc/kubernetes/pki/ca.crt', '    - --emulated-version=1.35'].sort((a, b) => edited.indexOf(a) - edited.indexOf(b)));
});

test('the image rule: */kube-apiserver or IMAGE\'s repository, by tag or digest; anything else is refused with nothing written', () => {
  assert.ok(replaceableImage('registry.k8s.io/kube-apiserver:v1.35.4', 'mirror.example.com/x/kube-apiserver:v1.36.3'));
  assert.ok(replaceableImage(`registry.example.internal/k8s/kube-apiserver@sha256:${'ab'.repeat(32)}`, 'registry.example.internal/k8s/kube-apiserver:v1.36.3'));
  assert.ok(replaceableImage('kube-apiserver:v1.35.4', 'x/kube-apiserver:v1'));
  assert.ok(replaceableImage('mirror.example.com/k8s/apiserver:v1.35.4', 'mirror.example.com/k8s/apiserver:v1.36.3'), 'a renamed mirror: IMAGE\'s repository');
  assert.ok(!replaceableImage('registry.k8s.io/etcd:3.6.0', 'registry.k8s.io/kube-apiserver:v1.36.3'));
  const f = fixtures()[0]!;
  const etcd = f.text.replace(imageOf(f.text), 'registry.k8s.io/etcd:3.6.0');
  const r = editManifest(etcd, { ...NO_CHANGE, image: 'registry.k8s.io/kube-apiserver:v1.36.3' });
  assert.ok(!r.ok && /image "registry\.k8s\.io\/etcd:3\.6\.0" is neither/.test(r.message), JSON.stringify(r));
  // A quoted image keeps its quotes.
  const quoted = f.text.replace(`image: ${imageOf(f.text)}`, `image: "${imageOf(f.text)}"`);
  assert.match(ok(quoted, { ...NO_CHANGE, image: imageOf(f.text).replace('v1.35.4', 'v1.36.3') }), /image: "\S+:v1\.36\.3"/);
});

test('manifests the agent cannot edit are refused, with a reason', () => {
  const f = fixtures().find((x) => x.name === 'kube-apiserver-v1.35.4.yaml')!.text;
  const cases: [string, RegExp][] = [
    ['', /one YAML document/],
    [`${f}---\n${f}`, /one YAML document \(it holds 2\)/],
    ['kind: Pod\nspec: {containers: [}\n', /not valid YAML/],
    [f.replace('\n    name: kube-apiserver\n', '\n    name: other\n').replace('- command:\n    - kube-apiserver', '- command:\n    - other'), /no container named kube-apiserver/],
    [f.replace('    - --secure-port=6443\n', '    - 6443\n'), /command is not a list of strings/],
    [f.replace('    image:', '    args: ["--v=2"]\n    image:'), /has args/],
  ];
  for (const [text, why] of cases) {
    const r = editManifest(text, { ...NO_CHANGE, image: 'registry.k8s.io/kube-apiserver:v1.36.3', gate: true });
    assert.ok(!r.ok, `refused: ${why}`);
    assert.match(r.message, why);
  }
});

test('a YAML 1.1 octal (0755) the serializer would rewrite is refused, never changed in meaning', () => {
  const f = fixtures().find((x) => x.name === 'kube-apiserver-v1.35.4.yaml')!.text;
  const octal = f.replace('  hostNetwork: true\n', '  hostNetwork: true\n  terminationGracePeriodSeconds: 0755\n');
  const r = editManifest(octal, { ...NO_CHANGE, image: 'registry.k8s.io/kube-apiserver:v1.36.3' });
  assert.ok(!r.ok && /differs from the original in more than the image and the command/.test(r.message), JSON.stringify(r).slice(0, 300));
});

test('values YAML would read as something else are quoted: a YAML 1.1 boolean, a sexagesimal, a number', () => {
  const f = fixtures()[0]!.text;
  for (const image of ['on', 'y', '1:20', '123']) {
    const text = ok(f, { ...NO_CHANGE, image });
    assert.match(text, new RegExp(`image: "${image}"`));
  }
});

/**
 * The property: for ANY string in any value the agent writes (newlines, quotes, sed and shell metacharacters, YAML
 * specials, unicode, long strings) the edit writes exactly that value and nothing else. This is the layer under the
 * validation (the driver and the agent refuse such values first): a text edit instead of this YAML edit fails it.
 */
test('property: any value, however hostile, lands as that one value in that one flag; nothing else changes', () => {
  const specials = fc.constantFrom('\n', '\r\n', '\n- --authorization-mode=AlwaysAllow', '\n    - --anonymous-auth=true', '"', "'", '\\', '&', '|', '>', '*', '!', '#', ':', ': ', ' #', '- ', '{', '}', '[', ']', ',', '%', '@', '`',
    '$(id)', '${X}', ';', '/', 's#a#b#', '\\1', '\t', '\u0000', '\u0085', '\u2028', 'é', '日本', '🦀', '---', '...', '~', 'null', 'yes', 'on', '0x1F', '1:20', '0755', '.inf', '<<');
  const hostile = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.array(fc.oneof(specials, fc.string({ maxLength: 6 })), { maxLength: 12 }).map((xs) => xs.join('')),
    fc.string({ unit: fc.constantFrom('a', '\n', ':', ' ', '-', '#', '"'), minLength: 200, maxLength: 2000 }),
  );
  const files = fixtures();
  fc.assert(fc.property(
    fc.constantFrom(...files), hostile, hostile, hostile, fc.option(hostile, { nil: undefined }), fc.option(fc.boolean(), { nil: undefined }), fc.integer({ min: 0, max: 1 << 20 }),
    (file, image, peerCA, peerIP, emulatedVersion, gate, peerPort) => {
      const e: ManifestEdit = { image: image === '' ? 'x' : image, gate, peerCA, peerIP, peerPort, emulatedVersion };
      const r = editManifest(file.text, e);
      assert.ok(r.ok, r.ok ? '' : r.message);
      assertOnlyIntended(file.text, r.text, e, file.name);
    },
  ), { numRuns: 150 });
});

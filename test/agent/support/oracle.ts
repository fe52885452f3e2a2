// The test's own idea of what one agent call may change in a kube-apiserver manifest, written without the agent's
// code: the result, read as YAML 1.2 and as YAML 1.1 (the kubelet's Go YAML), must be the original document with
// exactly one container whose image is the call's and whose command is a list of strings that differs from the
// original only in the flags the call means to change (the proxy gate in --feature-gates, the three --peer-*
// flags, --emulated-version), each with exactly the call's value; --peer-advertise-ip/--peer-advertise-port absent
// where the original's --advertise-address and --secure-port (6443 when absent) are that peer address already.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';

export const FIXTURES = fileURLToPath(new URL('../../fixtures/kubeadm/', import.meta.url));
const GATE = 'UnknownVersionInteroperabilityProxy';
const PEERS = ['--peer-ca-file', '--peer-advertise-ip', '--peer-advertise-port'];
const MANAGED = new Set(['--feature-gates', '--emulated-version', ...PEERS]);

/** Every kube-apiserver manifest in test/fixtures/kubeadm/. */
export function fixtures(): { name: string; text: string }[] {
  return readdirSync(FIXTURES).filter((f) => f.endsWith('.yaml')).sort().map((name) => ({ name, text: readFileSync(join(FIXTURES, name), 'utf8') }));
}

export interface Intent {
  image: string;
  gate: boolean | undefined;
  peerCA: string;
  peerIP: string;
  peerPort: number;
  emulatedVersion: string | undefined;
}

interface PodView { spec: { containers: { image: unknown; command: unknown }[] } & Record<string, unknown> }

function read(text: string, version: '1.1' | '1.2'): PodView {
  const doc = parseDocument(text, { version });
  assert.deepEqual(doc.errors, [], `valid YAML ${version}`);
  return doc.toJS() as PodView;
}

const nameOf = (e: string): string => (e.startsWith('--') && e.includes('=') ? e.slice(0, e.indexOf('=')) : e);
const valuesOf = (cmd: string[], name: string): string[] => cmd.filter((e) => nameOf(e) === name).map((e) => e.slice(name.length + 1));

function gatesOf(cmd: string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const v of valuesOf(cmd, '--feature-gates')) for (const g of v.split(',')) m.set(g.split('=')[0]!, g.split('=').slice(1).join('='));
  return m;
}

/** Asserts that `after` is `before` edited by exactly `intent`, read as both YAML versions. */
export function assertOnlyIntended(before: string, after: string, intent: Intent, what: string): void {
  for (const version of ['1.2', '1.1'] as const) {
    const a = read(before, version);
    const b = read(after, version);
    const where = `${what} (YAML ${version})`;
    assert.equal(b.spec.containers.length, 1, `${where}: one container`);
    const cmd = b.spec.containers[0]!.command;
    assert.ok(Array.isArray(cmd) && cmd.every((x) => typeof x === 'string'), `${where}: the command is a list of strings: ${JSON.stringify(cmd)}`);
    const got = cmd as string[];
    const orig = a.spec.containers[0]!.command as string[];
    assert.equal(b.spec.containers[0]!.image, intent.image, `${where}: the image`);
    assert.equal(got[0], 'kube-apiserver', `${where}: the command name`);
    // Everything but the managed flags: the same entries, in the same order.
    const rest = (c: string[]): string[] => c.filter((e) => !MANAGED.has(nameOf(e)));
    assert.deepEqual(rest(got), rest(orig), `${where}: no flag but the intended ones changed`);
    // The gate and the peer flags.
    if (intent.gate === undefined) {
      for (const f of ['--feature-gates', ...PEERS]) assert.deepEqual(valuesOf(got, f), valuesOf(orig, f), `${where}: ${f} untouched`);
    } else {
      const gates = gatesOf(got);
      const was = gatesOf(orig);
      assert.equal(gates.get(GATE), String(intent.gate), `${where}: the gate`);
      was.delete(GATE);
      gates.delete(GATE);
      assert.deepEqual(gates, was, `${where}: the other gates`);
      assert.ok(valuesOf(got, '--feature-gates').length >= 1);
      const peers = intent.gate ? [intent.peerCA, intent.peerIP, String(intent.peerPort)] : [];
      const advertised = valuesOf(orig, '--advertise-address').at(-1);
      const port = valuesOf(orig, '--secure-port').at(-1) ?? '6443';
      const implied = advertised === intent.peerIP && port === String(intent.peerPort);
      PEERS.forEach((f, i) => assert.deepEqual(valuesOf(got, f), intent.gate && !(implied && i > 0) ? [peers[i]] : [], `${where}: ${f}`));
    }
    assert.deepEqual(valuesOf(got, '--emulated-version'), intent.emulatedVersion === undefined ? [] : [intent.emulatedVersion], `${where}: --emulated-version`);
    // And nothing else in the document.
    const strip = (p: PodView): unknown => ({ ...p, spec: { ...p.spec, containers: p.spec.containers.map((c) => ({ ...c, image: null, command: null })) } });
    assert.deepEqual(strip(b), strip(a), `${where}: the rest of the document`);
  }
}

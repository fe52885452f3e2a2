// The node agent trusts nothing it is given. It runs as root with the kubelet's manifests folder mounted
// read-write, so whatever its environment says, it writes no file but the manifest (atomically, after its backup)
// and its backups: its termination message goes only to the container's terminationMessagePath (fixed, never
// from the environment, and only into the kubelet's empty file), READY_TIMEOUT is refused outside 10..3600 s
// before anything is read or written, and the whole run ends on its own within READY_TIMEOUT + its allowance.
// Checked on real temporary folders with a real kubeadm kube-apiserver manifest (3939 bytes), the agent in a
// child process (src/agent/main.ts as the Job runs it, or the test entry that only changes where the message goes).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { AGENT_ENV_NAMES, AGENT_READY_TIMEOUT_MAX_SECONDS, AGENT_READY_TIMEOUT_MIN_SECONDS, AGENT_RUN_ALLOWANCE_SECONDS } from '../../src/api/constants.ts';
import { PULL_ALLOWANCE_SECONDS } from '../../src/drivers/static-pod.ts';
import { createTestPki, type TestPki } from '../drivers/support/tls.ts';
import { AGENT_TEST_ENTRY, closedPort, fakeServer, makeNode, removeRoot, runAgentProcess, tempRoot, type AgentRun, type Node, type RunOptions } from '../drivers/support/agent-rig.ts';
import { assertOnlyIntended, FIXTURES } from './support/oracle.ts';

/** A kubeadm v1.35.4 kube-apiserver manifest as `kubeadm init` writes it. */
const ORIGINAL = readFileSync(join(FIXTURES, 'kube-apiserver-v1.35.4.yaml'));
const KEY = 'upgrade-cp-1-0123456789abcdef';
/** Other files of the node that no run may touch. */
const ADMIN_CONF = 'etc/kubernetes/admin.conf';
const ETCD = 'etc/kubernetes/manifests/etcd.yaml';

let root = '';
let pki: TestPki;
before(() => {
  root = tempRoot('auo-trust-');
  pki = createTestPki();
});
after(() => {
  removeRoot(root);
  pki.cleanup();
});

/** A node: the manifest, and other files (admin.conf, an etcd manifest) a stray write would change. */
function node(): Node {
  const n = makeNode(root, ORIGINAL.toString('utf8'));
  writeFileSync(join(n.dir, ADMIN_CONF), 'apiVersion: v1\nkind: Config\nusers:\n- name: kubernetes-admin\n');
  writeFileSync(join(n.dir, ETCD), 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n');
  return n;
}

/** Every entry under the node's folder (but the test's termination message file): kind, mode and content hash. */
function tree(n: Node): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (p === n.termination) continue;
      const st = lstatSync(p);
      const rel = relative(n.dir, p);
      if (st.isSymbolicLink()) out.set(rel, `link -> ${readlinkSync(p)}`);
      else if (st.isDirectory()) {
        out.set(rel, 'dir');
        walk(p);
      } else if (st.isFile()) out.set(rel, `file ${(st.mode & 0o7777).toString(8)} ${st.size} ${createHash('sha256').update(readFileSync(p)).digest('hex')}`);
      // A fifo is never read (that would wait for a writer).
      else out.set(rel, `other ${(st.mode & 0o170000).toString(8)} ${(st.mode & 0o7777).toString(8)}`);
    }
  };
  walk(n.dir);
  return out;
}

/** The entries of `after` that are not as in `before` (added, changed or gone). */
function changed(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k)).sort();
}

function env(n: Node, port: number): Record<string, string> {
  return {
    MANIFEST: n.manifest, BACKUP_DIR: n.backup, KEY, IMAGE: 'registry.k8s.io/kube-apiserver:v1.36.3', VERSION: 'v1.36.3', GATE: 'true',
    PEER_CA: '/etc/kubernetes/pki/ca.crt', PEER_IP: '127.0.0.1', PEER_PORT: String(port), EMULATED_VERSION: '1.35', READY_TIMEOUT: '10',
  };
}

/** Runs the agent; a run still going after `killAfterMs` is killed (a test must not wait for an agent that waits). */
async function run(n: Node, e: Record<string, string>, opts: RunOptions & { killAfterMs?: number } = {}): Promise<AgentRun> {
  let timer: NodeJS.Timeout | undefined;
  const { killAfterMs = 20_000, ...rest } = opts;
  try {
    return await runAgentProcess(n, e, { watchFolder: false, pollMs: 50, ...rest, onStart: (pid) => (timer = setTimeout(() => process.kill(pid, 'SIGKILL'), killAfterMs)) });
  } finally {
    clearTimeout(timer);
  }
}

const sameBytes = (path: string, want: Buffer, what: string): void => assert.ok(readFileSync(path).equals(want), `${what}: byte-identical`);

test('the manifest is a real kubeadm one: 3939 bytes', () => {
  assert.equal(ORIGINAL.length, 3939);
});

test('TERMINATION_LOG set to the manifest, with a bad KEY: refused (exit 2); the manifest is byte-identical and nothing at all is written', async () => {
  const port = await closedPort();
  for (const entry of ['main', 'test'] as const) {
    const n = node();
    const before = tree(n);
    const r = await run(n, { ...env(n, port), KEY: 'upgrade-cp-1-0123456789abcdef; rm -rf /', TERMINATION_LOG: n.manifest }, { entry });
    assert.equal(r.code, 2, `${entry}: ${r.stderr}`);
    assert.match(r.stderr, /^KEY must be an idempotency key/);
    sameBytes(n.manifest, ORIGINAL, entry);
    assert.deepEqual(changed(before, tree(n)), [], `${entry}: no file written, made or removed`);
    // src/agent/main.ts writes to /dev/termination-log, which is not there outside a Pod (and is never made);
    // the test entry writes to the test's file: either way, the environment did not say where.
    assert.equal(r.termination, entry === 'main' ? '' : `${r.stderr.split('\n')[0]}\n`, entry);
  }
});

test('TERMINATION_LOG and POLL_INTERVAL are not read: a failure after the backup, and a success, with both set leave the manifest as the agent means it', async () => {
  // A manifest the agent cannot edit (no kube-apiserver image): exit 2 after the backup was kept, message elsewhere.
  const etcdImage = Buffer.from(ORIGINAL.toString('utf8').replace('registry.k8s.io/kube-apiserver:v1.35.4', 'registry.k8s.io/etcd:3.6.0'));
  {
    const n = node();
    writeFileSync(n.manifest, etcdImage);
    const s = await fakeServer(pki.serving, n.manifest, 'kubelet', 0);
    try {
      const r = await run(n, { ...env(n, s.port), TERMINATION_LOG: n.manifest, POLL_INTERVAL: 'x' });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.termination, /^the kube-apiserver container's image "registry\.k8s\.io\/etcd:3\.6\.0" is neither/);
      sameBytes(n.manifest, etcdImage, 'the manifest');
      sameBytes(join(n.backup, `${KEY}.yaml`), etcdImage, 'the backup');
    } finally {
      await s.close();
    }
  }
  {
    const n = node();
    const s = await fakeServer(pki.serving, n.manifest, 'kubelet', 0);
    try {
      const before = tree(n);
      const r = await run(n, { ...env(n, s.port), TERMINATION_LOG: n.manifest, POLL_INTERVAL: '0' });
      assert.equal(r.code, 0, r.stderr);
      assertOnlyIntended(ORIGINAL.toString('utf8'), readFileSync(n.manifest, 'utf8'), { image: 'registry.k8s.io/kube-apiserver:v1.36.3', gate: true, peerCA: '/etc/kubernetes/pki/ca.crt', peerIP: '127.0.0.1', peerPort: s.port, emulatedVersion: '1.35' }, 'edited');
      assert.deepEqual(changed(before, tree(n)), ['etc/kubernetes/apiserver-upgrade-backup', `etc/kubernetes/apiserver-upgrade-backup/${KEY}.yaml`, 'etc/kubernetes/manifests/kube-apiserver.yaml']);
    } finally {
      await s.close();
    }
  }
});

test('the timeout case, TERMINATION_LOG set to the manifest and POLL_INTERVAL to 0.001: not ready within READY_TIMEOUT, reverted (exit 3); the manifest is byte-identical, the backup in place, /readyz asked every 2 s', { timeout: 60_000 }, async () => {
  // The old server answers 200 forever (its kubelet never restarts it): the new one is never seen, so the agent
  // waits its whole READY_TIMEOUT and reverts. Once as the Job runs it (main.ts: its poll and its message path are
  // fixed), once through the test entry (whose message file shows the revert line went there, not to the manifest).
  const once = async (entry: 'main' | 'test'): Promise<void> => {
    const n = node();
    const s = await fakeServer(pki.serving, n.manifest, 'stuck', 0);
    try {
      const before = tree(n);
      const started = Date.now();
      const r = await run(n, { ...env(n, s.port), TERMINATION_LOG: n.manifest, POLL_INTERVAL: '0.001' }, { entry, killAfterMs: 40_000 });
      const took = Date.now() - started;
      assert.equal(r.code, 3, `${entry}: ${r.stderr}`);
      const reverted = new RegExp(`^reverted: the new kube-apiserver static Pod was not ready within 10s \\(https://127\\.0\\.0\\.1:${s.port}/readyz, last: 200, but from the server that ran before.*\\); restored ${join(n.backup, `${KEY}.yaml`).replace(/[.]/g, '\\.')}\\n$`);
      assert.match(r.stderr, reverted, entry);
      assert.equal(r.termination, entry === 'main' ? '' : r.stderr, `${entry}: the message went only to the caller's file`);
      sameBytes(n.manifest, ORIGINAL, `${entry}: the manifest, restored`);
      sameBytes(join(n.backup, `${KEY}.yaml`), ORIGINAL, `${entry}: the backup`);
      assert.deepEqual(changed(before, tree(n)), ['etc/kubernetes/apiserver-upgrade-backup', `etc/kubernetes/apiserver-upgrade-backup/${KEY}.yaml`, 'etc/kubernetes/manifests/kube-apiserver.yaml'],
        `${entry}: the backup made; the manifest replaced by its own bytes (a new file); nothing else`);
      assert.ok(took >= 10_000 && took < 20_000, `${entry}: waited READY_TIMEOUT, then reverted: ${took} ms`);
      if (entry === 'main') {
        // Two answers per 2 s poll (/readyz, then /version to tell a quick restart): 1 ms would have made thousands.
        assert.ok(s.answers.length >= 8 && s.answers.length <= 16, `${entry}: ${s.answers.length} answers in ${took} ms`);
      }
    } finally {
      await s.close();
    }
  };
  await Promise.all([once('main'), once('test')]);
});

test('the termination message goes only into the kubelet\'s empty file: never a file with content (the manifest mounted there), never through a link, never a new file', async () => {
  const sinks: [string, (n: Node) => string][] = [
    ['the manifest itself', (n) => n.manifest],
    ['a link to an empty file', (n) => {
      writeFileSync(join(n.dir, 'empty'), '');
      symlinkSync(join(n.dir, 'empty'), join(n.dir, 'link'));
      return join(n.dir, 'link');
    }],
    ['a file that is not there', (n) => join(n.dir, 'etc', 'kubernetes', 'manifests', 'new.yaml')],
  ];
  for (const [what, sink] of sinks) {
    const n = node();
    const path = sink(n);
    const before = tree(n);
    const e = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env(n, 1), KEY: '../../x' };
    const child = spawn(process.execPath, [AGENT_TEST_ENTRY, path, '50', '60000'], { env: e, stdio: 'ignore' });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(code, 2, what);
    sameBytes(n.manifest, ORIGINAL, what);
    assert.deepEqual(changed(before, tree(n)), [], `${what}: nothing written`);
  }
});

test('READY_TIMEOUT outside 10..3600 whole seconds (999999, 0, -1, 1e3, "10 ", 0x10, huge digit strings, ...) is refused before anything is read or written', async () => {
  const port = await closedPort();
  const values = ['999999', '3601', '9', '0', '-1', '1e3', '10 ', ' 10', '0x10', '010', '+10', '10.0', '1_000', '9'.repeat(400), '1'.repeat(20), `1${'0'.repeat(308)}`, '', '\u0661\u0660'];
  const n = node();
  const before = tree(n);
  for (const value of values) {
    const r = await run(n, { ...env(n, port), READY_TIMEOUT: value }, { entry: 'main', killAfterMs: 8000 });
    assert.equal(r.code, 2, `READY_TIMEOUT=${JSON.stringify(value)}: ${r.stderr}`);
    assert.match(r.stderr, value === '' ? /^READY_TIMEOUT is empty\n$/ : /^READY_TIMEOUT must be a whole number of seconds from 10 to 3600, got: /);
    sameBytes(n.manifest, ORIGINAL, value);
    assert.deepEqual(changed(before, tree(n)), [], `READY_TIMEOUT=${JSON.stringify(value)}: nothing written`);
  }
  assert.equal(AGENT_READY_TIMEOUT_MIN_SECONDS, 10);
  assert.equal(AGENT_READY_TIMEOUT_MAX_SECONDS, 3600);
});

test('a manifest that is not a regular file of at most 1 MiB (a link, a folder, a fifo, a huge file) is refused before anything is written', async () => {
  const port = await closedPort();
  const cases: [string, (n: Node) => string][] = [
    ['a link to the manifest', (n) => {
      symlinkSync(n.manifest, join(n.manifests, 'linked.yaml'));
      return join(n.manifests, 'linked.yaml');
    }],
    ['a folder', (n) => {
      mkdirSync(join(n.manifests, 'folder.yaml'));
      return join(n.manifests, 'folder.yaml');
    }],
    ['a fifo', (n) => {
      const path = join(n.manifests, 'fifo.yaml');
      assert.equal(spawnSync('mkfifo', [path]).status, 0);
      return path;
    }],
    ['a file of 1 MiB and one byte', (n) => {
      writeFileSync(join(n.manifests, 'huge.yaml'), Buffer.concat([ORIGINAL, Buffer.alloc(1024 * 1024 + 1 - ORIGINAL.length, 0x20)]));
      return join(n.manifests, 'huge.yaml');
    }],
  ];
  for (const [what, make] of cases) {
    const n = node();
    const manifest = make(n);
    const before = tree(n);
    const r = await run(n, { ...env(n, port), MANIFEST: manifest }, { killAfterMs: 8000 });
    assert.equal(r.code, 2, `${what}: ${r.stderr}`);
    assert.match(r.termination, /^the manifest .* (is not a regular file|cannot be opened as a file \(ELOOP\)|is larger than 1048576 bytes \(1048577\)); nothing was written\n$/, what);
    assert.deepEqual(changed(before, tree(n)), [], `${what}: nothing written`);
  }
});

test('a valid run keeps the exact bytes as found as the backup before it replaces the manifest; a link left at a temporary name is never written through', async () => {
  const n = node();
  // Links where the agent's temporary files go, to files it must not write: replaced, not followed.
  mkdirSync(n.backup, { recursive: true });
  symlinkSync(join(n.dir, ADMIN_CONF), join(n.manifests, `.kube-apiserver.yaml.auo-${KEY}`));
  symlinkSync(join(n.dir, ETCD), join(n.backup, `.${KEY}.yaml.tmp`));
  const s = await fakeServer(pki.serving, n.manifest, 'kubelet', 0);
  try {
    const before = tree(n);
    // The backup is there, whole, when the server first sees the new manifest.
    let backupAtRename: Buffer | undefined;
    const inode = statSync(n.manifest).ino;
    const watching = setInterval(() => {
      if (backupAtRename === undefined && statSync(n.manifest).ino !== inode) backupAtRename = readFileSync(join(n.backup, `${KEY}.yaml`));
    }, 1);
    const r = await run(n, env(n, s.port));
    clearInterval(watching);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(backupAtRename?.equals(ORIGINAL), 'the backup was whole when the manifest was replaced');
    sameBytes(join(n.backup, `${KEY}.yaml`), ORIGINAL, 'the backup');
    assert.equal(lstatSync(n.manifest).isFile(), true);
    assert.deepEqual(changed(before, tree(n)), [
      'etc/kubernetes/apiserver-upgrade-backup/.upgrade-cp-1-0123456789abcdef.yaml.tmp',
      `etc/kubernetes/apiserver-upgrade-backup/${KEY}.yaml`,
      `etc/kubernetes/manifests/.kube-apiserver.yaml.auo-${KEY}`,
      'etc/kubernetes/manifests/kube-apiserver.yaml',
    ], 'the two links removed, the backup made, the manifest replaced: nothing else');
    assert.equal(tree(n).get(ADMIN_CONF), before.get(ADMIN_CONF));
    assert.equal(tree(n).get(ETCD), before.get(ETCD));
  } finally {
    await s.close();
  }
});

test('the agent ends its run on its own within READY_TIMEOUT + its allowance, even when every probe hangs, and reverts first', { timeout: 60_000 }, async () => {
  assert.ok(AGENT_RUN_ALLOWANCE_SECONDS + 30 <= PULL_ALLOWANCE_SECONDS, 'the agent\'s own bound (and 30 s of grace) is inside the Job\'s deadline');
  const n = node();
  // Accepts connections and never answers: each probe takes its full 5 s.
  const silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as { port: number }).port;
  try {
    const started = Date.now();
    const r = await run(n, env(n, port), { runAllowanceMs: 3000, killAfterMs: 40_000 });
    const took = Date.now() - started;
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.termination, /^reverted: the agent was stopped \(its own deadline: READY_TIMEOUT \+ 3s passed\) before the new kube-apiserver static Pod was ready; restored /);
    assert.ok(took >= 13_000 && took < 15_000, `ended at READY_TIMEOUT + 3 s: ${took} ms`);
    sameBytes(n.manifest, ORIGINAL, 'the manifest, restored');
  } finally {
    silent.close();
  }
});

/** Characters no variable of the agent takes: a value holding one is never valid. */
const BAD_CHARS = ['\n', '\r', ' ', '\t', '"', "'", '`', '$', ';', '&', '|', '>', '<', '*', '!', '#', '{', '}', '\\', 'é', '🦀', '\u2028', '\u0085'];
/** A value with one of BAD_CHARS in it: `base` (or random text) with the character put in at a random place. */
const hostile = (base: string): fc.Arbitrary<string> => fc.tuple(fc.oneof(fc.constant(base), fc.string({ unit: 'grapheme', maxLength: 30 })), fc.constantFrom(...BAD_CHARS), fc.nat())
  .map(([b, c, at]) => {
    const clean = b.replaceAll('\u0000', '');
    const i = at % (clean.length + 1);
    return clean.slice(0, i) + c + clean.slice(i);
  });

/** Placeholders for the node's own paths and the server's port, filled in per run. */
const fill = (v: string, n: Node, port: number): string => v.replaceAll('@DIR@', n.dir).replaceAll('@MANIFEST@', n.manifest).replaceAll('@MANIFESTS@', n.manifests).replaceAll('@PORT@', String(port));

/** Values each variable may be given instead that are valid, and some that look close but are not. */
const VALID: Record<string, string[]> = {
  BACKUP_DIR: ['@DIR@/etc/other/backup'],
  KEY: ['upgrade-cp-2.example_x-fedcba9876543210'],
  IMAGE: ['registry.example.com:5000/k8s/kube-apiserver:v1.36.0'],
  VERSION: ['v1.36.0', 'v1.36.3-rc.1'],
  GATE: ['', 'false'],
  PEER_CA: ['/etc/kubernetes/pki/other-ca.crt'],
  EMULATED_VERSION: ['', '1.34'],
  READY_TIMEOUT: ['45', '3600'],
};
const INVALID: Record<string, string[]> = {
  MANIFEST: ['etc/kubernetes/manifests/kube-apiserver.yaml', '@DIR@/etc/kubernetes/../kubernetes/manifests/kube-apiserver.yaml', '@MANIFEST@/'],
  BACKUP_DIR: ['@MANIFESTS@', '@DIR@/./backup'],
  KEY: ['../../etc/kubernetes/manifests/kube-apiserver', 'upgrade-cp-1-0123456789abcdef/x'],
  IMAGE: ['registry.k8s.io/kube-apiserver:v1.36.3 --x'],
  VERSION: ['1.36.3', 'v1.36'],
  GATE: ['TRUE', '1', 'yes'],
  PEER_IP: ['localhost', '127.0.0.1:@PORT@', 'fe80::1%eth0'],
  PEER_PORT: ['0', '65536', '0x10'],
  EMULATED_VERSION: ['1.35.0', 'v1.35'],
  READY_TIMEOUT: ['999999', '3601', '9', '0', '-1', '1e3', '10 ', '0x10', '010', '9'.repeat(60)],
};
/** Optional variables: unset is valid (PEER_CA only while GATE is not true). */
const OPTIONAL = new Set(['GATE', 'EMULATED_VERSION']);
/** Names the runtime itself reads (node, libuv, the loader, OpenSSL): the chart's admission policy keeps them out. */
const RUNTIME = /^(NODE|UV_|LD_|OPENSSL|SSL_|PATH$)/i;

type Change = { kind: 'keep' } | { kind: 'valid'; value: string } | { kind: 'unset' } | { kind: 'invalid'; value: string };
/** One variable's change; `bad` false: only changes that keep it valid (a kept value, a valid one, an optional unset). */
const changeOf = (name: string, base: string, bad: boolean): fc.Arbitrary<Change> => fc.oneof(
  { weight: bad ? 8 : 14, arbitrary: fc.constant<Change>({ kind: 'keep' }) },
  { weight: VALID[name] ? 2 : 0, arbitrary: fc.constantFrom(...(VALID[name] ?? [''])).map((value): Change => ({ kind: 'valid', value })) },
  { weight: bad || OPTIONAL.has(name) ? 1 : 0, arbitrary: fc.constant<Change>({ kind: 'unset' }) },
  { weight: bad && INVALID[name] ? 1 : 0, arbitrary: fc.constantFrom(...(INVALID[name] ?? [''])).map((value): Change => ({ kind: 'invalid', value })) },
  { weight: bad ? 1 : 0, arbitrary: hostile(base).map((value): Change => ({ kind: 'invalid', value })) },
);

const BASE: Record<string, string> = {
  MANIFEST: '@MANIFEST@', BACKUP_DIR: '@DIR@/etc/kubernetes/apiserver-upgrade-backup', KEY, IMAGE: 'registry.k8s.io/kube-apiserver:v1.36.3', VERSION: 'v1.36.3',
  GATE: 'true', PEER_CA: '/etc/kubernetes/pki/ca.crt', PEER_IP: '127.0.0.1', PEER_PORT: '@PORT@', EMULATED_VERSION: '1.35', READY_TIMEOUT: '10',
};

const extraName = fc.oneof(
  fc.constantFrom('TERMINATION_LOG', 'POLL_INTERVAL', 'TERMINATION_MESSAGE_PATH', 'READY_TIMEOUT_SECONDS', 'Key', 'manifest', 'HOME', 'KUBERNETES_SERVICE_HOST'),
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,15}$/),
).filter((name) => !AGENT_ENV_NAMES.includes(name) && !RUNTIME.test(name));
const extraValue = fc.oneof(
  fc.constantFrom('@MANIFEST@', '@DIR@/' + ADMIN_CONF, '@DIR@/' + ETCD, '@DIR@/new-file', '@MANIFESTS@', '/dev/termination-log', '0', '0.001', '999999', '-1', '$(id)', '\n- --authorization-mode=AlwaysAllow'),
  hostile(''),
);

/** An environment: the contract's variables changed at random (half the time only in valid ways), plus other names. */
const sample = fc.boolean().chain((bad) => fc.record({
  changes: fc.record(Object.fromEntries(AGENT_ENV_NAMES.map((name) => [name, changeOf(name, BASE[name]!, bad)]))),
  extras: fc.dictionary(extraName, extraValue, { maxKeys: 6 }),
}));

test('property: for any environment (random names, values with metacharacters), the agent refuses before touching anything, or acts on valid input only, writing nothing but the manifest and its backup', { timeout: 300_000 }, async () => {
  const seen = { refused: 0, acted: 0 };
  await fc.assert(fc.asyncProperty(sample, async ({ changes, extras }) => {
    const n = node();
    const server = await fakeServer(pki.serving, n.manifest, 'kubelet', 0);
    try {
      const e: Record<string, string> = {};
      for (const [name, value] of Object.entries(extras)) e[name] = fill(value, n, server.port);
      const invalid: string[] = [];
      for (const name of AGENT_ENV_NAMES) {
        const c = changes[name]!;
        if (c.kind === 'unset') continue;
        e[name] = fill(c.kind === 'keep' ? BASE[name]! : c.value, n, server.port);
        if (c.kind === 'invalid') invalid.push(name);
      }
      for (const name of AGENT_ENV_NAMES) {
        if (changes[name]!.kind !== 'unset') continue;
        if (OPTIONAL.has(name) || (name === 'PEER_CA' && e.GATE !== 'true')) continue;
        invalid.push(name);
      }
      const before = tree(n);
      const r = await run(n, e, { killAfterMs: 30_000 });
      const shown = `${JSON.stringify(e)}\nexit ${r.code}: ${r.stderr}`;
      const diff = changed(before, tree(n));
      if (invalid.length > 0) {
        // Refused before touching anything, naming one of the variables that are off.
        seen.refused++;
        assert.equal(r.code, 2, shown);
        const named = /^([A-Z_]+) (must be|is empty)/.exec(r.stderr)?.[1];
        assert.ok(named !== undefined && invalid.includes(named), `the refusal names one of ${invalid.join(', ')}: ${shown}`);
        assert.deepEqual(diff, [], `nothing written: ${shown}`);
        sameBytes(n.manifest, ORIGINAL, shown);
        assert.equal(r.termination, `${r.stderr.split('\n')[0]}\n`, 'the message went only where the agent was told by its caller, not its environment');
        return;
      }
      // Valid: the agent acts, and only as the contract's variables say.
      seen.acted++;
      assert.equal(r.code, 0, shown);
      const backupDir = e.BACKUP_DIR!;
      const backup = join(backupDir, `${e.KEY!}.yaml`);
      sameBytes(backup, ORIGINAL, `the backup: ${shown}`);
      const gate = (e.GATE ?? '') === '' ? undefined : e.GATE === 'true';
      assertOnlyIntended(ORIGINAL.toString('utf8'), readFileSync(n.manifest, 'utf8'), {
        image: e.IMAGE!, gate, peerCA: e.PEER_CA ?? '', peerIP: e.PEER_IP!, peerPort: server.port, emulatedVersion: (e.EMULATED_VERSION ?? '') === '' ? undefined : e.EMULATED_VERSION,
      }, shown);
      const mine = relative(n.dir, backupDir);
      const ancestors = mine.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));
      const allowed = new Set([relative(n.dir, n.manifest), relative(n.dir, backup), ...ancestors]);
      assert.deepEqual(diff.filter((p) => !allowed.has(p)), [], `only the manifest and the backup (and its folder) changed: ${shown}`);
      assert.equal(r.termination, '', 'no termination message on success');
    } finally {
      await server.close();
      removeRoot(n.dir);
    }
  }), { numRuns: 40 });
  process.stderr.write(`[trust] ${seen.refused} environments refused, ${seen.acted} acted on\n`);
  assert.ok(seen.refused >= 8 && seen.acted >= 8, `both outcomes exercised: ${JSON.stringify(seen)}`);
});

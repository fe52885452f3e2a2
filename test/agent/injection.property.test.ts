// Issue 21: no spec or Lease value reaches a shell or a manifest as text. For random values of every field that
// reaches the node agent — newlines, quotes, sed and shell metacharacters, YAML specials, unicode, long strings —
// either the static Pod driver refuses the call before any Job, naming the field, or the real agent
// (`node src/agent/main.ts`, spawned with the Job's environment) runs on a copy of a kubeadm manifest
// (test/fixtures/kubeadm/*.yaml) and the result differs from the original only by the flags the call means to
// change. And the agent, handed a hostile value directly (a Job made by hand), refuses it and writes nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import fc from 'fast-check';
import { StaticPodDriver, type JobClient } from '../../src/drivers/static-pod.ts';
import type { ResolvedStaticPod } from '../../src/api/defaults.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';
import { idempotencyKey } from '../../src/plan/keys.ts';
import { createTestPki, type TestPki } from '../drivers/support/tls.ts';
import { closedPort, fakeServer, makeNode, removeRoot, runAgentProcess, tempRoot } from '../drivers/support/agent-rig.ts';
import { assertOnlyIntended, fixtures } from './support/oracle.ts';

let root = '';
let pki: TestPki;
before(() => {
  root = tempRoot('auo-injection-');
  pki = createTestPki();
});
after(() => {
  removeRoot(root);
  pki.cleanup();
});

const OPERATOR_IMAGE = 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.1.0';
const FILES = fixtures();

/** Characters and strings no field that reaches the agent may hold: each hostile value has at least one of them. */
const SPECIALS = ['\n', '\r\n', ' ', '"', "'", '`', '$', ';', '&', '|', '>', '<', '*', '!', '#', '{', '}', ',', '%', '\\', '\t', '\u0000', '\u0085', '\u2028', 'é', '🦀',
  '\n- --authorization-mode=AlwaysAllow', '\n    - --anonymous-auth=true', '; id', '$(id)', '`id`', ' #', ': ', '\ns#a#b#g', '/../..', '/./'];

/** `base` with one of SPECIALS (and sometimes more random text) put in at a random place: never a valid value. */
function hostile(base: string, specials = SPECIALS): fc.Arbitrary<string> {
  return fc.tuple(fc.constantFrom(...specials), fc.nat(), fc.oneof({ weight: 3, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 300 }) }))
    .map(([s, i, extra]) => {
      const at = i % (base.length + 1);
      return base.slice(0, at) + s + extra + base.slice(at);
    });
}

/** A field's value: a valid one (fixed or random within its grammar), or a hostile one. */
interface Value { value: string; hostile: boolean }
const pick = (valid: fc.Arbitrary<string>, bad: fc.Arbitrary<string>, hostileWeight: number): fc.Arbitrary<Value> =>
  fc.oneof({ weight: 20 - hostileWeight, arbitrary: valid.map((value) => ({ value, hostile: false })) }, { weight: hostileWeight, arbitrary: bad.map((value) => ({ value, hostile: true })) });

const segment = fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,12}$/);
const absPath = fc.array(segment, { minLength: 1, maxLength: 4 }).map((xs) => `/${xs.join('/')}`);
const version = fc.tuple(fc.integer({ min: 30, max: 40 }), fc.integer({ min: 0, max: 20 }), fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }))
  .map(([minor, patch, rc]) => `v1.${minor}.${patch}${rc === undefined ? '' : `-rc.${rc}`}`);
const repository = fc.oneof(fc.constant(''), fc.constant('registry.k8s.io/kube-apiserver'), fc.stringMatching(/^[a-z0-9]{1,8}\.[a-z]{2,4}(:[1-9][0-9]{1,3})?\/[a-z0-9]{1,8}(\/[a-z0-9]{1,8})?\/kube-apiserver$/));

/** One driver call, every field that reaches the agent drawn at random; a field is hostile `w` times in 20. */
const sampleOf = (w: number) => fc.record({
  file: fc.constantFrom(...FILES),
  manifestDir: pick(segment, hostile('etc'), w),
  backupDir: pick(segment, hostile('backup'), w),
  peerCAFile: pick(absPath, hostile('/etc/kubernetes/pki/ca.crt'), w),
  image: pick(repository, hostile('registry.k8s.io/kube-apiserver', SPECIALS.filter((s) => !/[:@[\]]/.test(s))), w),
  agentImage: pick(fc.constantFrom('', OPERATOR_IMAGE, 'registry.example.com/ops/agent:1.0'), hostile(OPERATOR_IMAGE, SPECIALS.filter((s) => !/[:@[\]]/.test(s))), w),
  targetVersion: pick(version, hostile('v1.36.3'), w),
  emulatedVersion: fc.option(pick(fc.tuple(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 0, max: 99 })).map(([a, b]) => `${a}.${b}`), hostile('1.35'), w), { nil: undefined }),
  hostname: pick(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,30}$/), hostile('cp-1'), w),
  // Around the server's real address: empty, or hostile text before or after it (the Lease annotation).
  address: pick(fc.constant(''), hostile('', SPECIALS.filter((s) => !s.includes(':'))), w),
  addressBefore: fc.boolean(),
  call: fc.constantFrom(
    { action: 'EnableProxy' as const, gate: true as boolean | undefined },
    { action: 'Upgrade' as const, gate: true as boolean | undefined },
    { action: 'Upgrade' as const, gate: undefined },
    { action: 'Rollback' as const, gate: true as boolean | undefined },
    { action: 'RevertProxy' as const, gate: false as boolean | undefined },
  ),
});
type Sample = ReturnType<typeof sampleOf> extends fc.Arbitrary<infer T> ? T : never;

/** The field name a refusal of each sample field must show. */
const FIELD_NAMES: Record<string, RegExp> = {
  manifestDir: /spec\.driver\.staticPod\.manifestPath/,
  backupDir: /spec\.driver\.staticPod\.backupDir/,
  peerCAFile: /spec\.driver\.staticPod\.peerCAFile/,
  image: /the target image/,
  agentImage: /spec\.driver\.staticPod\.agentImage/,
  targetVersion: /spec\.targetVersion/,
  emulatedVersion: /the call's emulatedVersion/,
  hostname: /the call's idempotency key/,
  address: /the address .* is not an IP address/,
};

interface Built { spec: ResolvedStaticPod; request: DriverRequest; manifest: string; backup: string }

function build(s: Sample, nodeDir: string, port: number): Built {
  // Under m/, so that the manifest's folder is never the backup folder (the driver refuses that).
  const manifest = `${nodeDir}/m/${s.manifestDir.value}/kube-apiserver.yaml`;
  const backup = `${nodeDir}/${s.backupDir.value}-backup`;
  const hostname = s.hostname.value;
  const real = `127.0.0.1:${port}`;
  const address = s.addressBefore ? `${s.address.value}${real}` : `${real}${s.address.value}`;
  return {
    manifest, backup,
    spec: { image: s.image.value, manifestPath: manifest, backupDir: backup, peerCAFile: s.peerCAFile.value, agentImage: s.agentImage.value, namespace: 'kube-system', readyTimeout: '20s', readyTimeoutMs: 20_000 },
    request: {
      idempotencyKey: idempotencyKey('uid-1', 1, hostname, s.call.action, s.targetVersion.value), action: s.call.action, upgrade: 'u', batch: 1,
      server: { identity: 'apiserver-x', hostname, address }, targetVersion: s.targetVersion.value,
      ...(s.emulatedVersion === undefined ? {} : { emulatedVersion: s.emulatedVersion.value }),
      featureGates: s.call.gate === undefined ? {} : { UnknownVersionInteroperabilityProxy: s.call.gate },
    },
  };
}

/** A fake API server: the mirror Pod runs the fixture's image; Jobs are recorded. */
function fakeKube(runningImage: string): { kube: JobClient; posts: unknown[]; calls: number } {
  const state = { posts: [] as unknown[], calls: 0 };
  const kube = {
    request: (method: string, path: string, opts: { body?: unknown } = {}): Promise<unknown> => {
      state.calls++;
      if (method === 'POST') {
        state.posts.push(opts.body);
        return Promise.resolve({});
      }
      const name = decodeURIComponent(/metadata\.name(?:=|%3D)([^&]*)/.exec(path)?.[1] ?? '');
      return Promise.resolve({ items: [{ metadata: { name }, spec: { containers: [{ name: 'kube-apiserver', image: runningImage }] } }] });
    },
  } as unknown as JobClient;
  return { kube, get posts() { return state.posts; }, get calls() { return state.calls; } };
}

const imageIn = (text: string): string => /\n {4,6}image: (\S+)/.exec(text)![1]!;
const hostileFields = (s: Sample): string[] => Object.entries(s).filter(([, v]) => typeof v === 'object' && v !== null && 'hostile' in v && (v as Value).hostile).map(([k]) => k);

/** The driver's answer for a sample, with a port that is valid but not listened on (validity does not depend on it). */
async function decide(s: Sample, nodeDir: string): Promise<{ outcome: Awaited<ReturnType<StaticPodDriver['call']>>; posts: unknown[] }> {
  const b = build(s, nodeDir, 6443);
  const k = fakeKube(imageIn(s.file.text));
  const outcome = await new StaticPodDriver(b.spec, k.kube, 'u', OPERATOR_IMAGE).call(b.request);
  return { outcome, posts: k.posts };
}

function assertRefusal(s: Sample, outcome: { kind: string; message: string }, posts: unknown[]): void {
  const bad = hostileFields(s);
  assert.equal(outcome.kind, 'rejected', `hostile ${bad.join(', ')}: ${outcome.message}`);
  assert.equal(posts.length, 0, 'no Job');
  assert.ok(bad.some((f) => FIELD_NAMES[f]!.test(outcome.message)), `the refusal names one of ${bad.join(', ')}: ${outcome.message}`);
  assert.doesNotMatch(outcome.message, /[\n\r\u0085\u2028\u2029]/, `the refusal shows the value escaped, on one line: ${JSON.stringify(outcome.message)}`);
}

test('property (driver only, many values): a hostile value in any field is refused before any Job, naming the field', async () => {
  const nodeDir = `${root}/decide`;
  await fc.assert(fc.asyncProperty(sampleOf(6), async (s) => {
    const { outcome, posts } = await decide(s, nodeDir);
    if (hostileFields(s).length > 0) assertRefusal(s, outcome, posts);
    else assert.equal(outcome.kind, 'accepted', outcome.message);
  }), { numRuns: 400 });
});

test('property (the real agent): either refused before any Job, naming the field, or the agent changes exactly the intended flags', { timeout: 240_000 }, async () => {
  let ran = 0;
  let refused = 0;
  await fc.assert(fc.asyncProperty(sampleOf(1), async (s) => {
    const nodeDir = makeNode(root, 'x').dir;
    try {
      const first = await decide(s, nodeDir);
      if (first.outcome.kind === 'rejected') {
        refused++;
        assertRefusal(s, first.outcome, first.posts);
        return;
      }
      assert.deepEqual(hostileFields(s), [], `accepted: ${first.outcome.message}`);
      // The node: the fixture at the manifest path, a server playing its kube-apiserver.
      const probeBuild = build(s, nodeDir, 1);
      mkdirSync(dirname(probeBuild.manifest), { recursive: true });
      writeFileSync(probeBuild.manifest, s.file.text);
      const server = await fakeServer(pki.serving, probeBuild.manifest, 'kubelet', 0);
      try {
        const b = build(s, nodeDir, server.port);
        const k = fakeKube(imageIn(s.file.text));
        const outcome = await new StaticPodDriver(b.spec, k.kube, 'u', OPERATOR_IMAGE).call(b.request);
        assert.equal(outcome.kind, 'accepted', outcome.message);
        const job = k.posts[0] as { spec: { template: { spec: { containers: { image: string; env: { name: string; value: string }[] }[] } } } };
        const container = job.spec.template.spec.containers[0]!;
        assert.equal(container.image, s.agentImage.value || OPERATOR_IMAGE);
        const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
        const termination = `${nodeDir}/termination-log`;
        const run = await runAgentProcess({ dir: nodeDir, manifests: dirname(b.manifest), manifest: b.manifest, backup: b.backup, termination },
          env, { watchFolder: false, pollMs: 50 });
        assert.equal(run.code, 0, `${run.stderr} ${run.termination}`);
        ran++;
        assertOnlyIntended(s.file.text, run.manifest, {
          image: env.IMAGE!, gate: s.call.gate, peerCA: s.peerCAFile.value, peerIP: '127.0.0.1', peerPort: server.port,
          emulatedVersion: s.emulatedVersion?.value,
        }, s.file.name);
        assert.equal(readFileSync(`${b.backup}/${b.request.idempotencyKey}.yaml`, 'utf8'), s.file.text, 'the backup is the manifest as found');
      } finally {
        await server.close();
      }
    } finally {
      removeRoot(nodeDir);
    }
  }), { numRuns: 16 });
  process.stderr.write(`[injection] the real agent ran ${ran} times; ${refused} calls were refused before any Job\n`);
  assert.ok(ran >= 4, `the agent ran (${ran})`);
});

test('property (the agent alone, as a hand-made Job would run it): a hostile value in any variable stops it with exit 2 before it writes anything', { timeout: 240_000 }, async () => {
  const port = await closedPort();
  const file = FILES.find((f) => f.name === 'kube-apiserver-v1.35.4.yaml')!;
  const VARS: [string, string][] = [['MANIFEST', ''], ['BACKUP_DIR', ''], ['KEY', 'upgrade-cp-1-0123456789abcdef'], ['IMAGE', 'registry.k8s.io/kube-apiserver:v1.36.3'],
    ['VERSION', 'v1.36.3'], ['GATE', 'true'], ['PEER_CA', '/etc/kubernetes/pki/ca.crt'], ['PEER_IP', '127.0.0.1'], ['PEER_PORT', String(port)], ['EMULATED_VERSION', '1.35'],
    ['READY_TIMEOUT', '10']];
  // A process environment cannot hold NUL (execve takes C strings; Node's spawn refuses it before the agent runs), so
  // no Job can hand the agent one: the values here are every other hostile string. The NUL a spec may carry is
  // refused by the driver's checks, before any Job, in the first property.
  const ENV_SPECIALS = SPECIALS.filter((x) => !x.includes('\u0000'));
  const extraText = fc.string({ maxLength: 40 }).map((x) => x.replaceAll('\u0000', ''));
  await fc.assert(fc.asyncProperty(fc.constantFrom(...VARS.keys()), extraText, fc.constantFrom(...ENV_SPECIALS), fc.nat(), async (i, extra, special, at) => {
    const n = makeNode(root, file.text);
    try {
      const env = Object.fromEntries(VARS.map(([k, v]) => [k, k === 'MANIFEST' ? n.manifest : k === 'BACKUP_DIR' ? n.backup : v]));
      const [name] = VARS[i]!;
      const good = env[name]!;
      const pos = at % (good.length + 1);
      env[name] = good.slice(0, pos) + special + extra + good.slice(pos);
      const run = await runAgentProcess(n, env, { watchFolder: false, pollMs: 50 });
      assert.equal(run.code, 2, `${name}=${JSON.stringify(env[name])}: ${run.stderr}`);
      assert.match(run.termination, new RegExp(`^${name} must be `));
      assert.doesNotMatch(run.termination.trimEnd(), /\n/, 'one line: the value is shown escaped');
      assert.equal(run.manifest, file.text, 'the manifest is untouched');
      assert.equal(existsSync(n.backup), false, 'nothing written');
    } finally {
      removeRoot(n.dir);
    }
  }), { numRuns: 8 });
});

// The repository's Dockerfile and the image the harness builds without Docker (e2e/cluster/operator-image.ts) say
// the same thing: base version, user, working folder, environment, ports, entrypoint and command, what is copied
// where, and how the production dependencies are made — and the chart's defaults name this image, which also runs
// the static Pod driver's node agent. Specs only: nothing is built here (e2e/images.e2e.ts builds
// and runs them).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { copyArgs, envPairs, execForm, instructions, stages, type Stage } from '../../e2e/cluster/dockerfile.ts';
import { PATH_ENV, REPO_ROOT, type ImageSpec } from '../../e2e/cluster/images.ts';
import { AGENT_COMMAND } from '../../src/drivers/static-pod.ts';
import { APP_COPIES, BUILD_ARGS, IMAGE_OWN_FILES, BUILD_COPIES, BUILD_OUTPUT, ETC_PASSWD, NODE_PATH_IN_IMAGE, NPM_CI_ARGS, OPERATOR_CONFIG, OPERATOR_IMAGE, OPERATOR_REPOSITORY, lockedNodeVersion, nodeRuntime, operatorImageSpec, parseLdd, type NodeRuntime } from '../../e2e/cluster/operator-image.ts';
import { NODE_TARBALLS, readElf, RUNTIME_DEBS } from '../../e2e/cluster/runtime-packages.ts';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';

const read = (p: string): string => readFileSync(join(REPO_ROOT, p), 'utf8');
const only = (stage: Stage, op: string): string | undefined => {
  const all = stage.instructions.filter((i) => i.op === op);
  assert.ok(all.length <= 1, `${op} appears ${all.length} times in the stage FROM ${stage.from}`);
  return all[0]?.args;
};
describe('the Dockerfile reader', () => {
  it('joins continuations, drops comments, reads stages, exec forms, both ENV forms and COPY flags', () => {
    const text = 'ARG X=1\n# c\nFROM --platform=$P golang:1 AS b\nRUN a \\\n  && b\n\nFROM scratch\nENV A=1 B="two words" C=\'x\'\nENV D four five\nCOPY --from=b /x /y\nCMD ["a", "b"]\nENTRYPOINT a b\n';
    const s = stages(text);
    assert.deepEqual(s.map((x) => [x.from, x.name]), [['golang:1', 'b'], ['scratch', undefined]]);
    assert.equal(s[0]!.instructions[0]!.args, 'a && b');
    assert.equal(s[0]!.instructions[0]!.line, 4);
    const [env1, env2, copy, cmd, ep] = s[1]!.instructions;
    assert.deepEqual(envPairs(env1!), [['A', '1'], ['B', 'two words'], ['C', 'x']]);
    assert.deepEqual(envPairs(env2!), [['D', 'four five']]);
    assert.deepEqual(copyArgs(copy!), { flags: { from: 'b' }, sources: ['/x'], dest: '/y' });
    assert.deepEqual(execForm(cmd!), ['a', 'b']);
    assert.throws(() => execForm(ep!), /not in exec \(JSON\) form/);
    assert.throws(() => instructions('FROM a\nRUN x \\\n'), /ends in a continuation/);
    assert.throws(() => stages('RUN x\n'), /RUN before any FROM/);
  });
});

describe('the operator image: Dockerfile and operatorImageSpec agree', () => {
  let dir: string;
  let node: NodeRuntime;
  let spec: ImageSpec;
  let build: Stage;
  let final: Stage;
  const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string }> };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'auo-dockerfiles-'));
    // A stand-in for the npm ci staging folder: one package, one executable, one .bin symlink.
    mkdirSync(join(dir, 'node_modules', 'dep', 'bin'), { recursive: true });
    mkdirSync(join(dir, 'node_modules', '.bin'));
    writeFileSync(join(dir, 'node_modules', 'dep', 'index.js'), 'export default 1;\n');
    writeFileSync(join(dir, 'node_modules', 'dep', 'bin', 'dep.js'), '#!/usr/bin/env node\n');
    chmodSync(join(dir, 'node_modules', 'dep', 'bin', 'dep.js'), 0o755);
    symlinkSync('../dep/bin/dep.js', join(dir, 'node_modules', '.bin', 'dep'));
    // A stand-in for the compiled app: two files, one in a folder.
    mkdirSync(join(dir, 'dist', 'runtime'), { recursive: true });
    writeFileSync(join(dir, 'dist', 'main.js'), 'export {};\n');
    writeFileSync(join(dir, 'dist', 'runtime', 'kube.js'), 'export {};\n');
    node = await nodeRuntime();
    spec = operatorImageSpec({ root: REPO_ROOT, node, modules: dir, dist: join(dir, 'dist') });
    const all = stages(read('Dockerfile'));
    assert.equal(all.length, 2, 'a build stage and the image');
    [build, final] = [all[0]!, all[1]!];
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('FROM node:<the version of the node package in package-lock.json>-slim by digest, the version of the binary the image ships', () => {
    const m = /^node:(\d+\.\d+\.\d+)-slim@sha256:[0-9a-f]{64}$/.exec(final.from);
    assert.ok(m, `FROM ${final.from}: pin node:<x.y.z>-slim@sha256:<digest of the image index>`);
    assert.equal(m[1], lock.packages['node_modules/node']?.version, 'the Dockerfile\'s node is package-lock.json\'s');
    assert.equal(node.version, m[1], 'the image\'s node is that version');
    assert.equal(lockedNodeVersion(), m[1]);
    assert.equal(NODE_TARBALLS[process.arch]?.version, m[1], 'the pinned node tarball is that version');
    const entry = spec.entries.find((e) => e.path === NODE_PATH_IN_IMAGE);
    assert.ok(entry && entry.type === 'file' && 'source' in entry && entry.source === node.binary, 'node at /usr/local/bin/node');
    assert.equal(entry.mode, 0o755);
    assert.match(readFileSync(node.binary).toString('latin1'), new RegExp(`node\\.js/v${m[1]!.replace(/\./g, '\\.')}`), 'the version string by which an SBOM finds node');
  });

  it('USER, WORKDIR, ENV, EXPOSE, ENTRYPOINT and CMD are the image config', () => {
    assert.equal(only(final, 'USER'), spec.user);
    assert.equal(only(final, 'WORKDIR'), spec.workingDir);
    const env = final.instructions.filter((i) => i.op === 'ENV').flatMap(envPairs).map(([k, v]) => `${k}=${v}`);
    assert.deepEqual(spec.env, [PATH_ENV, ...env], 'the base image\'s PATH, then the Dockerfile\'s ENV');
    assert.ok(PATH_ENV.split('=')[1]!.split(':').includes(`/${posix.dirname(NODE_PATH_IN_IMAGE)}`), 'the entrypoint\'s bare `node` is on PATH');
    const ports = only(final, 'EXPOSE')!.split(/\s+/).map((p) => (p.includes('/') ? p : `${p}/tcp`));
    assert.deepEqual(spec.exposedPorts, ports);
    assert.deepEqual(spec.entrypoint, execForm(final.instructions.find((i) => i.op === 'ENTRYPOINT')!));
    assert.deepEqual(spec.cmd, execForm(final.instructions.find((i) => i.op === 'CMD')!));
  });

  it('the build stage compiles src/ with the project\'s tsc: BUILD_COPIES, the full npm ci, `node <BUILD_ARGS>`', () => {
    assert.equal(build.from, final.from, 'the same node compiles and runs');
    assert.ok(build.name, 'the build stage is named, for COPY --from');
    assert.equal(only(build, 'WORKDIR'), spec.workingDir);
    const copies = build.instructions.filter((i) => i.op === 'COPY').map(copyArgs);
    assert.deepEqual(copies.map((c) => ({ sources: c.sources, dest: c.dest })), BUILD_COPIES.map((c) => ({ sources: [...c.sources], dest: c.dest })));
    const runs = build.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
    assert.equal(runs.length, 2);
    assert.match(runs[0]!, /^npm ci (?!.*--omit)/, 'every dependency, TypeScript included');
    assert.equal(runs[1], `node ${BUILD_ARGS.join(' ')}`);
    const tsconfig = JSON.parse(read(BUILD_ARGS[2])) as { compilerOptions?: { outDir?: string } };
    assert.equal(`${tsconfig.compilerOptions?.outDir}/`, BUILD_OUTPUT.from, 'the compiler writes where the image copies from');
  });

  it('what is COPYed (and .dockerignore lets through) is /app: package.json, package-lock.json, the compiled dist/, and the production node_modules', () => {
    const copies = final.instructions.filter((i) => i.op === 'COPY').map(copyArgs);
    assert.deepEqual(copies.map((c) => ({ sources: c.sources, dest: c.dest })), [
      ...APP_COPIES.map((c) => ({ sources: [...c.sources], dest: c.dest })),
      { sources: [`${spec.workingDir}/${BUILD_OUTPUT.from}`], dest: BUILD_OUTPUT.dest },
    ]);
    assert.deepEqual(copies.map((c) => c.flags), [...APP_COPIES.map(() => ({})), { from: build.name }], 'root-owned, as in the spec; dist/ from the build stage');
    const ignore = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    assert.deepEqual(ignore, ['*', ...[...new Set([...APP_COPIES, ...BUILD_COPIES].flatMap((c) => c.sources))].map((s) => `!${s}`)]);
    // Computed here as Docker would copy them, not through the builder's walk.
    const expected = [
      ...['package.json', 'package-lock.json'],
      'dist/main.js', 'dist/runtime/kube.js',
      'node_modules/.bin/dep', 'node_modules/dep/bin/dep.js', 'node_modules/dep/index.js',
    ].map((p) => `app/${p}`).sort();
    const app = spec.entries.filter((e) => e.type !== 'dir' && e.path.startsWith('app/')).map((e) => e.path).sort();
    assert.deepEqual(app, expected);
    assert.ok(!spec.entries.some((e) => e.path.startsWith('app/src')), 'no TypeScript in the image');
    assert.deepEqual(spec.entrypoint, ['node', 'dist/main.js'], 'the entrypoint runs the compiled operator');
    const link = spec.entries.find((e) => e.path === 'app/node_modules/.bin/dep');
    assert.deepEqual(link, { path: 'app/node_modules/.bin/dep', type: 'symlink', target: '../dep/bin/dep.js' });
    const modeOf = (path: string): number | undefined => {
      const e = spec.entries.find((x) => x.path === path);
      return e?.type === 'file' ? e.mode : undefined;
    };
    assert.equal(modeOf('app/node_modules/dep/bin/dep.js'), 0o755, 'executables stay executable');
    assert.equal(modeOf('app/node_modules/dep/index.js'), 0o644);
    assert.equal(modeOf('app/dist/main.js'), 0o644);
  });

  it('the production dependencies are `npm <NPM_CI_ARGS>`, as the Dockerfile\'s RUN', () => {
    const runs = final.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
    assert.equal(runs.length, 1);
    assert.ok(runs[0]!.split('&&').map((s) => s.trim()).includes(`npm ${NPM_CI_ARGS.join(' ')}`), runs[0]);
    assert.ok(NPM_CI_ARGS.includes('--omit=dev') && NPM_CI_ARGS.includes('--ignore-scripts'));
  });

  it('node\'s loader and libraries come from the pinned Debian packages, the same ones this machine\'s loader resolves, each listed in its package\'s dpkg entry', () => {
    const files = new Map(spec.entries.filter((e) => e.type === 'file').map((e) => [e.path, e]));
    const links = new Map(spec.entries.filter((e) => e.type === 'symlink').map((e) => [e.path, e.target]));
    // Every library this machine's ldd resolves for the binary, by name, is in the image (as a file or a link to one).
    const ldd = parseLdd(execFileSync('ldd', [node.binary], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } }));
    const names = new Set([...files.keys(), ...links.keys()].map((p) => posix.basename(p)));
    for (const lib of ldd) assert.ok(names.has(posix.basename(lib)), `${lib} (ldd) is not in the image`);
    const needed = readElf(node.binary);
    assert.ok(needed.needed.includes('libc.so.6'), needed.needed.join(', '));
    assert.ok(needed.interpreter && links.has(needed.interpreter.replace(/^\//, '')), `the loader ${needed.interpreter} is where node asks for it`);
    // Each package's status.d entry is its control file, and its md5sums lists exactly the image's files of it.
    const pins = RUNTIME_DEBS.amd64!;
    assert.deepEqual(node.runtime.packages.map((p) => `${p.name}=${p.version}`), pins.map((p) => `${p.name}=${p.version}`));
    let listed = 0;
    for (const p of node.runtime.packages) {
      const control = files.get(`var/lib/dpkg/status.d/${p.name}`);
      assert.ok(control && 'data' in control, p.name);
      const fields = String(control.data).split('\n');
      assert.ok(fields.includes(`Package: ${p.name}`) && fields.includes(`Version: ${p.version}`), `${p.name}: its control file`);
      const md5sums = files.get(`var/lib/dpkg/status.d/${p.name}.md5sums`);
      assert.ok(md5sums && 'data' in md5sums);
      const lines = String(md5sums.data).split('\n').filter(Boolean);
      assert.deepEqual(lines.map((l) => l.slice(34)), p.files);
      for (const l of lines) {
        const f = files.get(l.slice(34));
        assert.ok(f && 'source' in f, l);
        assert.equal(createHash('md5').update(readFileSync(f.source)).digest('hex'), l.slice(0, 32), l);
        listed++;
      }
    }
    // Every file at a system path (not /app, /etc's own three, node or the dpkg database) is one a package lists.
    // What the builder writes itself (no package's file) is IMAGE_OWN_FILES, and the dpkg database.
    const written = spec.entries.filter((e) => e.type === 'file' && 'data' in e && !e.path.startsWith('var/lib/dpkg/status.d/')).map((e) => e.path).sort();
    assert.deepEqual(written, [...IMAGE_OWN_FILES]);
    const own = new Set<string>([...IMAGE_OWN_FILES, NODE_PATH_IN_IMAGE]);
    const system = [...files.keys()].filter((p) => !p.startsWith('app/') && !p.startsWith('var/lib/dpkg/') && !own.has(p));
    assert.equal(system.length, listed, system.join(', '));
    assert.ok(files.has('usr/lib/os-release') && links.get('etc/os-release') === '../usr/lib/os-release', 'the distribution, for scanners');
    assert.deepEqual(parseLdd('\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f00)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f01)\n'), ['/lib/x86_64-linux-gnu/libc.so.6', '/lib64/ld-linux-x86-64.so.2']);
    assert.throws(() => parseLdd('\tlibfoo.so.1 => not found\n'), /not found/);
  });

  it('uid 1000 exists, can write nothing but /tmp, and is the chart\'s runAsUser; the chart mounts an emptyDir on /tmp', () => {
    const [uid, gid] = spec.user!.split(':');
    assert.match(ETC_PASSWD, new RegExp(`^node:x:${uid}:${gid}:`, 'm'));
    const writable = spec.entries.filter((e) => e.type !== 'symlink' && ((e.mode ?? 0) & 0o002) !== 0).map((e) => e.path);
    assert.deepEqual(writable, ['tmp']);
    const values = parseYaml(read('charts/apiserver-upgrade-operator/values.yaml')) as { podSecurityContext: Record<string, unknown>; securityContext: Record<string, unknown>; healthPort: number; metrics: { port: number }; image: { repository: string; tag: string } };
    assert.equal(values.podSecurityContext.runAsUser, Number(uid));
    assert.equal(values.podSecurityContext.runAsGroup, Number(gid));
    assert.equal(values.podSecurityContext.runAsNonRoot, true);
    assert.equal(values.securityContext.readOnlyRootFilesystem, true);
    const deployment = read('charts/apiserver-upgrade-operator/templates/deployment.yaml');
    assert.match(deployment, /- name: tmp\n\s+mountPath: \/tmp\n/);
    assert.match(deployment, /- name: tmp\n\s+emptyDir:/);
    assert.deepEqual([...spec.exposedPorts!].sort(), [`${values.metrics.port}/tcp`, `${values.healthPort}/tcp`].sort(), 'EXPOSE is the chart\'s ports');
  });

  it('the chart\'s default image is the one this repository builds', () => {
    const values = parseYaml(read('charts/apiserver-upgrade-operator/values.yaml')) as { image: { repository: string; tag: string } };
    const chart = parseYaml(read('charts/apiserver-upgrade-operator/Chart.yaml')) as { appVersion: string };
    assert.equal(values.image.repository, OPERATOR_REPOSITORY);
    assert.equal(values.image.tag, '', 'the tag defaults to appVersion');
    assert.equal(`${values.image.repository}:${chart.appVersion}`, OPERATOR_IMAGE);
    assert.equal(spec.name, OPERATOR_IMAGE);
    assert.match(read('Dockerfile'), new RegExp(`docker build -t ${OPERATOR_REPOSITORY.replace(/[.]/g, '\\.')}:<chart appVersion> \\.`));
  });
});

describe('the node agent runs from the operator image: no second image', () => {
  it('the chart\'s default policy.agentImages is the operator image, the chart passes it as --agent-image, the examples name no other', () => {
    const values = parseYaml(read('charts/apiserver-upgrade-operator/values.yaml')) as { policy: { agentImages: unknown[] } };
    assert.deepEqual(values.policy.agentImages, [{ image: OPERATOR_IMAGE }]);
    assert.match(read('charts/apiserver-upgrade-operator/templates/deployment.yaml'), /- --agent-image=\{\{ \.Values\.image\.repository \}\}:\{\{ \.Values\.image\.tag \| default \.Chart\.AppVersion \}\}\n/);
    for (const f of readdirSync(join(REPO_ROOT, 'examples')).filter((x) => x.endsWith('.yaml'))) {
      assert.doesNotMatch(read(`examples/${f}`), /^\s*agentImage:/m, `examples/${f}: the operator's own image, unnamed`);
    }
    assert.equal(existsSync(join(REPO_ROOT, 'images/node-agent')), false);
  });

  it('the image holds what the agent Job runs: node on PATH and /app/dist/agent/main.js from the compiled src/agent/main.ts', () => {
    assert.deepEqual(AGENT_COMMAND, ['node', '/app/dist/agent/main.js']);
    assert.equal(`/${NODE_PATH_IN_IMAGE}`, '/usr/local/bin/node');
    assert.ok(PATH_ENV.split('=')[1]!.split(':').includes('/usr/local/bin'));
    assert.ok(existsSync(join(REPO_ROOT, 'src/agent/main.ts')));
    assert.equal(`${OPERATOR_CONFIG.workingDir}/${BUILD_OUTPUT.dest.replace(/^\.\//, '')}agent/main.js`, AGENT_COMMAND[1]);
  });
});

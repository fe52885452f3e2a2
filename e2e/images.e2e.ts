// The image library of the nodes mode (e2e/cluster/images.ts) against a real containerd: a throwaway
// containerd (own root, state, socket and runc root under a temp folder) imports the pause, toolbox and
// kube-apiserver images built here without a registry, and runs each once; and the operator's image, run as
// the chart runs it (uid 1000 from the image config, read-only root, a tmpfs on /tmp for the chart's emptyDir),
// and as the static Pod driver's Job runs it: the node agent editing a kubeadm manifest. Builds go to a temp image cache,
// so the build times reported are cold ones (the Go build cache of the pause program aside). Run it alone,
// under the shared lock: flock /tmp/auo-e2e.lock npx node --test e2e/images.e2e.ts
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { componentImage, importImages, listImages, pauseImage, staticBusybox, toolboxImage, type ImageTar } from './cluster/images.ts';
import { AGENT_COMMAND } from '../src/drivers/static-pod.ts';
import { createTestPki } from '../test/drivers/support/tls.ts';
import { fakeServer } from '../test/drivers/support/agent-rig.ts';
import { binary, builtBinary, OLD_VERSION } from './cluster/binaries.ts';
import { OPERATOR_CONFIG, OPERATOR_IMAGE, operatorImageBuild } from './cluster/operator-image.ts';
import { requireCommands } from './cluster/requirements.ts';
import { sleep, waitFor } from './cluster/exec.ts';

const dir = mkdtempSync('/tmp/auo-img-');
const sock = join(dir, 'containerd.sock');
const runcRoot = join(dir, 'runc');
/** Our own cgroup parent (cgroup v1 hierarchies and v2 alike): the containers' cgroups go under it, and it goes at the end. */
const cgroupParent = `auo-images-${process.pid}`;
let containerd: ChildProcess | undefined;
let savedCache: string | undefined;

function config(): string {
  // The nodes recipe's settings (shared/kubelet-notes/containerd-config.toml), everything under `dir`.
  return `version = 2
root = "${dir}/root"
state = "${dir}/state"
[grpc]
  address = "${sock}"
[ttrpc]
  address = "${sock}.ttrpc"
[debug]
  level = "info"
[metrics]
  address = ""
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.10"
    disable_apparmor = true
    restrict_oom_score_adj = true
    enable_selinux = false
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      discard_unpacked_layers = false
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          BinaryName = "/usr/bin/runc"
          Root = "${runcRoot}"
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "${dir}/cni/bin"
      conf_dir = "${dir}/cni/net.d"
`;
}

function ctr(args: string[], timeoutMs = 120_000): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    execFile('ctr', ['-a', sock, '-n', 'k8s.io', ...args], { encoding: 'utf8', timeout: timeoutMs }, (err, stdout, stderr) => {
      resolve({ stdout, stderr, code: err ? (typeof err.code === 'number' ? err.code : 1) : 0 });
    });
  });
}

/** `ctr run` with our runc root and cgroup parent, so nothing lands in containerd's defaults outside `dir`. */
const runArgs = (id: string): string[] => ['run', '--runc-root', runcRoot, '--fifo-dir', join(dir, 'fifo'), '--cgroup', `/${cgroupParent}/${id}`];
/** The shims' sockets go to /run/containerd/s whatever the config says (containerd 1.6): removed at the end when this test made it. */
const RUN_CONTAINERD = '/run/containerd';
const hadRunContainerd = existsSync(RUN_CONTAINERD);

/** Processes whose command line names the temp folder: containerd and its shims (`-address <sock>`). */
function processesOf(path: string): number[] {
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(path);
    } catch {
      return false;
    }
  }).map(Number);
}

const mountsUnder = (path: string): string[] => readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '').filter((m) => m === path || m.startsWith(`${path}/`));
const cgroupsLeft = (): string[] => readdirSync('/sys/fs/cgroup').map((h) => join('/sys/fs/cgroup', h, cgroupParent)).filter((p) => existsSync(p));

/** Tasks and containers removed, containerd stopped, mounts undone deepest first, cgroups and files removed. */
async function teardown(): Promise<void> {
  if (containerd && containerd.exitCode === null && containerd.signalCode === null) {
    const tasks = (await ctr(['tasks', 'ls', '-q'])).stdout.split('\n').filter(Boolean);
    for (const t of tasks) {
      await ctr(['tasks', 'kill', '-s', 'SIGKILL', t]);
      await waitFor(`task ${t} to stop`, 10_000, async () => ((await ctr(['tasks', 'ls'])).stdout.split('\n').some((l) => l.startsWith(`${t} `) && !/STOPPED/.test(l)) ? undefined : true)).catch(() => undefined);
      await ctr(['tasks', 'rm', '-f', t]);
    }
    for (const c of (await ctr(['containers', 'ls', '-q'])).stdout.split('\n').filter(Boolean)) await ctr(['containers', 'rm', c]);
    const exited = new Promise((r) => containerd!.once('exit', r));
    containerd.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000)]);
    if (containerd.exitCode === null && containerd.signalCode === null) {
      containerd.kill('SIGKILL');
      await exited;
    }
  }
  // Shims outlive containerd; they name the socket on their command line.
  for (const pid of processesOf(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await waitFor('the shims to exit', 10_000, async () => (processesOf(dir).length === 0 ? true : undefined));
  for (const m of mountsUnder(dir).sort().reverse()) {
    await new Promise<void>((resolve) => execFile('umount', [m], (err) => (err ? execFile('umount', ['-l', m], () => resolve()) : resolve())));
  }
  for (const cg of cgroupsLeft()) {
    for (const sub of readdirSync(cg, { withFileTypes: true }).filter((d) => d.isDirectory())) rmdirSync(join(cg, sub.name));
    rmdirSync(cg);
  }
  rmSync(dir, { recursive: true, force: true });
  if (!hadRunContainerd) {
    for (const d of [join(RUN_CONTAINERD, 's'), join(RUN_CONTAINERD, 'fifo'), RUN_CONTAINERD]) {
      try {
        rmdirSync(d);
      } catch {
        /* absent, or in use by another containerd since: kept */
      }
    }
  }
}

describe('image library against a real containerd', { timeout: 20 * 60_000 }, () => {
  const images: Record<string, ImageTar> = {};

  before(async () => {
    requireCommands(['containerd', 'ctr', 'runc'], 'the image e2e test');
    staticBusybox();
    savedCache = process.env.AUO_IMAGE_CACHE;
    process.env.AUO_IMAGE_CACHE = join(dir, 'images');
    mkdirSync(runcRoot, { recursive: true });
    writeFileSync(join(dir, 'config.toml'), config());
    const log = openSync(join(dir, 'containerd.log'), 'a');
    containerd = spawn('containerd', ['--config', join(dir, 'config.toml')], { stdio: ['ignore', log, log] });
    await waitFor('containerd to answer on its socket', 30_000, async () => {
      if (containerd!.exitCode !== null) throw new Error(`containerd exited ${containerd!.exitCode}: ${readFileSync(join(dir, 'containerd.log'), 'utf8').slice(-2000)}`);
      return existsSync(sock) && (await ctr(['version'])).code === 0 ? true : undefined;
    });
  });

  after(async () => {
    await teardown();
    if (savedCache === undefined) delete process.env.AUO_IMAGE_CACHE;
    else process.env.AUO_IMAGE_CACHE = savedCache;
  });

  it('builds the pause and toolbox images and imports them (idempotently): ctr lists both with their manifests', async (t) => {
    for (const [key, build] of [['pause', () => pauseImage()], ['toolbox', () => toolboxImage()]] as const) {
      const t0 = Date.now();
      images[key] = await build();
      t.diagnostic(`${key} image ${images[key].name}: built in ${((Date.now() - t0) / 1000).toFixed(2)} s, ${(statSync(images[key].path).size / 1e6).toFixed(2)} MB`);
    }
    const t0 = Date.now();
    await importImages(sock, [images.pause!, images.toolbox!]);
    t.diagnostic(`imported both in ${((Date.now() - t0) / 1000).toFixed(2)} s`);
    const names = (await ctr(['images', 'ls', '-q'])).stdout.split('\n').filter(Boolean);
    assert.ok(names.includes('registry.k8s.io/pause:3.10'), names.join(', '));
    assert.ok(names.includes(images.toolbox!.name), names.join(', '));
    const listed = await listImages(sock);
    assert.equal(listed.get('registry.k8s.io/pause:3.10'), images.pause!.manifestDigest);
    assert.equal(listed.get(images.toolbox!.name), images.toolbox!.manifestDigest);

    // Again: nothing to import, the same listing.
    const t1 = Date.now();
    await importImages(sock, [images.pause!, images.toolbox!]);
    t.diagnostic(`second import (already there): ${((Date.now() - t1) / 1000).toFixed(2)} s`);
    assert.deepEqual(await listImages(sock), listed);
    // A tar whose manifest is not the one listed is caught.
    await assert.rejects(importImages(sock, [{ ...images.toolbox!, manifestDigest: `sha256:${'0'.repeat(64)}` }]), /is sha256:[0-9a-f]{64}, not sha256:0{64}/);
  });

  it('runs the toolbox image: a shell with busybox applets, as root', async () => {
    const r = await ctr([...runArgs('t1'), '--rm', images.toolbox!.name, 't1', '/bin/sh', '-c', 'echo ok; id -un; echo x | sed -E "s/x/sed-works/"; readlink /bin/httpd']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'), ['ok', 'root', 'sed-works', 'busybox']);
  });

  /**
   * Runs `image` in the foreground (`ctr run --rm`, whose exit status is the task's) with the host's static busybox
   * mounted at /busybox, lets an exec'd shell orphan a `sleep 1` (its subshell exits at once, so the sleep is
   * re-parented to PID 1 of the container), and returns the zombie children of PID 1 two seconds after that sleep
   * ended; then signals PID 1 (SIGTERM) and returns how long it took to exit, and its status.
   */
  async function orphanAndStop(id: string, image: string, cmd: string[], stop: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<{ zombies: string[]; stopSeconds: number; status: number }> {
    const bb = staticBusybox();
    const run = spawn('ctr', ['-a', sock, '-n', 'k8s.io', ...runArgs(id), '--rm', '--mount', `type=bind,src=${bb},dst=/busybox,options=rbind:ro`, image, id, ...cmd], { stdio: 'ignore' });
    const status = new Promise<number>((resolve) => run.once('exit', (code) => resolve(code ?? -1)));
    const pid = await waitFor(`${id} to run`, 10_000, async () => {
      const line = (await ctr(['tasks', 'ls'])).stdout.split('\n').find((l) => l.startsWith(`${id} `));
      return line && /RUNNING/.test(line) ? Number(line.split(/\s+/)[1]) : undefined;
    });
    const ex = await ctr(['tasks', 'exec', '--fifo-dir', join(dir, 'fifo'), '--exec-id', `${id}-e`, id, '/busybox', 'sh', '-c', '(/busybox sleep 1 &); /busybox sleep 3']);
    assert.equal(ex.code, 0, ex.stderr);
    const zombies = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        const st = readFileSync(`/proc/${p}/status`, 'utf8');
        return new RegExp(`^PPid:\\s+${pid}$`, 'm').test(st) && /^State:\s+Z/m.test(st);
      } catch {
        return false;
      }
    });
    const t0 = Date.now();
    await ctr(['tasks', 'kill', '-s', stop, id]);
    const code = await Promise.race([status, sleep(10_000).then(() => undefined)]);
    if (code === undefined) {
      await ctr(['tasks', 'kill', '-s', 'SIGKILL', id]);
      return { zombies, stopSeconds: Infinity, status: await status };
    }
    return { zombies, stopSeconds: (Date.now() - t0) / 1000, status: code };
  }

  it('runs pause until SIGTERM (exit 0 at once), and it reaps the orphans it inherits', async () => {
    const r = await orphanAndStop('p1', images.pause!.name, []);
    assert.deepEqual(r.zombies, [], 'no zombie child of pause');
    assert.equal(r.status, 0, 'exit status 0');
    assert.ok(r.stopSeconds < 5, `exited ${r.stopSeconds} s after SIGTERM`);
  });

  it('(the check above can fail) a PID 1 that does not reap keeps the orphan as a zombie', async () => {
    // busybox sleep as PID 1: it never waits for children (nor stops on SIGTERM: PID 1 has no default action).
    const r = await orphanAndStop('z1', images.toolbox!.name, ['/bin/sleep', '30'], 'SIGKILL');
    assert.equal(r.zombies.length, 1, 'the orphaned sleep is left a zombie');
  });

  it(`builds the kube-apiserver ${OLD_VERSION} image from the cached binary, imports it, and it runs --version`, async (t) => {
    // The binary is built by binaries.ts (with its progress line) when it is not in the cache yet: waited for, never skipped.
    if (builtBinary('kube-apiserver', OLD_VERSION) === undefined) t.diagnostic(`kube-apiserver ${OLD_VERSION} is not built yet: building it (binaries.ts)`);
    await binary('kube-apiserver', OLD_VERSION);
    const t0 = Date.now();
    const img = await componentImage('kube-apiserver', OLD_VERSION);
    t.diagnostic(`${img.name}: built in ${((Date.now() - t0) / 1000).toFixed(2)} s, ${(statSync(img.path).size / 1e6).toFixed(1)} MB`);
    assert.equal(img.name, `registry.k8s.io/kube-apiserver:${OLD_VERSION}`);
    const t1 = Date.now();
    await importImages(sock, [img]);
    t.diagnostic(`imported in ${((Date.now() - t1) / 1000).toFixed(2)} s`);
    const t2 = Date.now();
    const again = await componentImage('kube-apiserver', OLD_VERSION);
    t.diagnostic(`cache hit in ${((Date.now() - t2) / 1000).toFixed(2)} s`);
    assert.deepEqual(again, img);
    const r = await ctr([...runArgs('a1'), '--rm', img.name, 'a1', 'kube-apiserver', '--version']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `Kubernetes ${OLD_VERSION}`);
  });

  it('builds the operator image (cold, then from the cache), imports it, and runs it as uid 1000 on a read-only root: node, and the compiled dist/main.js --help', async (t) => {
    const cold = await operatorImageBuild();
    const mb = (statSync(cold.path).size / 1e6).toFixed(1);
    t.diagnostic(`${cold.name}: node v${cold.nodeVersion}, built in ${cold.seconds.toFixed(2)} s (npm ci of the production dependencies included), tar ${mb} MB`);
    assert.equal(cold.name, OPERATOR_IMAGE);
    assert.equal(cold.built, true, 'a cold build (temp image cache)');
    const warm = await operatorImageBuild();
    t.diagnostic(`cached: ${warm.seconds.toFixed(2)} s`);
    assert.equal(warm.built, false);
    assert.equal(warm.manifestDigest, cold.manifestDigest);
    const t1 = Date.now();
    await importImages(sock, [cold]);
    t.diagnostic(`imported in ${((Date.now() - t1) / 1000).toFixed(2)} s`);
    // No user given: ctr takes it, the working folder and the environment from the image config, as the kubelet does.
    const ro = (id: string): string[] => [...runArgs(id), '--rm', '--read-only', '--mount', 'type=tmpfs,src=tmpfs,dst=/tmp,options=rw:nosuid:nodev', cold.name, id];
    const probe = 'const fs = require("node:fs"); const w = (p) => { try { fs.writeFileSync(p, "x"); return "written"; } catch (e) { return e.code; } };'
      + ' console.log(JSON.stringify({ version: process.version, uid: process.getuid(), gid: process.getgid(), cwd: process.cwd(), env: process.env.NODE_ENV, app: w("/app/x"), root: w("/x"), tmp: w("/tmp/x") }))';
    const r = await ctr([...ro('o1'), 'node', '-e', probe]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.trim()), { version: `v${cold.nodeVersion}`, uid: 1000, gid: 1000, cwd: '/app', env: 'production', app: 'EROFS', root: 'EROFS', tmp: 'written' });
    // The image's entrypoint, with --help instead of --in-cluster: every module and production dependency loads.
    const h = await ctr([...ro('o2'), ...OPERATOR_CONFIG.entrypoint, '--help']);
    assert.equal(h.code, 0, h.stderr);
    assert.match(h.stdout, /^usage: node dist\/main\.js \[options\]\n/, 'the compiled operator, not the sources');
    assert.match(h.stdout, /--in-cluster\n/);
    assert.equal(h.stderr.trim(), '', 'nothing on stderr (no warning, no missing module)');
    // (can fail) an option main.ts does not know exits non-zero.
    const bad = await ctr([...ro('o3'), ...OPERATOR_CONFIG.entrypoint, '--no-such-option']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /Unknown option '--no-such-option'/);
    images.operator = cold;
  });

  it('runs the node agent from the operator image as its Job does (its command, the env, host network, the manifest and backup folders mounted): the kubeadm manifest edited as YAML, exit 0; a hostile value exit 2', async (t) => {
    const img = images.operator!;
    const node = join(dir, 'agent-node');
    const manifests = join(node, 'manifests');
    const backup = join(node, 'backup');
    mkdirSync(manifests, { recursive: true });
    mkdirSync(backup, { recursive: true });
    const original = readFileSync(new URL('../test/fixtures/kubeadm/kube-apiserver-v1.35.4.yaml', import.meta.url), 'utf8');
    const manifest = join(manifests, 'kube-apiserver.yaml');
    writeFileSync(manifest, original);
    // ctr has no --user: the image's uid 1000 runs it here (the Job runs it as root), so the folders are open to it.
    for (const d of [node, manifests, backup]) chmodSync(d, 0o777);
    chmodSync(manifest, 0o666);
    const pki = createTestPki();
    const server = await fakeServer(pki.serving, manifest, 'kubelet', 0);
    try {
      const env = {
        MANIFEST: '/etc/kubernetes/manifests/kube-apiserver.yaml', BACKUP_DIR: '/etc/kubernetes/apiserver-upgrade-backup', KEY: 'upgrade-cp-1-0123456789abcdef',
        IMAGE: 'registry.k8s.io/kube-apiserver:v1.36.3', VERSION: 'v1.36.3', GATE: 'true', PEER_CA: '/etc/kubernetes/pki/ca.crt', PEER_IP: '127.0.0.1',
        PEER_PORT: String(server.port), EMULATED_VERSION: '1.35', READY_TIMEOUT: '30',
      };
      const runAgent = (id: string, e: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> => ctr([...runArgs(id), '--rm', '--net-host',
        '--mount', `type=bind,src=${manifests},dst=/etc/kubernetes/manifests,options=rbind:rw`, '--mount', `type=bind,src=${backup},dst=/etc/kubernetes/apiserver-upgrade-backup,options=rbind:rw`,
        '--mount', 'type=tmpfs,src=tmpfs,dst=/tmp,options=rw:nosuid:nodev',
        ...Object.entries(e).flatMap(([k, v]) => ['--env', `${k}=${v}`]), img.name, id, ...AGENT_COMMAND]);
      const t0 = Date.now();
      const r = await runAgent('n1', env);
      t.diagnostic(`the agent ran in the operator image in ${((Date.now() - t0) / 1000).toFixed(2)} s: ${r.stdout.trim().replace(/\n/g, ' | ')}`);
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /^manifest replaced: image registry\.k8s\.io\/kube-apiserver:v1\.36\.3, gate true, emulated version 1\.35/m);
      assert.match(r.stdout, /^ready: https:\/\/127\.0\.0\.1:\d+\/readyz answered 200/m);
      const edited = readFileSync(manifest, 'utf8');
      const added = edited.split('\n').filter((l) => !original.split('\n').includes(l));
      // New flags after the last one, where kubeadm puts extraArgs; the peer address (127.0.0.1) is not the advertise address.
      assert.deepEqual(added, ['    - --feature-gates=UnknownVersionInteroperabilityProxy=true', '    - --peer-ca-file=/etc/kubernetes/pki/ca.crt',
        '    - --peer-advertise-ip=127.0.0.1', `    - --peer-advertise-port=${server.port}`, '    - --emulated-version=1.35', '    image: registry.k8s.io/kube-apiserver:v1.36.3']);
      assert.equal(readFileSync(join(backup, 'upgrade-cp-1-0123456789abcdef.yaml'), 'utf8'), original);
      assert.deepEqual(readdirSync(manifests), ['kube-apiserver.yaml'], 'no temp file left');
      // The issue 21 injection, handed to the agent directly (a Job made by hand): refused, nothing written.
      const hostile = await runAgent('n2', { ...env, KEY: 'upgrade-cp-1-fedcba9876543210', PEER_CA: '/etc/kubernetes/pki/ca.crt\n    - --authorization-mode=AlwaysAllow' });
      assert.equal(hostile.code, 2, hostile.stderr);
      assert.match(hostile.stderr, /^PEER_CA must be an absolute path/);
      assert.equal(readFileSync(manifest, 'utf8'), edited);
    } finally {
      await server.close();
      pki.cleanup();
    }
  });

  it('teardown leaves no process, mount, cgroup or file behind', async () => {
    assert.ok(processesOf(dir).length >= 1, 'containerd was running');
    await teardown();
    assert.deepEqual(processesOf(dir), [], 'no containerd or shim left');
    assert.deepEqual(mountsUnder(dir), [], 'no mount left');
    assert.deepEqual(cgroupsLeft(), [], 'no cgroup left');
    assert.equal(existsSync(dir), false, 'the temp folder removed');
    if (!hadRunContainerd) assert.equal(existsSync(RUN_CONTAINERD), false, `${RUN_CONTAINERD} (shim sockets) removed`);
  });
});

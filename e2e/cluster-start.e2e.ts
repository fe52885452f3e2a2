// The harness's start of a server ends as soon as the server exits: its wait for /readyz used to retry the "exited"
// its probe threw until 180 s passed, which held a campaign's fault for three minutes after a hook's replacement
// stopped the server the harness had just started (process seed 201 #13).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster } from './cluster/index.ts';

test('a server that exits while starting fails the start at once, with its exit and its log', async () => {
  const c = await Cluster.start({ servers: 1 });
  try {
    const err = await c.replace(0, { extraFlags: ['--no-such-flag=1'], drain: false }).then(() => undefined, (e: Error) => e);
    assert.ok(err, 'the start failed');
    assert.match(err.message, /cp-1 exited with 1/);
    assert.doesNotMatch(err.message, /timed out/, 'ended by the exit, not by the wait running out');
    assert.match(err.message, /unknown flag: --no-such-flag/, 'with the server\'s own words');
  } finally {
    await c.teardown();
  }
});

test('a replacement\'s configuration is the server\'s only once the old process is gone: a running server is never reported with the next run\'s flags', async () => {
  const c = await Cluster.start({ servers: 1 });
  try {
    const wrong: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const s = c.server(0);
        if (s.running && !s.config.extraFlags.every((f) => s.flags.includes(f))) wrong.push(`${s.config.extraFlags.join(' ')} reported while the run has ${s.flags.filter((f) => f.startsWith('--v=')).join(' ') || 'no --v'}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await c.replace(0, { extraFlags: ['--v=1'] });
    sampling = false;
    await sampler;
    assert.deepEqual(wrong.slice(0, 3), [], 'the old process was reported with the new configuration');
    assert.ok(c.server(0).flags.includes('--v=1'), 'the new run has the new flags');
  } finally {
    await c.teardown();
  }
});

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

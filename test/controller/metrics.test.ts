import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { OperatorMetrics } from '../../src/controller/metrics.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const upgrade = (name: string, status: ApiServerUpgrade['status']): ApiServerUpgrade => ({ metadata: { name }, spec: { targetVersion: 'v1.36.3', driver: {} }, status });

test('metrics: one upgrade\'s stale per-server and pause series go, another upgrade\'s stay', async () => {
  const reg = new Registry();
  const m = new OperatorMetrics(reg);
  m.observe(upgrade('a', { phase: 'Paused', pause: { reason: 'AnalysisBreach' }, peers: [{ identity: 'i1', hostname: 'cp-1', version: 'v1.35.4' }] }));
  m.observe(upgrade('b', { phase: 'Upgrading', peers: [{ identity: 'i2', hostname: 'cp-9', version: 'v1.35.4' }] }));
  m.observe(upgrade('a', { phase: 'Upgrading', peers: [{ identity: 'i1', hostname: 'cp-1', version: 'v1.36.3' }] }));
  const text = await reg.metrics();
  assert.doesNotMatch(text, /apiserver_upgrade_paused\{upgrade="a"/, 'a resumed: its pause series is gone');
  assert.doesNotMatch(text, /server="cp-1",version="v1.35.4"/, 'a\'s old version series is gone');
  assert.match(text, /server="cp-1",version="v1.36.3"/);
  assert.match(text, /upgrade="b",server="cp-9"/, 'b is untouched');
  m.forget('a');
  const after = await reg.metrics();
  assert.doesNotMatch(after, /upgrade="a"/);
  assert.match(after, /upgrade="b",server="cp-9"/);
});

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

test('metrics: a waiting upgrade exports since when and why (the alert ApiServerUpgradeWaiting reads it); the series goes when the wait ends or the reason changes', async () => {
  const reg = new Registry();
  const m = new OperatorMetrics(reg);
  m.observe(upgrade('a', { phase: 'Upgrading', waiting: { reason: 'GateNotHeld', since: '2026-11-29T10:00:00Z', gate: 'no-critical-alerts' }, window: { open: true, nextStart: '2026-11-30T02:00:00Z' } }));
  let text = await reg.metrics();
  assert.match(text, /apiserver_upgrade_waiting_since_timestamp_seconds\{upgrade="a",reason="GateNotHeld"\} 1795946400\n/);
  assert.match(text, /apiserver_upgrade_window_next_start_timestamp_seconds\{upgrade="a"\} 1796004000\n/);
  m.observe(upgrade('a', { phase: 'Upgrading', waiting: { reason: 'OutsideWindow', since: '2026-11-29T10:05:00Z' } }));
  text = await reg.metrics();
  assert.doesNotMatch(text, /reason="GateNotHeld"/);
  assert.match(text, /apiserver_upgrade_waiting_since_timestamp_seconds\{upgrade="a",reason="OutsideWindow"\} 1795946700\n/);
  assert.doesNotMatch(text, /apiserver_upgrade_window_next_start_timestamp_seconds\{upgrade="a"\}/);
  m.observe(upgrade('a', { phase: 'Upgrading' }));
  assert.doesNotMatch(await reg.metrics(), /apiserver_upgrade_waiting_since_timestamp_seconds\{/);
});

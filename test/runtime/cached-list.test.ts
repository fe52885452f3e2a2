import { test } from 'node:test';
import assert from 'node:assert/strict';
import { listThroughCaches, type ListCache } from '../../src/runtime/cached-list.ts';

test('a watched path is answered from its synced cache with no request; before the sync, and for any other path, the API', async () => {
  const calls: string[] = [];
  const api = async <T>(path: string): Promise<T> => {
    calls.push(path);
    return { items: ['from-api'] } as T;
  };
  const cache: ListCache & { hasSynced: boolean } = { hasSynced: false, list: () => ['from-cache'] };
  const list = listThroughCaches(api, new Map([['/apis/apiregistration.k8s.io/v1/apiservices', { cache, apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIServiceList' }]]));
  assert.deepEqual(await list('/apis/apiregistration.k8s.io/v1/apiservices'), { items: ['from-api'] }, 'not synced yet');
  cache.hasSynced = true;
  assert.deepEqual(await list('/apis/apiregistration.k8s.io/v1/apiservices'), { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIServiceList', metadata: {}, items: ['from-cache'] }, 'shaped as the API answers it: readers check the kind');
  assert.deepEqual(await list('/apis/apiregistration.k8s.io/v1/apiservices?labelSelector=x'), { items: ['from-api'] }, 'another query is another collection');
  assert.deepEqual(calls, ['/apis/apiregistration.k8s.io/v1/apiservices', '/apis/apiregistration.k8s.io/v1/apiservices?labelSelector=x']);
});

test('the cached APIService list passes the readers\' own checks (aggregated paths, coverage)', async () => {
  const { aggregatedDiscoveryPaths } = await import('../../src/observe/discovery.ts');
  const items = [{ metadata: { name: 'v1beta1.metrics.k8s.io' }, spec: { group: 'metrics.k8s.io', version: 'v1beta1', service: { name: 'm', namespace: 'kube-system' } } }, { metadata: { name: 'v1.apps' }, spec: { group: 'apps', version: 'v1' } }];
  const list = listThroughCaches(async () => { throw new Error('no API call expected'); }, new Map([['/apis/apiregistration.k8s.io/v1/apiservices', { cache: { hasSynced: true, list: () => items }, apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIServiceList' }]]));
  assert.deepEqual([...aggregatedDiscoveryPaths(await list('/apis/apiregistration.k8s.io/v1/apiservices'))], ['/apis/metrics.k8s.io/v1beta1']);
});

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
  const list = listThroughCaches(api, new Map([['/apis/apiregistration.k8s.io/v1/apiservices', cache]]));
  assert.deepEqual(await list('/apis/apiregistration.k8s.io/v1/apiservices'), { items: ['from-api'] }, 'not synced yet');
  cache.hasSynced = true;
  assert.deepEqual(await list('/apis/apiregistration.k8s.io/v1/apiservices'), { items: ['from-cache'] });
  assert.deepEqual(await list('/apis/apiregistration.k8s.io/v1/apiservices?labelSelector=x'), { items: ['from-api'] }, 'another query is another collection');
  assert.deepEqual(calls, ['/apis/apiregistration.k8s.io/v1/apiservices', '/apis/apiregistration.k8s.io/v1/apiservices?labelSelector=x']);
});

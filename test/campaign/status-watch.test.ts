// The campaign's status watch and its poll race (e2e/campaign/status-watch.ts): only a newer object is recorded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newerOnly } from '../../e2e/campaign/status-watch.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const at = (rv: string | undefined, phase: string): ApiServerUpgrade => ({ metadata: { name: 'campaign', ...(rv === undefined ? {} : { resourceVersion: rv }) }, status: { phase } } as ApiServerUpgrade);

test('an object seen already, or older, never replaces a newer one', () => {
  const seen: string[] = [];
  const take = newerOnly((u, t) => seen.push(`${u.metadata?.resourceVersion}:${u.status?.phase}@${t}`));
  take(at('100', 'Upgrading'), 1); // the poll
  take(at('100', 'Upgrading'), 2); // the watch, the same write
  take(at('99', 'Pending'), 3); // a late answer from before it
  take(at('1000', 'Paused'), 4); // numeric order, not text order ('1000' < '99' as text)
  take(at(undefined, 'Succeeded'), 5);
  take(at('12abc', 'Succeeded'), 6);
  take(at('1001', 'RollingBack'), 7);
  assert.deepEqual(seen, ['100:Upgrading@1', '1000:Paused@4', '1001:RollingBack@7']);
});

// The pure parts of the /metrics authentication: the Authorization header, the TTL cache, and the decision
// cache's policy (what is reused, for how long, what is never cached). The reviews themselves — TokenReview and
// SubjectAccessReview answered by a real apiserver, 401/403/200 — are tested in e2e/chart.e2e.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { parseBearerToken, TtlCache, TokenReviewAuth, type Reviewer, type ReviewedUser } from '../../src/runtime/metrics-auth.ts';
import { startHealthServer } from '../../src/runtime/health.ts';
import { silentLogger } from '../../src/runtime/logger.ts';

test('parseBearerToken: one bearer token, scheme case-insensitive; anything else is no token', () => {
  assert.equal(parseBearerToken('Bearer abc.DEF-123_~+/=='), 'abc.DEF-123_~+/==');
  assert.equal(parseBearerToken('bearer abc'), 'abc');
  assert.equal(parseBearerToken('BEARER  abc'), 'abc');
  assert.equal(parseBearerToken('Bearer abc '), 'abc');
  for (const bad of [undefined, '', 'Bearer', 'Bearer ', 'Bearer  ', 'Basic dXNlcjpwYXNz', 'Bearerabc', 'Bearer a b', 'Bearer a,b', 'Bearer =abc', 'Token abc', ' Bearer abc', 'Bearer ab\tc']) {
    assert.equal(parseBearerToken(bad), undefined, JSON.stringify(bad));
  }
  assert.equal(parseBearerToken(['Bearer a', 'Bearer b']), undefined, 'a repeated header is refused');
});

test('TtlCache: an entry lives for its own TTL, expired entries are gone, the oldest go beyond maxEntries', () => {
  let t = 1000;
  const c = new TtlCache<string>({ now: () => t, maxEntries: 3 });
  c.set('a', 'A', 100);
  c.set('b', 'B', 10);
  assert.equal(c.get('a'), 'A');
  assert.equal(c.get('b'), 'B');
  t += 10;
  assert.equal(c.get('b'), undefined, 'expired at exactly its TTL');
  assert.equal(c.get('a'), 'A');
  t += 89;
  assert.equal(c.get('a'), 'A');
  t += 1;
  assert.equal(c.get('a'), undefined);
  assert.equal(c.size, 0, 'expired entries are removed when read');

  c.set('x', '1', 1000);
  c.set('y', '2', 1000);
  c.set('z', '3', 1000);
  c.set('x', '1b', 1000); // refreshed: now the newest
  c.set('w', '4', 1000);
  assert.equal(c.size, 3);
  assert.equal(c.get('y'), undefined, 'the oldest entry was dropped');
  assert.deepEqual(['x', 'z', 'w'].map((k) => c.get(k)), ['1b', '3', '4']);
  c.set('z', '3', 0);
  assert.equal(c.get('z'), undefined, 'a TTL of 0 removes');
});

/** A Reviewer from two tables, counting its calls: the cache's policy, not the API, is under test here. */
function reviewer(users: Record<string, string>, allowed: Set<string>, calls: string[], fail?: { tokenReview?: boolean; sar?: boolean }): Reviewer {
  return {
    tokenReview: async (token) => {
      calls.push(`tr:${token}`);
      if (fail?.tokenReview) throw new Error('connection refused');
      return users[token] === undefined ? undefined : { username: users[token]! };
    },
    subjectAccessReview: async (user: ReviewedUser, path, verb) => {
      calls.push(`sar:${user.username}:${verb}:${path}`);
      if (fail?.sar) throw new Error('connection refused');
      return { allowed: allowed.has(user.username), reason: 'test' };
    },
  };
}

test('TokenReviewAuth: no or malformed header is 401 without a review; allowed is reused for the TTL, refusals for 10 s', async () => {
  let t = 0;
  const calls: string[] = [];
  const allowed = new Set(['prometheus']);
  const auth = new TokenReviewAuth({ reviewer: reviewer({ 'tok-p': 'prometheus', 'tok-n': 'nobody' }, allowed, calls), cacheTtlMs: 60_000, now: () => t });

  assert.deepEqual(await auth.check(undefined), { allowed: false, code: 401, message: 'a bearer token is required' });
  assert.equal((await auth.check('Basic x')).allowed, false);
  assert.deepEqual(calls, [], 'nothing asked of the API without a token');

  assert.deepEqual(await auth.check('Bearer tok-p'), { allowed: true, user: 'prometheus' });
  assert.deepEqual(calls, ['tr:tok-p', 'sar:prometheus:get:/metrics']);
  assert.deepEqual(await auth.check('Bearer nope'), { allowed: false, code: 401, message: 'the token is not authenticated' });
  assert.deepEqual(await auth.check('Bearer tok-n'), { allowed: false, code: 403, message: 'user "nobody" cannot get path "/metrics"', user: 'nobody' });
  const after = calls.length;

  t = 9_999;
  for (const h of ['Bearer tok-p', 'Bearer nope', 'Bearer tok-n']) await auth.check(h);
  assert.equal(calls.length, after, 'all three decisions come from the cache');

  t = 10_000; // refusals expire: a newly granted user is let in within 10 s
  allowed.add('nobody');
  assert.equal((await auth.check('Bearer tok-n')).allowed, true);
  assert.equal((await auth.check('Bearer nope')).allowed, false);
  assert.equal((await auth.check('Bearer tok-p')).allowed, true);
  assert.deepEqual(calls.slice(after), ['tr:tok-n', 'sar:nobody:get:/metrics', 'tr:nope'], 'the allowed decision is still cached');

  t = 60_000; // and a revocation takes effect within the TTL
  allowed.delete('prometheus');
  assert.equal((await auth.check('Bearer tok-p')).allowed, false);
});

test('TokenReviewAuth: a review that fails is 503 and never cached; concurrent requests with one token share one review', async () => {
  const calls: string[] = [];
  const fail = { tokenReview: true, sar: false };
  const auth = new TokenReviewAuth({ reviewer: reviewer({ tok: 'prometheus' }, new Set(['prometheus']), calls, fail) });
  assert.deepEqual(await auth.check('Bearer tok'), { allowed: false, code: 503, message: 'the token could not be reviewed' });
  fail.tokenReview = false;
  fail.sar = true;
  assert.equal((await auth.check('Bearer tok') as { code: number }).code, 503);
  fail.sar = false;
  calls.length = 0;
  const all = await Promise.all(Array.from({ length: 20 }, () => auth.check('Bearer tok')));
  assert.ok(all.every((d) => d.allowed));
  assert.deepEqual(calls, ['tr:tok', 'sar:prometheus:get:/metrics'], 'one review for twenty concurrent scrapes');
});

test('health server: /healthz and /readyz stay open while /metrics needs a token, on its own port when asked', async () => {
  const registry = new Registry();
  const calls: string[] = [];
  const metricsAuth = new TokenReviewAuth({ reviewer: reviewer({ good: 'prometheus', other: 'nobody' }, new Set(['prometheus']), calls) });
  for (const separate of [false, true]) {
    const h = await startHealthServer({
      port: 0, host: '127.0.0.1', registry, logger: silentLogger(), readiness: () => [{ name: 'x', ready: true }], metricsAuth,
      ...(separate ? { metrics: { port: 0 } } : {}),
    });
    try {
      const get = async (port: number, path: string, token?: string): Promise<{ status: number; www: string | null }> => {
        const r = await fetch(`http://127.0.0.1:${port}${path}`, token ? { headers: { Authorization: `Bearer ${token}` } } : {});
        await r.text();
        return { status: r.status, www: r.headers.get('www-authenticate') };
      };
      assert.equal(separate, h.metricsPort !== h.port);
      assert.equal((await get(h.port, '/healthz')).status, 200);
      assert.equal((await get(h.port, '/readyz')).status, 200);
      assert.deepEqual(await get(h.metricsPort, '/metrics'), { status: 401, www: 'Bearer realm="apiserver-upgrade-operator"' });
      assert.equal((await get(h.metricsPort, '/metrics', 'other')).status, 403);
      assert.equal((await get(h.metricsPort, '/metrics', 'good')).status, 200);
      if (separate) {
        assert.equal((await get(h.port, '/metrics', 'good')).status, 404, 'not on the health port any more');
        assert.equal((await get(h.metricsPort, '/healthz')).status, 404, 'nor health on the metrics port');
      }
    } finally {
      await h.close();
    }
  }
});

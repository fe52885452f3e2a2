// Issue 21: scrapes with new tokens cost TokenReviews; they are bounded in flight and per second (beyond: 429,
// no review), known tokens are answered from the cache without counting, and the audience is sent when set.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { kubeReviewer, TokenReviewAuth, type Reviewer } from '../../src/runtime/metrics-auth.ts';

/** A reviewer that takes `ms` per review and counts them (the API calls stand-in: the bound is the subject). */
function slowReviewer(ms: number): Reviewer & { reviews: number; most: number } {
  let running = 0;
  const r = {
    reviews: 0,
    most: 0,
    async tokenReview(token: string) {
      r.reviews++;
      running++;
      r.most = Math.max(r.most, running);
      await new Promise((res) => setTimeout(res, ms));
      running--;
      return { username: `user-${token}` };
    },
    async subjectAccessReview() {
      return { allowed: true };
    },
  };
  return r;
}

describe('TokenReviewAuth bounds', () => {
  it('500 distinct tokens at once: at most maxConcurrentReviews reviews, the rest 429', async () => {
    const reviewer = slowReviewer(50);
    const auth = new TokenReviewAuth({ reviewer, maxConcurrentReviews: 4, reviewsPerSecond: 10 });
    const decisions = await Promise.all(Array.from({ length: 500 }, (_, i) => auth.check(`Bearer token-${i}`)));
    assert.equal(reviewer.reviews, 4);
    assert.ok(reviewer.most <= 4);
    assert.equal(decisions.filter((d) => d.allowed).length, 4);
    assert.equal(decisions.filter((d) => !d.allowed && d.code === 429).length, 496);
    assert.equal(auth.throttled, 496);
  });

  it('per second: the bucket refills at reviewsPerSecond; cached tokens do not count', async () => {
    let t = 0;
    const reviewer = slowReviewer(0);
    const auth = new TokenReviewAuth({ reviewer, maxConcurrentReviews: 100, reviewsPerSecond: 10, now: () => t });
    const first = [];
    for (let i = 0; i < 30; i++) first.push(await auth.check(`Bearer a-${i}`));
    assert.equal(first.filter((d) => d.allowed).length, 10);
    // Known tokens: answered from the cache, however many.
    for (let i = 0; i < 10; i++) assert.equal((await auth.check(`Bearer a-${i}`)).allowed, true);
    assert.equal(reviewer.reviews, 10);
    t += 500;
    const later = [];
    for (let i = 100; i < 120; i++) later.push(await auth.check(`Bearer b-${i}`));
    assert.equal(later.filter((d) => d.allowed).length, 5);
    assert.equal(reviewer.reviews, 15);
  });

  it('a 429 is not cached: the same token passes once the bound allows', async () => {
    let t = 0;
    const auth = new TokenReviewAuth({ reviewer: slowReviewer(0), maxConcurrentReviews: 1, reviewsPerSecond: 1, now: () => t });
    assert.equal((await auth.check('Bearer one')).allowed, true);
    const d = await auth.check('Bearer two');
    assert.equal(d.allowed === false && d.code, 429);
    t += 1000;
    assert.equal((await auth.check('Bearer two')).allowed, true);
  });

  it('kubeReviewer sends the audiences in the TokenReview', async () => {
    const bodies: unknown[] = [];
    const client = { request: async <T>(_m: 'POST', _p: string, o: { body: unknown }) => { bodies.push(o.body); return { status: { authenticated: true, user: { username: 'u' } } } as T; } };
    await kubeReviewer(client, ['metrics.example']).tokenReview('t');
    await kubeReviewer(client).tokenReview('t');
    assert.deepEqual((bodies[0] as { spec: unknown }).spec, { token: 't', audiences: ['metrics.example'] });
    assert.deepEqual((bodies[1] as { spec: unknown }).spec, { token: 't' });
  });
});

/** A reviewer that authenticates only `scraper` (the flood's tokens are not tokens of the cluster), taking `ms` per review. */
function onlyScraper(ms: number): Reviewer {
  return {
    async tokenReview(token) {
      if (ms > 0) await new Promise((res) => setTimeout(res, ms));
      return token === 'scraper' ? { username: 'system:serviceaccount:monitoring:prometheus' } : undefined;
    },
    async subjectAccessReview() {
      return { allowed: true };
    },
  };
}

describe('TokenReviewAuth: a scraper approved before keeps its own budget', () => {
  it('a flood of new tokens (200 a second, 20x the budget) does not starve a scraper whose cached approval expired', async () => {
    let t = 0;
    const reviewer = onlyScraper(0);
    const auth = new TokenReviewAuth({ reviewer, cacheTtlMs: 60_000, maxConcurrentReviews: 4, reviewsPerSecond: 10, now: () => t });
    assert.equal((await auth.check('Bearer scraper')).allowed, true);
    const scrapes = { ok: 0, throttled: 0, other: 0 };
    const flood = { refused: 0, throttled: 0 };
    let n = 0;
    // Five minutes: every 100 ms the flood sends 20 tokens never seen before, then (every 15 s) the scraper scrapes.
    for (t = 100; t <= 300_000; t += 100) {
      for (let i = 0; i < 20; i++) {
        const d = await auth.check(`Bearer flood-${n++}`);
        assert.equal(d.allowed, false);
        if (!d.allowed && d.code === 401) flood.refused++;
        else if (!d.allowed && d.code === 429) flood.throttled++;
      }
      if (t % 15_000 === 0 && t > 60_000) {
        const d = await auth.check('Bearer scraper');
        if (d.allowed) scrapes.ok++;
        else if (d.code === 429) scrapes.throttled++;
        else scrapes.other++;
      }
    }
    // The scrapes after the first approval expired (t > 60 s): each one a 200, the scraper's re-reviews about one a minute.
    assert.deepEqual(scrapes, { ok: 16, throttled: 0, other: 0 });
    // The flood still gets no more than the budget for new tokens: 10 a second (and the bucket's 10 at the start).
    assert.ok(flood.refused <= 10 + 300 * 10, `${flood.refused}`);
    assert.equal(flood.refused + flood.throttled, 20 * 3000);
  });

  it('every review slot held by new tokens: the approved scraper is still re-reviewed', async () => {
    let t = 0;
    const reviewer = onlyScraper(30);
    const auth = new TokenReviewAuth({ reviewer, cacheTtlMs: 60_000, maxConcurrentReviews: 4, reviewsPerSecond: 10, now: () => t });
    assert.equal((await auth.check('Bearer scraper')).allowed, true);
    t = 61_000;
    const flood = Array.from({ length: 500 }, (_, i) => auth.check(`Bearer flood-${i}`));
    const scrape = await auth.check('Bearer scraper');
    const floodDecisions = await Promise.all(flood);
    assert.equal(scrape.allowed, true, JSON.stringify(scrape));
    assert.equal(floodDecisions.filter((d) => !d.allowed && d.code === 429).length, 496, 'new tokens keep their bound');
  });

  it('a scraper whose token is refused when re-reviewed is new again: it waits in line with the flood', async () => {
    let t = 0;
    let revoked = false;
    const reviewer: Reviewer = {
      tokenReview: async (token) => (token === 'scraper' && revoked ? undefined : { username: `user-${token}` }),
      subjectAccessReview: async () => ({ allowed: true }),
    };
    const auth = new TokenReviewAuth({ reviewer, cacheTtlMs: 60_000, deniedCacheTtlMs: 10_000, maxConcurrentReviews: 4, reviewsPerSecond: 10, now: () => t });
    assert.equal((await auth.check('Bearer scraper')).allowed, true);
    revoked = true;
    t = 61_000;
    for (let i = 0; i < 20; i++) await auth.check(`Bearer flood-${i}`);
    const d = await auth.check('Bearer scraper');
    assert.equal(d.allowed === false && d.code, 401);
    t = 72_000; // the refusal's 10 s are over; the bucket has room for 10 again
    for (let i = 20; i < 40; i++) await auth.check(`Bearer flood-${i}`);
    const again = await auth.check('Bearer scraper');
    assert.equal(again.allowed === false && again.code, 429, 'no longer on the budget of approved tokens');
  });
});

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

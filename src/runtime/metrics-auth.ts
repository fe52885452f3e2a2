import { createHash } from 'node:crypto';
import type { Logger } from './logger.ts';

/**
 * Authentication and authorization of /metrics scrapes by the Kubernetes API, as kube-rbac-proxy and
 * controller-runtime's `filters.WithAuthenticationAndAuthorization` do: the request's bearer token is sent in
 * an authentication.k8s.io/v1 TokenReview; the user it names is then checked with an authorization.k8s.io/v1
 * SubjectAccessReview for the non-resource URL `/metrics`, verb `get` — what the chart's `metrics-reader`
 * ClusterRole grants. No token or an unauthenticated one: 401; authenticated but not allowed: 403; a review
 * that could not be made (API unreachable): 503, never cached. Decisions are cached per token (its SHA-256,
 * never the token itself): allowed ones for `cacheTtlMs`, refused ones for at most `deniedCacheTtlMs`, so a
 * Prometheus that scrapes every 15 s costs two API calls a minute, and a grant or revocation takes effect
 * within a TTL. Concurrent requests with one token share one review.
 *
 * Reviews are bounded (in flight and per second; beyond: 429) on two budgets of the same size: one for tokens not
 * seen before, one for re-reviews of tokens approved within the last `approvedMemoryMs`. A flood of unknown tokens
 * spends only the first, so it cannot starve a scraper whose cached approval just expired (with one budget, a flood
 * of 20 times the budget answered each of that scraper's scrapes for five minutes with 429). Being approved before
 * grants nothing but the budget: the token is reviewed again all the same, and leaves the approved tokens the first
 * time it is refused.
 */

export interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** The two API calls; `kubeReviewer` makes them for real, tests may pass their own. */
export interface Reviewer {
  /** undefined: the token is not authenticated (TokenReview status.authenticated false). */
  tokenReview(token: string): Promise<ReviewedUser | undefined>;
  /** Whether the user may `verb` the non-resource `path`, with the authorizer's reason. */
  subjectAccessReview(user: ReviewedUser, path: string, verb: string): Promise<{ allowed: boolean; reason?: string }>;
}

export type AuthDecision =
  | { allowed: true; user: string }
  | { allowed: false; code: 401 | 403 | 429 | 503; message: string; user?: string };

export interface MetricsAuth {
  /** Decides one request from its Authorization header. Never rejects. */
  check(authorization: string | string[] | undefined): Promise<AuthDecision>;
}

/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750: the scheme is case-insensitive; the token
 * is one run of token68 characters). Anything else — no header, another scheme, an empty or spaced token, the
 * header twice — is undefined, and the request is refused without asking the API.
 */
export function parseBearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const m = /^[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*) *$/u.exec(header);
  return m?.[1];
}

/**
 * A map whose entries expire: each `set` gives its own TTL. Bounded: beyond `maxEntries` the oldest entry is
 * dropped (a flood of distinct tokens cannot grow memory). Time comes from `now` so tests need no clock.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(o: { maxEntries?: number; now?: () => number } = {}) {
    this.maxEntries = o.maxEntries ?? 1000;
    this.now = o.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value while it has not expired; an expired entry is removed. */
  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (this.now() >= e.expiresAt) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) {
      this.entries.delete(key);
      return;
    }
    this.entries.delete(key); // re-inserting moves it to the end: the oldest is always first
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    if (this.entries.size > this.maxEntries) this.prune();
  }

  /** Drops the expired entries, then the oldest ones beyond maxEntries. */
  private prune(): void {
    const t = this.now();
    for (const [k, e] of this.entries) if (t >= e.expiresAt) this.entries.delete(k);
    for (const k of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(k);
    }
  }
}

export interface TokenReviewAuthOptions {
  reviewer: Reviewer;
  /** How long an allowed decision is reused. Default 1 min. */
  cacheTtlMs?: number;
  /** How long a refusal (401/403) is reused; capped by cacheTtlMs. Default 10 s. */
  deniedCacheTtlMs?: number;
  maxEntries?: number;
  /** The non-resource URL and verb asked for. Default /metrics, get. */
  path?: string;
  verb?: string;
  /**
   * Reviews (a TokenReview and its SubjectAccessReview) in flight at once; beyond it a new token gets 429. Default 4.
   * Re-reviews of approved tokens have as many of their own.
   */
  maxConcurrentReviews?: number;
  /**
   * Reviews started per second, as a token bucket of this size refilled at this rate; beyond it: 429. Default 10.
   * Re-reviews of approved tokens have a bucket of their own of the same size.
   */
  reviewsPerSecond?: number;
  /** How long after its last approval a token is re-reviewed on the approved tokens' budget. Default 10 × cacheTtlMs. */
  approvedMemoryMs?: number;
  now?: () => number;
  logger?: Logger;
}

/** The bearer token checked by TokenReview and SubjectAccessReview, with a per-token decision cache. */
export class TokenReviewAuth implements MetricsAuth {
  private readonly o: Required<Omit<TokenReviewAuthOptions, 'logger' | 'maxEntries' | 'now' | 'maxConcurrentReviews' | 'reviewsPerSecond' | 'approvedMemoryMs'>> & { logger?: Logger };
  private readonly cache: TtlCache<AuthDecision>;
  /** Tokens (their hashes) approved within approvedMemoryMs: only an approval puts one here, so unknown tokens never do. */
  private readonly approved: TtlCache<true>;
  private readonly approvedMemoryMs: number;
  private readonly inFlight = new Map<string, Promise<AuthDecision>>();
  private readonly maxConcurrent: number;
  private readonly perSecond: number;
  private readonly now: () => number;
  private readonly budgets: Record<'new' | 'approved', Budget>;
  /** Reviews started, over the life of this object (for tests and the log). */
  reviewsStarted = 0;
  /** Requests refused with 429 because the bounds were reached. */
  throttled = 0;

  constructor(o: TokenReviewAuthOptions) {
    this.maxConcurrent = o.maxConcurrentReviews ?? 4;
    this.perSecond = o.reviewsPerSecond ?? 10;
    if (!(this.maxConcurrent >= 1) || !(this.perSecond > 0)) throw new RangeError('maxConcurrentReviews must be >= 1 and reviewsPerSecond > 0');
    this.now = o.now ?? Date.now;
    const start = this.now();
    this.budgets = { new: { inFlight: 0, bucket: this.perSecond, refilledAt: start }, approved: { inFlight: 0, bucket: this.perSecond, refilledAt: start } };
    const cacheTtlMs = o.cacheTtlMs ?? 60_000;
    this.approvedMemoryMs = o.approvedMemoryMs ?? 10 * cacheTtlMs;
    this.o = {
      reviewer: o.reviewer, cacheTtlMs, deniedCacheTtlMs: Math.min(o.deniedCacheTtlMs ?? 10_000, cacheTtlMs),
      path: o.path ?? '/metrics', verb: o.verb ?? 'get', logger: o.logger,
    };
    this.cache = new TtlCache<AuthDecision>({ maxEntries: o.maxEntries, now: o.now });
    this.approved = new TtlCache<true>({ maxEntries: o.maxEntries, now: o.now });
  }

  async check(authorization: string | string[] | undefined): Promise<AuthDecision> {
    const token = parseBearerToken(authorization);
    if (token === undefined) {
      return { allowed: false, code: 401, message: authorization === undefined ? 'a bearer token is required' : 'the Authorization header is not one bearer token' };
    }
    const key = createHash('sha256').update(token).digest('base64url');
    const cached = this.cache.get(key);
    if (cached) return cached;
    const running = this.inFlight.get(key);
    if (running) return running;
    // A review costs API calls: bounded in flight and per second. Beyond: 429 at once, no review, nothing
    // cached (the scraper retries; a known token is answered from the cache above without counting).
    const which = this.approved.get(key) ? 'approved' : 'new';
    const budget = this.budgets[which];
    if (!this.take(budget)) {
      this.throttled++;
      if (this.throttled === 1 || this.throttled % 100 === 0) this.o.logger?.warn(`metrics authentication: too many ${which} tokens at once; answering 429`, { throttled: this.throttled, maxConcurrentReviews: this.maxConcurrent, reviewsPerSecond: this.perSecond });
      return { allowed: false, code: 429, message: 'too many tokens to review at once; retry in a second' };
    }
    this.reviewsStarted++;
    budget.inFlight++;
    const p = this.review(token).then((d) => {
      if (d.allowed) {
        this.cache.set(key, d, this.o.cacheTtlMs);
        this.approved.set(key, true, this.approvedMemoryMs);
      } else if (d.code !== 503) {
        this.cache.set(key, d, this.o.deniedCacheTtlMs);
        this.approved.delete(key);
      }
      return d;
    }).finally(() => {
      budget.inFlight--;
      this.inFlight.delete(key);
    });
    this.inFlight.set(key, p);
    return p;
  }

  /** Whether a review may start now on the budget: fewer than maxConcurrent in flight and a token in its bucket (taken). */
  private take(b: Budget): boolean {
    if (b.inFlight >= this.maxConcurrent) return false;
    const t = this.now();
    b.bucket = Math.min(this.perSecond, b.bucket + ((t - b.refilledAt) / 1000) * this.perSecond);
    b.refilledAt = t;
    if (b.bucket < 1) return false;
    b.bucket -= 1;
    return true;
  }

  private async review(token: string): Promise<AuthDecision> {
    const { reviewer, path, verb, logger } = this.o;
    let user: ReviewedUser | undefined;
    try {
      user = await reviewer.tokenReview(token);
    } catch (err) {
      logger?.warn('metrics authentication: TokenReview failed', { err: errMessage(err) });
      return { allowed: false, code: 503, message: 'the token could not be reviewed' };
    }
    if (!user) {
      logger?.debug('metrics authentication: token not authenticated');
      return { allowed: false, code: 401, message: 'the token is not authenticated' };
    }
    let sar: { allowed: boolean; reason?: string };
    try {
      sar = await reviewer.subjectAccessReview(user, path, verb);
    } catch (err) {
      logger?.warn('metrics authorization: SubjectAccessReview failed', { user: user.username, err: errMessage(err) });
      return { allowed: false, code: 503, message: 'the request could not be authorized', user: user.username };
    }
    if (!sar.allowed) {
      logger?.info('metrics authorization: forbidden', { user: user.username, reason: sar.reason });
      return { allowed: false, code: 403, message: `user "${user.username}" cannot ${verb} path "${path}"`, user: user.username };
    }
    return { allowed: true, user: user.username };
  }
}

/** One budget of reviews: how many are in flight, the reviews its bucket allows now (fractional: refilled continuously), and when it was last refilled. */
interface Budget {
  inFlight: number;
  bucket: number;
  refilledAt: number;
}

const errMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The minimal client the real reviewer needs: KubeClient.request fits. */
export interface ReviewClient {
  request<T>(method: 'POST', path: string, opts: { body: unknown }): Promise<T>;
}

interface TokenReviewStatus {
  status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }; error?: string };
}
interface SubjectAccessReviewStatus {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

/**
 * TokenReview and SubjectAccessReview through the operator's API client; the operator's ServiceAccount needs
 * `create` on tokenreviews.authentication.k8s.io and subjectaccessreviews.authorization.k8s.io (the chart's
 * `-metrics-auth` ClusterRole, the same rules as system:auth-delegator). `audiences` restricts the tokens
 * accepted to those issued for one of them; empty means the apiserver's own audiences.
 */
export function kubeReviewer(client: ReviewClient, audiences: string[] = []): Reviewer {
  return {
    async tokenReview(token) {
      const r = await client.request<TokenReviewStatus>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(audiences.length ? { audiences } : {}) } },
      });
      const s = r.status;
      if (!s?.authenticated || !s.user?.username) return undefined;
      return { username: s.user.username, uid: s.user.uid, groups: s.user.groups, extra: s.user.extra };
    },
    async subjectAccessReview(user, path, verb) {
      const r = await client.request<SubjectAccessReviewStatus>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        body: {
          apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
          spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, nonResourceAttributes: { path, verb } },
        },
      });
      const s = r.status ?? {};
      return { allowed: s.allowed === true && s.denied !== true, reason: s.reason ?? s.evaluationError };
    },
  };
}

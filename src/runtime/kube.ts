import { randomBytes } from 'node:crypto';
import { KubeAccess } from './kubeconfig.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '../api/constants.ts';
import type { ApiServerUpgrade, ApiServerUpgradeStatus } from '../api/types.generated.ts';
import { KubeApiError, kubeRequest, type KubeRequestOptions, type Verb } from './kube-request.ts';
import { isConnectionFailure, withRetry, type RetryOptions } from './retry.ts';
import { hedged } from './hedge.ts';
import type { Logger } from './logger.ts';

export { KubeApiError } from './kube-request.ts';
export { isTransient, withRetry } from './retry.ts';

export interface KubeConfigSource {
  /** A kubeconfig file; wins over everything else. */
  file?: string;
  /** The pod's service account (KUBERNETES_SERVICE_HOST and the mounted token). */
  inCluster?: boolean;
}

/** From a file, from the pod's service account, or kubectl's default chain ($KUBECONFIG, ~/.kube/config, then in-cluster). */
export function loadKubeConfig(src: KubeConfigSource = {}): KubeAccess {
  if (src.file) return KubeAccess.fromFile(src.file);
  if (src.inCluster) return KubeAccess.fromCluster();
  return KubeAccess.fromDefault();
}

export const MERGE_PATCH = 'application/merge-patch+json';

export interface KubeClientOptions {
  logger: Logger;
  /** The longest per-attempt deadline; default 15 s. */
  timeoutMs?: number;
  /**
   * The first deadline of a call that does not bring its own; default 5 s. A server cut from etcd holds a request
   * until its own timeout, and a kept-alive connection stays on that server: a reconcile waiting 15 s there is blind
   * to breaches for that long (fault campaign, seed 43 #5: ~20 s, a status write; an Event write or a driver's Job
   * read waits the same way). Each attempt that times out doubles the next one's deadline, up to `timeoutMs`, so an
   * API that is only slow still gets its calls through; any answer from a server (an error status too) resets it.
   */
  firstTimeoutMs?: number;
  /** How long a read or a preconditioned write waits for its answer before a second try goes beside it (hedge.ts); default 1 s. */
  hedgeAfterMs?: number;
  retry?: Omit<RetryOptions, 'onRetry' | 'signal'>;
}

/**
 * A status write takes 20–200 ms, up to 1.6 s at load 25 (fault campaign): 1 s sends a second one only when the
 * first is held, and a held one then costs about 1 s of a look instead of the 5 s deadline.
 */
const HEDGE_AFTER_MS = 1_000;
/** Less time than this left of a call's deadline: no second try (it would only add a request). */
const MIN_SECOND_TRY_MS = 300;

export interface EventInput {
  regarding: { apiVersion: string; kind: string; name: string; namespace?: string; uid?: string; resourceVersion?: string };
  type: 'Normal' | 'Warning';
  /** UpperCamelCase, e.g. BatchStarted. */
  reason: string;
  /** What the controller did or failed to do, e.g. Replace. */
  action: string;
  note: string;
}

export interface EventSource {
  /** e.g. upgrade.apiserver.dev/operator */
  controller: string;
  /** e.g. the leader identity. */
  instance: string;
}

/** Go's RFC3339Micro: MicroTime fields are parsed with exactly six fractional digits. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * The operator's API calls. Each attempt has a deadline and transient failures (connection errors
 * while the balancer drops a server, 5xx, 429 with Retry-After) are retried with backoff, so a
 * reconcile rides through an apiserver replacement instead of failing on its first request.
 */
export class KubeClient {
  readonly kubeConfig: KubeAccess;
  private readonly o: KubeClientOptions;
  private readonly log: Logger;

  /** Attempts that timed out in a row: each doubles the next one's deadline (KubeClientOptions.firstTimeoutMs). */
  private timeoutsInARow = 0;

  constructor(kubeConfig: KubeAccess, o: KubeClientOptions) {
    this.kubeConfig = kubeConfig;
    this.o = o;
    this.log = o.logger.child({ component: 'kube' });
  }

  /**
   * Any request. Reads (GET) are retried when transient; writes are not: a write whose answer was lost may
   * have happened, and repeating it here could duplicate a POST — except a `preconditioned` one (a resourceVersion
   * in its body), tried once more after a connection failure (isConnectionFailure). A failed write goes back to the work queue,
   * the one retry policy for writes, whose next reconcile re-reads and re-plans. `signal` cancels waits. Without its
   * own `timeoutMs`, an attempt gets the escalating deadline (KubeClientOptions.firstTimeoutMs). A read or a
   * preconditioned write still unanswered after `hedgeAfterMs` gets a second try beside it (hedgedAttempt).
   */
  request<T>(method: Verb, path: string, opts: KubeRequestOptions & { preconditioned?: boolean } = {}): Promise<T> {
    // A read, or a preconditioned write, that sits unanswered gets a second try beside it on a new connection
    // (hedge.ts): neither can take effect twice, and the balancer sends a new connection where its health checks say.
    const once = method === 'GET' || opts.preconditioned ? () => this.hedgedAttempt<T>(method, path, opts) : () => this.attempt<T>(method, path, opts);
    return withRetry(once, {
      ...this.o.retry,
      // A write with a resourceVersion precondition is tried once more after a connection failure: had the first
      // reached the server, the second gets 409 and the reconcile re-reads, so it never lands twice.
      ...(method === 'GET' ? {} : opts.preconditioned ? { attempts: 2, retryable: isConnectionFailure } : { attempts: 1 }),
      signal: opts.signal,
      onRetry: (err, attempt, delayMs) =>
        this.log.warn('API call failed, retrying', { method, path, attempt, delayMs: Math.round(delayMs), err: err instanceof Error ? err.message : String(err) }),
    });
  }

  /** The deadline of an attempt: the call's own, else the escalating one (KubeClientOptions.firstTimeoutMs). */
  private deadline(opts: KubeRequestOptions): number {
    return opts.timeoutMs ?? Math.min(this.o.timeoutMs ?? 15_000, (this.o.firstTimeoutMs ?? 5_000) * 2 ** this.timeoutsInARow);
  }

  /**
   * An attempt with a second one beside it once it has waited hedgeAfterMs. The second ends when the first would:
   * a hedge never makes a call outlast its deadline (a caller that gives one counts on it); with less than
   * MIN_SECOND_TRY_MS left there is none.
   */
  private hedgedAttempt<T>(method: Verb, path: string, opts: KubeRequestOptions): Promise<T> {
    const timeoutMs = this.deadline(opts);
    const afterMs = this.o.hedgeAfterMs ?? HEDGE_AFTER_MS;
    if (timeoutMs - afterMs < MIN_SECOND_TRY_MS) return this.attempt<T>(method, path, { ...opts, timeoutMs });
    const started = Date.now();
    const left = (): number => timeoutMs - (Date.now() - started);
    // A timer that fires late (an event loop at load) may leave too little for a second try: then there is none.
    return hedged((signal, second) => this.attempt<T>(method, path, {
      ...opts,
      timeoutMs: second ? left() : timeoutMs,
      signal: opts.signal ? AbortSignal.any([signal, opts.signal]) : signal,
      ...(second ? { freshConnection: true } : {}),
    }), afterMs, () => left() >= MIN_SECOND_TRY_MS);
  }

  private async attempt<T>(method: Verb, path: string, opts: KubeRequestOptions): Promise<T> {
    const timeoutMs = this.deadline(opts);
    try {
      const got = await kubeRequest<T>(this.kubeConfig, method, path, { ...opts, timeoutMs });
      this.timeoutsInARow = 0;
      return got;
    } catch (err) {
      if (err instanceof KubeApiError) this.timeoutsInARow = 0;
      else if (err instanceof Error && err.name === 'TimeoutError' && !opts.signal?.aborted) this.timeoutsInARow = Math.min(this.timeoutsInARow + 1, 8);
      throw err;
    }
  }

  upgradePath(name?: string): string {
    const base = `/apis/${GROUP}/${VERSION}/${PLURAL}`;
    return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
  }

  /** undefined when it does not exist. */
  async getUpgrade(name: string, signal?: AbortSignal): Promise<ApiServerUpgrade | undefined> {
    try {
      return await this.request<ApiServerUpgrade>('GET', this.upgradePath(name), { signal });
    } catch (err) {
      if (err instanceof KubeApiError && err.statusCode === 404) return undefined;
      throw err;
    }
  }

  async listUpgrades(signal?: AbortSignal): Promise<{ items: ApiServerUpgrade[]; resourceVersion: string }> {
    const l = await this.request<{ items?: ApiServerUpgrade[]; metadata?: { resourceVersion?: string } }>('GET', this.upgradePath(), { signal });
    return { items: l.items ?? [], resourceVersion: l.metadata?.resourceVersion ?? '' };
  }

  /**
   * JSON merge patch of the status subresource. With `resourceVersion` the write only succeeds
   * against that version (409 otherwise): the reconcile decided on what it read, and must re-read
   * rather than overwrite a newer status. Arrays (conditions, peers) are replaced whole by a merge patch.
   */
  patchUpgradeStatus(name: string, status: Partial<ApiServerUpgradeStatus>, o: { resourceVersion?: string; signal?: AbortSignal } = {}): Promise<ApiServerUpgrade> {
    const body: Record<string, unknown> = { status };
    if (o.resourceVersion !== undefined) body.metadata = { resourceVersion: o.resourceVersion };
    // Preconditioned writes are retried once after a connection failure (request): a look's status write that went
    // to a server killed a moment before would otherwise lose the look's check (fault campaign, process seed 301 #12
    // and nodes seed 311 #4: 3 s to fail at the balancer, then the look again, acted on 0.4 and 4 s past the bound).
    return this.request<ApiServerUpgrade>('PATCH', `${this.upgradePath(name)}/status`, { body, contentType: MERGE_PATCH, signal: o.signal, preconditioned: o.resourceVersion !== undefined });
  }

  /** JSON merge patch of the object itself (metadata: finalizers, annotations). */
  patchUpgrade(name: string, patch: Record<string, unknown>, signal?: AbortSignal): Promise<ApiServerUpgrade> {
    return this.request<ApiServerUpgrade>('PATCH', this.upgradePath(name), { body: patch, contentType: MERGE_PATCH, signal });
  }

  /**
   * An events.k8s.io/v1 Event. Events about cluster-scoped objects go to the "default" namespace,
   * as client-go's recorder does.
   */
  createEvent(src: EventSource, ev: EventInput, now: Date = new Date()): Promise<unknown> {
    const namespace = ev.regarding.namespace ?? 'default';
    const body = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: `${ev.regarding.name}.${randomBytes(8).toString('hex')}`, namespace },
      eventTime: microTime(now),
      reportingController: src.controller,
      reportingInstance: src.instance,
      action: ev.action,
      reason: ev.reason,
      note: ev.note.slice(0, 1024),
      type: ev.type,
      regarding: ev.regarding,
    };
    return this.request('POST', `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`, { body });
  }
}

/** The `regarding` reference of an ApiServerUpgrade, for events. */
export function upgradeRef(u: ApiServerUpgrade): EventInput['regarding'] {
  return { apiVersion: API_VERSION, kind: KIND, name: u.metadata?.name ?? '', uid: u.metadata?.uid, resourceVersion: u.metadata?.resourceVersion };
}

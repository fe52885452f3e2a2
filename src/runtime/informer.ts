import { Backoff, sleepUnlessAborted, withJitter, type BackoffOptions } from './backoff.ts';
import { kubeRequest } from './kube-request.ts';
import type { KubeAccess } from './kubeconfig.ts';
import { watch } from './watch.ts';
import { diffList, objectKey, type KubeObject } from './object-cache.ts';
import { classifyWatchEnd, type RestartReason, type WatchEnd } from './watch-outcome.ts';
import type { Logger } from './logger.ts';

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(old: T, cur: T): void;
  delete?(obj: T): void;
}

export interface InformerOptions {
  kubeConfig: KubeAccess;
  /** Collection path, e.g. /apis/coordination.k8s.io/v1/namespaces/kube-system/leases. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Name in logs and metrics; defaults to the path. */
  name?: string;
  logger: Logger;
  /** Server-side watch timeout; jittered by ±10% per watch so informers do not reconnect in lockstep. Default 300. */
  timeoutSeconds?: number;
  /** Added to timeoutSeconds before the watchdog declares a silent watch dead. Default 30 s. */
  watchdogMarginMs?: number;
  /**
   * For a collection that changes at least this often (each kube-apiserver renews its identity Lease every 10 s):
   * a watch silent for this long is stuck — served by a server that lost etcd keeps it open and quiet — and is
   * dropped and resumed on a new connection. Default: only the timeoutSeconds watchdog.
   */
  maxSilenceMs?: number;
  /** Restart backoff after errors; default 200 ms doubling to 30 s, ±20% jitter. */
  backoff?: BackoffOptions;
  /** A watch that stayed up this long resets the backoff. Default 30 s. */
  healthyAfterMs?: number;
  /** Page size of the list; 0 lists in one response. Default 500. */
  pageSize?: number;
  /** How long a list, or a streaming list's initial state, may take. Default 30 s. */
  listTimeoutMs?: number;
  /**
   * Read the collection's state with a streaming list (a WATCH with `sendInitialEvents`, feature gate WatchList,
   * on by default since Kubernetes 1.34) and fall back to a LIST when the server refuses it or does not finish it.
   * Default true. See docs/runtime.md "Relists without a LIST".
   */
  streamingList?: boolean;
  /**
   * Applied to every object as it arrives, before it is held (client-go's SetTransform): keeps only what the
   * reader needs of a large collection, so that memory follows the kept fields, not the objects' size.
   */
  transform?: (obj: KubeObject) => KubeObject;
  /** Metrics hook: one call per restart. */
  onRestart?(reason: RestartReason): void;
}

interface WatchResult {
  end: WatchEnd | 'stopped' | 'resync';
  err?: unknown;
  lifetimeMs: number;
  /** For a streaming list: whether its initial state was complete (the initial-events-end bookmark came). */
  stateRead?: boolean;
}

/** The annotation of the bookmark that ends a streaming list's initial events (metav1.InitialEventsAnnotationKey). */
export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

interface ListResponse<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

/**
 * List+watch cache of one collection that never gives up: every way a watch can end (clean close,
 * 410, connection errors while servers are replaced, silence) leads to a re-watch or a relist, with
 * exponential backoff on errors. Handlers receive events in order; their exceptions are logged, not thrown.
 */
export class Informer<T extends KubeObject = KubeObject> {
  readonly name: string;
  /** Resolves after the first successful list; never rejects. */
  readonly synced: Promise<void>;
  private readonly o: InformerOptions;
  private readonly log: Logger;
  private readonly cache = new Map<string, T>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly backoff: Backoff;
  private readonly stopCtl = new AbortController();
  private readonly restartCounts = new Map<RestartReason, number>();
  private resolveSynced!: () => void;
  /** Ends the watch in progress (set while one runs): resync() goes through it. */
  private endWatch?: (end: 'resync', err: Error) => void;
  private lastResyncAt = 0;
  private rv = '';
  private isSynced = false;
  private loop?: Promise<void>;
  private listsSent = 0;
  private streamedLists = 0;

  constructor(o: InformerOptions) {
    this.o = o;
    this.name = o.name ?? o.path;
    this.log = o.logger.child({ informer: this.name });
    this.backoff = new Backoff(o.backoff ?? { baseMs: 200, maxMs: 30_000, factor: 2, jitter: 0.2 });
    this.synced = new Promise((r) => (this.resolveSynced = r));
  }

  addHandlers(h: InformerHandlers<T>): void {
    this.handlers.push(h);
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run().catch((err: unknown) => {
      // run() catches everything it expects; reaching here is a bug, and it must still not crash the process.
      this.log.error('informer loop failed', { err });
    });
  }

  /** Stops watching; resolves when the loop has exited. Safe to call twice. */
  async stop(): Promise<void> {
    this.stopCtl.abort();
    await this.loop;
  }

  get hasSynced(): boolean {
    return this.isSynced;
  }

  get resourceVersion(): string {
    return this.rv;
  }

  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  keys(): string[] {
    return [...this.cache.keys()];
  }

  /**
   * Restarts by reason since start; how many times the whole state was read (the first read included), and how:
   * `streamed` by a streaming list, `listed` by a LIST (a refused or unfinished streaming list falls back to one).
   */
  stats(): { restarts: Record<string, number>; relists: number; streamed: number; listed: number } {
    return { restarts: Object.fromEntries(this.restartCounts), relists: this.streamedLists + this.listsSent, streamed: this.streamedLists, listed: this.listsSent };
  }

  /**
   * Drops the watch and reads the whole state again, because the cache is known to be behind the API: our own write's echo never
   * came, or the API says an object the cache holds is gone. A watch served by a kube-apiserver that lost etcd
   * stays open and silent (its watch cache stops; nothing closes the stream until timeoutSeconds), and a balancer
   * that holds the connection keeps it there; the relist goes out on a new connection. At most once per
   * `minIntervalMs`, so that a caller that keeps finding the cache behind cannot turn it into a relist loop.
   * Returns whether a resync was started.
   */
  resync(why: string, minIntervalMs = 10_000): boolean {
    const now = Date.now();
    if (this.stopped || !this.endWatch || now - this.lastResyncAt < minIntervalMs) return false;
    this.lastResyncAt = now;
    this.endWatch('resync', new Error(why));
    return true;
  }

  private get stopped(): boolean {
    return this.stopCtl.signal.aborted;
  }

  private async run(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      let r: WatchResult | undefined;
      if (needList && this.o.streamingList !== false) {
        // The state and then the watch come on one stream; how it ends is judged like any watch's end below.
        r = await this.watchOnce(true);
        if (r.end === 'stopped' || this.stopped) break;
        if (r.stateRead) needList = false;
        else {
          this.log.warn('streaming list refused or unfinished; listing', { end: r.end, err: errText(r.err) });
          r = undefined;
        }
      }
      if (needList) {
        try {
          await this.relist();
          needList = false;
        } catch (err) {
          if (this.stopped) break;
          const delay = this.backoff.next();
          this.restarted('list-error', err, delay);
          await sleepUnlessAborted(delay, this.stopCtl.signal);
          continue;
        }
      }
      r ??= await this.watchOnce(false);
      if (r.end === 'stopped' || this.stopped) break;
      if (r.lifetimeMs >= (this.o.healthyAfterMs ?? 30_000)) this.backoff.reset();
      let delay: number;
      if (r.end === 'resync') {
        needList = true;
        delay = 0;
      } else if (r.end === 'gone') {
        // History is gone: relist at once, unless 410s come back right after connecting again and again.
        needList = true;
        delay = r.lifetimeMs >= 1000 ? 0 : this.backoff.next();
      } else if ((r.end === 'closed' || r.end === 'timeout' || r.end === 'watchdog') && r.lifetimeMs >= 1000) {
        // A watch that ran its course: resume from the last resourceVersion straight away.
        delay = 0;
      } else {
        // Errors, and clean closes right after connecting (a server that accepts and drops us), back off.
        delay = this.backoff.next();
      }
      this.restarted(r.end, r.err, delay);
      if (delay > 0) await sleepUnlessAborted(delay, this.stopCtl.signal);
    }
    this.log.debug('informer stopped');
  }

  private restarted(reason: RestartReason, err: unknown, delayMs: number): void {
    this.restartCounts.set(reason, (this.restartCounts.get(reason) ?? 0) + 1);
    try {
      this.o.onRestart?.(reason);
    } catch {
      /* metrics are best effort */
    }
    // A watch that ran its course is routine; everything else is worth a look.
    const routine = reason === 'closed' && delayMs === 0;
    const meta = { reason, delayMs: Math.round(delayMs), resourceVersion: this.rv, err: errText(err) };
    if (routine) this.log.debug('watch restarted', meta);
    else this.log.warn('watch restarted', meta);
  }

  private async relist(): Promise<void> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await kubeRequest<ListResponse<T>>(this.o.kubeConfig, 'GET', this.o.path, {
        query: { labelSelector: this.o.labelSelector, fieldSelector: this.o.fieldSelector, limit: this.o.pageSize ?? 500, continue: cont },
        timeoutMs: this.o.listTimeoutMs ?? 30_000,
        signal: this.stopCtl.signal,
      });
      items.push(...(page.items ?? []).map((o) => this.held(o)));
      // Every page of one list shares the first page's snapshot resourceVersion.
      if (rv === '') rv = page.metadata?.resourceVersion ?? '';
      cont = page.metadata?.continue || undefined;
    } while (cont !== undefined);
    if (this.stopped) return;
    this.replaceState(items, rv, 'list');
  }

  /** What the cache holds of an object as it arrived. */
  private held(obj: T): T {
    return this.o.transform ? (this.o.transform(obj) as T) : obj;
  }

  /** The whole collection as of `rv`: the cache becomes it, and handlers get the difference. */
  private replaceState(items: T[], rv: string, via: 'list' | 'stream'): void {
    const d = diffList(this.cache, items);
    this.cache.clear();
    for (const it of items) this.cache.set(objectKey(it), it);
    this.rv = rv;
    if (via === 'stream') this.streamedLists++;
    else this.listsSent++;
    for (const o of d.deleted) this.emit('delete', o);
    for (const o of d.added) this.emit('add', o);
    for (const u of d.updated) this.emit('update', u.cur, u.old);
    this.log.info('listed', { via, items: items.length, resourceVersion: rv, added: d.added.length, updated: d.updated.length, deleted: d.deleted.length });
    if (!this.isSynced) {
      this.isSynced = true;
      this.resolveSynced();
    }
  }

  private emit(kind: 'add' | 'update' | 'delete', obj: T, old?: T): void {
    for (const h of this.handlers) {
      try {
        if (kind === 'add') h.add?.(obj);
        else if (kind === 'delete') h.delete?.(obj);
        else h.update?.(old as T, obj);
      } catch (err) {
        this.log.error('informer handler threw', { event: kind, key: objectKey(obj), err });
      }
    }
  }

  private apply(type: string, obj: T): void {
    const key = objectKey(obj);
    if (type === 'ADDED' || type === 'MODIFIED') {
      const old = this.cache.get(key);
      this.cache.set(key, obj);
      if (old) this.emit('update', obj, old);
      else this.emit('add', obj);
    } else if (type === 'DELETED') {
      const old = this.cache.get(key);
      this.cache.delete(key);
      this.emit('delete', old ?? obj);
    }
  }

  /**
   * One watch from the current resourceVersion; resolves (never rejects) when it has ended for any reason. With
   * `streamState` it is a streaming list instead: the server first sends the whole collection as ADDED events and
   * a bookmark annotated INITIAL_EVENTS_END, held back until that bookmark and then applied as one new state.
   */
  private watchOnce(streamState = false): Promise<WatchResult> {
    // stop() may have come while the state was being read (a handler, or whoever awaited `synced`, called it): its
    // abort event is gone by now, and a watch started anyway would never end.
    if (this.stopped) return Promise.resolve({ end: 'stopped', lifetimeMs: 0 });
    const timeoutSeconds = Math.max(1, Math.round(withJitter(this.o.timeoutSeconds ?? 300, 0.1)));
    const silenceMs = this.o.maxSilenceMs ?? timeoutSeconds * 1000 + (this.o.watchdogMarginMs ?? 30_000);
    const started = Date.now();
    let lastActivity = started;
    let sawGone = false;
    let errorEvent: { code?: number; message?: string } | undefined;
    const ctl = new AbortController();
    let settled = false;
    // The initial state of a streaming list, until its end bookmark.
    let pending: Map<string, T> | undefined = streamState ? new Map() : undefined;
    const stateDeadline = streamState ? started + (this.o.listTimeoutMs ?? 30_000) : Infinity;

    return new Promise<WatchResult>((resolve) => {
      const finish = (end: WatchResult['end'], err?: unknown): void => {
        if (settled) return;
        settled = true;
        this.endWatch = undefined;
        clearInterval(dog);
        this.stopCtl.signal.removeEventListener('abort', onStop);
        // Aborting makes the watch reject (AbortError, or `aborted` once the stream began), which `settled` ignores.
        ctl.abort();
        resolve({ end, err, lifetimeMs: Date.now() - started, stateRead: streamState ? pending === undefined : undefined });
      };
      const onStop = (): void => finish('stopped');
      this.endWatch = finish;
      this.stopCtl.signal.addEventListener('abort', onStop, { once: true });
      const dog = setInterval(() => {
        const now = Date.now();
        if (now - lastActivity > silenceMs) finish('watchdog', new Error(`no data for ${silenceMs} ms`));
        // A server that ignores sendInitialEvents (WatchList off, or too old) never sends the end bookmark.
        else if (pending !== undefined && now > stateDeadline) finish('timeout', new Error(`no ${INITIAL_EVENTS_END} bookmark within ${this.o.listTimeoutMs ?? 30_000} ms`));
      }, Math.min(streamState ? 1000 : 5000, silenceMs));
      dog.unref();

      // An unset resourceVersion with NotOlderThan is a consistent read: the state is at least as new as the request.
      const query = streamState
        ? { allowWatchBookmarks: true, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', timeoutSeconds, labelSelector: this.o.labelSelector, fieldSelector: this.o.fieldSelector }
        : { allowWatchBookmarks: true, timeoutSeconds, resourceVersion: this.rv, labelSelector: this.o.labelSelector, fieldSelector: this.o.fieldSelector };
      const onEvent = ({ type, object }: { type: string; object: Record<string, unknown> }): void => {
        if (settled) return;
        lastActivity = Date.now();
        // The watched kind's object, or a Status for ERROR events; we only read KubeObject fields and the Status code.
        const obj = object as T & { code?: number; message?: string; metadata?: { annotations?: Record<string, string> } };
        if (type === 'ERROR') {
          if (obj.code === 410) sawGone = true;
          else errorEvent = obj;
          return;
        }
        const rv = obj.metadata?.resourceVersion;
        if (pending !== undefined) {
          if (type === 'BOOKMARK') {
            if (obj.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true' || !rv) return;
            const state = [...pending.values()];
            pending = undefined;
            this.replaceState(state, rv, 'stream');
          } else if (type === 'DELETED') pending.delete(objectKey(obj));
          else pending.set(objectKey(obj), this.held(obj));
          return;
        }
        if (type !== 'BOOKMARK') this.apply(type, this.held(obj));
        if (rv) this.rv = rv;
      };
      watch(this.o.kubeConfig, this.o.path, query, onEvent, ctl.signal).then(
        () => finish(classifyWatchEnd(undefined, sawGone, errorEvent), errorEvent ? new Error(`watch ERROR event: ${errorEvent.code} ${errorEvent.message ?? ''}`) : undefined),
        (err: unknown) => finish(classifyWatchEnd(err, sawGone, errorEvent), err),
      );
    });
  }
}

function errText(err: unknown): unknown {
  return err instanceof Error ? `${err.name}: ${err.message}` : err;
}

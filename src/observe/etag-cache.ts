/**
 * Remembers the last body seen per URL with its ETag, so a discovery poll can send If-None-Match
 * and reuse the body on 304. Bounded in entries and in characters (ETAG_CACHE_BYTES: the bodies are a hostile
 * server's to size): the least recently used entry goes first, and a body larger than the whole bound is not kept.
 */
import { ETAG_CACHE_BYTES } from '../runtime/body-limits.ts';

export interface CachedBody {
  etag: string;
  body: string;
}

export class EtagCache {
  private readonly entries = new Map<string, CachedBody>();
  private maxEntries: number;
  private readonly minEntries: number;
  private readonly maxChars: number;
  private chars = 0;

  constructor(maxEntries = 256, maxChars = ETAG_CACHE_BYTES) {
    this.maxEntries = maxEntries;
    this.minEntries = maxEntries;
    this.maxChars = maxChars;
  }

  /** A new bound, never below the one given at construction; shrinking drops the least recently used. */
  resize(maxEntries: number): void {
    this.maxEntries = Math.max(this.minEntries, Math.ceil(maxEntries));
    this.evict();
  }

  get(key: string): CachedBody | undefined {
    const hit = this.entries.get(key);
    if (hit) {
      // Re-insert to mark as recently used (Map keeps insertion order).
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  set(key: string, etag: string, body: string): void {
    this.delete(key);
    if (body.length + etag.length > this.maxChars) return;
    this.entries.set(key, { etag, body });
    this.chars += body.length + etag.length;
    this.evict();
  }

  private evict(): void {
    while (this.entries.size > this.maxEntries || this.chars > this.maxChars) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.delete(oldest.value);
    }
  }

  delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.chars -= e.body.length + e.etag.length;
  }

  /** Characters of the bodies and ETags kept. */
  get keptChars(): number {
    return this.chars;
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * Remembers the last body seen per URL with its ETag, so a discovery poll can send If-None-Match
 * and reuse the body on 304. Bounded: the least recently used entry goes first.
 */
export interface CachedBody {
  etag: string;
  body: string;
}

export class EtagCache {
  private readonly entries = new Map<string, CachedBody>();
  private maxEntries: number;
  private readonly minEntries: number;

  constructor(maxEntries = 256) {
    this.maxEntries = maxEntries;
    this.minEntries = maxEntries;
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
    this.entries.delete(key);
    this.entries.set(key, { etag, body });
    this.evict();
  }

  private evict(): void {
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

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
  private readonly maxEntries: number;

  constructor(maxEntries = 256) {
    this.maxEntries = maxEntries;
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

// The plugin's version: package.json's, read next to src/ (a clone, npm's global link and the krew archive all
// carry it there; the release writes its version into the archive's copy).
import { readFileSync } from 'node:fs';

export function pluginVersion(): string {
  try {
    const v = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }).version;
    return typeof v === 'string' && /^\d+\.\d+\.\d+(?:[-+][\w.+-]+)?$/.test(v) ? `v${v}` : 'unknown';
  } catch {
    return 'unknown';
  }
}

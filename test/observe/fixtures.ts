// Helpers for tests over pages captured from real kube-apiservers, stored as
// test/fixtures/<version>/metrics.txt and test/fixtures/<version>/discovery-*.json.
// Tests iterate whatever is there, so adding a captured version needs no test change.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const FIXTURES_DIR = join(import.meta.dirname, '..', 'fixtures');

/** Versions (directory names) that have captured fixtures, e.g. ['v1.35.4', 'v1.36.3']. */
export function fixtureVersions(): string[] {
  if (!existsSync(FIXTURES_DIR)) return [];
  return readdirSync(FIXTURES_DIR, { withFileTypes: true })
    // Only version folders: test/fixtures/kubeadm holds manifests, not captures.
    .filter((d) => d.isDirectory() && /^v\d+\.\d+\.\d+/.test(d.name))
    .map((d) => d.name)
    .sort();
}

/** Fixture file names of one version matching a pattern, e.g. /^discovery-.*\.json$/. */
export function fixtureFiles(version: string, pattern: RegExp): string[] {
  const dir = join(FIXTURES_DIR, version);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => pattern.test(f)).sort();
}

export function readFixture(version: string, file: string): string {
  return readFileSync(join(FIXTURES_DIR, version, file), 'utf8');
}

/**
 * An independent count: one family per TYPE line and one series per non-comment, non-blank line.
 * Valid for pages where every family has a TYPE line (true of client_golang output).
 */
export function grepCount(text: string): { families: number; series: number } {
  const lines = text.split(/\r?\n/);
  return {
    families: lines.filter((l) => /^# TYPE /.test(l)).length,
    series: lines.filter((l) => l.trim() !== '' && !l.startsWith('#')).length,
  };
}

// Nothing a reader follows points at what the project has not published (issue 23, points 7 and 16): no release of it
// exists yet, so no doc gives a release download or a krew manifest URL to install from, no doc installs the krew
// template without a local archive (its sha256 is zeros), and the chart's defaults name no URL of the repository
// (a released chart gets its runbook URL from the release: scripts/release/plan.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const pages = [
  ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f)),
  'README.md', 'CONTRIBUTING.md', join('charts', 'apiserver-upgrade-operator', 'README.md'),
];

/** Lines of the pages that match, as `page:line: text`. */
function offending(re: RegExp): string[] {
  return pages.flatMap((p) => readFileSync(join(root, p), 'utf8').split('\n').flatMap((l, i) => (re.test(l) ? [`${p}:${i + 1}: ${l.trim()}`] : [])));
}

test('no page gives a release download or a krew manifest URL to install from', () => {
  assert.deepEqual(offending(/releases\/download\/v|--manifest-url[= ]https?:/), []);
});

test('no page installs the krew template without a local archive', () => {
  assert.deepEqual(offending(/krew install --manifest=krew\/apiserver-upgrade\.yaml(?!.*--archive)/), []);
});

test('the check finds what it looks for', () => {
  assert.ok(/releases\/download\/v|--manifest-url[= ]https?:/.test('kubectl krew install --manifest-url=https://x/releases/download/v0.2.0/a.yaml'));
  assert.ok(/krew install --manifest=krew\/apiserver-upgrade\.yaml(?!.*--archive)/.test('kubectl krew install --manifest=krew/apiserver-upgrade.yaml   # downloads'));
  assert.ok(!/krew install --manifest=krew\/apiserver-upgrade\.yaml(?!.*--archive)/.test('kubectl krew install --manifest=krew/apiserver-upgrade.yaml --archive=dist/x.tar.gz'));
});

test('the chart\'s default values name no URL of the project\'s repository', () => {
  const values = readFileSync(join(root, 'charts', 'apiserver-upgrade-operator', 'values.yaml'), 'utf8');
  const urls = values.split('\n').filter((l) => !/^\s*#/.test(l) && /https?:\/\/(?:github\.com\/apiserver-upgrade-operator|[^\s"]*apiserver-upgrade-operator\.(?:io|dev))/.test(l));
  assert.deepEqual(urls, []);
});

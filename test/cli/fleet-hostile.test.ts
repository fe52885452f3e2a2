// A fleet list prints context names (anyone who writes a kubeconfig chose them) and what servers answered: no escape
// sequence, carriage return, override or invisible character reaches the terminal as itself, in the table, on
// stderr, in -o json or -o yaml; json and yaml still carry the context names exactly; a credential in an error is
// redacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import type { Connection } from '../../src/cli/client.ts';
import type { FleetView } from '../../src/cli/fleet-view.ts';
import { terminalText } from '../../src/cli/format.ts';
import { KubeApiError } from '../../src/runtime/kube.ts';
import { FakeApi, cli } from './fake-api.ts';
import { upgrading } from './fixtures.ts';

const UNPRINTABLE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]|\p{Cs}/u;
const HOSTILE = [
  '\u001b[2J\u001b[H', '\u001b[31m', '\u001b]0;pwned\u0007', '\u001b]8;;https://evil.example\u001b\\', '\u009b1A', '\r', '\r\n', '\n', '\b', '\u0000',
  '\u007f', '\u0085', '\u2028', '\t', '\u202e', '\u2066', '\u200b', '\u200d', '\ufeff', '\u00ad', '\u{e0041}', '\ud800', '\udfff',
];
const word = fc.constantFrom('prod', 'a', '-', ' ', 'é', '😀', ':', '"', '\\', '$(id)', '`x`', ';', '|', '*', '{', '}');
const hostile = fc.array(fc.oneof(word, fc.constantFrom(...HOSTILE)), { minLength: 1, maxLength: 12 }).map((a) => a.join(''));
const SECRET = 'Bearer s3cr3t-t0ken-value';

function assertPrintable(out: string, what: string): void {
  const m = UNPRINTABLE.exec(out);
  assert.equal(m, null, m ? `${what}: U+${m[0].codePointAt(0)!.toString(16)} at ${m.index}: ${JSON.stringify(out.slice(Math.max(0, m.index - 30), m.index + 30))}` : '');
}

/** How a cluster named by a hostile string fails, with a hostile text in the answer. */
const failure = fc.tuple(fc.constantFrom('ok', 'refused', 'forbidden', 'status', 'body'), hostile);

test('hostile context names and error texts: printable in every output, names exact in json and yaml, credentials redacted', async () => {
  await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.tuple(hostile, failure), { minLength: 1, maxLength: 5, selector: ([name]) => name }), async (clusters) => {
    const byName = new Map(clusters);
    const contexts = clusters.map(([n]) => n);
    const connect = (c: Connection): FakeApi => {
      const [kind, text] = byName.get(c.context!)!;
      const api = new FakeApi(upgrading());
      const withSecret = `${text} Authorization: ${SECRET} ${text}`;
      if (kind === 'refused') api.list = async () => { throw Object.assign(new Error(withSecret), { code: 'ECONNREFUSED' }); };
      if (kind === 'forbidden') api.list = async () => { throw new KubeApiError('GET', '/apis/x', 403, JSON.stringify({ kind: 'Status', reason: text, message: withSecret }), undefined); };
      if (kind === 'status') api.list = async () => { throw new KubeApiError('GET', '/apis/x', 500, JSON.stringify({ kind: 'Status', reason: text, message: withSecret }), undefined); };
      if (kind === 'body') api.list = async () => { throw new KubeApiError('GET', '/apis/x', 502, withSecret, undefined); };
      return api;
    };
    const deps = { contexts: () => contexts, connect };
    const failed = clusters.filter(([, [kind]]) => kind !== 'ok').length;
    for (const output of [[], ['-o', 'wide'], ['-o', 'json'], ['-o', 'yaml']]) {
      const r = await cli(undefined, ['list', '--all-contexts', ...output], deps);
      const what = output.join(' ') || 'human';
      assert.equal(r.code, failed > 0 ? 1 : 0, what);
      // A tab in a YAML block scalar or JSON layout is the value itself, and harmless (as for every -o json/yaml).
      assertPrintable(output[1] === 'json' || output[1] === 'yaml' ? r.out.replaceAll('\t', '') : r.out, `${what} stdout`);
      assertPrintable(r.err, `${what} stderr`);
      assert.ok(!r.out.includes('s3cr3t') && !r.err.includes('s3cr3t'), `${what}: the credential is redacted`);
      if (output.length === 0 || output[1] === 'wide') {
        const rows = r.out.trimEnd().split('\n').slice(1);
        assert.equal(rows.length, clusters.length, `${what}: one row per cluster`);
        for (const name of contexts) assert.ok(rows.some((row) => row.startsWith(terminalText(name))), `${what}: a row for ${JSON.stringify(name)}`);
      } else {
        const v = (output[1] === 'json' ? JSON.parse(r.out) : parseYaml(r.out)) as FleetView;
        // JSON escapes a lone surrogate (\ud800) and so keeps it; YAML has no such escape and writes U+FFFD.
        assert.deepEqual(v.clusters.map((c) => c.cluster).sort(), contexts.map((n) => (output[1] === 'json' ? n : n.toWellFormed())).sort(), `${what}: names kept exactly`);
        assert.equal(v.clusters.filter((c) => 'error' in c).length, failed, `${what}: each failure as data`);
      }
    }
  }), { numRuns: 150 });
});

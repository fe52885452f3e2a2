// Issue 21: nothing secret or raw in status. Whatever a hook answers — its request headers echoed, control
// characters, shell and regex metacharacters, JWTs — safeMessage leaves no credential, no unprintable character,
// and at most its cap of characters.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { REDACTED, safeMessage } from '../../src/plan/redact.ts';
import { INVISIBLES, disguised, filler, leakedRuns, token40 } from '../support/hidden-token.ts';

const TOKEN_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/';
const token = fc.array(fc.constantFrom(...TOKEN_CHARS), { minLength: 12, maxLength: 80 }).map((a) => `tk${a.join('')}`);
const meta = fc.array(fc.oneof(
  fc.string(),
  fc.constantFrom('\n', '\r\n', '\u0000', '\u001b[31m', '\u007f', '\u0085', '\u2028', '\u202e', '\u200b', '\ufeff', '$(rm -rf /)', '`id`', '\\', '"', "'", '{', '}', '|', ';', '&', '%0a', '${x}', '.*+?^$[]()'),
  fc.string({ unit: 'binary' }),
), { maxLength: 12 }).map((a) => a.join(''));
/** How a hook may carry the token back in its answer. */
const carriers = (t: string, jwt: string): string[] => [
  `Authorization: Bearer ${t}`, `authorization=Bearer ${t}`, `"Authorization": "Bearer ${t}"`, `'authorization': 'Bearer ${t}'`,
  `bearer ${t}`, `BEARER\t${t}`, `token=${t}`, `"token":"${t}"`, `password: ${t}`, `?access_token=${t}&x=1`, `api-key=${t}`,
  `client_secret='${t}'`, `the token was ${t}`, `b64 ${btoa(t)}`, `url ${encodeURIComponent(t)}`, jwt,
];
const jwtOf = (s: string): string => {
  const b = (x: string) => btoa(x).replace(/=+$/u, '').replace(/\+/gu, '-').replace(/\//gu, '_');
  return `${b('{"alg":"RS256","kid":"x"}')}.${b(`{"sub":"system:serviceaccount:${s}"}`)}.${b(s)}sig`;
};

// eslint-disable-next-line no-control-regex -- the property is that none remain
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\u061c\ufeff]/u;

describe('safeMessage', () => {
  it('leaves no trace of the token however a hook echoes it, among metacharacters', () => {
    fc.assert(fc.property(token, meta, meta, fc.nat(15), fc.integer({ min: 16, max: 4000 }), (t, before, after, which, max) => {
      const jwt = jwtOf(t);
      const out = safeMessage(`${before}${carriers(t, jwt)[which]}${after}`, { secrets: [t], maxChars: max });
      assert.ok(!out.includes(t), out);
      assert.ok(!out.includes(btoa(t)), out);
      assert.ok(!out.includes(jwt.split('.')[1]!), out);
      assert.ok(!UNPRINTABLE.test(out), JSON.stringify(out));
      assert.ok(out.length <= max, `${out.length} > ${max}`);
      assert.equal(out, out.toWellFormed());
    }), { numRuns: 2000 });
  });

  it('redacts credential shapes even when the caller names no secret', () => {
    fc.assert(fc.property(token, fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15), meta, (t, which, noise) => {
      const jwt = jwtOf(t);
      const out = safeMessage(`${noise} ${carriers(t, jwt)[which]} ${noise}`, { maxChars: 100_000 });
      assert.ok(!out.includes(t.slice(2)), out);
      assert.ok(out.includes(REDACTED));
    }), { numRuns: 1000 });
  });

  it('keeps ordinary messages as they are, and cuts long ones with an ellipsis', () => {
    assert.equal(safeMessage('POST https://hook/replace: HTTP 503 Service Unavailable after 120 ms'), 'POST https://hook/replace: HTTP 503 Service Unavailable after 120 ms');
    assert.equal(safeMessage('line one\nline two\r\n\u001b[31mred'), 'line one line two [31mred');
    const long = safeMessage('x'.repeat(1000));
    assert.equal(long.length, 512);
    assert.ok(long.endsWith('…'));
    // A surrogate pair is not split by the cut.
    const emoji = safeMessage(`${'a'.repeat(510)}😀😀`, { maxChars: 512 });
    assert.equal(emoji, emoji.toWellFormed());
  });

  it('leaves no run of 8 of a named token, with invisible characters or look-alikes inside, wherever the cut falls', () => {
    const hidden = token40.chain((t) => fc.tuple(fc.constant(t), disguised(t)));
    fc.assert(fc.property(hidden, filler(300), filler(300), fc.integer({ min: -10, max: 50 }), ([t, d], before, after, delta) => {
      const max = Math.max(16, before.length + delta);
      const out = safeMessage(`${before}${d}${after}`, { secrets: [t], maxChars: max });
      assert.deepEqual(leakedRuns(out, t), [], JSON.stringify(out));
      assert.ok(!/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u00a0]/u.test(out), JSON.stringify(out));
      assert.ok(out.length <= max, `${out.length} > ${max}`);
    }), { numRuns: 3000 });
  });

  it('finds credential shapes with invisible characters or full-width letters inside, the secret not named', () => {
    const hidden = token40.chain((t) => fc.tuple(fc.constant(t), fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15)).chain(([t, which]) => {
      const carrier = carriers(t, jwtOf(t))[which]!;
      return fc.tuple(fc.constant(which === 15 ? carrier : t), disguised(carrier, INVISIBLES));
    }));
    fc.assert(fc.property(hidden, filler(100), filler(100), ([secret, d], before, after) => {
      const out = safeMessage(`${before} ${d} ${after}`, { maxChars: 100_000 });
      assert.deepEqual(leakedRuns(out, secret), [], JSON.stringify(out));
    }), { numRuns: 2000 });
  });

  it('a text cut before redaction (beyond 256 KiB, or 64 KiB once plain) keeps no first part of a token at its end', () => {
    const t = 'tkAbCdEfGhIjKlMnOpQrStUvWxYz0123456789ab';
    for (const k of [1, 7, 8, 20, 39]) {
      // 256 KiB of zero-width spaces, then the token: the input is cut k characters into it.
      const invisible = safeMessage(`${'\u200b'.repeat(256 * 1024 - k)}${t} and more`, { secrets: [t], maxChars: 1024 });
      assert.deepEqual(leakedRuns(invisible, t), [], invisible);
      // 64 KiB of plain text, then the token split by a no-break space: the plain text is cut inside it.
      const split = safeMessage(`${'w '.repeat(32 * 1024 - 10)}${t.slice(0, 12)}\u00a0${t.slice(12)} and more`, { secrets: [t], maxChars: 100_000 });
      assert.deepEqual(leakedRuns(split, t), [], split.slice(-80));
      assert.ok(split.endsWith('…'));
    }
    // A JWT cut there (not a named secret) loses its end too: the last word of a cut text goes.
    const jwt = jwtOf('tkAbCdEfGhIjKlMnOpQr');
    const cut = safeMessage(`${'w '.repeat(32 * 1024 - 30)}${jwt} and more`, { maxChars: 100_000 });
    assert.deepEqual(leakedRuns(cut, jwt.slice(20)), [], cut.slice(-80));
  });

  it('stays linear on hostile input (64 KiB of near-matches)', () => {
    const started = performance.now();
    for (const unit of ['authorization:', 'Bearer ', 'token=', 'eyJaaaa.', 'a'.repeat(100)]) safeMessage(unit.repeat(65536 / unit.length), { secrets: ['0123456789abcdef'] });
    assert.ok(performance.now() - started < 2_000);
  });
});

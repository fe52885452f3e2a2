// Tokens as a hostile hook or node would echo them back: random, with invisible characters (any Unicode format
// character or other default-ignorable) and look-alikes (no-break and other spaces, line breaks, full-width letters)
// inside, anywhere in a message. And the check on what was written: no run of 8 or more of the token's characters.
import fc from 'fast-check';

const TOKEN_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~';

/** A token of 40 characters (the length of a webhook's bearer token in the finding it guards). */
export const token40 = fc.array(fc.constantFrom(...TOKEN_CHARS), { minLength: 40, maxLength: 40 }).map((a) => a.join(''));

/** Zero-width and other format characters (Cf), and default-ignorables of other categories. */
export const INVISIBLES = [
  '\u200b', '\u200c', '\u200d', '\u200e', '\u200f', '\u2060', '\u2061', '\u2062', '\u2063', '\u2064', '\ufeff', '\u00ad',
  '\u061c', '\u180e', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069',
  '\u206a', '\u206f', '\u{e0001}', '\u{e0041}', '\u{1d173}', '\ufe0f', '\u034f', '\u3164', '\u115f', '\u17b4', '\u0600', '\ufff9',
];
/** Characters that split a token visibly but are spaces or breaks to a reader: no-break and wide spaces, controls, separators. */
export const SPLITTERS = ['\u00a0', '\u2007', '\u202f', '\u3000', '\u1680', '\n', '\r\n', '\t', '\u000b', '\u0085', '\u2028', '\u2029', '\u001b', '\u0000', '\u007f'];

/** A full-width look-alike of an ASCII letter or digit (NFKC maps it back). */
const fullWidth = (c: string): string => (/[A-Za-z0-9]/u.test(c) ? String.fromCodePoint(c.codePointAt(0)! - 0x21 + 0xff01) : c);

/**
 * The token with up to 6 of `inserts` placed between or around its characters, some of its letters maybe full-width.
 * `inserts` defaults to invisibles and splitters both.
 */
export function disguised(t: string, inserts: readonly string[] = [...INVISIBLES, ...SPLITTERS]): fc.Arbitrary<string> {
  return fc.record({
    at: fc.array(fc.tuple(fc.integer({ min: 0, max: t.length }), fc.constantFrom(...inserts), fc.integer({ min: 1, max: 3 })), { maxLength: 6 }),
    wide: fc.array(fc.integer({ min: 0, max: t.length - 1 }), { maxLength: 4 }),
  }).map(({ at, wide }) => {
    const chars = [...t].map((c, i) => (wide.includes(i) ? fullWidth(c) : c));
    for (const [i, s, n] of [...at].sort((a, b) => b[0] - a[0])) chars.splice(i, 0, s.repeat(n));
    return chars.join('');
  });
}

/** Plain filler text around the token: printable words, punctuation and spaces, but no letter run that could be the token's. */
export const filler = (maxLength: number): fc.Arbitrary<string> =>
  fc.array(fc.constantFrom('ok', 'the', 'hook', 'said', ':', ' ', ' ', '{', '}', '"', ',', '=', '/', 'é', '😀', '\n'), { maxLength }).map((a) => a.join(''));

/** Each run of 8 characters of `t` found in `out`, or in `out` with its spaces removed. */
export function leakedRuns(out: string, t: string): string[] {
  const flat = out.replace(/\s/gu, '');
  const runs: string[] = [];
  for (let i = 0; i + 8 <= t.length; i++) {
    const run = t.slice(i, i + 8);
    if (out.includes(run) || flat.includes(run)) runs.push(run);
  }
  return runs;
}

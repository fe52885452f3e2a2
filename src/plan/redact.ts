/**
 * Text a driver, a hook or a server supplied, made fit to be written anywhere (status.driverCalls[].message, the
 * pause message, Events, logs): made plain, then everything that looks like a credential redacted, then capped —
 * in that order. Status is readable by every holder of the cluster-wide `view` role, and a hook that echoes its
 * request headers would otherwise put the operator's bearer token there.
 *
 * 1. Plain: invisible characters — every format character (Unicode category Cf: zero-width spaces and joiners,
 *    bidirectional controls, the BOM, soft hyphens, tags) and every other default-ignorable code point (variation
 *    selectors, Hangul fillers) — are removed; the text is put in NFKC form (a no-break or other wide space is a
 *    space, a full-width letter its ASCII one); control characters (C0, DEL, C1), line and paragraph separators and
 *    all other spaces become one space each. So a credential with invisible characters inside is a credential
 *    again, and a message can neither forge a log line nor hide text.
 * 2. Redacted: the secrets the caller names (the configured token; also in base64 and URL-encoded), found even with
 *    spaces between their characters (a no-break space, a line break), `Authorization:` header values,
 *    `Bearer`/`Basic` credentials, `token=`/`password=`/`secret=`/`api_key=` pairs (also as JSON members
 *    `"token": "..."`), and JWT-shaped strings (three base64url segments, the first `eyJ`).
 * 3. Capped: at most `maxChars` characters remain (a cut string ends with `…`). Nothing is cut before redaction, so
 *    a cut never leaves part of a credential behind — but for the bound on the work (INPUT_MAX), and that cut drops
 *    the last word and any end that begins a named secret.
 *
 * Cutting first (the order this once had) let a token that straddled the cut keep all but its last characters,
 * and a zero-width space inside a token kept the token from being recognised at all.
 */

export const REDACTED = '[redacted]';

/** Default cap of a message written to status or an Event. */
export const SAFE_MESSAGE_MAX = 512;

/** Input beyond this is dropped before anything else: the work below is linear, and the caps are far below it. */
const RAW_MAX = 256 * 1024;
/** Plain text beyond this is dropped before redaction: the patterns below are linear, and the caps are far below it. */
const INPUT_MAX = 64 * 1024;

export interface SafeMessageOptions {
  /** Values to redact wherever they appear, verbatim or in base64 (the configured token). Values under 8 characters are ignored. */
  secrets?: readonly (string | undefined)[];
  /** Characters kept; default SAFE_MESSAGE_MAX. */
  maxChars?: number;
}

// Each pattern is linear on any input: no nested or adjacent overlapping quantifiers.
const AUTH_HEADER = /(\bauthorization["']?\s*[:=]\s*)(?:"[^"]*"|'[^']*'|(?:[A-Za-z]+\s+)?[^\s,;&"'}]+)/giu;
const SCHEME_CREDENTIAL = /\b(bearer|basic)(\s+)[A-Za-z0-9\-._~+/]+=*/giu;
const SECRET_PAIR = /(\b(?:access[_-]?token|refresh[_-]?token|id[_-]?token|token|passwd|password|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)["']?\s*[:=]\s*)(?:"[^"]*"|'[^']*'|[^\s,;&"'}]+)/giu;
const JWT = /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/gu;
// Invisible: format characters (zero-width, bidi controls, BOM, soft hyphen, tags) and the other default-ignorables.
const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
// Controls (C0, DEL, C1), separators and spaces of every kind (\p{Z}), and the rest of \s.
const SPACING = /[\p{Cc}\p{Z}\s]/gu;

/** Text with nothing invisible, in NFKC form, every control, separator and space one U+0020 (step 1 above). */
export function plainText(text: string): string {
  return text.toWellFormed().replace(INVISIBLE, '').normalize('NFKC').replace(INVISIBLE, '').replace(SPACING, ' ');
}

/** The message made plain, its credentials redacted, at most `maxChars` characters long (in that order). */
export function safeMessage(text: string, o: SafeMessageOptions = {}): string {
  const max = o.maxChars ?? SAFE_MESSAGE_MAX;
  let short = text.length > RAW_MAX;
  let s = plainText(short ? text.slice(0, RAW_MAX) : text);
  if (s.length > INPUT_MAX) {
    s = s.slice(0, INPUT_MAX);
    short = true;
  }
  const forms = secretForms(o.secrets ?? []);
  if (short) s = withoutCutEnd(s, forms);
  s = withoutSecrets(s, forms)
    .replace(AUTH_HEADER, (_m, head: string) => `${head}${REDACTED}`)
    .replace(SCHEME_CREDENTIAL, (_m, scheme: string, space: string) => `${scheme}${space}${REDACTED}`)
    .replace(SECRET_PAIR, (_m, head: string) => `${head}${REDACTED}`)
    .replace(JWT, REDACTED)
    .replace(/ {2,}/gu, ' ');
  if (s.length <= max && !short) return s;
  let cut = Math.min(s.length, Math.max(0, max - 1));
  // Never split a surrogate pair.
  const last = s.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--;
  return `${s.slice(0, cut)}…`;
}

/** The named secrets as they appear in plain text (verbatim, base64, URL-encoded), without spaces; each 8+ characters. */
function secretForms(secrets: readonly (string | undefined)[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret === undefined || secret.length < 8) continue;
    for (const form of [secret, base64(secret), encodeURIComponent(secret)]) {
      const bare = form === undefined ? '' : plainText(form).replaceAll(' ', '');
      if (bare.length >= 8) forms.add(bare);
    }
  }
  return [...forms];
}

/** Plain text without its spaces, and where each of its characters is in the text. */
function withoutSpaces(s: string): { bare: string; at: Int32Array } {
  const at = new Int32Array(s.length);
  let n = 0;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) !== 0x20) at[n++] = i;
  return { bare: s.replaceAll(' ', ''), at };
}

/** Each occurrence of a form replaced by REDACTED, spaces between its characters included. Plain text in. */
function withoutSecrets(s: string, forms: readonly string[]): string {
  if (forms.length === 0) return s;
  const { bare, at } = withoutSpaces(s);
  const spans: [number, number][] = [];
  for (const f of forms) {
    for (let i = bare.indexOf(f); i !== -1; i = bare.indexOf(f, i + f.length)) spans.push([at[i]!, at[i + f.length - 1]! + 1]);
  }
  if (spans.length === 0) return s;
  spans.sort((a, b) => a[0] - b[0]);
  let out = '';
  let from = 0;
  for (const [a, b] of spans) {
    if (b <= from) continue;
    if (a >= from) out += `${s.slice(from, a)}${REDACTED}`;
    from = b;
  }
  return out + s.slice(from);
}

/**
 * Plain text that was cut short, without what may be the first part of a credential at its end: the last word, then
 * any end (spaces aside) that begins one of the secrets.
 */
function withoutCutEnd(s: string, forms: readonly string[]): string {
  let t = s.slice(0, s.lastIndexOf(' ') + 1);
  for (const f of forms) {
    const { bare, at } = withoutSpaces(t);
    for (let k = Math.min(f.length - 1, bare.length); k >= 1; k--) {
      if (bare.endsWith(f.slice(0, k))) {
        t = t.slice(0, at[bare.length - k]!);
        break;
      }
    }
  }
  return t;
}

/** Base64 of a Latin-1 string (a token is ASCII); undefined for anything btoa cannot encode. */
function base64(text: string): string | undefined {
  try {
    return btoa(text);
  } catch {
    return undefined;
  }
}

/**
 * Text a driver, a hook or a server supplied, made fit to be written anywhere (status.driverCalls[].message, the
 * pause message, Events, logs): everything that looks like a credential redacted, then reduced to printable
 * text, then capped. Status is readable by every holder of the cluster-wide `view` role, and a hook that echoes
 * its request headers would otherwise put the operator's bearer token there.
 *
 * Redacted: the secrets the caller names (the configured token; also in base64), `Authorization:` header
 * values, `Bearer`/`Basic` credentials, `token=`/`password=`/`secret=`/`api_key=` pairs (also as JSON members
 * `"token": "..."`), and JWT-shaped strings (three base64url segments, the first `eyJ`). Then control characters
 * (C0, DEL, C1), line and paragraph separators, bidirectional overrides and zero-width characters become one
 * space each and runs of spaces one space, so a message can neither forge a log line nor hide text. Then at most
 * `maxChars` characters remain (a cut string ends with `…`); redaction happens before the cut, so a cut can
 * never leave the first half of a credential behind.
 */

export const REDACTED = '[redacted]';

/** Default cap of a message written to status or an Event. */
export const SAFE_MESSAGE_MAX = 512;

/** Input beyond this is dropped before anything else: the patterns below are linear, and the caps are far below it. */
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
// C0 controls, DEL, C1 controls, line/paragraph separators, bidi embeddings/overrides/isolates, zero-width
// characters and the BOM.
// eslint-disable-next-line no-control-regex -- matching control characters is this pattern's job
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\u061c\ufeff]/gu;

/** The message with credentials redacted, reduced to printable text, at most `maxChars` characters long. */
export function safeMessage(text: string, o: SafeMessageOptions = {}): string {
  const max = o.maxChars ?? SAFE_MESSAGE_MAX;
  let s = text.length > INPUT_MAX ? text.slice(0, INPUT_MAX) : text;
  for (const secret of o.secrets ?? []) {
    if (secret === undefined || secret.length < 8) continue;
    for (const form of [secret, base64(secret), encodeURIComponent(secret)]) if (form !== undefined) s = s.split(form).join(REDACTED);
  }
  s = s
    .replace(AUTH_HEADER, (_m, head: string) => `${head}${REDACTED}`)
    .replace(SCHEME_CREDENTIAL, (_m, scheme: string, space: string) => `${scheme}${space}${REDACTED}`)
    .replace(SECRET_PAIR, (_m, head: string) => `${head}${REDACTED}`)
    .replace(JWT, REDACTED)
    .replace(UNPRINTABLE, ' ')
    .replace(/ {2,}/gu, ' ');
  // Lone surrogates are not printable text either.
  s = s.toWellFormed();
  if (s.length <= max) return s;
  let cut = Math.max(0, max - 1);
  // Never split a surrogate pair.
  const last = s.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--;
  return `${s.slice(0, cut)}…`;
}

/** Base64 of a Latin-1 string (a token is ASCII); undefined for anything btoa cannot encode. */
function base64(text: string): string | undefined {
  try {
    return btoa(text);
  } catch {
    return undefined;
  }
}

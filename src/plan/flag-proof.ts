/**
 * The flag proof, pure: whether the target kube-apiserver accepts the command line a node's edited manifest would
 * give it, read from what the target binary itself printed, and the preflight findings that follow.
 *
 * How the binary is asked (measured on v1.35.4, v1.36.3 and v1.37.2: docs/flag-proof.md): the command line is run
 * with one more option appended last, PROOF_SENTINEL, which kube-apiserver's options validation refuses. The binary
 * then parses every flag (cobra/pflag: a parse error or an unknown flag ends it with `Error: ...`), sets the feature
 * gates (an unrecognized gate ends it), completes the options and validates all of them at once, and exits 1 with
 * every validation error in one aggregate — before it opens a port or dials etcd. So a command line the binary
 * accepts ends in exactly the sentinel's error, and anything else is the binary refusing it, in its own words.
 * pflag keeps the last value of a repeated flag, so the sentinel last overrides any --max-requests-inflight the
 * manifest has.
 *
 * Fail closed: a binary that exits 0 (a --version or --help in the command line), is killed or times out (it got
 * past validation: it may be serving), or prints nothing this module can read is Inconclusive, which blocks like a
 * refusal. Text the binary printed is only ever read here (sliced, compared, matched by fixed patterns), never
 * used to build a pattern or a command.
 */
import { safeMessage } from './redact.ts';

/** Appended last to the command line: an option every kube-apiserver's validation refuses. */
export const PROOF_SENTINEL = '--max-requests-inflight=-1';
/** kube-apiserver's own message for PROOF_SENTINEL (ServerRunOptions.Validate). */
export const PROOF_SENTINEL_ERROR = '--max-requests-inflight can not be negative value';

/** What running the target binary gave: its exit code (null when killed by a signal), whether it was stopped for time, what it printed (stdout and stderr). */
export interface ProofRun {
  exitCode: number | null;
  timedOut: boolean;
  output: string;
}

/** A flag the binary refused, as named in its message. */
export interface RefusedFlag {
  /** `--feature-gates`, `--enable-admission-plugins`, `--no-such-flag`; absent when the message names none. */
  flag?: string;
  /** The gate, plugin or argument inside the flag's value that was refused (`ServiceTrafficDistribution`). */
  item?: string;
}

export type ProofVerdict =
  /** The binary accepted every flag; `warnings` are its own lines about deprecated flags and GA or deprecated gates. */
  | { result: 'Accepted'; warnings: string[] }
  /** The binary refused the command line: `message` is its error (the sentinel's part left out). */
  | ({ result: 'Refused'; message: string } & RefusedFlag)
  /** The binary's answer cannot be read as either. */
  | { result: 'Inconclusive'; message: string };

/** Output read per run: a binary that prints more is cut here (the verdict's lines come last, so the end is kept). */
export const PROOF_OUTPUT_MAX = 256 * 1024;

/** The string a Go `strconv.Quote` wrote, starting at the `"` at `at`, and where it ends; undefined when it does not end. */
export function goUnquote(s: string, at: number): { value: string; end: number } | undefined {
  if (s[at] !== '"') return undefined;
  let out = '';
  let i = at + 1;
  const simple: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', '"': '"', "'": "'" };
  while (i < s.length) {
    const c = s[i]!;
    if (c === '"') return { value: out, end: i + 1 };
    if (c !== '\\') {
      out += c;
      i++;
      continue;
    }
    const e = s[i + 1];
    if (e === undefined) return undefined;
    if (simple[e] !== undefined) {
      out += simple[e];
      i += 2;
      continue;
    }
    const hex = (n: number): number | undefined => {
      const h = s.slice(i + 2, i + 2 + n);
      return h.length === n && /^[0-9A-Fa-f]+$/.test(h) ? Number.parseInt(h, 16) : undefined;
    };
    if (e === 'x' || e === 'u' || e === 'U') {
      const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const code = hex(n);
      if (code === undefined || code > 0x10ffff) return undefined;
      // \x is a byte: shown as the character of that code (the message is for people; bytes over 0x7f are rare).
      out += String.fromCodePoint(code);
      i += 2 + n;
      continue;
    }
    if (e >= '0' && e <= '7') {
      const o = s.slice(i + 1, i + 4);
      if (!/^[0-7]{3}$/.test(o)) return undefined;
      out += String.fromCharCode(Number.parseInt(o, 8));
      i += 4;
      continue;
    }
    return undefined;
  }
  return undefined;
}

/** The message of klog's `"command failed" err=...` (text format, quoted or multi-line) or JSON format line; undefined when there is none. */
function commandFailed(lines: readonly string[]): string | undefined {
  for (let n = lines.length - 1; n >= 0; n--) {
    const line = lines[n]!;
    if (line.startsWith('{')) {
      try {
        const j = JSON.parse(line) as unknown;
        const o = typeof j === 'object' && j !== null ? (j as Record<string, unknown>) : {};
        if (o.msg === 'command failed' && typeof o.err === 'string') return o.err;
      } catch {
        // Not a JSON line.
      }
      continue;
    }
    const mark = '"command failed" err=';
    const at = line.indexOf(mark);
    if (at < 0) continue;
    const start = at + mark.length;
    if (line[start] === '"') return goUnquote(line, start)?.value;
    if (line.slice(start) === '<') {
      // klog's multi-line form: `err=<`, each line of the value indented by a tab, then ` >`.
      const body: string[] = [];
      for (let k = n + 1; k < lines.length && lines[k] !== ' >'; k++) body.push(lines[k]!.startsWith('\t') ? lines[k]!.slice(1) : lines[k]!);
      return body.join('\n');
    }
  }
  return undefined;
}

/** cobra's `Error: <message>` (a parse error, an unknown flag, an argument): the last one. */
function cobraError(lines: readonly string[]): string | undefined {
  for (let n = lines.length - 1; n >= 0; n--) if (lines[n]!.startsWith('Error: ')) return lines[n]!.slice('Error: '.length);
  return undefined;
}

/** The text of a klog line (text or JSON format) after its header; the line itself when it has none. */
function logText(line: string): string {
  if (line.startsWith('{')) {
    try {
      const j = JSON.parse(line) as unknown;
      const msg = typeof j === 'object' && j !== null ? (j as Record<string, unknown>).msg : undefined;
      if (typeof msg === 'string') return msg;
    } catch {
      return line;
    }
  }
  const m = /^[IWEF]\d{4} [0-9:.]+ +\d+ [^\]]*\] (.*)$/.exec(line);
  return m ? m[1]! : line;
}

/**
 * The binary's own warnings that matter for an upgrade: deprecated flags, GA and deprecated gates it was given. v1.35
 * writes `Setting GA feature gate X=true. It will be removed in a future release.`; v1.36 and later a structured line
 * `"Warning: setting GA feature gate. It will be removed in a future release." featureGate="X" value=true` (or its JSON
 * form), shown here in v1.35's words.
 */
function warningsOf(lines: readonly string[]): string[] {
  const out = new Set<string>();
  for (const line of lines) {
    const text = logText(line);
    if (/^Flag --[A-Za-z0-9-]+ has been deprecated/.test(text) || /^Setting (GA|deprecated) feature gate /.test(text)) {
      out.add(text);
      continue;
    }
    const structured = /^"?Warning: setting (GA|deprecated) feature gate\. ([^"]*)"? featureGate="([A-Za-z0-9_.:-]*)" value=([A-Za-z]*)/.exec(text);
    if (structured) {
      out.add(`Setting ${structured[1]!} feature gate ${structured[3]!}=${structured[4]!}. ${structured[2]!}`);
      continue;
    }
    const j = jsonLine(line);
    const warning = j === undefined || typeof j.msg !== 'string' ? undefined : /^Warning: setting (GA|deprecated) feature gate\. (.*)$/.exec(j.msg);
    if (warning && typeof j!.featureGate === 'string' && /^[A-Za-z0-9_.:-]*$/.test(j!.featureGate)) {
      out.add(`Setting ${warning[1]!} feature gate ${j!.featureGate}=${String(j!.value)}. ${warning[2]!}`);
    }
  }
  return [...out];
}

/** A JSON log line's object; undefined for any other line. */
function jsonLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const j = JSON.parse(line) as unknown;
    return typeof j === 'object' && j !== null && !Array.isArray(j) ? (j as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Splits kube-apiserver's aggregate `[a, b]` into its errors, the sentinel's left out; a single error stays one. */
function withoutSentinel(err: string): string | undefined {
  if (err === PROOF_SENTINEL_ERROR) return undefined;
  if (err.startsWith('[') && err.endsWith(']')) {
    const inner = err.slice(1, -1);
    if (inner === PROOF_SENTINEL_ERROR) return undefined;
    if (inner.startsWith(`${PROOF_SENTINEL_ERROR}, `)) return inner.slice(PROOF_SENTINEL_ERROR.length + 2);
    if (inner.endsWith(`, ${PROOF_SENTINEL_ERROR}`)) return inner.slice(0, -(PROOF_SENTINEL_ERROR.length + 2));
    const mid = inner.indexOf(`, ${PROOF_SENTINEL_ERROR}, `);
    if (mid >= 0) return `${inner.slice(0, mid)}, ${inner.slice(mid + PROOF_SENTINEL_ERROR.length + 4)}`;
    return inner;
  }
  return err;
}

/** The flag (and the gate, plugin or argument in it) a refusal names, by kube-apiserver's own wording. */
export function refusedFlag(message: string): RefusedFlag {
  const name = '(--?[A-Za-z0-9][A-Za-z0-9._-]*)';
  let m = new RegExp(`unknown (?:shorthand )?flag: (?:'.' in )?${name}`).exec(message);
  if (m) return { flag: m[1]! };
  m = new RegExp(`invalid argument "((?:[^"\\\\]|\\\\.)*)" for "(?:-[A-Za-z0-9], )?${name}" flag`).exec(message);
  if (m) return { flag: m[2]!, item: m[1]! };
  m = new RegExp(`flag needs an argument: (?:'.' in )?${name}`).exec(message);
  if (m) return { flag: m[1]! };
  m = /unrecognized feature gate: ([A-Za-z0-9_.:-]+)/.exec(message);
  if (m) return { flag: '--feature-gates', item: m[1]! };
  m = /(enable|disable)-admission-plugins plugin "([^"]*)" is unknown/.exec(message);
  if (m) return { flag: `--${m[1]!}-admission-plugins`, item: m[2]! };
  m = /does not take any arguments, got \["((?:[^"\\]|\\.)*)"/.exec(message);
  if (m) return { item: m[1]! };
  m = /(?:^|[\s[("'])(--[a-z0-9][a-z0-9-]*)/.exec(message);
  if (m) return { flag: m[1]! };
  return {};
}

/** The last lines of the output, for a message that has nothing better to say. */
function tail(lines: readonly string[], n = 3): string {
  const kept = lines.filter((l) => l.trim() !== '').slice(-n);
  return kept.length === 0 ? 'no output' : kept.join(' | ');
}

/** Reads one run of the target binary into a verdict. */
export function readProof(run: ProofRun, timeoutSeconds: number): ProofVerdict {
  const output = run.output.length > PROOF_OUTPUT_MAX ? run.output.slice(-PROOF_OUTPUT_MAX) : run.output;
  const lines = output.split(/\r?\n/);
  if (run.timedOut) {
    return { result: 'Inconclusive', message: `kube-apiserver did not exit within ${timeoutSeconds}s: it got past the options' validation (it may have started serving), so nothing was proven; last output: ${tail(lines)}` };
  }
  if (run.exitCode === 0) {
    return { result: 'Inconclusive', message: `kube-apiserver exited 0 without validating the flags (a --version or --help in the command line?); last output: ${tail(lines)}` };
  }
  const err = commandFailed(lines) ?? cobraError(lines);
  if (err === undefined) {
    const how = run.exitCode === null ? 'was stopped by a signal' : `exited ${run.exitCode}`;
    return { result: 'Inconclusive', message: `kube-apiserver ${how} without an error it states (is it a kube-apiserver binary for this node?); last output: ${tail(lines)}` };
  }
  const rest = withoutSentinel(err);
  if (rest === undefined) {
    if (run.exitCode !== 1) return { result: 'Inconclusive', message: `kube-apiserver refused only the probe's own option but exited ${run.exitCode ?? 'by a signal'} instead of 1` };
    return { result: 'Accepted', warnings: warningsOf(lines) };
  }
  return { result: 'Refused', message: rest, ...refusedFlag(rest) };
}

// ---------------------------------------------------------------------------------------------------------------
// The decision

/** One node's proof as preflight sees it. */
export type NodeProof =
  | { hostname: string; verdict: ProofVerdict }
  /** The proof could not be run on that node: no command line to prove, the image not pulled, the Job not admitted, … */
  | { hostname: string; notRun: string };

export const FLAG_PROOF_REASONS = {
  refused: 'FlagRefusedByTarget',
  inconclusive: 'FlagProofInconclusive',
  notRun: 'FlagProofNotRun',
  deprecated: 'FlagDeprecatedByTarget',
} as const;

export interface FlagProofFinding {
  check: 'FlagProof';
  severity: 'Block' | 'Warn';
  reason: (typeof FLAG_PROOF_REASONS)[keyof typeof FLAG_PROOF_REASONS];
  /** `node/<hostname>`. */
  object: string;
  message: string;
  /** The refused flag, and the gate, plugin or argument in it, when the binary named one. */
  flag?: string;
  item?: string;
}

/**
 * The findings of the flag proof: every node that was not proven blocks (refused, inconclusive, or not run), each
 * naming the node, the flag and the binary's message; a node proven with the binary's own warnings warns. A node of
 * the fleet without a proof blocks (fail closed): `hostnames` are the nodes to prove.
 */
export function flagProofFindings(hostnames: readonly string[], proofs: readonly NodeProof[], targetVersion: string): FlagProofFinding[] {
  const out: FlagProofFinding[] = [];
  const byHost = new Map<string, NodeProof>();
  for (const p of proofs) if (!byHost.has(p.hostname)) byHost.set(p.hostname, p);
  for (const hostname of hostnames) {
    const object = `node/${hostname}`;
    const p = byHost.get(hostname);
    const said = (text: string): string => safeMessage(text);
    if (p === undefined) {
      out.push({ check: 'FlagProof', severity: 'Block', reason: FLAG_PROOF_REASONS.notRun, object, message: `the command line of ${hostname}'s kube-apiserver was not proven against ${targetVersion}` });
      continue;
    }
    if ('notRun' in p) {
      out.push({ check: 'FlagProof', severity: 'Block', reason: FLAG_PROOF_REASONS.notRun, object, message: said(`${hostname}: the flag proof against ${targetVersion} did not run: ${p.notRun}`) });
      continue;
    }
    const v = p.verdict;
    if (v.result === 'Refused') {
      const what = v.flag === undefined ? 'its command line' : v.item === undefined ? v.flag : `${v.flag} (${v.item})`;
      out.push({
        check: 'FlagProof', severity: 'Block', reason: FLAG_PROOF_REASONS.refused, object,
        message: said(`${hostname}: kube-apiserver ${targetVersion} refuses ${what}: ${v.message}`),
        ...(v.flag === undefined ? {} : { flag: v.flag }), ...(v.item === undefined ? {} : { item: v.item }),
      });
    } else if (v.result === 'Inconclusive') {
      out.push({ check: 'FlagProof', severity: 'Block', reason: FLAG_PROOF_REASONS.inconclusive, object, message: said(`${hostname}: ${v.message}`) });
    } else {
      for (const w of v.warnings) {
        out.push({ check: 'FlagProof', severity: 'Warn', reason: FLAG_PROOF_REASONS.deprecated, object, message: said(`${hostname}: kube-apiserver ${targetVersion} accepts the command line and warns: ${w}`) });
      }
    }
  }
  return out;
}

/**
 * Whether a node's call needs its command line proven again: the command line its manifest gives now differs from
 * the one proven (or none was). Compared entry by entry, exactly.
 */
export function needsProofAgain(proven: readonly string[] | undefined, now: readonly string[]): boolean {
  return proven === undefined || proven.length !== now.length || proven.some((e, i) => e !== now[i]);
}

// The plugin's command line: `kubectl apiserver-upgrade COMMAND [NAME] [flags]`. Pure.
import { parseArgs } from 'node:util';
import { ACTION_COMMANDS, type ActionCommand } from './actions.ts';
import type { OutputFormat } from './format.ts';
import { JsonPathError, parseJsonPath } from './jsonpath.ts';
import { formatDuration, tryParseDuration } from '../api/duration.ts';

export const COMMANDS = ['get', 'list', 'plan', ...ACTION_COMMANDS, 'completion', 'version'] as const;
export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];
export type Command = (typeof COMMANDS)[number];

export interface Options {
  command: Command;
  name: string | undefined;
  output: OutputFormat;
  /** The template of -o jsonpath=TEMPLATE. */
  jsonpath?: string | undefined;
  /** completion's shell. */
  shell?: Shell | undefined;
  watch: boolean;
  filename: string | undefined;
  kubeconfig: string | undefined;
  context: string | undefined;
  /** How many Events `get` shows. */
  events: number;
  /** list over several kubeconfig contexts (--all-contexts, --contexts a,b), each cluster within timeoutMs (--cluster-timeout). */
  fleet?: { select: FleetSelection; timeoutMs: number } | undefined;
}

/** Every context of the kubeconfig, or the named ones in that order. */
export type FleetSelection = { all: true } | { all: false; names: string[] };

/** --cluster-timeout's default. */
export const CLUSTER_TIMEOUT_MS = 10_000;

export type Parsed = { help: true; command: Command | undefined } | { help: false; options: Options };

/** A command line that cannot be run: printed with a pointer to --help, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const ALIASES: Record<string, Command> = { ls: 'list' };

export function isActionCommand(c: Command): c is ActionCommand {
  return (ACTION_COMMANDS as readonly string[]).includes(c);
}

function commandOf(word: string | undefined): Command | undefined {
  if (word === undefined) return undefined;
  return ALIASES[word] ?? ((COMMANDS as readonly string[]).includes(word) ? (word as Command) : undefined);
}

export function parseCommandLine(argv: readonly string[]): Parsed {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        output: { type: 'string', short: 'o' },
        watch: { type: 'boolean', short: 'w' },
        filename: { type: 'string', short: 'f' },
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        events: { type: 'string' },
        'all-contexts': { type: 'boolean' },
        contexts: { type: 'string' },
        'cluster-timeout': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  const { values: v, positionals } = parsed;
  const [first, ...rest] = positionals;
  const command = commandOf(first);
  if (first !== undefined && command === undefined && first !== 'help') throw new UsageError(`unknown command "${first}"; commands: ${COMMANDS.join(', ')}`);
  if (v.help || first === undefined || first === 'help') return { help: true, command: first === 'help' ? commandOf(rest[0]) : command };
  const cmd = command!;
  if (rest.length > 1) throw new UsageError(`${cmd} takes at most one NAME, got ${rest.join(' ')}`);
  const name = rest[0];

  let output: OutputFormat = 'human';
  let jsonpath: string | undefined;
  if (v.output !== undefined) {
    if (cmd !== 'get' && cmd !== 'list' && cmd !== 'plan') throw new UsageError(`-o/--output is for get, list and plan, not ${cmd}`);
    const o = v.output;
    if (o === 'json' || o === 'yaml' || o === 'wide' || o === 'name') output = o;
    else if (o === 'yml') output = 'yaml';
    else if (o.startsWith('jsonpath=')) {
      output = 'jsonpath';
      jsonpath = o.slice('jsonpath='.length);
      try {
        parseJsonPath(jsonpath);
      } catch (err) {
        if (err instanceof JsonPathError) throw new UsageError(`-o jsonpath: ${err.message}`);
        throw err;
      }
    } else throw new UsageError(`-o/--output must be one of json, yaml, wide, name, jsonpath=TEMPLATE, not "${o}"`);
    if ((output === 'wide' || output === 'name') && cmd === 'plan') throw new UsageError(`-o ${output} is for get and list, not plan`);
  }
  if (v.watch && cmd !== 'get') throw new UsageError(`-w/--watch is for get, not ${cmd}`);
  if (v.filename !== undefined && cmd !== 'plan') throw new UsageError(`-f/--filename is for plan, not ${cmd}`);
  if (v.events !== undefined && cmd !== 'get') throw new UsageError(`--events is for get, not ${cmd}`);
  let events = 10;
  if (v.events !== undefined) {
    events = Number(v.events);
    if (!Number.isInteger(events) || events < 0) throw new UsageError(`--events must be a whole number, not "${v.events}"`);
  }

  let shell: Shell | undefined;
  if (cmd === 'list' || cmd === 'version') {
    if (name !== undefined) throw new UsageError(cmd === 'list' ? `list takes no NAME (use get ${name})` : 'version takes no argument');
  } else if (cmd === 'completion') {
    if (!(SHELLS as readonly string[]).includes(name ?? '')) throw new UsageError(`completion needs the shell: ${SHELLS.join(', ')}`);
    shell = name as Shell;
  } else if (cmd === 'get') {
    // Without a NAME, get lists every upgrade (as kubectl get does); with -w it watches them all.
  } else if (cmd === 'plan') {
    if ((name === undefined) === (v.filename === undefined)) throw new UsageError('plan takes either -f FILE (a manifest, - for stdin) or the NAME of an ApiServerUpgrade in the cluster');
  } else if (name === undefined) {
    throw new UsageError(`${cmd} needs the NAME of an ApiServerUpgrade`);
  }
  if (v.kubeconfig === '') throw new UsageError('--kubeconfig needs a path');
  if (v.context === '') throw new UsageError('--context needs a name');
  const fleet = fleetSelection(cmd, v['all-contexts'] === true, v.contexts, v.context);
  let clusterTimeoutMs = CLUSTER_TIMEOUT_MS;
  if (v['cluster-timeout'] !== undefined) {
    if (fleet === undefined) throw new UsageError('--cluster-timeout is for list with --all-contexts or --contexts');
    const ms = tryParseDuration(v['cluster-timeout']);
    if (ms === undefined || ms < 1) throw new UsageError(`--cluster-timeout must be a duration such as 10s or 1m, not "${v['cluster-timeout']}"`);
    clusterTimeoutMs = ms;
  }
  if (fleet !== undefined && output === 'name') throw new UsageError('-o name names the objects of one cluster; with --all-contexts or --contexts use -o json, yaml or jsonpath');

  return {
    help: false,
    options: { command: cmd, name: cmd === 'completion' ? undefined : name, output, ...(jsonpath === undefined ? {} : { jsonpath }), ...(shell === undefined ? {} : { shell }), watch: v.watch === true, filename: v.filename, kubeconfig: v.kubeconfig, context: v.context, events, ...(fleet === undefined ? {} : { fleet: { select: fleet, timeoutMs: clusterTimeoutMs } }) },
  };
}

/** --all-contexts or --contexts a,b,c: for list only, one of them, and not with --context. */
function fleetSelection(cmd: Command, all: boolean, contexts: string | undefined, context: string | undefined): FleetSelection | undefined {
  if (!all && contexts === undefined) return undefined;
  const flag = all ? '--all-contexts' : '--contexts';
  if (cmd !== 'list') throw new UsageError(`${flag} is for list, not ${cmd}`);
  if (all && contexts !== undefined) throw new UsageError('--all-contexts and --contexts cannot both be given');
  if (context !== undefined) throw new UsageError(`--context and ${flag} cannot both be given`);
  if (all) return { all: true };
  const names = parseContextList(contexts!);
  if (names.length === 0) throw new UsageError('--contexts needs at least one context name (a,b,c)');
  return { all: false, names };
}

/** `a, b,,a` -> [a, b]: comma-separated, blanks around a name ignored, each name once, in the order given. */
export function parseContextList(s: string): string[] {
  return [...new Set(s.split(',').map((n) => n.trim()).filter((n) => n !== ''))];
}

const COMMAND_LINES: Record<Command, string> = {
  get: `  get [NAME] [-w]       phase, batch progress, servers, last analysis against its thresholds, pause, driver calls, Events;
                        without NAME, every upgrade (as list); -w redraws on every change (of all of them without NAME)`,
  list: `  list                  every ApiServerUpgrade: phase, versions, progress, age; with --all-contexts or
                        --contexts, of several clusters at once (a CLUSTER column; one row per cluster that cannot be read)`,
  pause: '  pause NAME            set spec.paused to true (a spec edit: Git tools will see it)',
  resume: `  resume NAME           set spec.paused to false if it is true; otherwise resume an automatic pause
                        (annotation upgrade.apiserver.dev/resume, no spec edit)`,
  abort: `  abort NAME            roll back now, through the same safety checks as onBreach Rollback
                        (annotation upgrade.apiserver.dev/abort); RolledBack at once if nothing was touched`,
  retry: `  retry NAME            re-run a Failed upgrade from preflight, or resume a paused one
                        (annotation upgrade.apiserver.dev/retry)`,
  approve: `  approve NAME          start phase two of a TwoPhase upgrade held for an approval (spec.strategy.phaseTwo)
                        (annotation upgrade.apiserver.dev/approve); only while the hold is on`,
  plan: `  plan -f FILE | NAME   dry run: observe the fleet as the operator does and run its planner; prints the
                        inventory, the preflight verdict, the batches and every driver call it would make.
                        Writes nothing and calls no driver.`,
  completion: '  completion SHELL      a completion script for bash, zsh or fish (e.g. source <(kubectl apiserver-upgrade completion bash))',
  version: '  version               the plugin\'s version and the API version it speaks',
};

/** The flags each command takes, by their help line. */
const FLAG_LINES = {
  output: '  -o, --output FORMAT      json, yaml, wide, name or jsonpath=TEMPLATE (get, list; plan: json, yaml, jsonpath)',
  watch: '  -w, --watch              get: redraw on every change',
  filename: '  -f, --filename FILE      plan: the manifest to plan (- reads stdin)',
  events: '      --events N           get: how many Events to show (default 10)',
  connection: `      --kubeconfig PATH    kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
      --context NAME       kubeconfig context (default: the current context)`,
  fleet: `      --all-contexts       list: every context of the kubeconfig, queried in parallel
      --contexts A,B       list: these contexts (each must exist in the kubeconfig)
      --cluster-timeout D  list with the two above: each cluster's deadline (default ${formatDuration(CLUSTER_TIMEOUT_MS)})`,
  help: '  -h, --help               this help',
};

const FLAGS_OF: Record<Command, (keyof typeof FLAG_LINES)[]> = {
  get: ['output', 'watch', 'events', 'connection', 'help'],
  list: ['output', 'connection', 'fleet', 'help'],
  plan: ['output', 'filename', 'connection', 'help'],
  pause: ['connection', 'help'],
  resume: ['connection', 'help'],
  abort: ['connection', 'help'],
  retry: ['connection', 'help'],
  approve: ['connection', 'help'],
  completion: ['help'],
  version: ['help'],
};

const EXIT = `Exit status: 0 done; 1 an error, or a command that makes no sense in the upgrade's phase (one line says why),
or a list over several contexts where a cluster could not be read (its row says why); 2 a command line that cannot be run.
`;

export const USAGE = `kubectl apiserver-upgrade: inspect and steer ApiServerUpgrades (upgrade.apiserver.dev/v1alpha1, short name asu).

Usage:
  kubectl apiserver-upgrade COMMAND [NAME] [flags]

Commands:
${COMMANDS.map((c) => COMMAND_LINES[c]).join('\n')}

Flags:
${Object.values(FLAG_LINES).join('\n')}

'kubectl apiserver-upgrade COMMAND --help' shows one command's help.

${EXIT}`;

/** The help of one command (`kubectl apiserver-upgrade get --help`), or the global help. */
export function usage(command: Command | undefined): string {
  if (command === undefined) return USAGE;
  const name = command === 'completion' ? 'completion SHELL' : command === 'version' || command === 'list' ? command : command === 'plan' ? 'plan (-f FILE | NAME)' : command === 'get' ? 'get [NAME]' : `${command} NAME`;
  return `kubectl apiserver-upgrade ${command}: ${COMMAND_LINES[command].trim().replace(/^\S+(\s+\S+)*?\s{2,}/, '').replace(/\s*\n\s+/g, ' ')}

Usage:
  kubectl apiserver-upgrade ${name} [flags]

Flags:
${FLAGS_OF[command].map((f) => FLAG_LINES[f]).join('\n')}

${EXIT}`;
}

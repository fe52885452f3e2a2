// The plugin's command line: `kubectl apiserver-upgrade COMMAND [NAME] [flags]`. Pure.
import { parseArgs } from 'node:util';
import { ACTION_COMMANDS, type ActionCommand } from './actions.ts';
import type { OutputFormat } from './format.ts';

export const COMMANDS = ['get', 'list', 'plan', ...ACTION_COMMANDS] as const;
export type Command = (typeof COMMANDS)[number];

export interface Options {
  command: Command;
  name: string | undefined;
  output: OutputFormat;
  watch: boolean;
  filename: string | undefined;
  kubeconfig: string | undefined;
  context: string | undefined;
  /** How many Events `get` shows. */
  events: number;
}

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
  if (v.output !== undefined) {
    if (cmd !== 'get' && cmd !== 'list' && cmd !== 'plan') throw new UsageError(`-o/--output is for get, list and plan, not ${cmd}`);
    if (v.output === 'json' || v.output === 'yaml') output = v.output;
    else if (v.output === 'yml') output = 'yaml';
    else throw new UsageError(`-o/--output must be json or yaml, not "${v.output}"`);
  }
  if (v.watch && cmd !== 'get') throw new UsageError(`-w/--watch is for get, not ${cmd}`);
  if (v.filename !== undefined && cmd !== 'plan') throw new UsageError(`-f/--filename is for plan, not ${cmd}`);
  if (v.events !== undefined && cmd !== 'get') throw new UsageError(`--events is for get, not ${cmd}`);
  let events = 10;
  if (v.events !== undefined) {
    events = Number(v.events);
    if (!Number.isInteger(events) || events < 0) throw new UsageError(`--events must be a whole number, not "${v.events}"`);
  }

  if (cmd === 'list') {
    if (name !== undefined) throw new UsageError(`list takes no NAME (use get ${name})`);
  } else if (cmd === 'plan') {
    if ((name === undefined) === (v.filename === undefined)) throw new UsageError('plan takes either -f FILE (a manifest, - for stdin) or the NAME of an ApiServerUpgrade in the cluster');
  } else if (name === undefined) {
    throw new UsageError(`${cmd} needs the NAME of an ApiServerUpgrade`);
  }
  if (v.kubeconfig === '') throw new UsageError('--kubeconfig needs a path');
  if (v.context === '') throw new UsageError('--context needs a name');

  return {
    help: false,
    options: { command: cmd, name, output, watch: v.watch === true, filename: v.filename, kubeconfig: v.kubeconfig, context: v.context, events },
  };
}

export const USAGE = `kubectl apiserver-upgrade: inspect and steer ApiServerUpgrades (upgrade.apiserver.dev/v1alpha1, short name asu).

Usage:
  kubectl apiserver-upgrade COMMAND [NAME] [flags]

Commands:
  get NAME [-w]         phase, batch progress, servers, last analysis against its thresholds, pause, driver calls, Events;
                        -w redraws on every change of the object
  list                  every ApiServerUpgrade: phase, versions, progress, age
  pause NAME            set spec.paused to true (a spec edit: Git tools will see it)
  resume NAME           set spec.paused to false if it is true; otherwise resume an automatic pause
                        (annotation upgrade.apiserver.dev/resume, no spec edit)
  abort NAME            roll back now, through the same safety checks as onBreach Rollback
                        (annotation upgrade.apiserver.dev/abort); RolledBack at once if nothing was touched
  retry NAME            re-run a Failed upgrade from preflight, or resume a paused one
                        (annotation upgrade.apiserver.dev/retry)
  plan -f FILE | NAME   dry run: observe the fleet as the operator does and run its planner; prints the
                        inventory, the preflight verdict, the batches and every driver call it would make.
                        Writes nothing and calls no driver.

Flags:
  -o, --output json|yaml   machine output (get, list, plan)
  -w, --watch              get: redraw on every change
  -f, --filename FILE      plan: the manifest to plan (- reads stdin)
      --events N           get: how many Events to show (default 10)
      --kubeconfig PATH    kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
      --context NAME       kubeconfig context (default: the current context)
  -h, --help               this help

Exit status: 0 done; 1 an error, or a command that makes no sense in the upgrade's phase (one line says why);
2 a command line that cannot be run.
`;

// The plugin's commands, over an UpgradeApi (the cluster, or a fake in tests). run() returns the exit status.
import { parseAllDocuments } from 'yaml';
import type { ApiServerUpgrade, ApiServerUpgradeSpec } from '../api/types.generated.ts';
import { API_VERSION, KIND } from '../api/constants.ts';
import { resolveSpec, SpecError } from '../api/defaults.ts';
import { ABORT_ANNOTATION, APPROVE_ANNOTATION, RESUME_ANNOTATION, RETRY_ANNOTATION } from '../api/vocabulary.ts';
import { blockingUpgrade } from '../plan/admission.ts';
import { KubeApiError } from '../runtime/kube.ts';
import { decide, type ActionCommand } from './actions.ts';
import { isActionCommand, parseCommandLine, usage, UsageError, type FleetSelection, type Options } from './args.ts';
import { completionScript } from './completion.ts';
import { jsonPath } from './jsonpath.ts';
import { pluginVersion } from './version.ts';
import { CliError, type Connection, type UpgradeApi } from './client.ts';
import { dryRun } from './dry-run.ts';
import type { KubeEvent } from './events.ts';
import { machine, printable, terminalText } from './format.ts';
import { buildGetView, renderGet } from './get-view.ts';
import { listRows, renderList } from './list-view.ts';
import { queryFleet } from './fleet.ts';
import { fleetExitCode, fleetFailureLine, fleetView, renderFleet, selectContexts } from './fleet-view.ts';
import { buildPlanView, renderPlan } from './plan-view.ts';

export interface CliDeps {
  out(text: string): void;
  err(text: string): void;
  connect(c: Connection): UpgradeApi;
  /** The context names of the kubeconfig (`--kubeconfig`, else the default one kubectl reads). */
  contexts(kubeconfig: string | undefined): string[];
  now(): Date;
  /** The text of a manifest file; `-` is stdin. */
  readFile(path: string): Promise<string>;
  /** Whether stdout is a terminal (`get -w` then redraws in place). */
  isTTY: boolean;
  /** Resolves when the user interrupts (Ctrl-C): `get -w` runs until then. */
  interrupted(): Promise<void>;
}

const PLACEHOLDER_UID = '00000000-0000-0000-0000-000000000000';
const CLEAR = '\x1b[H\x1b[2J';

export async function run(argv: readonly string[], deps: CliDeps): Promise<number> {
  let api: UpgradeApi | undefined;
  try {
    const parsed = parseCommandLine(argv);
    if (parsed.help) {
      deps.out(usage(parsed.command));
      return 0;
    }
    const o = parsed.options;
    // Neither needs the cluster.
    if (o.command === 'completion') {
      deps.out(completionScript(o.shell!));
      return 0;
    }
    if (o.command === 'version') {
      deps.out(`kubectl-apiserver_upgrade ${pluginVersion()} (API ${API_VERSION})\n`);
      return 0;
    }
    if (o.command === 'list' && o.fleet !== undefined) return await fleetList(o, o.fleet.select, o.fleet.timeoutMs, deps);
    api = deps.connect({ kubeconfig: o.kubeconfig, context: o.context });
    if (o.command === 'list') return await list(api, o, deps);
    if (o.command === 'get') return o.name === undefined ? await (o.watch ? watchAll(api, o, deps) : list(api, o, deps)) : await get(api, o, deps);
    if (o.command === 'plan') return await planCommand(api, o, deps);
    if (isActionCommand(o.command)) return await act(api, o.command, o.name!, deps);
    return 2;
  } catch (err) {
    if (err instanceof UsageError) {
      deps.err(`error: ${err.message}\nSee 'kubectl apiserver-upgrade --help'.\n`);
      return 2;
    }
    deps.err(`error: ${oneLine(err)}\n`);
    return 1;
  } finally {
    api?.close();
  }
}

/** An error as one printable line: its message may quote the cluster (a name, an API server's answer). */
function oneLine(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return terminalText(m.replace(/\s*\n\s*/g, ' '));
}

async function mustGet(api: UpgradeApi, name: string): Promise<ApiServerUpgrade> {
  const u = await api.get(name);
  if (!u) throw new CliError(`apiserverupgrade "${name}" not found`);
  return u;
}

/** A view in the requested non-human format: json, yaml, the jsonpath template applied to it, or resource names. */
function formatted(value: unknown, names: readonly string[], o: Options): string {
  if (o.output === 'name') return names.map((n) => `${RESOURCE}/${n}\n`).join('');
  // A template picks raw strings out of the view: they are printed as the human views print them.
  if (o.output === 'jsonpath') return jsonPath(o.jsonpath ?? '', printable(value));
  return machine(value, o.output === 'yaml' ? 'yaml' : 'json');
}

const RESOURCE = 'apiserverupgrade.upgrade.apiserver.dev';

async function listText(api: UpgradeApi, o: Options, deps: CliDeps): Promise<string> {
  const rows = listRows(await api.list());
  if (o.output === 'human' || o.output === 'wide') return renderList(rows, deps.now(), o.output === 'wide');
  return formatted(rows, rows.map((r) => r.name), o);
}

async function list(api: UpgradeApi, o: Options, deps: CliDeps): Promise<number> {
  deps.out(await listText(api, o, deps));
  return 0;
}

/**
 * `list --all-contexts | --contexts a,b`: every cluster's upgrades, each cluster within its deadline; a cluster that
 * could not be read is a row (and an entry of the machine view) saying why, and makes the exit status 1.
 */
async function fleetList(o: Options, selection: FleetSelection, timeoutMs: number, deps: CliDeps): Promise<number> {
  const contexts = selectContexts(deps.contexts(o.kubeconfig), selection);
  const results = await queryFleet({ kubeconfig: o.kubeconfig, contexts, timeoutMs, connect: (c) => deps.connect(c) });
  const view = fleetView(results);
  deps.out(o.output === 'human' || o.output === 'wide' ? renderFleet(view, deps.now(), o.output === 'wide') : formatted(view, [], o));
  const failed = fleetFailureLine(results);
  if (failed !== undefined) deps.err(`error: ${terminalText(failed)}\n`);
  return fleetExitCode(results);
}

/** `get -w` without a NAME: the list, redrawn on every change of any upgrade. */
async function watchAll(api: UpgradeApi, o: Options, deps: CliDeps): Promise<number> {
  let last = '';
  let chain: Promise<void> = Promise.resolve();
  const draw = (): void => {
    chain = chain.then(async () => {
      const text = await listText(api, o, deps);
      if (text === last) return;
      last = text;
      deps.out(deps.isTTY && (o.output === 'human' || o.output === 'wide') ? CLEAR + text : text);
    }).catch((err: unknown) => deps.err(`error: ${oneLine(err)}\n`));
  };
  draw();
  const w = api.watch(undefined, draw);
  await deps.interrupted();
  await w.stop();
  await chain;
  return 0;
}

async function getOnce(api: UpgradeApi, u: ApiServerUpgrade, o: Options, deps: CliDeps): Promise<string> {
  let events: KubeEvent[] = [];
  let eventsError: string | undefined;
  try {
    events = await api.events(u.metadata?.name ?? '');
  } catch (err) {
    eventsError = oneLine(err);
  }
  const view = buildGetView(u, events, o.events, eventsError);
  return o.output === 'human' || o.output === 'wide' ? renderGet(view, deps.now()) : formatted(view, [u.metadata?.name ?? ''], o);
}

async function get(api: UpgradeApi, o: Options, deps: CliDeps): Promise<number> {
  const name = o.name!;
  const first = await mustGet(api, name);
  if (!o.watch) {
    deps.out(await getOnce(api, first, o, deps));
    return 0;
  }
  // Redraw on every change of the object, one redraw at a time; an unchanged view is not printed again.
  let last = '';
  let chain: Promise<void> = Promise.resolve();
  const draw = (u: ApiServerUpgrade | undefined): void => {
    chain = chain.then(async () => {
      const text = u ? await getOnce(api, u, o, deps) : `apiserverupgrade "${name}" was deleted\n`;
      if (text === last) return;
      last = text;
      if (deps.isTTY && o.output === 'human') deps.out(CLEAR + text);
      else deps.out(o.output === 'yaml' ? `---\n${text}` : o.output === 'human' || o.output === 'wide' ? `${text}\n` : text);
    }).catch((err: unknown) => deps.err(`error: ${oneLine(err)}\n`));
  };
  draw(first);
  const w = api.watch(name, draw);
  await deps.interrupted();
  await w.stop();
  await chain;
  return 0;
}

async function act(api: UpgradeApi, cmd: ActionCommand, name: string, deps: CliDeps): Promise<number> {
  // The decision is made on what was read; the patch carries its resourceVersion, so a change in between
  // (409) makes the command read and decide again.
  for (let attempt = 1; attempt <= 3; attempt++) {
    const u = await mustGet(api, name);
    const d = decide(cmd, u, deps.now());
    if (!d.ok) {
      deps.err(`error: ${terminalText(d.why)}\n`);
      return 1;
    }
    try {
      await api.patch(name, d.patch);
    } catch (err) {
      if (err instanceof KubeApiError && err.statusCode === 409) continue;
      throw err;
    }
    deps.out(`${terminalText(d.message)}\n`);
    return 0;
  }
  throw new CliError(`${name} kept changing while ${cmd} was applied; try again`);
}

/** The ApiServerUpgrade of a manifest file (YAML or JSON, one document of that kind). */
export function upgradeFromManifest(text: string, source: string): ApiServerUpgrade {
  const docs = parseAllDocuments(text);
  const objects: unknown[] = [];
  for (const d of Array.isArray(docs) ? docs : [docs]) {
    if (d.errors.length > 0) throw new CliError(`${source}: ${d.errors[0]!.message}`);
    const v: unknown = d.toJS();
    if (v !== null && v !== undefined) objects.push(v);
  }
  const upgrades = objects.filter((x): x is ApiServerUpgrade => typeof x === 'object' && x !== null && (x as { kind?: unknown }).kind === KIND);
  if (upgrades.length === 0) throw new CliError(`${source} holds no ${KIND}`);
  if (upgrades.length > 1) throw new CliError(`${source} holds ${upgrades.length} ${KIND}s; plan one at a time (the operator runs one at a time)`);
  const u = upgrades[0]!;
  if (u.apiVersion !== API_VERSION) throw new CliError(`${source}: apiVersion ${String(u.apiVersion)} is not ${API_VERSION}`);
  if (typeof u.spec !== 'object' || u.spec === null) throw new CliError(`${source}: the ${KIND} has no spec`);
  return u;
}

async function planCommand(api: UpgradeApi, o: Options, deps: CliDeps): Promise<number> {
  const now = deps.now();
  let u: ApiServerUpgrade;
  let source: 'file' | 'cluster';
  if (o.filename !== undefined) {
    const where = o.filename === '-' ? 'stdin' : o.filename;
    let text: string;
    try {
      text = await deps.readFile(o.filename);
    } catch (err) {
      throw new CliError(`cannot read ${where}: ${(err as Error).message}`);
    }
    u = upgradeFromManifest(text, where);
    source = 'file';
  } else {
    u = await mustGet(api, o.name!);
    source = 'cluster';
  }
  const spec: ApiServerUpgradeSpec = u.spec;
  try {
    resolveSpec(spec);
  } catch (err) {
    if (err instanceof SpecError) throw new CliError(`invalid spec: ${err.message}`);
    throw err;
  }
  const name = u.metadata?.name ?? '(unnamed)';
  const uid = u.metadata?.uid;
  // Planned as a fresh upgrade: no status, and no action annotation taken as new.
  const actionAnnotations = [RESUME_ANNOTATION, ABORT_ANNOTATION, RETRY_ANNOTATION, APPROVE_ANNOTATION];
  const ignoredAnnotations = actionAnnotations.filter((a) => u.metadata?.annotations?.[a] !== undefined);
  // Objects read from the API carry their timestamps as JSON text, which blockingUpgrade compares as text.
  const created = (u.metadata?.creationTimestamp ?? now.toISOString()) as unknown as Date;
  const fresh: ApiServerUpgrade = { apiVersion: u.apiVersion, kind: u.kind, spec: u.spec, metadata: { ...u.metadata, name, creationTimestamp: created } };
  const waitsFor = blockingUpgrade(fresh, await api.list());
  const { observation, inventory } = await api.observe(spec);
  const result = dryRun({ name, uid: uid ?? PLACEHOLDER_UID, generation: u.metadata?.generation ?? 1, annotations: {} }, spec, observation, now);
  const view = buildPlanView({
    name, source, uid: uid ?? PLACEHOLDER_UID, uidIsPlaceholder: uid === undefined, spec, observation, inventory, dryRun: result, waitsFor, ignoredAnnotations, now,
  });
  deps.out(o.output === 'human' ? renderPlan(view) : formatted(view, [name], o));
  return 0;
}

// The one fake cluster the CLI's command tests run against, and the runner that drives run() over it: the fake
// records what a command patched, watched and observed, and can answer 409 Conflict a given number of times.
import { run, type CliDeps } from '../../src/cli/cli.ts';
import type { UpgradeApi } from '../../src/cli/client.ts';
import { KubeApiError } from '../../src/runtime/kube.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import type { KubeEvent } from '../../src/cli/events.ts';
import { NOW, fleet } from './fixtures.ts';

export class FakeApi implements UpgradeApi {
  objects = new Map<string, ApiServerUpgrade>();
  patches: { name: string; patch: Record<string, unknown> }[] = [];
  /** How many of the next patches answer 409 Conflict. */
  conflicts = 0;
  observed = 0;
  watched: (string | undefined)[] = [];
  watchers: ((u: ApiServerUpgrade | undefined) => void)[] = [];
  /** What events() answers. */
  eventList: KubeEvent[] = [];
  constructor(...us: ApiServerUpgrade[]) {
    for (const u of us) this.objects.set(u.metadata!.name!, u);
  }
  async get(name: string) {
    return structuredClone(this.objects.get(name));
  }
  async list() {
    return [...this.objects.values()].map((u) => structuredClone(u));
  }
  async patch(name: string, patch: Record<string, unknown>) {
    if (this.conflicts > 0) {
      this.conflicts--;
      throw new KubeApiError('PATCH', name, 409, '{"reason":"Conflict","message":"the object has been modified"}', undefined);
    }
    this.patches.push({ name, patch });
    return this.objects.get(name)!;
  }
  async events() {
    return this.eventList;
  }
  watch(name: string | undefined, onChange: (u: ApiServerUpgrade | undefined) => void) {
    this.watched.push(name);
    this.watchers.push(onChange);
    return { stop: async () => undefined };
  }
  async observe() {
    this.observed++;
    return { observation: fleet('off'), inventory: undefined };
  }
  close() {}
}

/**
 * run() with `argv` over `api`: what it printed and its exit code. `api` undefined means the command must not connect
 * (connecting fails the test); a function is called in place of connecting (to make the connection itself fail).
 */
export async function cli(api: UpgradeApi | (() => never) | undefined, argv: string[], over: Partial<CliDeps> = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await run(argv, {
    out: (s) => (out += s), err: (s) => (err += s),
    connect: () => {
      if (api === undefined) throw new Error('must not connect');
      return typeof api === 'function' ? api() : api;
    },
    contexts: () => [],
    now: () => NOW,
    readFile: async () => { throw new Error('no file'); },
    isTTY: false,
    interrupted: async () => undefined,
    ...over,
  });
  return { code, out, err };
}

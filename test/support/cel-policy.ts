// A ValidatingAdmissionPolicy evaluated the way kube-apiserver evaluates it, for the unit tests: matchConditions,
// then variables in order, then every validation; a validation that is false or cannot be evaluated denies
// (failurePolicy Fail). The objects reach CEL as kube-apiserver hands them over (k8s.io/apiserver
// admission/plugin/cel objectToResolveVal: the object converted to unstructured data, so every level is a plain
// map of the fields that are set and integers are CEL ints). The expressions run in @bufbuild/cel with the CEL
// strings extension (kube-apiserver's ext.Strings) and the Kubernetes IP library's isIP() (k8s.io/apiserver
// pkg/cel/library/ip.go: an IPv4 or IPv6 address, no zone, no IPv4-mapped IPv6); e2e/admission-policy.e2e.ts checks this evaluator's verdict
// against the real server's on every generated case it sends there.
import { celEnv, celFunc, CelScalar, isCelError, parse, plan, type CelInput } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { isKubernetesIP } from '../../src/api/ip-port.ts';

const kubernetesLibrary = [celFunc('isIP', [CelScalar.STRING], CelScalar.BOOL, (s: string) => isKubernetesIP(s))];

interface Expression { name?: string; expression: string; message?: string; messageExpression?: string }
export interface PolicyObject {
  spec: { matchConditions?: Expression[]; variables?: Expression[]; validations: Expression[]; failurePolicy?: string };
}

export interface AdmissionInput {
  operation: 'CREATE' | 'UPDATE';
  username: string;
  resource: { group: string; resource: string };
  object: unknown;
  oldObject?: unknown;
}

export interface PolicyVerdict {
  /** false when a matchCondition leaves the request out of the policy. */
  matched: boolean;
  allowed: boolean;
  /** The denying validations' messages, in the policy's order. */
  denials: string[];
}

/** JSON data as CEL sees unstructured data: objects are maps, whole numbers ints. */
export function celValue(v: unknown): CelInput {
  if (Array.isArray(v)) return v.map(celValue);
  if (v !== null && typeof v === 'object') return new Map(Object.entries(v).map(([k, x]) => [k, celValue(x)]));
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return v as CelInput;
}

type Program = (ctx: Record<string, CelInput>) => unknown;

/** A compiled policy: call it with a request. */
export function compilePolicy(policy: PolicyObject): (input: AdmissionInput) => PolicyVerdict {
  const env = celEnv({ funcs: [...strings, ...kubernetesLibrary] });
  const compile = (src: string): Program => {
    const run = plan(env, parse(src));
    return (ctx) => run(ctx);
  };
  const conditions = (policy.spec.matchConditions ?? []).map((c) => compile(c.expression));
  const variables = (policy.spec.variables ?? []).map((v) => ({ name: v.name!, run: compile(v.expression) }));
  const validations = policy.spec.validations.map((v) => ({
    run: compile(v.expression),
    message: v.message,
    messageExpression: v.messageExpression === undefined ? undefined : compile(v.messageExpression),
  }));
  return (input) => {
    const ctx: Record<string, CelInput> = {
      request: celValue({ operation: input.operation, userInfo: { username: input.username }, resource: input.resource }),
      object: celValue(input.object ?? null),
      oldObject: celValue(input.oldObject ?? null),
    };
    for (const c of conditions) {
      const r = c(ctx);
      if (isCelError(r)) return { matched: true, allowed: false, denials: [`matchCondition error: ${String(r.message)}`] };
      if (r !== true) return { matched: false, allowed: true, denials: [] };
    }
    // A variable that fails to evaluate is left out: any expression that reads it fails too (as a lazy variable's error would).
    const vars = new Map<string, CelInput>();
    for (const v of variables) {
      const r = v.run({ ...ctx, variables: vars });
      if (!isCelError(r)) vars.set(v.name, r as CelInput);
    }
    const full = { ...ctx, variables: vars };
    const denials: string[] = [];
    for (const v of validations) {
      const r = v.run(full);
      if (r === true) continue;
      if (isCelError(r)) {
        denials.push(`expression error: ${String(r.message)}`);
        continue;
      }
      const m = v.messageExpression?.(full);
      denials.push(typeof m === 'string' ? m : v.message ?? 'denied');
    }
    return { matched: true, allowed: denials.length === 0, denials };
  };
}

import type { Schema, ValidationRule } from './schema-types.ts';

/**
 * The spec fields an upgrade under way must not change: everything a driver call or the node agent is made
 * with. The plan, the calls already sent (their idempotency keys, the Jobs on the nodes) and the policy's
 * verdict were all made with these values; a change in the middle would make the next call differ from the
 * last one (another agent image, manifest, webhook, token) without a preflight. Enforced by the API server as
 * CEL transition rules on the root, where a rule sees both oldSelf.spec and oldSelf.status (docs/security.md
 * says why the CRD and not the operator's frozen plan).
 *
 * Everything under these paths is frozen, leaf by leaf (a rule per leaf names the field in its message): a field
 * added under spec.driver later is frozen without a change here.
 */
export const FROZEN_SUBTREES: readonly (readonly string[])[] = [
  ['driver'],
  // The gate every call asks for (Enabled, and Auto across a minor step: on; a patch under Auto, and Unmanaged: untouched) and whether the end turns it off again.
  ['proxy'],
  // Frozen in status.plan at preflight anyway: refused here rather than silently ignored.
  ['strategy', 'phases'],
  // How phase two starts (an approval, a deadline and what it does): frozen in status.plan too, so switching a hold to
  // Automatic or moving its deadline is never a way around the approval.
  ['strategy', 'phaseTwo'],
];

/**
 * Whether the stored object is an upgrade under way: a phase that makes driver calls, or paused after preflight
 * froze a plan (a pause held before preflight, resumePhase Preflight, has no plan yet). Pending, Preflight and the
 * terminal phases leave the spec free (a Failed upgrade's retry runs preflight again, with the spec as it is then).
 * The operator writes status.phase with a merge patch guarded by resourceVersion, so the spec a plan was made
 * from is the spec stored when the phase that freezes it was written: an edit between its read and that write
 * makes the write a 409 and the plan is made again.
 */
export const RUNNING =
  "has(oldSelf.status) && has(oldSelf.status.phase) && (oldSelf.status.phase in ['EnablingProxy', 'Upgrading', 'RollingBack'] || " +
  "(oldSelf.status.phase == 'Paused' && !(has(oldSelf.status.pause) && has(oldSelf.status.pause.resumePhase) && oldSelf.status.pause.resumePhase == 'Preflight')))";

/** CEL's reserved words: a property so named is read as `__<name>__` in a rule (Kubernetes' escaping). */
const CEL_RESERVED = new Set(['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while']);
const celName = (k: string): string => (CEL_RESERVED.has(k) ? `__${k}__` : k);

/** The leaves of `schema` under `path`: objects with properties are walked, anything else is one leaf. */
function leaves(schema: Schema, path: readonly string[]): string[][] {
  const props = schema.properties;
  if (schema.type !== 'object' || props === undefined) return [[...path]];
  return Object.entries(props).flatMap(([k, child]) => leaves(child, [...path, k]));
}

function at(spec: Schema, path: readonly string[]): Schema {
  let s = spec;
  for (const k of path) {
    const next = s.properties?.[k];
    if (next === undefined) throw new Error(`frozen field spec.${path.join('.')} is not in the spec schema`);
    s = next;
  }
  return s;
}

/**
 * One transition rule per frozen leaf, for the root of the schema. A leaf that may be absent (a driver switched
 * from webhook to staticPod) is compared by presence first, then by value: each level is guarded with has(), not
 * with optional field selection, whose result the CRD's cost estimator cannot bound.
 */
export function frozenFieldRules(spec: Schema): ValidationRule[] {
  return FROZEN_SUBTREES.flatMap((sub) => leaves(at(spec, sub), sub)).map((leaf) => {
    const path = ['spec', ...leaf].map(celName);
    const present = (o: string): string => path.slice(1).map((_, i) => `has(${o}.${path.slice(0, i + 2).join('.')})`).join(' && ');
    const value = (o: string): string => `${o}.${path.join('.')}`;
    const field = `spec.${leaf.join('.')}`;
    return {
      rule: `!(${RUNNING}) || ((${present('oldSelf')}) == (${present('self')}) && (!(${present('oldSelf')}) || ${value('oldSelf')} == ${value('self')}))`,
      message: `${field} is frozen while the upgrade is under way (EnablingProxy, Upgrading, RollingBack, or Paused after preflight): abort it or let it end, then create a new ApiServerUpgrade`,
      fieldPath: `.${field}`,
      reason: 'FieldValueForbidden',
    };
  });
}

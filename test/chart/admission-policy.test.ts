// The chart's admission policy (templates/admission-policy.yaml), rendered by helm with the default values and
// evaluated as kube-apiserver evaluates it (test/support/cel-policy.ts), against generated agent Jobs: it admits
// every Job the static Pod driver's agentJob() renders for legitimate inputs, and denies every mutation of one that
// is not itself such a Job — a field of the API added at any depth, a key removed, a value changed, an element
// repeated, the known attacks. The same generator runs against a real kube-apiserver in e2e/admission-policy.e2e.ts.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { tool, runOk } from '../../e2e/support/tools.ts';
import { compilePolicy, type PolicyObject, type PolicyVerdict } from '../support/cel-policy.ts';
import { agentInputs, chartAllows, isRenderedAgentJob, KNOWN_ATTACKS, KNOWN_PROOF_ATTACKS, mutation, proofInputs, render, renderProof, withServerDefaults, type ChartAllows, type Json, type JsonObject } from '../support/agent-job-attack.ts';
import { PROOF_SENTINEL } from '../../src/plan/flag-proof.ts';
import { STOPPED_ANNOTATION } from '../../src/drivers/job-report.ts';
import { AGENT_READY_TIMEOUT_MAX_SECONDS, AGENT_READY_TIMEOUT_MIN_SECONDS } from '../../src/api/constants.ts';

const CHART = `${import.meta.dirname}/../../charts/apiserver-upgrade-operator`;
const NS = 'upgrade-system';
const SA = `system:serviceaccount:${NS}:apiserver-upgrade-operator`;
const JOBS = { group: 'batch', resource: 'jobs' };

let evaluate: (job: Json, op?: 'CREATE' | 'UPDATE', old?: Json, username?: string, resource?: { group: string; resource: string }) => PolicyVerdict;
let allows: ChartAllows;

before(async () => {
  const out = await runOk(tool('helm'), ['template', 'apiserver-upgrade-operator', CHART, '--namespace', NS, '--kube-version', 'v1.35.4']);
  const docs = parseAllDocuments(out).map((d) => d.toJSON() as Record<string, unknown> | null).filter((d): d is Record<string, unknown> => d !== null);
  const vap = docs.find((d) => d.kind === 'ValidatingAdmissionPolicy') as unknown as PolicyObject;
  const deployment = docs.find((d) => d.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: { image: string }[] } } } };
  allows = chartAllows(docs as never, deployment.spec.template.spec.containers[0]!.image);
  const run = compilePolicy(vap);
  evaluate = (job, op = 'CREATE', old, username = SA, resource = JOBS) => run({ operation: op, username, resource, object: job, oldObject: old });
});

const explain = (v: PolicyVerdict): string => v.denials.join(' | ');

test('every Job agentJob() renders for legitimate inputs is admitted', () => {
  fc.assert(fc.property(agentInputs(allows), (inputs) => {
    const job = withServerDefaults(render(inputs));
    assert.ok(isRenderedAgentJob(job, allows), 'the oracle knows the rendered Job');
    const v = evaluate(job);
    assert.ok(v.allowed, `denied: ${explain(v)}\n${JSON.stringify(job)}`);
  }), { numRuns: 400 });
});

test('a mutated Job is admitted exactly when it is itself a Job agentJob() renders (generated, any field at any depth)', () => {
  const counts = { admitted: 0, denied: 0 };
  fc.assert(fc.property(agentInputs(allows), mutation(), (inputs, mutate) => {
    const m = mutate(render(inputs) as JsonObject);
    const job = withServerDefaults(m.job);
    const legit = isRenderedAgentJob(job, allows);
    const v = evaluate(job);
    assert.equal(v.allowed, legit, `${m.what}: the policy ${v.allowed ? 'admitted' : `denied (${explain(v)})`}, the oracle says ${legit ? 'admit' : 'deny'}`);
    counts[v.allowed ? 'admitted' : 'denied']++;
  }), { numRuns: 3000 });
  process.stderr.write(`[admission-policy] 3000 generated mutations: ${counts.denied} denied, ${counts.admitted} admitted (each a Job agentJob() renders)\n`);
  assert.ok(counts.denied > 2000, 'most mutations are attacks');
});

test('each known attack is denied, with a message that names what is wrong', () => {
  const base = render(fc.sample(agentInputs(allows), { numRuns: 1, seed: 7 })[0]!);
  for (const a of KNOWN_ATTACKS) {
    const job = structuredClone(base) as never;
    a.edit(job);
    const v = evaluate(withServerDefaults(job));
    assert.equal(v.allowed, false, `${a.what} was admitted`);
    assert.ok(v.denials.every((d) => !d.startsWith('expression error')) || v.denials.length > 0, a.what);
  }
});

test('READY_TIMEOUT and the deadline: the agent\'s own range, and nothing outside it', () => {
  const base = fc.sample(agentInputs(allows), { numRuns: 1, seed: 11 })[0]!;
  for (const [seconds, ok] of [[AGENT_READY_TIMEOUT_MIN_SECONDS - 1, false], [AGENT_READY_TIMEOUT_MIN_SECONDS, true], [AGENT_READY_TIMEOUT_MAX_SECONDS, true], [AGENT_READY_TIMEOUT_MAX_SECONDS + 1, false], [999999, false]] as const) {
    const job = render({ ...base, spec: { ...base.spec, readyTimeout: `${AGENT_READY_TIMEOUT_MIN_SECONDS}s`, readyTimeoutMs: AGENT_READY_TIMEOUT_MIN_SECONDS * 1000 } }) as never as { spec: { activeDeadlineSeconds: number; template: { spec: { containers: { env: { name: string; value: string }[] }[] } } } };
    for (const e of job.spec.template.spec.containers[0]!.env) if (e.name === 'READY_TIMEOUT') e.value = String(seconds);
    job.spec.activeDeadlineSeconds = seconds + 300;
    const v = evaluate(withServerDefaults(job as never));
    assert.equal(v.allowed, ok, `READY_TIMEOUT ${seconds}: ${explain(v)}`);
  }
});

test('every flag proof Job proofJob() renders for legitimate inputs is admitted', () => {
  fc.assert(fc.property(proofInputs(allows), (inputs) => {
    const job = withServerDefaults(renderProof(inputs));
    assert.ok(isRenderedAgentJob(job, allows), 'the oracle knows the rendered proof Job');
    const v = evaluate(job);
    assert.ok(v.allowed, `denied: ${explain(v)}\n${JSON.stringify(job)}`);
  }), { numRuns: 400 });
});

test('a mutated flag proof Job is admitted exactly when it is itself a Job proofJob() renders (generated, any field at any depth)', () => {
  const counts = { admitted: 0, denied: 0 };
  fc.assert(fc.property(proofInputs(allows), mutation(), (inputs, mutate) => {
    const base = renderProof(inputs);
    let m;
    try {
      m = mutate(base);
    } catch {
      return; // a known attack on the agent Job's fields (env, init container) that this shape does not have
    }
    const job = withServerDefaults(m.job);
    const legit = isRenderedAgentJob(job, allows);
    const v = evaluate(job);
    assert.equal(v.allowed, legit, `${m.what}: the policy ${v.allowed ? 'admitted' : `denied (${explain(v)})`}, the oracle says ${legit ? 'admit' : 'deny'}`);
    counts[v.allowed ? 'admitted' : 'denied']++;
  }), { numRuns: 3000 });
  process.stderr.write(`[admission-policy] 3000 generated mutations of flag proof Jobs: ${counts.denied} denied, ${counts.admitted} admitted (each a Job proofJob() renders)\n`);
  assert.ok(counts.denied > 1500, 'most mutations are attacks');
});

test('each known attack on a flag proof Job is denied, and one on an agent Job labelled as a proof too', () => {
  const base = renderProof(fc.sample(proofInputs(allows), { numRuns: 1, seed: 7 })[0]!);
  for (const a of KNOWN_PROOF_ATTACKS) {
    const job = structuredClone(base) as never;
    a.edit(job);
    const v = evaluate(withServerDefaults(job));
    assert.equal(v.allowed, false, `${a.what} was admitted`);
  }
  // An agent Job that calls itself a proof escapes none of the rules: it is no proof Job.
  const agent = render(fc.sample(agentInputs(allows), { numRuns: 1, seed: 7 })[0]!) as never as { metadata: { labels: Record<string, string>; name: string } };
  agent.metadata.labels['upgrade.apiserver.dev/action'] = 'proveflags';
  agent.metadata.name = agent.metadata.name.replace(/^auo-[a-z]+-/, 'auo-proveflags-');
  assert.equal(evaluate(withServerDefaults(agent as never)).allowed, false);
});

test('the sentinel guard: last, once, never taken as a value — exactly as the policy reads it', () => {
  const base = renderProof(fc.sample(proofInputs(allows), { numRuns: 1, seed: 13 })[0]!) as never as { spec: { template: { spec: { containers: { command: string[] }[] } } } };
  const withCommand = (tail: string[]): boolean => {
    const j = structuredClone(base);
    j.spec.template.spec.containers[0]!.command = ['kube-apiserver', ...tail];
    return evaluate(withServerDefaults(j as never)).allowed;
  };
  assert.equal(withCommand([PROOF_SENTINEL]), true);
  assert.equal(withCommand(['--profiling=true', PROOF_SENTINEL]), true);
  assert.equal(withCommand(['--etcd-servers', 'https://x', PROOF_SENTINEL]), true, 'a value entry before the sentinel takes nothing');
  assert.equal(withCommand(['--profiling', PROOF_SENTINEL]), false, 'a flag without a value before the sentinel');
  assert.equal(withCommand([PROOF_SENTINEL, '--max-requests-inflight=400']), false);
  assert.equal(withCommand([]), false);
});

/** The Job as stored, and as the driver's stop (a merge patch of spec.suspend and one annotation) leaves it. */
function storedAndStopped(): { stored: JsonObject; stopped: JsonObject } {
  const stored = withServerDefaults(render(fc.sample(agentInputs(allows), { numRuns: 1, seed: 3 })[0]!)) as JsonObject;
  (stored.metadata as JsonObject).resourceVersion = '100';
  const stopped = structuredClone(stored);
  (stopped.spec as JsonObject).suspend = true;
  ((stopped.metadata as JsonObject).annotations as JsonObject)[STOPPED_ANNOTATION] = 'init container pull-kube-apiserver of Pod x is waiting: ErrImagePull';
  (stopped.metadata as JsonObject).generation = 2;
  return { stored, stopped };
}

test('the only update is the stop: suspend true and the stopped-because annotation; any other change with it is denied', () => {
  const { stored, stopped } = storedAndStopped();
  const ok = evaluate(stopped, 'UPDATE', stored);
  assert.ok(ok.allowed, explain(ok));
  let denied = 0;
  fc.assert(fc.property(mutation(), (mutate) => {
    const m = mutate(stopped);
    // Changes the stop itself may carry: its annotation's text, and the server's own bookkeeping.
    const meta = m.job.metadata as JsonObject | undefined;
    const sameAsStop = isDeepStrictEqual({ ...m.job, metadata: { ...meta, resourceVersion: 0, generation: 0, managedFields: 0 } }, { ...stopped, metadata: { ...(stopped.metadata as JsonObject), resourceVersion: 0, generation: 0, managedFields: 0 } });
    const annotationOnly = meta !== undefined && isDeepStrictEqual({ ...m.job, metadata: { ...meta, annotations: { ...(meta.annotations as JsonObject), [STOPPED_ANNOTATION]: '' } } }, { ...stopped, metadata: { ...(stopped.metadata as JsonObject), annotations: { ...((stopped.metadata as JsonObject).annotations as JsonObject), [STOPPED_ANNOTATION]: '' } } });
    const note = (meta?.annotations as JsonObject | undefined)?.[STOPPED_ANNOTATION];
    const expected = sameAsStop || (annotationOnly && typeof note === 'string' && note.length > 0 && note.length <= 1024);
    const v = evaluate(m.job, 'UPDATE', stored);
    assert.equal(v.allowed, expected, `${m.what}: ${v.allowed ? 'admitted' : explain(v)}`);
    if (!v.allowed) denied++;
  }), { numRuns: 1500 });
  assert.ok(denied > 1000, `${denied} of 1500 denied`);
  // A resume, and dropping the annotation, are denied.
  const resumed = structuredClone(stopped);
  (resumed.spec as JsonObject).suspend = false;
  assert.equal(evaluate(resumed, 'UPDATE', stopped).allowed, false, 'resume');
  const dropped = structuredClone(stopped);
  delete ((dropped.metadata as JsonObject).annotations as JsonObject)[STOPPED_ANNOTATION];
  assert.equal(evaluate(dropped, 'UPDATE', stopped).allowed, false, 'the annotation dropped');
});

test('no other resource; other users are not the policy\'s business', () => {
  const job = withServerDefaults(render(fc.sample(agentInputs(allows), { numRuns: 1, seed: 5 })[0]!)) as JsonObject;
  const pod: Json = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x', namespace: 'kube-system' }, spec: ((job.spec as JsonObject).template as JsonObject).spec ?? null };
  const v = evaluate(pod, 'CREATE', undefined, SA, { group: '', resource: 'pods' });
  assert.equal(v.allowed, false);
  assert.match(v.denials[0]!, /may create only agent Jobs: pods denied/);
  const other = evaluate({ ...job, spec: { ...(job.spec as JsonObject), backoffLimit: 6 } }, 'CREATE', undefined, 'admin');
  assert.equal(other.matched, false);
  assert.equal(other.allowed, true);
});

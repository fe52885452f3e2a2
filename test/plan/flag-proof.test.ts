// The flag proof's pure parts (src/plan/flag-proof.ts): reading what the target kube-apiserver printed into a verdict,
// the findings, and when a node is proven again. The outputs below are the real binaries' lines, as measured on
// v1.35.4, v1.36.3 and v1.37.2 (docs/flag-proof.md; e2e/flag-proof.e2e.ts runs the binaries themselves).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FLAG_PROOF_REASONS, PROOF_SENTINEL_ERROR, flagProofFindings, goUnquote, needsProofAgain, readProof, refusedFlag, type NodeProof, type ProofVerdict } from '../../src/plan/flag-proof.ts';

const I = 'I1206 18:15:00.089613   23007 options.go:263] external host was not specified, using 127.0.0.1';
const FLAG = 'I1206 18:15:00.081000   23007 flags.go:64] FLAG: --v="2"';
const failed = (err: string): string => `E1206 18:15:00.089613   23007 run.go:72] "command failed" err=${JSON.stringify(err)}`;
const run = (output: string, exitCode: number | null = 1, timedOut = false) => readProof({ exitCode, timedOut, output }, 30);

test('only the sentinel refused: Accepted (text and JSON log formats)', () => {
  assert.deepEqual(run([FLAG, I, failed(PROOF_SENTINEL_ERROR)].join('\n')), { result: 'Accepted', warnings: [] });
  const json = '{"ts":1796581003876.3376,"caller":"cli/run.go:72","msg":"command failed","err":"--max-requests-inflight can not be negative value"}';
  assert.deepEqual(run(`{"ts":1,"msg":"FLAG: --v=\\"2\\"","v":1}\n${json}\n`), { result: 'Accepted', warnings: [] });
});

test('an unknown flag and a parse error (cobra, before anything else): Refused naming the flag', () => {
  assert.deepEqual(run('Error: unknown flag: --no-such-flag\n'), { result: 'Refused', message: 'unknown flag: --no-such-flag', flag: '--no-such-flag' });
  const v = run('Error: invalid argument "abc" for "--secure-port" flag: strconv.ParseInt: parsing "abc": invalid syntax');
  assert.equal(v.result, 'Refused');
  assert.deepEqual(v.result === 'Refused' && [v.flag, v.item], ['--secure-port', 'abc']);
  assert.deepEqual(refusedFlag('invalid argument "x" for "-v, --v" flag: strconv.ParseInt'), { flag: '--v', item: 'x' });
  assert.deepEqual(refusedFlag('"kube-apiserver" does not take any arguments, got ["extra"]'), { item: 'extra' });
  assert.deepEqual(refusedFlag('flag needs an argument: --etcd-servers'), { flag: '--etcd-servers' });
});

test('a removed feature gate: Refused naming --feature-gates and the gate', () => {
  const v = run(failed('unrecognized feature gate: ServiceTrafficDistribution'));
  assert.deepEqual(v, { result: 'Refused', message: 'unrecognized feature gate: ServiceTrafficDistribution', flag: '--feature-gates', item: 'ServiceTrafficDistribution' });
});

test('a removed admission plugin: Refused, the sentinel left out of the aggregate', () => {
  const v = run([FLAG, failed(`[${PROOF_SENTINEL_ERROR}, enable-admission-plugins plugin "JobValidation" is unknown, enable-admission-plugins plugin "PodGroupWorkloadExists" is unknown]`)].join('\n'));
  assert.deepEqual(v, {
    result: 'Refused', flag: '--enable-admission-plugins', item: 'JobValidation',
    message: 'enable-admission-plugins plugin "JobValidation" is unknown, enable-admission-plugins plugin "PodGroupWorkloadExists" is unknown',
  });
  assert.equal(refusedFlag('disable-admission-plugins plugin "X" is unknown').flag, '--disable-admission-plugins');
  // JSON format: the same error.
  const json = JSON.stringify({ ts: 1, msg: 'command failed', err: `[${PROOF_SENTINEL_ERROR}, enable-admission-plugins plugin "Nope" is unknown]` });
  assert.deepEqual(run(json), { result: 'Refused', message: 'enable-admission-plugins plugin "Nope" is unknown', flag: '--enable-admission-plugins', item: 'Nope' });
});

test('an error of completion (before validation) replaces the aggregate: Refused with it', () => {
  const v = run(failed('failed to parse service-account-issuer-key-file: open /etc/kubernetes/pki/sa.key: no such file or directory'));
  assert.equal(v.result, 'Refused');
  const w = run(failed(`[${PROOF_SENTINEL_ERROR}, --authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined]`));
  assert.equal(w.result === 'Refused' && w.flag, '--authorization-config');
});

test('the binary\'s warnings on an accepted command line: deprecated flags, GA gates, each once', () => {
  const out = [
    'Flag --enable-logs-handler has been deprecated, Log handler functionality is deprecated',
    'W1206 18:15:21.976448   23936 feature_gate.go:410] Setting GA feature gate ServiceTrafficDistribution=true. It will be removed in a future release.',
    'W1206 18:15:21.980880   23936 feature_gate.go:410] Setting GA feature gate ServiceTrafficDistribution=true. It will be removed in a future release.',
    // v1.36 and later: a structured line, shown in v1.35's words.
    'I1206 18:22:26.095849    5408 feature_gate.go:362] "Warning: setting GA feature gate. It will be removed in a future release." featureGate="SidecarContainers" value=true',
    '{"ts":1,"caller":"featuregate/feature_gate.go:362","msg":"Warning: setting deprecated feature gate. It will be removed in a future release.","featureGate":"Old","value":false}',
    failed(PROOF_SENTINEL_ERROR),
  ].join('\n');
  assert.deepEqual(run(out), { result: 'Accepted', warnings: [
    'Flag --enable-logs-handler has been deprecated, Log handler functionality is deprecated',
    'Setting GA feature gate ServiceTrafficDistribution=true. It will be removed in a future release.',
    'Setting GA feature gate SidecarContainers=true. It will be removed in a future release.',
    'Setting deprecated feature gate Old=false. It will be removed in a future release.',
  ] });
});

test('fail closed: a timeout, exit 0, a signal, an unreadable answer, or the sentinel with another exit code are Inconclusive', () => {
  assert.equal(run('W... grpc: addrConn.createTransport failed', null, true).result, 'Inconclusive');
  assert.match((run('', null, true) as { message: string }).message, /did not exit within 30s/);
  assert.equal(run('Kubernetes v1.36.3', 0).result, 'Inconclusive');
  assert.equal(run(failed(PROOF_SENTINEL_ERROR), 0).result, 'Inconclusive');
  assert.equal(run(failed(PROOF_SENTINEL_ERROR), 2).result, 'Inconclusive');
  assert.equal(run('', null).result, 'Inconclusive');
  assert.equal(run('exec format error', 126).result, 'Inconclusive');
  // The sentinel's words inside another error are not the sentinel.
  assert.equal(run(failed(`${PROOF_SENTINEL_ERROR} and more`)).result, 'Refused');
});

test('klog\'s multi-line err=< form is read', () => {
  const out = ['E1206 18:15:00.1 1 run.go:72] "command failed" err=<', '\tfirst line', '\tunrecognized feature gate: Foo', ' >'].join('\n');
  const v = run(out);
  assert.equal(v.result === 'Refused' && v.item, 'Foo');
});

test('goUnquote reads back whatever JSON.stringify (a subset of Go\'s quoting) wrote, and refuses an unterminated string', () => {
  fc.assert(fc.property(fc.string({ unit: 'binary' }), (s) => {
    const q = JSON.stringify(s);
    assert.deepEqual(goUnquote(`x=${q} rest`, 2), { value: s, end: 2 + q.length });
  }), { numRuns: 500 });
  assert.deepEqual(goUnquote('"a\\x41\\101\\U0001F600"', 0)?.value, 'aAA\u{1F600}');
  assert.equal(goUnquote('"abc', 0), undefined);
  assert.equal(goUnquote('"a\\q"', 0), undefined);
  assert.equal(goUnquote('abc', 0), undefined);
});

test('property: an output without the sentinel\'s error is never Accepted; reading never throws', () => {
  const line = fc.oneof(fc.string(), fc.constantFrom(I, FLAG, 'Error: unknown flag: --x'), fc.string().map(failed));
  fc.assert(fc.property(fc.array(line, { maxLength: 8 }), fc.option(fc.integer({ min: 0, max: 255 })), fc.boolean(), (lines, code, timedOut) => {
    const out = lines.join('\n');
    const v = run(out, code, timedOut);
    if (!out.includes('--max-requests-inflight can not be negative value') && !out.includes('--max-requests-inflight can not be negative value'.replaceAll('-', '\\u002d'))) {
      assert.notEqual(v.result, 'Accepted');
    }
    if (timedOut || code === 0) assert.equal(v.result, 'Inconclusive');
  }), { numRuns: 1000 });
});

test('property: the sentinel with any other error is Refused, and the other errors are the message', () => {
  const other = fc.string({ minLength: 1 }).filter((s) => s !== PROOF_SENTINEL_ERROR && !s.includes(PROOF_SENTINEL_ERROR));
  fc.assert(fc.property(fc.array(other, { minLength: 1, maxLength: 4 }), fc.nat(4), (errs, at) => {
    const all = [...errs];
    all.splice(Math.min(at, all.length), 0, PROOF_SENTINEL_ERROR);
    const v = run([FLAG, failed(`[${all.join(', ')}]`)].join('\n'));
    assert.equal(v.result, 'Refused');
    assert.equal((v as { message: string }).message, errs.join(', '));
  }), { numRuns: 500 });
});

const accepted: ProofVerdict = { result: 'Accepted', warnings: [] };

test('findings: each refused, inconclusive, unproven or not-run node blocks, naming the node, the flag and the message; accepted nodes do not', () => {
  const proofs: NodeProof[] = [
    { hostname: 'cp-1', verdict: accepted },
    { hostname: 'cp-2', verdict: { result: 'Refused', message: 'unrecognized feature gate: ServiceTrafficDistribution', flag: '--feature-gates', item: 'ServiceTrafficDistribution' } },
    { hostname: 'cp-3', verdict: { result: 'Inconclusive', message: 'kube-apiserver did not exit within 30s' } },
    { hostname: 'cp-4', notRun: 'the image registry.k8s.io/kube-apiserver:v1.36.3 could not be pulled' },
    { hostname: 'cp-6', verdict: { result: 'Accepted', warnings: ['Flag --enable-logs-handler has been deprecated, Log handler functionality is deprecated'] } },
  ];
  const f = flagProofFindings(['cp-1', 'cp-2', 'cp-3', 'cp-4', 'cp-5', 'cp-6'], proofs, 'v1.36.3');
  assert.deepEqual(f.map((x) => [x.object, x.severity, x.reason]), [
    ['node/cp-2', 'Block', FLAG_PROOF_REASONS.refused],
    ['node/cp-3', 'Block', FLAG_PROOF_REASONS.inconclusive],
    ['node/cp-4', 'Block', FLAG_PROOF_REASONS.notRun],
    ['node/cp-5', 'Block', FLAG_PROOF_REASONS.notRun],
    ['node/cp-6', 'Warn', FLAG_PROOF_REASONS.deprecated],
  ]);
  assert.equal(f[0]!.message, 'cp-2: kube-apiserver v1.36.3 refuses --feature-gates (ServiceTrafficDistribution): unrecognized feature gate: ServiceTrafficDistribution');
  assert.deepEqual([f[0]!.flag, f[0]!.item], ['--feature-gates', 'ServiceTrafficDistribution']);
});

test('property: a node blocks exactly when it has no Accepted verdict; messages are plain and capped', () => {
  const verdict = fc.oneof(
    fc.constant<ProofVerdict>(accepted),
    fc.string().map((m): ProofVerdict => ({ result: 'Refused', message: m })),
    fc.string().map((m): ProofVerdict => ({ result: 'Inconclusive', message: m })),
  );
  const host = fc.constantFrom('cp-1', 'cp-2', 'cp-3', 'cp-4');
  const proof = fc.oneof(fc.record({ hostname: host, verdict }), fc.record({ hostname: host, notRun: fc.string() }));
  fc.assert(fc.property(fc.uniqueArray(host, { maxLength: 4 }), fc.array(proof, { maxLength: 6 }), (hosts, proofs) => {
    const f = flagProofFindings(hosts, proofs, 'v1.36.3');
    for (const h of hosts) {
      const first = proofs.find((p) => p.hostname === h);
      const ok = first !== undefined && 'verdict' in first && first.verdict.result === 'Accepted';
      assert.equal(f.some((x) => x.object === `node/${h}` && x.severity === 'Block'), !ok, h);
    }
    for (const x of f) {
      assert.ok(x.message.length <= 512);
      assert.doesNotMatch(x.message, /[\n\r\t]/);
    }
  }), { numRuns: 500 });
});

test('needsProofAgain: any change of the command line, entry by entry, and no proof at all', () => {
  assert.equal(needsProofAgain(['kube-apiserver', '--a=1'], ['kube-apiserver', '--a=1']), false);
  assert.equal(needsProofAgain(undefined, ['kube-apiserver']), true);
  fc.assert(fc.property(fc.array(fc.string(), { maxLength: 6 }), fc.array(fc.string(), { maxLength: 6 }), (a, b) => {
    assert.equal(needsProofAgain(a, b), JSON.stringify(a) !== JSON.stringify(b));
  }), { numRuns: 500 });
});

// Kubernetes version rules (docs/versions.md): parsing, order, matching, the skew verdict, the proxy gate default.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import semver from 'semver';
import {
  checkTargetVersion,
  classifyUpgrade,
  compareVersions,
  isPrerelease,
  parseVersion,
  sameRelease,
} from '../../src/plan/version.ts';
import { proxyGateOnByDefault } from '../../src/plan/version-facts.ts';

describe('parseVersion', () => {
  const valid: [string, { major: number; minor: number; patch: number; prerelease: (string | number)[]; vendor: string | undefined; build: string[]; release: string }][] = [
    ['v1.36.3', { major: 1, minor: 36, patch: 3, prerelease: [], vendor: undefined, build: [], release: 'v1.36.3' }],
    ['v0.0.0', { major: 0, minor: 0, patch: 0, prerelease: [], vendor: undefined, build: [], release: 'v0.0.0' }],
    ['v1.36.0-rc.1', { major: 1, minor: 36, patch: 0, prerelease: ['rc', 1], vendor: undefined, build: [], release: 'v1.36.0-rc.1' }],
    ['v1.36.0-alpha.2', { major: 1, minor: 36, patch: 0, prerelease: ['alpha', 2], vendor: undefined, build: [], release: 'v1.36.0-alpha.2' }],
    ['v1.36.0-beta.0', { major: 1, minor: 36, patch: 0, prerelease: ['beta', 0], vendor: undefined, build: [], release: 'v1.36.0-beta.0' }],
    // A dev build, as `git describe` names it: 15 commits after alpha.2.
    ['v1.36.0-alpha.2.15+0123abcd', { major: 1, minor: 36, patch: 0, prerelease: ['alpha', 2, 15], vendor: undefined, build: ['0123abcd'], release: 'v1.36.0-alpha.2.15' }],
    ['v1.36.3+rke2r1', { major: 1, minor: 36, patch: 3, prerelease: [], vendor: undefined, build: ['rke2r1'], release: 'v1.36.3' }],
    ['v1.36.3+k3s1', { major: 1, minor: 36, patch: 3, prerelease: [], vendor: undefined, build: ['k3s1'], release: 'v1.36.3' }],
    ['v1.36.3-eks-1234', { major: 1, minor: 36, patch: 3, prerelease: [], vendor: 'eks-1234', build: [], release: 'v1.36.3' }],
    ['v1.30.4-eks-a737599', { major: 1, minor: 30, patch: 4, prerelease: [], vendor: 'eks-a737599', build: [], release: 'v1.30.4' }],
    ['v1.30.5-gke.1014001', { major: 1, minor: 30, patch: 5, prerelease: [], vendor: 'gke.1014001', build: [], release: 'v1.30.5' }],
    // Leading zeros are fine in a vendor suffix and in build metadata (semver forbids them only in pre-release numbers).
    ['v1.30.5-gke.0300+001', { major: 1, minor: 30, patch: 5, prerelease: [], vendor: 'gke.0300', build: ['001'], release: 'v1.30.5' }],
    ['v1.36.0-rc.1+rke2r1', { major: 1, minor: 36, patch: 0, prerelease: ['rc', 1], vendor: undefined, build: ['rke2r1'], release: 'v1.36.0-rc.1' }],
  ];
  for (const [input, want] of valid) {
    it(`reads ${input}`, () => {
      const got = parseVersion(input);
      assert.ok(got, `${input} should parse`);
      assert.deepEqual({ ...got }, { raw: input, ...want });
    });
  }

  const invalid: [string, string][] = [
    ['', 'empty'],
    ['1.36.3', 'no leading v'],
    ['V1.36.3', 'capital V'],
    ['vv1.36.3', 'two vs'],
    [' v1.36.3', 'leading space'],
    ['v1.36.3 ', 'trailing space'],
    ['v1.36', 'no patch'],
    ['v1.36.3.4', 'four numbers'],
    ['v01.36.3', 'leading zero in a number'],
    ['v1.036.3', 'leading zero in a number'],
    ['v1.36.3-', 'empty suffix'],
    ['v1.36.3+', 'empty build metadata'],
    ['v1.36.3-a..b', 'empty identifier'],
    ['v1.36.3+a+b', 'two +'],
    ['v1.36.3-eks_1', 'underscore'],
    ['v1.36.0-rc.01', 'leading zero in an upstream pre-release number'],
    ['v1.36.0-RC.1', 'upstream pre-release in capitals'],
    ['v1.36.0-Beta.0', 'upstream pre-release in capitals'],
    ['v1.36.0-rc1', 'upstream pre-release without the dot'],
    ['v1.36.0-beta2', 'upstream pre-release without the dot'],
    ['v1.36.0-alpha-1', 'upstream pre-release with a hyphen'],
    ['v99999999999999999999.0.0', 'not a safe integer'],
  ];
  for (const [input, why] of invalid) {
    it(`refuses ${JSON.stringify(input)} (${why})`, () => assert.equal(parseVersion(input), undefined));
  }

  it('refuses what is not a string', () => {
    assert.equal(parseVersion(undefined as unknown as string), undefined);
    assert.equal(parseVersion(136 as unknown as string), undefined);
  });
});

describe('compareVersions', () => {
  // Each inner list is one release; the lists are in ascending order.
  const ladder = [
    ['v1.35.4', 'v1.35.4+rke2r1', 'v1.35.4-eks-a737599'],
    ['v1.35.10'],
    ['v1.36.0-alpha.0'],
    ['v1.36.0-alpha.1'],
    ['v1.36.0-alpha.1.7+0123abcd'],
    ['v1.36.0-alpha.2'],
    ['v1.36.0-beta.0', 'v1.36.0-beta.0+build.5'],
    ['v1.36.0-rc.1'],
    ['v1.36.0-rc.2'],
    ['v1.36.0-rc.10'],
    ['v1.36.0', 'v1.36.0+k3s1', 'v1.36.0-gke.100', 'v1.36.0-gke.200', 'v1.36.0-eks-1234'],
    ['v1.36.3', 'v1.36.3+rke2r1', 'v1.36.3-eks-1234'],
    ['v1.37.0-alpha.1'],
    ['v2.0.0'],
  ];
  for (let i = 0; i < ladder.length; i++) {
    it(`places ${ladder[i]!.join(' = ')} against every other rung`, () => {
      for (let j = 0; j < ladder.length; j++) {
        const want = Math.sign(i - j) || 0;
        for (const a of ladder[i]!) {
          for (const b of ladder[j]!) {
            assert.equal(compareVersions(a, b), want, `${a} vs ${b}`);
            assert.equal(compareVersions(parseVersion(a)!, parseVersion(b)!), want, `${a} vs ${b}, parsed`);
          }
        }
      }
    });
  }

  it('sorts a list', () => {
    const flat = ladder.map((g) => g[0]!);
    const shuffled = [...flat].reverse();
    assert.deepEqual(shuffled.sort(compareVersions), flat);
  });

  it('throws on a string that is not a Kubernetes version', () => {
    assert.throws(() => compareVersions('1.36.3', 'v1.36.3'), RangeError);
    assert.throws(() => compareVersions('v1.36.3', 'v1.36.0-RC.1'), RangeError);
  });
});

describe('isPrerelease', () => {
  const cases: [string, boolean][] = [
    ['v1.36.0-alpha.1', true],
    ['v1.36.0-beta.0', true],
    ['v1.36.0-rc.1+rke2r1', true],
    ['v1.36.0', false],
    ['v1.36.3+rke2r1', false],
    ['v1.30.4-eks-a737599', false],
    ['v1.30.5-gke.1014001', false],
  ];
  for (const [v, want] of cases) it(`${v}: ${want}`, () => assert.equal(isPrerelease(v), want));
});

describe('sameRelease', () => {
  const cases: [observed: string, target: string, want: boolean][] = [
    ['v1.36.3', 'v1.36.3', true],
    ['v1.36.3+rke2r1', 'v1.36.3', true],
    ['v1.36.3', 'v1.36.3+rke2r1', true],
    ['v1.36.3+rke2r2', 'v1.36.3+rke2r1', true],
    ['v1.36.3-eks-1234', 'v1.36.3', true],
    ['v1.30.4-eks-a737599', 'v1.30.4', true],
    ['v1.30.5-gke.1014001', 'v1.30.5', true],
    ['v1.30.5-gke.1014001', 'v1.30.5-gke.900', true],
    ['v1.36.3', 'v1.36.3-eks-1234', true],
    ['v1.36.0-rc.1', 'v1.36.0-rc.1', true],
    ['v1.36.0-rc.1+rke2r1', 'v1.36.0-rc.1', true],
    ['v1.36.0-rc.1', 'v1.36.0', false],
    ['v1.36.0', 'v1.36.0-rc.1', false],
    ['v1.36.0-rc.1', 'v1.36.0-rc.2', false],
    ['v1.36.0-rc.1.5+abc', 'v1.36.0-rc.1', false],
    ['v1.36.2', 'v1.36.3', false],
    ['v1.36.2+rke2r1', 'v1.36.3', false],
    ['v1.36.2-eks-1234', 'v1.36.3', false],
    ['1.36.3', 'v1.36.3', false],
    ['v1.36.3', 'v1.36', false],
    ['', 'v1.36.3', false],
  ];
  for (const [observed, target, want] of cases) {
    it(`${observed} ${want ? 'runs' : 'does not run'} ${target}`, () => assert.equal(sameRelease(observed, target), want));
  }
});

describe('checkTargetVersion', () => {
  const cases: [target: string, allowPrerelease: boolean, want: true | 'InvalidTargetVersion' | 'PrereleaseTarget'][] = [
    ['v1.36.3', false, true],
    ['v1.36.3+rke2r1', false, true],
    ['v1.30.4-eks-a737599', false, true],
    ['v1.36.0-rc.1', false, 'PrereleaseTarget'],
    ['v1.36.0-alpha.2', false, 'PrereleaseTarget'],
    ['v1.36.0-beta.0+rke2r1', false, 'PrereleaseTarget'],
    ['v1.36.0-rc.1', true, true],
    ['v1.36.0-alpha.2', true, true],
    ['1.36.3', false, 'InvalidTargetVersion'],
    ['1.36.3', true, 'InvalidTargetVersion'],
    ['v1.36.0-RC.1', true, 'InvalidTargetVersion'],
    ['latest', true, 'InvalidTargetVersion'],
  ];
  for (const [target, allowPrerelease, want] of cases) {
    it(`${target} with allowPrerelease ${allowPrerelease}: ${want === true ? 'accepted' : want}`, () => {
      const got = checkTargetVersion(target, { allowPrerelease });
      if (want === true) {
        assert.equal(got.ok, true);
        assert.equal(got.ok && got.version.raw, target);
      } else {
        assert.equal(got.ok, false);
        assert.equal(!got.ok && got.reason, want);
        assert.ok(!got.ok && got.message.includes(JSON.stringify(target).slice(1, -1)), 'the message names the target');
      }
    });
  }
});

describe('classifyUpgrade', () => {
  type Want = 'patch' | 'minor' | 'none' | 'InvalidTargetVersion' | 'UnknownVersion' | 'Downgrade' | 'SkipsMinor' | 'MajorVersionChange' | 'PrereleaseTarget';
  const cases: [from: string, to: string, allowPrerelease: boolean, want: Want][] = [
    // Patch and minor upgrades.
    ['v1.36.2', 'v1.36.3', false, 'patch'],
    ['v1.36.2+rke2r1', 'v1.36.3+rke2r1', false, 'patch'],
    ['v1.36.2-eks-1234', 'v1.36.3', false, 'patch'],
    ['v1.35.4', 'v1.36.3', false, 'minor'],
    ['v1.35.4-eks-a737599', 'v1.36.0-eks-b848600', false, 'minor'],
    ['v1.35.10', 'v1.36.0', false, 'minor'],
    // Already there: build metadata and vendor suffixes do not matter.
    ['v1.36.3', 'v1.36.3', false, 'none'],
    ['v1.36.3+rke2r1', 'v1.36.3', false, 'none'],
    ['v1.36.3-eks-1234', 'v1.36.3', false, 'none'],
    ['v1.36.3-gke.100', 'v1.36.3-gke.200', false, 'none'],
    ['v1.36.0-rc.1', 'v1.36.0-rc.1', true, 'none'],
    // Pre-releases: ordered, a pre-release target needs allowPrerelease, moving to or from one is a minor change.
    ['v1.36.0', 'v1.36.0-rc.1', false, 'PrereleaseTarget'],
    ['v1.36.0', 'v1.36.0-rc.1', true, 'Downgrade'],
    ['v1.36.0+rke2r1', 'v1.36.0-rc.1', true, 'Downgrade'],
    ['v1.36.0-eks-1234', 'v1.36.0-rc.1', true, 'Downgrade'],
    ['v1.36.0-rc.1', 'v1.36.0', false, 'minor'],
    ['v1.36.0-rc.1', 'v1.36.0-rc.2', true, 'minor'],
    ['v1.36.0-rc.2', 'v1.36.0-rc.1', true, 'Downgrade'],
    ['v1.36.0-alpha.1', 'v1.36.0-beta.0', true, 'minor'],
    ['v1.36.0-beta.0', 'v1.36.0-alpha.1', true, 'Downgrade'],
    ['v1.35.4', 'v1.36.0-rc.1', true, 'minor'],
    ['v1.35.4', 'v1.36.0-rc.1', false, 'PrereleaseTarget'],
    ['v1.36.0-rc.1', 'v1.36.0-rc.1', false, 'PrereleaseTarget'],
    ['v1.36.0-alpha.1', 'v1.37.0', false, 'minor'],
    ['v1.36.0-rc.1', 'v1.36.1', false, 'minor'],
    // Downgrades.
    ['v1.36.3', 'v1.36.2', false, 'Downgrade'],
    ['v1.36.3+rke2r1', 'v1.36.2+rke2r1', false, 'Downgrade'],
    ['v1.36.0', 'v1.35.4', false, 'Downgrade'],
    ['v1.36.3-eks-1234', 'v1.36.2-eks-9999', false, 'Downgrade'],
    // One minor at a time.
    ['v1.34.0', 'v1.36.0', false, 'SkipsMinor'],
    ['v1.35.4', 'v1.37.0-alpha.1', true, 'SkipsMinor'],
    // No major change, either way.
    ['v1.36.3', 'v2.0.0', false, 'MajorVersionChange'],
    ['v2.0.0', 'v1.36.3', false, 'MajorVersionChange'],
    // Versions that cannot be read.
    ['v1.36.3', '1.36.4', false, 'InvalidTargetVersion'],
    ['v1.36.3', 'v1.36.4-RC.1', true, 'InvalidTargetVersion'],
    ['1.36.3', 'v1.36.4', false, 'UnknownVersion'],
    ['v1.36', 'v1.36.4', false, 'UnknownVersion'],
    ['unknown', 'v1.36.4-rc.1', false, 'PrereleaseTarget'],
  ];
  for (const [from, to, allowPrerelease, want] of cases) {
    it(`${from} -> ${to}${allowPrerelease ? ' (allowPrerelease)' : ''}: ${want}`, () => {
      const got = classifyUpgrade(from, to, { allowPrerelease });
      if (got.ok) assert.equal(got.kind, want);
      else {
        assert.equal(got.reason, want, got.message);
        assert.ok(got.message.length > 0);
      }
    });
  }
});

describe('proxyGateOnByDefault', () => {
  const cases: [string, boolean | undefined][] = [
    ['v1.27.0', false],
    ['v1.34.9', false],
    ['v1.35.4', false],
    ['v1.35.4+rke2r1', false],
    ['v1.35.4-eks-a737599', false],
    ['v1.36.0-alpha.1', true],
    ['v1.36.0', true],
    ['v1.36.3', true],
    ['v1.36.3-gke.100', true],
    ['v1.37.0', true],
    ['v1.37.2', true],
    ['v1.38.0', undefined],
    ['v1.38.0-alpha.1', undefined],
    ['v2.0.0', undefined],
  ];
  for (const [v, want] of cases) {
    it(`${v}: ${want === undefined ? 'unknown' : want ? 'on' : 'off'}`, () => {
      assert.equal(proxyGateOnByDefault(v), want);
      assert.equal(proxyGateOnByDefault(parseVersion(v)!), want, 'parsed argument');
    });
  }
  it('throws on a string that is not a Kubernetes version', () => assert.throws(() => proxyGateOnByDefault('1.36.0'), RangeError));
});

describe('properties', () => {
  const ident = fc.stringMatching(/^[0-9A-Za-z-]{1,8}$/);
  const build = fc.array(ident, { minLength: 1, maxLength: 3 }).map((ids) => `+${ids.join('.')}`);
  const prerelease = fc
    .tuple(fc.constantFrom('alpha', 'beta', 'rc'), fc.nat(12), fc.option(fc.nat(40), { nil: undefined }))
    .map(([word, n, commits]) => (commits === undefined ? `-${word}.${n}` : `-${word}.${n}.${commits}`));
  // Mostly near each other (so equal releases, patch, minor and skipped minors all come up), sometimes anywhere.
  const near = fc.tuple(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 34, max: 38 }), fc.nat(3));
  const anywhere = fc.tuple(fc.nat(3), fc.nat(40), fc.nat(12));
  const core = fc.oneof({ arbitrary: near, weight: 3 }, { arbitrary: anywhere, weight: 1 }).map(([a, b, c]) => `v${a}.${b}.${c}`);
  /** Upstream versions: a release or an upstream pre-release, with or without build metadata. */
  const upstream = fc
    .tuple(core, fc.option(prerelease, { nil: undefined }), fc.option(build, { nil: undefined }))
    .map(([c, p, b]) => `${c}${p ?? ''}${b ?? ''}`);
  const vendorSuffix = fc.oneof(
    fc.stringMatching(/^[0-9a-f]{7}$/).map((h) => `-eks-${h}`),
    fc.nat(2_000_000).map((n) => `-gke.${n}`),
  );
  /** Anything a server may report: upstream versions and vendor builds of releases. */
  const reported = fc.oneof(
    upstream,
    fc.tuple(core, vendorSuffix, fc.option(build, { nil: undefined })).map(([c, s, b]) => `${c}${s}${b ?? ''}`),
  );
  const noBuild = (v: string) => v.replace(/\+.*$/, '');

  it('compareVersions is semver order for upstream versions', () => {
    fc.assert(
      fc.property(upstream, upstream, (a, b) => {
        assert.equal(compareVersions(a, b), semver.compare(a.slice(1), b.slice(1)));
      }),
    );
  });

  it('compareVersions is a total order (antisymmetric, transitive) over everything servers report', () => {
    fc.assert(
      fc.property(reported, reported, reported, (a, b, c) => {
        assert.equal(compareVersions(a, b), -compareVersions(b, a) || 0);
        assert.equal(compareVersions(a, a), 0);
        if (compareVersions(a, b) <= 0 && compareVersions(b, c) <= 0) assert.ok(compareVersions(a, c) <= 0);
        if (compareVersions(a, b) === 0) assert.equal(compareVersions(a, c), compareVersions(b, c));
      }),
    );
  });

  it('sameRelease ignores any build metadata', () => {
    fc.assert(
      fc.property(reported, build, build, (v, b1, b2) => {
        const bare = noBuild(v);
        assert.ok(sameRelease(bare + b1, bare + b2));
        assert.ok(sameRelease(bare + b1, bare));
        assert.ok(sameRelease(bare, bare + b2));
      }),
    );
  });

  it('sameRelease of upstream versions is equality once build metadata is dropped', () => {
    fc.assert(fc.property(upstream, upstream, (a, b) => assert.equal(sameRelease(a, b), noBuild(a) === noBuild(b))));
  });

  it('classifyUpgrade never says ok for a downgrade, and says none exactly at the target', () => {
    fc.assert(
      fc.property(reported, reported, fc.boolean(), (from, to, allowPrerelease) => {
        const got = classifyUpgrade(from, to, { allowPrerelease });
        const cmp = compareVersions(to, from);
        if (cmp < 0) assert.equal(got.ok, false, `${from} -> ${to} is a downgrade`);
        if (got.ok) assert.equal(got.kind === 'none', sameRelease(from, to));
        if (!allowPrerelease && isPrerelease(to)) assert.ok(!got.ok && got.reason === 'PrereleaseTarget');
      }),
    );
  });
});

/**
 * test_node_engines.mjs: `npm ci` on the oldest node that
 * docker/install-deps.sh accepts prints no EBADENGINE warning.
 *
 * install-deps keeps a node already on PATH when it is 18 or later and
 * otherwise installs Debian's (Debian 12 ships 18). npm warns EBADENGINE
 * for every locked package whose "engines.node" range leaves out the
 * running node, so every range in package-lock.json must take in the
 * whole floor major: 18.0.0 and the newest 18 alike (and the node running
 * this test). The floor is read from install-deps itself and must equal
 * package.json's own "engines". The ranges are read with a small reader of
 * npm's range syntax (comparators, caret, tilde, x-ranges, hyphen ranges,
 * ||); a range it cannot read fails the test rather than passing it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const parse = (v) => {
  const m = /^v?(\d+|[x*])(?:\.(\d+|[x*]))?(?:\.(\d+|[x*]))?(?:-[0-9A-Za-z.-]+)?$/.exec(v);
  if (!m) throw new Error(`not a version: "${v}"`);
  return m.slice(1, 4).map((p) => (p === undefined || p === 'x' || p === '*' ? null : Number(p)));
};
const cmp = (a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
const lo = (p) => p.map((x) => x ?? 0);
/* the first version above an x-range: 1.x -> 2.0.0, 1.2.x -> 1.3.0 */
const above = (p) => (p[0] === null ? [Infinity, 0, 0] : p[1] === null ? [p[0] + 1, 0, 0] : p[2] === null ? [p[0], p[1] + 1, 0] : null);

/** Whether version v ([major, minor, patch]) is in npm range r. */
function satisfies(v, r) {
  return r.split('||').some((set) => {
    const s = set.trim().replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1');
    if (s === '' || s === '*' || s === 'x') return true;
    const hy = /^(\S+)\s+-\s+(\S+)$/.exec(s);
    if (hy) {
      const a = parse(hy[1]), b = parse(hy[2]);
      const top = above(b);
      return cmp(v, lo(a)) >= 0 && (top ? cmp(v, top) < 0 : cmp(v, b) <= 0);
    }
    return s.split(/\s+/).every((c) => {
      const m = /^(>=|<=|>|<|=|\^|~)?(.+)$/.exec(c);
      const op = m[1] || '=', p = parse(m[2]), base = lo(p);
      switch (op) {
      case '>=': return cmp(v, base) >= 0;
      case '>': return above(p) ? cmp(v, above(p)) >= 0 : cmp(v, base) > 0;
      case '<': return cmp(v, base) < 0;
      case '<=': return above(p) ? cmp(v, above(p)) < 0 : cmp(v, base) <= 0;
      case '=': return cmp(v, base) >= 0 && (above(p) ? cmp(v, above(p)) < 0 : cmp(v, base) === 0);
      case '^': {
        const top = p[0] > 0 || p[1] === null ? [p[0] + 1, 0, 0] : p[1] > 0 || p[2] === null ? [0, p[1] + 1, 0] : [0, 0, p[2] + 1];
        return cmp(v, base) >= 0 && cmp(v, top) < 0;
      }
      case '~': return cmp(v, base) >= 0 && cmp(v, p[1] === null ? [p[0] + 1, 0, 0] : [p[0], p[1] + 1, 0]) < 0;
      default: throw new Error(`cannot read range "${r}"`);
      }
    });
  });
}

const script = readFileSync('docker/install-deps.sh', 'utf8');
const floorMatch = /"\$major" -lt (\d+) \]/.exec(script);
const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));

test('the range reader reads npm ranges as npm does', () => {
  const yes = [['>=18', [18, 0, 0]], ['>= 14.6', [18, 0, 0]], ['^18.12.0 || >=20', [21, 0, 0]], ['>=10.0.0', [18, 0, 0]],
    ['14 - 18', [18, 20, 4]], ['^16 || ^18', [18, 0, 0]], ['~18.0', [18, 0, 9]], ['*', [18, 0, 0]], ['18.x', [18, 3, 1]]];
  const no = [['>=20', [18, 20, 4]], ['>=22', [20, 0, 0]], ['^18.12.0 || >=20', [18, 0, 0]], ['^16', [18, 0, 0]],
    ['<18', [18, 0, 0]], ['14 - 16', [17, 0, 0]], ['~18.0', [18, 1, 0]], ['>18', [18, 0, 0]], ['18.x', [19, 0, 0]]];
  for (const [r, v] of yes) assert.equal(satisfies(v, r), true, `${v.join('.')} in ${r}`);
  for (const [r, v] of no) assert.equal(satisfies(v, r), false, `${v.join('.')} not in ${r}`);
  assert.throws(() => satisfies([18, 0, 0], 'latest'), /not a version/);
});

test('install-deps, package.json and every locked package agree on the node floor', () => {
  assert.ok(floorMatch, 'docker/install-deps.sh checks a node major version');
  const floor = Number(floorMatch[1]);
  assert.equal(pkg.engines.node, `>=${floor}`, 'package.json states the floor install-deps enforces');
  const running = process.versions.node.split('.').map(Number);
  const versions = [[floor, 0, 0], [floor, 99, 99], running];
  const refused = [];
  let ranged = 0;
  for (const [path, entry] of Object.entries(lock.packages)) {
    const r = entry.engines?.node;
    if (!r) continue;
    ranged++;
    for (const v of versions) {
      if (!satisfies(v, r)) refused.push(`${path || 'package.json'} ${entry.version ?? ''} wants node ${r}, not ${v.join('.')}`);
    }
  }
  assert.ok(ranged >= 5, `the lock file's engines were read (${ranged})`);
  assert.deepEqual(refused, [], 'npm ci would print EBADENGINE for these');
});

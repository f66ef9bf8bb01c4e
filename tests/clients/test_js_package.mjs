/**
 * test_js_package.mjs: the JavaScript client as the npm package a user
 * installs (clients/js/package.json), under Node's test runner.
 *
 * `npm pack` of clients/js must hold exactly the module, its declarations,
 * its README and package.json; unpacked into a scratch node_modules (with
 * the repository's pinned "ws" beside it, as npm would install the
 * dependency; nothing is fetched) it is imported by its name from a
 * program outside the repository, which talks to a live ikd (a solve, a
 * stream, a tick; answers checked by the leg's geometry). Its TypeScript
 * declarations are compiled with tsc (Debian's node-typescript) against a
 * typed use of the package (tests/clients/types/check.mts), whose
 * @ts-expect-error lines must each be refused, and every value ikd.js
 * exports is declared in ikd.d.ts and nothing more.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { start } from './ikd_daemon.mjs';

const LIMIT = { timeout: 60000 };
const ROOT = resolve('.');
let dir;
let tarball;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ikd-js-package-'));
  const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
    cwd: join(ROOT, 'clients', 'js'),
    encoding: 'utf8',
    env: { ...process.env, npm_config_loglevel: 'error', npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' },
  });
  [tarball] = JSON.parse(out);
  const pkg = join(dir, 'app', 'node_modules', 'ikd-client');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['xzf', join(dir, tarball.filename), '-C', pkg, '--strip-components=1']);
  symlinkSync(join(ROOT, 'node_modules', 'ws'), join(dir, 'app', 'node_modules', 'ws'));
  writeFileSync(join(dir, 'app', 'package.json'), '{"type":"module","private":true}\n');
});
after(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

test('npm pack holds the module, its declarations, README and package.json', LIMIT, () => {
  assert.equal(tarball.name, 'ikd-client');
  assert.deepEqual(tarball.files.map((f) => f.path).sort(), ['README.md', 'ikd.d.ts', 'ikd.js', 'package.json']);
  const pkg = JSON.parse(readFileSync('clients/js/package.json', 'utf8'));
  assert.equal(pkg.type, 'module');
  assert.equal(pkg.exports['.'].types, './ikd.d.ts');
  assert.ok(pkg.dependencies.ws, 'ws is declared for Node');
});

test('the installed package, imported by name, talks to a live ikd', LIMIT, async () => {
  const daemon = await start(['--token', 'pkg']);
  try {
    writeFileSync(join(dir, 'app', 'main.mjs'), `
      import { Ikd, VERSION } from 'ikd-client';
      const leg = { kind: 'bones', positions: [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]] };
      const ikd = new Ikd(process.argv[2], { token: 'pkg' });
      const one = await ikd.solve({ chain: leg, target: { position: [0.2, 0.1, 0.25] } });
      const conn = ikd.connect({ reconnect: false });
      const s = await conn.open('leg', { chain: leg });
      const sol = await s.target({ position: [0.15, 0.05, 0.3] });
      const tick = await conn.tick({ leg: { position: [0.1, 0.1, 0.35] } });
      await conn.close();
      console.log(JSON.stringify({ version: VERSION, one: one.positions, sol: sol.result.positions,
                                   tick: tick.solutions[0].result.positions }));`);
    const out = await new Promise((ok, fail) => execFile(process.execPath, ['main.mjs', daemon.base],
      { cwd: join(dir, 'app'), timeout: 20000 }, (e, stdout, stderr) => (e ? fail(new Error(`${e.message}\n${stderr}`)) : ok(stdout))));
    const r = JSON.parse(out);
    assert.equal(r.version, JSON.parse(readFileSync('clients/js/package.json', 'utf8')).version);
    const dist = (a, b) => Math.hypot(...a.map((v, i) => v - b[i]));
    for (const [positions, target] of [[r.one, [0.2, 0.1, 0.25]], [r.sol, [0.15, 0.05, 0.3]], [r.tick, [0.1, 0.1, 0.35]]]) {
      assert.ok(dist(positions[2], target) < 1e-9, `foot on ${target}`);
      assert.ok(Math.abs(dist(positions[0], positions[1]) - Math.hypot(0.1, 0, 0.45)) < 1e-9, 'thigh kept');
    }
  } finally {
    assert.equal(await daemon.stop(), 0, daemon.log());
  }
});

test('the declarations compile against a typed use, and refuse its misuses', LIMIT, () => {
  const types = join(dir, 'app', 'types');
  cpSync(join(ROOT, 'tests', 'clients', 'types'), types, { recursive: true });
  let out = '';
  try {
    execFileSync('tsc', ['-p', types], { encoding: 'utf8' });
  } catch (e) {
    out = `${e.stdout || ''}${e.stderr || ''}${e.code === 'ENOENT' ? 'tsc not found: sh docker/install-deps.sh installs node-typescript' : ''}`;
  }
  assert.equal(out, '', out);
  /* the checker does check: one misuse without its expect-error fails */
  const src = readFileSync(join(types, 'check.mts'), 'utf8');
  writeFileSync(join(types, 'check.mts'), src.replace('// @ts-expect-error: a target\'s position is numbers\n', ''));
  assert.throws(() => execFileSync('tsc', ['-p', types], { encoding: 'utf8' }), (e) => /TS2322/.test(e.stdout));
});

test('every value ikd.js exports is declared in ikd.d.ts, and nothing more', LIMIT, async () => {
  const mod = await import('../../clients/js/ikd.js');
  const dts = readFileSync('clients/js/ikd.d.ts', 'utf8');
  const declared = [...dts.matchAll(/^export (?:declare )?(?:const|function|class) (\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(Object.keys(mod).sort(), declared);
});

/**
 * test_page.mjs: the live page (web/, built into build/web by make web) in
 * Debian's chromium, driven by playwright-core, against the real daemon
 * started with --token and --web (tests/clients/ikd_daemon.mjs).
 *
 * Covered: the static files as served (no token needed for the page while
 * the API keeps asking for it, content types, traversal and unknown names
 * answered 404); the page loaded with the token in its fragment (which it
 * removes from the address bar) opens its three streams over the
 * Sec-WebSocket-Protocol token; a real mouse drag of the foot target
 * through three.js's TransformControls moves the target, the "leg" stream
 * answers, and the drawn skeleton's foot (three.js's own forward kinematics
 * of the answered bone rotations) lands on the target; a drag of the
 * robot's gizmo moves the iiwa's tool onto it with every joint within its
 * limits; latency and solutions per second are on screen; a wrong token
 * gets the page's request for one. A screenshot is saved as
 * build/web-page.png. The page snippet of clients/js/README.md, saved as
 * its README says (index.html next to a copy of ikd.js, served by ikd
 * --token s3cret --web), logs the leg's answer to the console: seq 1, the
 * foot on the target, both bones as long as before.
 *
 * If chromium cannot start, the test fails and says so.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { start } from '../clients/ikd_daemon.mjs';

/** every test is bounded: a hang is a failure, not a stuck suite */
const LIMIT = { timeout: 120000 };
const BUILD = process.env.IKD_BUILD || 'build';
const WEB = join(BUILD, 'web');
const CHROMIUM = process.env.IKD_CHROMIUM || '/usr/bin/chromium';
const TOKEN = 'page-test-token';
const WAIT = 30000;

let daemon;
let browser;
let profile;

before(async () => {
  assert.ok(existsSync(join(WEB, 'index.html')), `${WEB}/index.html is missing: run "make web" (after npm ci)`);
  daemon = await start(['--token', TOKEN, '--web', WEB]);
});

after(async () => {
  if (browser) await browser.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  if (daemon) assert.equal(await daemon.stop(), 0, daemon.log());
});

async function launch() {
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    assert.fail(`playwright-core is not installed (npm ci): ${e.message}`);
  }
  profile = mkdtempSync(join(tmpdir(), 'ikd-chromium-'));
  try {
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 800 },
      timeout: WAIT,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        '--enable-unsafe-swiftshader'],
    });
  } catch (e) {
    assert.fail(`chromium cannot start (${CHROMIUM}; docker/install-deps.sh installs it): ${e.message}`);
  }
}

async function get(path, headers = {}) {
  const r = await fetch(daemon.base + path, { headers });
  return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
}

test('the page and its files are served without a token; the API still needs it', LIMIT, async () => {
  const index = await get('/');
  assert.equal(index.status, 200);
  assert.equal(index.type, 'text/html; charset=utf-8');
  assert.match(index.body, /<script type="importmap">/);
  assert.equal((await get('/index.html')).body, index.body);
  assert.equal((await get('/app.js')).type, 'text/javascript; charset=utf-8');
  assert.equal((await get('/ikd.js')).type, 'text/javascript; charset=utf-8');
  const three = await get('/three.module.js');
  assert.equal(three.status, 200);
  assert.match(three.body, /three\.core\.js/);
  assert.equal((await get('/kuka_iiwa14_r820.urdf')).type, 'application/xml');
  for (const p of ['/../Makefile', '/..%2fMakefile', '/%2e%2e/Makefile', '/.built', '/web/index.html', '/nothing.js', '/index.html/']) {
    assert.equal((await get(p)).status, 404, p);
  }
  assert.equal((await get('/v1/solvers')).status, 401);
  assert.equal((await get('/v1/solvers', { Authorization: `Bearer ${TOKEN}` })).status, 200);
  await assert.rejects(start(['--web', '/nonexistent/ikd-web']), /exited \(1\).*--web \/nonexistent\/ikd-web/s);
});

/** Drags from the handle's place on screen by (dx, dy) with a real mouse. */
async function drag(page, name, dx, dy) {
  const p = await page.evaluate((n) => window.ikdPage.screenOf(n), name);
  assert.ok(p, `no handle ${name}`);
  await page.mouse.move(p.x, p.y);
  await page.mouse.move(p.x + 1, p.y + 1);
  await page.mouse.down();
  await page.mouse.move(p.x + dx, p.y + dy, { steps: 20 });
  await page.mouse.up();
}

/** Waits until a stream has answered everything it was sent (more than `after`). */
async function settled(page, name, afterSent) {
  await page.waitForFunction(([n, a]) => {
    const s = window.ikdPage.state.streams[n];
    return s && s.sent > a && s.answered === s.sent;
  }, [name, afterSent], { timeout: WAIT });
  return page.evaluate((n) => window.ikdPage.state.streams[n], name);
}

test('in chromium: dragging the foot and the robot gizmo, the stream answers and the end effectors follow', LIMIT, async () => {
  await launch();
  const page = browser.pages()[0] || await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(`${daemon.base}/#token=${TOKEN}`);
  await page.waitForFunction(() => window.ikdPage && window.ikdPage.state.ready, null, { timeout: WAIT });
  assert.equal(new URL(page.url()).hash, '', 'the token is taken out of the address bar');
  const s0 = await page.evaluate(() => window.ikdPage.state);
  assert.equal(s0.connection, 'open');
  assert.equal(s0.webgl, true, 'WebGL (software) is available');
  for (const n of ['leg', 'arm', 'iiwa']) assert.equal(s0.streams[n].status, 'success', `${n}: first answer`);
  const leg0 = await settled(page, 'leg', 0);
  const target0 = await page.evaluate(() => window.ikdPage.handles.leg_target.position.toArray());

  await drag(page, 'leg_target', 70, -50);
  const leg = await settled(page, 'leg', leg0.sent);
  const target = await page.evaluate(() => window.ikdPage.handles.leg_target.position.toArray());
  const moved = Math.hypot(...target.map((v, i) => v - target0[i]));
  assert.ok(moved > 1.0, `the drag moved the foot target (${moved} BVH units)`);
  assert.ok(leg.solutions >= 3, `the leg stream answered along the drag (${leg.solutions} solutions)`);
  assert.equal(leg.status, 'success');
  assert.equal(leg.error, '');
  assert.ok(leg.followError < 1e-6, `the drawn foot is on the target (${leg.followError})`);
  assert.ok(leg.poleCos > 0.999, `the knee bends towards the pole (cosine ${leg.poleCos})`);
  const foot = Math.hypot(...leg.effector.map((v, i) => v - target[i]));
  assert.ok(foot < 1e-6, `the foot follows the dragged target (${foot})`);

  const state = await page.evaluate(() => window.ikdPage.state);
  assert.ok(state.rttMs > 0, 'round-trip latency measured');
  assert.match(await page.textContent('#rtt'), /^\d+\.\d\d ms \(mean \d+\.\d\d\)$/);
  assert.match(await page.textContent('#rate'), /^\d+$/);

  await page.evaluate(() => window.ikdPage.select('iiwa'));
  const iiwa0 = await settled(page, 'iiwa', 0);
  const goal0 = await page.evaluate(() => window.ikdPage.handles.iiwa.position.toArray());
  await drag(page, 'iiwa', -40, -30);
  const iiwa = await settled(page, 'iiwa', iiwa0.sent);
  const goal = await page.evaluate(() => window.ikdPage.handles.iiwa.position.toArray());
  assert.ok(Math.hypot(...goal.map((v, i) => v - goal0[i])) > 0.02, 'the drag moved the gizmo');
  const robot = await page.evaluate(() => window.ikdPage.state.robot);
  assert.equal(iiwa.status, 'success');
  assert.ok(robot.tipError < 1e-4, `the tool is on the gizmo (${robot.tipError} m)`);
  assert.equal(robot.withinLimits, true);
  assert.equal(robot.joints.length, 7);
  assert.equal(await page.textContent('#limits'), 'within limits');

  /* rotate mode (key E) and a turn of the gizmo about its own x axis: the
   * tool takes the full pose */
  await page.keyboard.press('e');
  assert.equal(await page.evaluate(() => window.ikdPage.gizmo.mode), 'rotate');
  const sent = iiwa.sent;
  await page.evaluate(() => {
    const { handles, gizmo } = window.ikdPage;
    handles.iiwa.rotateX(0.35);
    gizmo.dispatchEvent({ type: 'objectChange' });
  });
  const turned = await settled(page, 'iiwa', sent);
  const robot2 = await page.evaluate(() => window.ikdPage.state.robot);
  assert.equal(turned.status, 'success');
  assert.ok(robot2.tipAngleError < 1e-4, `the tool turned with the gizmo (${robot2.tipAngleError} rad off)`);
  assert.ok(robot2.tipError < 1e-4);
  assert.equal(robot2.withinLimits, true);
  assert.ok(turned.counts.success >= 3 && turned.counts.other === 0);

  await page.screenshot({ path: join(BUILD, 'web-page.png') });
  assert.deepEqual(problems, [], 'no errors in the page');
});

test('in chromium: ikd restarts, the page reconnects and its streams answer again', LIMIT, async () => {
  if (!browser) await launch();
  const page = await browser.newPage();
  await page.goto(`${daemon.base}/#token=${TOKEN}`);
  await page.waitForFunction(() => window.ikdPage && window.ikdPage.state.ready, null, { timeout: WAIT });
  const before = await settled(page, 'leg', 0);
  const port = daemon.port;
  assert.equal(await daemon.stop(), 0);
  daemon = null;
  await page.waitForFunction(() => window.ikdPage.state.connection === 'reconnecting', null, { timeout: WAIT });
  daemon = await start(['--token', TOKEN, '--web', WEB, '--listen', `127.0.0.1:${port}`]);
  await page.waitForFunction(() => window.ikdPage.state.reopened === 1 && window.ikdPage.state.connection === 'open', null, { timeout: WAIT });
  const again = await settled(page, 'leg', before.sent);
  assert.equal(again.status, 'success');
  await drag(page, 'leg_target', -40, -40);
  const after = await settled(page, 'leg', again.sent);
  assert.equal(after.status, 'success');
  assert.ok(after.followError < 1e-6, `the foot follows after the reconnection (${after.followError})`);
  await page.close();
});

test('in chromium: a wrong token gets the page asking for the right one', LIMIT, async () => {
  if (!browser) await launch();
  const page = await browser.newPage();
  await page.goto(`${daemon.base}/#token=wrong`);
  await page.waitForFunction(() => window.ikdPage && window.ikdPage.state.message !== '', null, { timeout: WAIT });
  assert.match(await page.textContent('#message'), /wants a token/);
  assert.equal(await page.evaluate(() => window.ikdPage.state.connection), 'closed');
  await page.close();
});

test('in chromium: the page snippet of clients/js/README.md runs as written', LIMIT, async () => {
  const readme = readFileSync('clients/js/README.md', 'utf8');
  const blocks = [...readme.matchAll(/^```html\n([\s\S]*?)^```\n/gm)].map((m) => m[1]);
  assert.equal(blocks.length, 1);
  const dir = mkdtempSync(join(tmpdir(), 'ikd-snippet-'));
  writeFileSync(join(dir, 'index.html'), blocks[0]);
  copyFileSync('clients/js/ikd.js', join(dir, 'ikd.js'));
  const d = await start(['--token', 's3cret', '--web', dir]);
  try {
    if (!browser) await launch();
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(e.message));
    const logged = new Promise((ok) => {
      page.on('console', async (m) => {
        const args = await Promise.all(m.args().map((a) => a.jsonValue()));
        if (args[0] === 1) ok(args);
      });
    });
    await page.goto(`${d.base}/`);
    const timeout = new Promise((_, no) => setTimeout(() => no(new Error(`no console.log of seq 1: ${problems}`)), WAIT).unref());
    const [, positions] = await Promise.race([logged, timeout]);
    const leg = [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]];
    const dist = (a, b) => Math.hypot(...a.map((v, i) => v - b[i]));
    assert.ok(dist(positions[0], leg[0]) < 1e-12, 'the hip stays');
    assert.ok(Math.abs(dist(positions[0], positions[1]) - dist(leg[0], leg[1])) < 1e-9, 'the thigh keeps its length');
    assert.ok(Math.abs(dist(positions[1], positions[2]) - dist(leg[1], leg[2])) < 1e-9, 'the shin keeps its length');
    assert.ok(dist(positions[2], [0.2, 0.1, 0.25]) < 1e-9, 'the foot is on the target');
    assert.deepEqual(problems, [], 'no errors in the page');
    await page.close();
  } finally {
    assert.equal(await d.stop(), 0, d.log());
    rmSync(dir, { recursive: true, force: true });
  }
});

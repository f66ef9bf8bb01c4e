/**
 * test_page.mjs: the workbench page (web/, built into build/web by make
 * web) in Debian's chromium, driven by playwright-core, against the real
 * daemon started with --token and --web (tests/clients/ikd_daemon.mjs).
 *
 * Covered: the static files as served (no token needed for the page while
 * the API keeps asking for it, content types, traversal and unknown names
 * answered 404); the page loaded with the token in its fragment (taken out
 * of the address bar) opens the repository's iiwa and walk; a URDF from the
 * repository (a two-armed robot) opened through the file input becomes a
 * rig, its base and two tips picked in the panel make a tree chain, and a
 * real mouse drag of a tip's target moves it in the view plane (its depth
 * from the camera unchanged) with the tip following onto it, measured by
 * the page's own forward kinematics of the answered joints; the request the
 * panel shows, sent as it is to POST /v1/solve, succeeds and its joints put
 * the tip on the target (same forward kinematics), and "copy as curl" is
 * that request; the CMU walk opened through the file input plays with its
 * feet locked (on every frame drawn while a foot is planted, the drawn
 * foot is on its locked target, the target stays put for the whole plant,
 * and the motion's own feet strayed from those places: the skating the
 * lock removes); the camera does not orbit under the floor; at 420 px wide
 * the panel is a bottom sheet that leaves the view free until opened;
 * screenshots build/web-page.png, build/web-page-phone.png and
 * build/web-page-scene.png (the box below); no page errors. Collisions on
 * the iiwa: a box from the panel, put on the arm's elbow through the world
 * (the screen's y-up frame), goes to ikd as the stream's scene in the base
 * frame (z up), checked on the WebSocket's frames against the test's own
 * conversion; the answer says the arm is in it; with avoid_collisions and
 * a margin the arm moves clear, which the test checks with its own forward
 * kinematics (joint origins and axes read from the URDF) and its own
 * capsule-to-box distance; the box dragged with a real mouse sends a scene
 * message and the arm stays clear, as it does when the target is dragged
 * and when the request shown is sent over HTTP; the box on the tool's
 * target gets in_collision with the pair shown; at 420 px the panel with an
 * obstacle has no sideways overflow. Then: ikd restarts and the page
 * reconnects; a wrong token gets the page's request for one; the page
 * snippet of clients/js/README.md, saved as its README says, logs the
 * leg's answer.
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
const DATA = process.env.IKD_DATA || 'tests/data';
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
  await page.mouse.down();
  await page.mouse.move(p.x + dx, p.y + dy, { steps: 12 });
  await page.mouse.up();
}

/** Waits until a rig's stream has answered everything it was sent (more than `after`). */
async function settled(page, rig, afterSent) {
  await page.waitForFunction(([n, a]) => {
    const r = window.ikdPage.state.rigs[n];
    return r && r.sent > a && r.answered === r.sent;
  }, [rig, afterSent], { timeout: WAIT });
  return page.evaluate((n) => window.ikdPage.state.rigs[n], rig);
}

const dist = (a, b) => Math.hypot(...a.map((v, i) => v - b[i]));

async function open(page) {
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  await page.goto(`${daemon.base}/#token=${TOKEN}`);
  await page.waitForFunction(() => window.ikdPage && window.ikdPage.state.ready, null, { timeout: WAIT });
  return problems;
}

test('in chromium: a URDF and a BVH opened by file, a tree chain dragged, the walk played with its feet locked', LIMIT, async () => {
  await launch();
  const page = browser.pages()[0] || await browser.newPage();
  const problems = await open(page);
  assert.equal(new URL(page.url()).hash, '', 'the token is taken out of the address bar');
  const s0 = await page.evaluate(() => window.ikdPage.state);
  assert.equal(s0.connection, 'open');
  assert.equal(s0.webgl, true, 'WebGL (software) is available');
  assert.deepEqual(Object.keys(s0.rigs), ['kuka_iiwa14_r820', 'cmu_02_01_walk'], 'the repository\'s robot and walk open at start');
  const iiwa = await settled(page, 'kuka_iiwa14_r820', 0);
  assert.equal(iiwa.status, 'success');
  assert.ok(iiwa.tipErrors.tool0.position < 1e-4, `the iiwa's tool is on its target (${iiwa.tipErrors.tool0.position} m)`);
  assert.equal(iiwa.withinLimits, true);

  /* a URDF through the file input: one rig more, solved on its own stream */
  await page.setInputFiles('#open-urdf', join(DATA, 'robots/baxter_like.urdf'));
  await page.waitForFunction(() => window.ikdPage.state.rigs.baxter_like?.answered >= 1, null, { timeout: WAIT });
  const one = await page.evaluate(() => window.ikdPage.state.rigs.baxter_like);
  assert.equal(one.status, 'success', JSON.stringify(one));
  assert.equal(one.tips.length, 1);

  /* base and two tips picked in the panel: a tree chain */
  const links = await page.$$eval('#tips option', (o) => o.map((x) => x.value));
  const tips = ['left_hand', 'right_hand'].map((t) => links.find((l) => l === t));
  assert.ok(tips.every(Boolean), `both hands are offered as tips (${links})`);
  await page.selectOption('#base', 'base_link');
  await page.selectOption('#tips', tips);
  await page.click('#apply-chain');
  await page.waitForFunction(() => window.ikdPage.state.rigs.baxter_like.tips.length === 2 &&
    window.ikdPage.state.rigs.baxter_like.tipErrors?.right_hand, null, { timeout: WAIT });
  const tree0 = await settled(page, 'baxter_like', 0);
  assert.equal(tree0.status, 'success');
  assert.equal(await page.evaluate(() => window.ikdPage.rigs.get('baxter_like').chain().kind), 'tree');
  const model = await page.evaluate(() => { const r = window.ikdPage.rigs.get('baxter_like'); return { ok: r.withModel, why: r.modelError, c: r.collision }; });
  assert.ok(model.ok && model.c.spheres > 0, `the tree has its collision model (${JSON.stringify(model).slice(0, 300)})`);

  /* a real mouse drag of the right hand's target, in the view plane */
  const handle = 'baxter_like:right_hand';
  const depth = () => page.evaluate((n) => {
    const { stage } = window.ikdPage;
    const p = stage.handles.get(n).mesh.getWorldPosition(stage.camera.position.clone());
    const dir = stage.camera.getWorldDirection(stage.camera.position.clone());
    return { depth: p.sub(stage.camera.position).dot(dir), pose: window.ikdPage.handlePose(n) };
  }, handle);
  const before = await depth();
  await drag(page, handle, -35, -25);
  const tree = await settled(page, 'baxter_like', tree0.sent);
  const after = await depth();
  assert.ok(dist(after.pose.position, before.pose.position) > 0.02, 'the drag moved the target');
  assert.ok(Math.abs(after.depth - before.depth) < 1e-6, `the target kept its depth (${before.depth} -> ${after.depth})`);
  assert.equal(tree.status, 'success');
  for (const t of tips) assert.ok(tree.tipErrors[t].position < 1e-4, `${t} is on its target (${tree.tipErrors[t].position} m)`);
  const fk = await page.evaluate(([j, t]) => window.ikdPage.tipAt('baxter_like', j, t), [tree.joints, 'right_hand']);
  assert.ok(dist(fk.position, after.pose.position) < 1e-4, 'the right hand is on the dragged target');

  /* the request as shown, sent over HTTP: it succeeds and puts the tips on their targets */
  const x = await page.evaluate(() => window.ikdPage.exchange());
  assert.ok(x.request.chain_id && x.request.target.tips.right_hand, JSON.stringify(x.request).slice(0, 200));
  assert.deepEqual(JSON.parse(await page.textContent('#request')), x.request);
  const http = await fetch(`${daemon.base}/v1/solve`, {
    method: 'POST', body: JSON.stringify(x.request),
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(http.status, 200);
  const answer = await http.json();
  assert.equal(answer.status, 'success');
  for (const t of tips) {
    const at = await page.evaluate(([j, tip]) => window.ikdPage.tipAt('baxter_like', j, tip), [answer.joints, t]);
    assert.ok(dist(at.position, x.request.target.tips[t].position) < 1e-4, `${t} from the HTTP answer`);
  }
  const curl = await page.evaluate(() => window.ikdPage.curl());
  assert.ok(curl.startsWith(`curl -sS ${daemon.base}/v1/solve -H 'Content-Type: application/json' -H "Authorization: Bearer $IKD_TOKEN" -d '`), curl.slice(0, 160));
  assert.deepEqual(JSON.parse(curl.slice(curl.indexOf(" -d '") + 5, -1)), x.request);

  /* a BVH through the file input, played: the feet stay on their locks */
  await page.setInputFiles('#open-bvh', join(DATA, 'motion/cmu_02_01_walk.bvh'));
  await page.waitForFunction(() => window.ikdPage.state.rigs.cmu_02_01_walk_2?.drawn >= 1, null, { timeout: WAIT });
  await page.evaluate(() => {
    window.ikdPage.selectRig('cmu_02_01_walk_2');
    const rig = window.ikdPage.rigs.get('cmu_02_01_walk_2');
    rig.locks = {};
    rig.lockTrace = [];
    const answered = rig.answered.bind(rig);
    /* every planted frame drawn: the foot's lock (in the character's frame) and the drawn foot's distance to it */
    rig.answered = (l, result, world) => {
      answered(l, result, world);
      const limb = rig.limbs[l];
      if (limb.planting) rig.lockTrace.push({ l, frame: rig.frame, lock: limb.locked.toArray(), error: limb.error, status: result.status });
    };
  });
  await page.evaluate(() => window.ikdPage.frameRig('cmu_02_01_walk_2'));
  await page.click('#play');
  await page.waitForFunction(() => {
    const t = window.ikdPage.rigs.get('cmu_02_01_walk_2').lockTrace;
    return ['left_foot', 'right_foot'].every((l) => t.filter((e) => e.l === l).length >= 5);
  }, null, { timeout: 60000 });
  await page.screenshot({ path: join(BUILD, 'web-page.png') });
  await page.click('#play');
  const paused = await page.evaluate(() => window.ikdPage.rigs.get('cmu_02_01_walk_2').frame);
  const walk = await page.evaluate(() => {
    const rig = window.ikdPage.rigs.get('cmu_02_01_walk_2');
    return { trace: rig.lockTrace, skate: rig.skate, scale: rig.scale, state: window.ikdPage.state.rigs[rig.name] };
  });
  for (const e of walk.trace) {
    assert.equal(e.status, 'success', `${e.l} at frame ${e.frame}`);
    assert.ok(e.error < 1e-4, `${e.l} at frame ${e.frame} is ${e.error} m from its lock`);
  }
  /* one lock per plant: consecutive planted frames of a foot keep the same place */
  for (const l of ['left_foot', 'right_foot']) {
    const t = walk.trace.filter((e) => e.l === l);
    for (let i = 1; i < t.length; i++) {
      if (t[i].frame - t[i - 1].frame > 0 && t[i].frame - t[i - 1].frame < 3) {
        assert.ok(dist(t[i].lock, t[i - 1].lock) < 1e-12, `${l}'s lock moved within a plant (frame ${t[i].frame})`);
      }
    }
    assert.ok(walk.skate[l] > 0.005, `the motion's own ${l} slid ${walk.skate[l]} m from its lock (the skating removed)`);
  }
  assert.equal(walk.state.playing, false, 'paused');
  await page.waitForTimeout(300);
  assert.equal(await page.textContent('#frame'), `${paused + 1}/344`, 'pausing keeps the frame');
  /* scrubbing: the slider poses that frame, feet locked as in playback */
  const lockedFrame = walk.trace.find((e) => e.l === 'left_foot').frame;
  await page.locator('#scrub').fill(String(lockedFrame));
  await page.waitForFunction((f) => window.ikdPage.state.rigs.cmu_02_01_walk_2.frame === f, lockedFrame, { timeout: WAIT });
  await page.waitForFunction(() => !window.ikdPage.rigs.get('cmu_02_01_walk_2').busy, null, { timeout: WAIT });
  const scrubbed = await page.evaluate(() => window.ikdPage.state.rigs.cmu_02_01_walk_2);
  assert.equal(scrubbed.planted.left_foot, true);
  assert.ok(scrubbed.limbErrors.left_foot < 1e-4, `scrubbed to a planted frame, the foot is on its lock (${scrubbed.limbErrors.left_foot})`);

  /* the camera cannot orbit under the floor: a long upward drag on empty floor */
  const box = await page.locator('#view canvas').boundingBox();
  await page.mouse.move(box.x + box.width - 60, box.y + 80);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width - 60, box.y + box.height - 20, { steps: 10 });
  await page.mouse.up();
  const cam = await page.evaluate(() => {
    const { stage } = window.ikdPage;
    return { y: stage.camera.position.y, target: stage.orbit.target.y };
  });
  assert.ok(cam.y > cam.target && cam.target >= 0, `the camera stays above the floor (${JSON.stringify(cam)})`);

  assert.deepEqual(problems, [], 'no errors in the page');
});

test('in chromium at 420 px: the panel is a bottom sheet that leaves the view free until opened', LIMIT, async () => {
  if (!browser) await launch();
  const page = await browser.newPage();
  await page.setViewportSize({ width: 420, height: 860 });
  const problems = await open(page);
  const closed = await page.locator('#panel').boundingBox();
  assert.ok(closed.height < 90 && closed.y + closed.height >= 859, `closed: a bar at the bottom (${JSON.stringify(closed)})`);
  assert.equal(await page.isVisible('#open-urdf + *, .files'), false, 'the controls are folded away');
  await page.click('#drawer');
  const opened = await page.locator('#panel').boundingBox();
  assert.ok(opened.y >= 860 * 0.5, `open, it covers at most the lower half (${JSON.stringify(opened)})`);
  assert.equal(await page.isVisible('.files'), true);
  /* the collisions section with an obstacle's row fits the sheet's width */
  await page.click('#add-box');
  await page.waitForSelector('#obstacles tr');
  const fit = await page.evaluate(() => {
    const body = document.querySelector('#panel .body');
    const row = document.querySelector('#obstacles tr').getBoundingClientRect();
    return { scroll: body.scrollWidth, width: body.clientWidth, right: row.right, panel: body.getBoundingClientRect().right };
  });
  assert.ok(fit.scroll <= fit.width && fit.right <= fit.panel, `no sideways overflow at 420 px (${JSON.stringify(fit)})`);
  /* a target is still reachable above the sheet and drags there */
  const rig = await settled(page, 'kuka_iiwa14_r820', 0);
  const p = await page.evaluate(() => window.ikdPage.screenOf('kuka_iiwa14_r820:tool0'));
  assert.ok(p.y < opened.y, `the iiwa's target is above the sheet (${p.y} < ${opened.y})`);
  await drag(page, 'kuka_iiwa14_r820:tool0', 20, -20);
  const moved = await settled(page, 'kuka_iiwa14_r820', rig.sent);
  assert.equal(moved.status, 'success');
  assert.ok(moved.tipErrors.tool0.position < 1e-4);
  await page.screenshot({ path: join(BUILD, 'web-page-phone.png') });
  assert.deepEqual(problems, [], 'no errors in the page');
  await page.close();
});

/* ---- the test's own geometry of a URDF arm (neither the page's three.js
 * tree nor ikd's): frames chained from the joints' origins (xyz, then rpy
 * as fixed-axis roll, pitch, yaw) and motions (a turn about the axis), and
 * each link a capsule from its origin to its child joint's origin, the
 * skeleton model the page asks for (collision_skeleton) */

const matMul = (a, b) => a.map((r) => [0, 1, 2].map((j) => r[0] * b[0][j] + r[1] * b[1][j] + r[2] * b[2][j]));
const matVec = (m, v) => m.map((r) => r[0] * v[0] + r[1] * v[1] + r[2] * v[2]);
function axisAngle([x, y, z], t) {
  const n = Math.hypot(x, y, z), c = Math.cos(t), s = Math.sin(t), k = 1 - c;
  [x, y, z] = [x / n, y / n, z / n];
  return [[c + x * x * k, x * y * k - z * s, x * z * k + y * s],
    [y * x * k + z * s, c + y * y * k, y * z * k - x * s],
    [z * x * k - y * s, z * y * k + x * s, c + z * z * k]];
}
const rpy = ([r, p, y]) => matMul(axisAngle([0, 0, 1], y), matMul(axisAngle([0, 1, 0], p), axisAngle([1, 0, 0], r)));

function urdfJoints(text) {
  const num = (s, d) => (s ? s.trim().split(/\s+/).map(Number) : d);
  return [...text.matchAll(/<joint\s+name="([^"]+)"\s+type="([^"]+)"\s*>([\s\S]*?)<\/joint>/g)].map(([, name, type, body]) => ({
    name, type,
    parent: /<parent\s+link="([^"]+)"/.exec(body)[1],
    child: /<child\s+link="([^"]+)"/.exec(body)[1],
    xyz: num(/<origin[^>]*\sxyz="([^"]+)"/.exec(body)?.[1], [0, 0, 0]),
    rpy: num(/<origin[^>]*\srpy="([^"]+)"/.exec(body)?.[1], [0, 0, 0]),
    axis: num(/<axis\s+xyz="([^"]+)"/.exec(body)?.[1], [1, 0, 0]),
  }));
}

/** The capsules' segments from base to tip with these joint values (by name), in the base frame. */
function armSegments(joints, base, tip, values) {
  const path = [];
  for (let link = tip; link !== base;) {
    const j = joints.find((x) => x.child === link);
    assert.ok(j, `${tip} is not below ${base}`);
    path.unshift(j);
    link = j.parent;
  }
  let R = [[1, 0, 0], [0, 1, 0], [0, 0, 1]], p = [0, 0, 0];
  const segments = [];
  for (const j of path) {
    const q = values[j.name] ?? 0;
    const end = matVec(R, j.xyz).map((v, i) => v + p[i]);
    segments.push([p, end, j.child]);
    R = matMul(R, rpy(j.rpy));
    if (j.type !== 'fixed') R = matMul(R, axisAngle(j.axis, q));
    p = end;
  }
  return { segments, tip: p };
}

/** Signed distance from a point to an axis-aligned box (negative inside). */
function pointBox(p, c, size) {
  const d = p.map((v, i) => Math.abs(v - c[i]) - size[i] / 2);
  return Math.hypot(...d.map((v) => Math.max(v, 0))) + Math.min(Math.max(...d), 0);
}

/** Distance from a segment to a box: the signed distance is convex along the segment, so a ternary search finds its least. */
function segmentBox([a, b], c, size) {
  const at = (t) => pointBox(a.map((v, i) => v + t * (b[i] - v)), c, size);
  let lo = 0, hi = 1;
  for (let k = 0; k < 100; k++) {
    const m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
    if (at(m1) < at(m2)) hi = m2; else lo = m1;
  }
  return Math.min(at(0), at(1), at((lo + hi) / 2));
}

test('in chromium: a box on the iiwa\'s elbow, sent in the base frame; with avoid_collisions the arm goes around it', LIMIT, async () => {
  if (!browser) await launch();
  const page = await browser.newPage();
  const sent = [];
  page.on('websocket', (ws) => ws.on('framesent', (f) => {
    if (typeof f.payload === 'string' && /"type":"(scene|open)"/.test(f.payload)) sent.push(JSON.parse(f.payload));
  }));
  const problems = await open(page);
  const name = 'kuka_iiwa14_r820';
  const rig0 = await settled(page, name, 0);
  const urdf = readFileSync(join(DATA, 'robots/kuka_iiwa14_r820.urdf'), 'utf8');
  const joints = urdfJoints(urdf);
  const { chain, jointNames, groupAt } = await page.evaluate((n) => {
    const rig = window.ikdPage.rigs.get(n);
    return { chain: rig.chain(), jointNames: rig.jointNames, groupAt: rig.group.position.toArray() };
  }, name);
  assert.equal(chain.base, 'base_link');
  assert.ok(chain.collision_skeleton > 0.01, 'the chain carries the arm as drawn as its model');
  const radius = chain.collision_skeleton;
  const arm = (q) => armSegments(joints, chain.base, chain.tip, Object.fromEntries(jointNames.map((n, i) => [n, q[i]])));
  const clearance = (q, box) => Math.min(...arm(q).segments.map((s) => segmentBox(s, box.position, box.size))) - radius;
  /* the base frame (ROS, z up) in the page's world (y up): (x, y, z) -> (x, z, -y), plus where the rig stands */
  const toWorld = ([x, y, z]) => [x + groupAt[0], z + groupAt[1], -y + groupAt[2]];
  const lastScene = () => sent.filter((m) => m.type === 'scene').at(-1)?.scene;

  /* a box from the panel, put on the elbow (link_4's origin) of the pose the arm holds */
  await page.click('#add-box');
  await page.waitForSelector('#obstacles tr');
  const elbow = arm(rig0.joints).segments.find((s) => s[2] === 'link_4')[1];
  await page.evaluate(([n, w]) => window.ikdPage.moveObstacle(n, 'box_1', w), [name, toWorld(elbow)]);
  const hit = await settled(page, name, rig0.sent);
  const placed = lastScene().boxes[0];
  assert.ok(dist(placed.position, elbow) < 1e-9, `the scene's box is where it was put, in the base frame (${placed.position} vs ${elbow})`);
  assert.ok(dist(placed.orientation, [0, 0, 0, 1]) < 1e-12);
  assert.ok(placed.size.every((v) => v > 0.05), `a box of some size (${placed.size})`);
  assert.ok(clearance(hit.joints, placed) < 0, 'the box is in the arm\'s way');
  assert.ok(hit.minDistance < 0 && hit.closest?.obstacle === 'box_1', `ikd says so too: ${JSON.stringify(hit.closest)}`);
  assert.match(await page.textContent('#clearance'), /in collision: link_\d and box_1/);
  const drawn = await page.evaluate(([n, link]) => {
    const rig = window.ikdPage.rigs.get(n);
    const { materials } = window.ikdPage;
    const capsules = (l) => rig.linkObj.get(l).children.filter((o) => o.isMesh && o.userData.link);
    return {
      link: capsules(link).length > 0 && capsules(link).every((o) => o.material === materials.linkHit),
      others: [...rig.linkObj.keys()].filter((l) => l !== link).every((l) => capsules(l).every((o) => o.material !== materials.linkHit)),
      box: rig.obstacles.byName('box_1').mesh.material === materials.obstacleHit,
    };
  }, [name, hit.closest.link]);
  assert.deepEqual(drawn, { link: true, others: true, box: true }, `${hit.closest.link} and the box are drawn hit, nothing else`);

  /* a margin, then avoid_collisions: the stream opens again with the scene, and the arm moves clear */
  await page.fill('#collision-margin', '0.02');
  await page.dispatchEvent('#collision-margin', 'change');
  await page.check('#avoid-collisions');
  const clearOf = async (box) => {
    await page.waitForFunction(() => {
      const x = window.ikdPage.exchange();
      const r = window.ikdPage.state.rigs.kuka_iiwa14_r820;
      return x?.request.options.avoid_collisions && r.answered === r.sent && x.answer.status === 'success';
    }, null, { timeout: WAIT });
    const x = await page.evaluate(() => window.ikdPage.exchange());
    assert.deepEqual(x.request.scene.boxes[0].position, box.position, 'the request carries the scene');
    assert.equal(x.request.options.collision_margin, 0.02);
    assert.ok(x.answer.min_distance >= 0.02, `ikd's min_distance ${x.answer.min_distance}`);
    const got = arm(x.answer.joints);
    assert.ok(dist(got.tip, x.request.target.position) < 1e-4, 'the tool is on its target');
    /* ikd's model is spheres inside the test's capsules: between two of them a capsule is up to about a millimetre fuller */
    const c = clearance(x.answer.joints, box);
    assert.ok(c >= 0.02 - 2e-3, `the arm is clear of the box by ${c} m (margin 0.02)`);
    return x;
  };
  const shown = await clearOf(placed);
  /* the request as shown, sent over HTTP: the same scene and options, an answer clear of the box */
  const http = await fetch(`${daemon.base}/v1/solve`, {
    method: 'POST', body: JSON.stringify(shown.request),
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
  });
  const replay = await http.json();
  assert.equal(replay.status, 'success', JSON.stringify(replay).slice(0, 300));
  assert.ok(clearance(replay.joints, placed) >= 0.02 - 2e-3, 'the HTTP answer keeps the arm clear too');
  const opened = sent.filter((m) => m.type === 'open').at(-1);
  assert.equal(opened.options.avoid_collisions, true);
  assert.deepEqual(opened.scene, { boxes: [placed] }, 'the stream opened with the scene');
  assert.match(await page.textContent('#clearance'), /^clear by \d/);

  /* the box dragged with a real mouse: a scene message in the base frame, and the arm still clear */
  const scenes = sent.filter((m) => m.type === 'scene').length;
  await drag(page, `${name}:obstacle:box_1`, 25, 15);
  await page.waitForFunction(() => {
    const r = window.ikdPage.state.rigs.kuka_iiwa14_r820;
    return r.answered === r.sent;
  }, null, { timeout: WAIT });
  assert.ok(sent.filter((m) => m.type === 'scene').length > scenes, 'the drag sent scene messages');
  const world = await page.evaluate(() => {
    const m = window.ikdPage.stage.handles.get('kuka_iiwa14_r820:obstacle:box_1').mesh;
    return m.getWorldPosition(m.position.clone()).toArray();
  });
  const moved = lastScene().boxes[0];
  assert.ok(dist(moved.position, placed.position) > 0.01, 'the drag moved the box');
  assert.ok(dist(toWorld(moved.position), world) < 1e-9, `the scene message has the box where it is drawn (${toWorld(moved.position)} vs ${world})`);
  const before = await clearOf(moved);
  /* the target dragged with a real mouse: the arm follows it, still clear */
  await drag(page, `${name}:tool0`, -20, 12);
  await page.waitForFunction((p) => {
    const x = window.ikdPage.exchange();
    const r = window.ikdPage.state.rigs.kuka_iiwa14_r820;
    return r.answered === r.sent && Math.hypot(...x.request.target.position.map((v, i) => v - p[i])) > 0.01;
  }, before.request.target.position, { timeout: WAIT });
  await clearOf(moved);
  await page.screenshot({ path: join(BUILD, 'web-page-scene.png') });

  /* the box on the tool's target: no pose is clear, and the page names the pair */
  const target = (await page.evaluate(() => window.ikdPage.exchange())).request.target.position;
  await page.evaluate(([n, w]) => window.ikdPage.moveObstacle(n, 'box_1', w), [name, toWorld(target)]);
  await page.waitForFunction(() => window.ikdPage.exchange()?.answer.cause === 'in_collision', null, { timeout: WAIT });
  const x = await page.evaluate(() => window.ikdPage.exchange());
  assert.equal(x.answer.status, 'no_ik_solution');
  assert.equal(x.answer.closest.obstacle, 'box_1');
  assert.match(await page.textContent('#clearance'), /^no pose clear of collisions: link_\d and box_1/);
  assert.deepEqual(problems, [], 'no errors in the page');
  await page.close();
});

test('in chromium: ikd restarts, the page reconnects and its streams answer again', LIMIT, async () => {
  if (!browser) await launch();
  const page = await browser.newPage();
  await open(page);
  const before = await settled(page, 'kuka_iiwa14_r820', 0);
  const port = daemon.port;
  assert.equal(await daemon.stop(), 0);
  daemon = null;
  await page.waitForFunction(() => window.ikdPage.state.connection === 'reconnecting', null, { timeout: WAIT });
  daemon = await start(['--token', TOKEN, '--web', WEB, '--listen', `127.0.0.1:${port}`]);
  await page.waitForFunction(() => window.ikdPage.state.reopened === 1 && window.ikdPage.state.connection === 'open', null, { timeout: WAIT });
  const again = await settled(page, 'kuka_iiwa14_r820', before.sent);
  assert.equal(again.status, 'success');
  await drag(page, 'kuka_iiwa14_r820:tool0', -30, -30);
  const after = await settled(page, 'kuka_iiwa14_r820', again.sent);
  assert.equal(after.status, 'success');
  assert.ok(after.tipErrors.tool0.position < 1e-4, `the tool follows after the reconnection (${after.tipErrors.tool0.position})`);
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

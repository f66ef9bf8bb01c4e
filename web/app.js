/*
 * app.js: the live page's logic.
 *
 * Three things on one stage, all solved by ikd over ONE WebSocket
 * connection (clients/js/ikd.js, the only way this page talks to ikd):
 *   - a character from the repository's CMU walk (cmu_02_01_walk.bvh, loaded
 *     with three.js's BVHLoader, posed at its first frame): its left leg and
 *     left arm are "skeleton" chains (root to foot, root to hand: translate-
 *     rotate-scale bones, seed 001's two-bone solve with a pole) on the
 *     streams "leg" and "arm"; dragging the foot or hand target, or a pole,
 *     sends a target, and each answer's local rotations are put on the bones;
 *   - a KUKA iiwa 14 from the repository's URDF on the stream "iiwa": a
 *     6-DOF gizmo (three.js TransformControls, move and rotate) gives full
 *     pose targets; the arm is drawn through the answered joint positions,
 *     with its tool frame, and the joint values are listed against their
 *     limits (from POST /v1/chains);
 *   - on screen: the connection, round-trip latency, solutions per second,
 *     targets ikd skipped (conflation), and each stream's last answer.
 *
 * Coordinates: the character's chains are written in the BVH's own units and
 * axes (y up, right-handed), which ikd takes as they are (the two-bone solve
 * is pure geometry). The robot's chain is ROS's (z up): its group is turned
 * -90 degrees about x so that z points up on screen, and the gizmo lives in
 * that group, so its local pose is the target in the robot's base frame.
 *
 * The token (ikd started with --token) comes from the page's fragment
 * (#token=..., which browsers never send to a server; it is removed from
 * the address bar at once) or from the form, and is kept in sessionStorage.
 *
 * window.ikdPage exposes the page's state for the browser test
 * (tests/web/test_page.mjs): the connection, each stream's counts and last
 * answer, how far each end effector is from its target after the answer was
 * applied, and screenOf(name) to find a handle on screen.
 */
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { TransformControls } from 'three/addons/controls/TransformControls.js';
import { BVHLoader } from 'three/addons/loaders/BVHLoader.js';
import { Ikd, IkdError } from './ikd.js';

const BVH_FILE = 'cmu_02_01_walk.bvh';
const URDF_FILE = 'kuka_iiwa14_r820.urdf';
const BVH_SCALE = 0.056; /* BVH units to metres, roughly (a 1.7 m walker) */
const LIMBS = {
  leg: { path: ['Hips', 'LHipJoint', 'LeftUpLeg', 'LeftLeg', 'LeftFoot'], pole: [0, 0, 12] },
  arm: { path: ['Hips', 'LowerBack', 'Spine', 'Spine1', 'LeftShoulder', 'LeftArm', 'LeftForeArm', 'LeftHand'], pole: [0, 0, -12] },
};

/* ---- state shown on screen and read by the browser test ---------------- */

const state = {
  ready: false,
  connection: 'starting',
  message: '',
  rttMs: null,
  rttMeanMs: null,
  solutionsPerSecond: 0,
  skipped: 0,
  reopened: 0,
  streams: {},      /* name -> {sent, answered, solutions, status, reason, error, followError} */
  robot: { joints: [], names: [], lower: [], upper: [], withinLimits: null, tipError: null },
  webgl: true,
};
const ui = (id) => document.getElementById(id);
const answerTimes = [];
const rtts = [];

function streamState(name) {
  return (state.streams[name] ??= {
    sent: 0, answered: 0, solutions: 0, status: '', reason: '', error: '', followError: null,
    counts: { success: 0, no_ik_solution: 0, timed_out: 0, other: 0 },
  });
}

function say(msg) {
  state.message = msg;
  ui('message').textContent = msg;
}

/* ---- token ----------------------------------------------------------- */

function initialToken() {
  const m = /(?:^|&)token=([^&]*)/.exec(location.hash.slice(1));
  if (m) {
    sessionStorage.setItem('ikd-token', decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem('ikd-token') || '';
}

/* ---- the stage -------------------------------------------------------- */

const view = ui('view');
let renderer;
try {
  renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
} catch (e) {
  state.webgl = false;
}
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x1d2027);
const camera = new THREE.PerspectiveCamera(45, 1, 0.05, 50);
camera.position.set(0.15, 1.75, 4.4);
const domElement = renderer ? renderer.domElement : document.createElement('div');
if (renderer) {
  renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
  view.appendChild(domElement);
} else {
  view.appendChild(domElement);
  say('WebGL is not available in this browser: the page cannot draw, but streams still run');
}
const orbit = new OrbitControls(camera, domElement);
orbit.target.set(0.4, 0.85, 0);
orbit.update();

scene.add(new THREE.HemisphereLight(0xdde6ff, 0x30281e, 2.2));
const sun = new THREE.DirectionalLight(0xffffff, 2.0);
sun.position.set(2, 4, 3);
scene.add(sun);
const grid = new THREE.GridHelper(6, 24, 0x4a5263, 0x2e3440);
scene.add(grid);

function resize() {
  const w = window.innerWidth, h = window.innerHeight;
  camera.aspect = w / h;
  camera.updateProjectionMatrix();
  if (renderer) renderer.setSize(w, h);
}
window.addEventListener('resize', resize);
resize();

const matBone = new THREE.MeshStandardMaterial({ color: 0xc8ccd4, roughness: 0.6 });
const matLimb = new THREE.MeshStandardMaterial({ color: 0xf0a040, roughness: 0.5 });
const matTarget = new THREE.MeshStandardMaterial({ color: 0xff8c1a, emissive: 0x552200 });
const matPole = new THREE.MeshStandardMaterial({ color: 0x4aa3ff, emissive: 0x10264a });
const matRobot = new THREE.MeshStandardMaterial({ color: 0xe87d2c, roughness: 0.45, metalness: 0.2 });
const matJoint = new THREE.MeshStandardMaterial({ color: 0x3a3f4b, roughness: 0.5 });
const UP = new THREE.Vector3(0, 1, 0);

/** A cylinder from a to b (local coordinates of its parent). */
function segment(parent, a, b, radius, mat) {
  const d = new THREE.Vector3().subVectors(b, a);
  const len = d.length();
  if (len < 1e-9) return null;
  const m = new THREE.Mesh(new THREE.CylinderGeometry(radius, radius, 1, 12), mat);
  m.scale.set(1, len, 1);
  m.position.copy(a).addScaledVector(d, 0.5);
  m.quaternion.setFromUnitVectors(UP, d.normalize());
  parent.add(m);
  return m;
}

/* Draggable things, by name (for picking and for the test). */
const handles = {};
function handle(name, parent, radius, mat) {
  const m = new THREE.Mesh(new THREE.SphereGeometry(radius, 20, 14), mat);
  m.name = name;
  parent.add(m);
  handles[name] = m;
  return m;
}

const tc = new TransformControls(camera, domElement);
tc.setSize(0.8);
scene.add(tc.getHelper());
tc.addEventListener('dragging-changed', (e) => { orbit.enabled = !e.value; });

let robotMode = 'translate';
function select(name) {
  const obj = handles[name];
  if (!obj) return false;
  tc.attach(obj);
  tc.setMode(name === 'iiwa' ? robotMode : 'translate');
  tc.setSpace(name === 'iiwa' && robotMode === 'rotate' ? 'local' : 'world');
  state.selected = name;
  return true;
}
function setRobotMode(mode) {
  robotMode = mode;
  ui('move').classList.toggle('on', mode === 'translate');
  ui('rotate').classList.toggle('on', mode === 'rotate');
  select('iiwa');
}
ui('move').onclick = () => setRobotMode('translate');
ui('rotate').onclick = () => setRobotMode('rotate');
window.addEventListener('keydown', (e) => {
  if (e.target instanceof HTMLInputElement) return;
  if (e.key === 'w' || e.key === 'W') setRobotMode('translate');
  if (e.key === 'e' || e.key === 'E') setRobotMode('rotate');
});

/* Picking: a press on a handle (not on the gizmo itself) selects it. */
const ray = new THREE.Raycaster();
domElement.addEventListener('pointerdown', (e) => {
  if (tc.axis !== null || tc.dragging) return;
  const r = domElement.getBoundingClientRect();
  ray.setFromCamera(new THREE.Vector2(((e.clientX - r.left) / r.width) * 2 - 1, -((e.clientY - r.top) / r.height) * 2 + 1), camera);
  const hit = ray.intersectObjects(Object.values(handles), false)[0];
  if (hit) select(hit.object.name);
});

/** Where a handle is on screen, in CSS pixels of the page. */
function screenOf(name) {
  const obj = handles[name];
  if (!obj) return null;
  const p = obj.getWorldPosition(new THREE.Vector3()).project(camera);
  const r = domElement.getBoundingClientRect();
  return { x: r.left + ((p.x + 1) / 2) * r.width, y: r.top + ((1 - p.y) / 2) * r.height };
}

/* ---- the character ------------------------------------------------------ */

const character = new THREE.Group();
character.scale.setScalar(BVH_SCALE);
character.position.set(-0.15, 0, 0.3);
character.rotation.y = -0.5;
scene.add(character);
const limbs = {};

async function loadCharacter() {
  const resp = await fetch(BVH_FILE);
  if (!resp.ok) throw new Error(`${BVH_FILE}: ${resp.status}`);
  const bvh = new BVHLoader().parse(await resp.text());
  const root = bvh.skeleton.bones[0];
  character.add(root);
  /* the first frame's pose, then the mixer is dropped: ikd's answers pose it from here on */
  const mixer = new THREE.AnimationMixer(root);
  mixer.clipAction(bvh.clip).play();
  mixer.setTime(0);
  mixer.stopAllAction();
  root.position.x = 0;
  root.position.z = 0;
  /* stand on the floor: the lowest bone of the pose at y = 0 */
  root.updateMatrixWorld(true);
  let lowest = Infinity;
  for (const b of bvh.skeleton.bones) lowest = Math.min(lowest, b.getWorldPosition(new THREE.Vector3()).y);
  character.position.y -= lowest - 0.02;
  character.updateMatrixWorld(true);
  const bone = (name) => {
    const b = root.getObjectByName(name);
    if (!b) throw new Error(`${BVH_FILE} has no bone ${name}`);
    return b;
  };
  for (const b of bvh.skeleton.bones) {
    for (const c of b.children) {
      if (c.isBone) segment(b, new THREE.Vector3(), c.position, 0.55, matBone);
    }
  }
  for (const [name, def] of Object.entries(LIMBS)) {
    const bones = def.path.map(bone);
    const [hip, knee, foot] = bones.slice(-3);
    for (const b of [hip, knee]) {
      const child = b === hip ? knee : foot;
      segment(b, new THREE.Vector3(), child.position, 0.8, matLimb);
    }
    const local = (b) => character.worldToLocal(b.getWorldPosition(new THREE.Vector3()));
    /* the first target: the BVH's own foot or hand pulled 8% towards the
     * hip or shoulder, so that the limb starts bent (a straight limb is at
     * the edge of its reach) */
    const target = handle(`${name}_target`, character, 1.3, matTarget);
    target.position.copy(local(foot)).lerp(local(hip), 0.08);
    const pole = handle(`${name}_pole`, character, 1.0, matPole);
    pole.position.copy(local(knee)).add(new THREE.Vector3(...def.pole));
    limbs[name] = {
      bones, target, pole, foot,
      chain: {
        kind: 'skeleton',
        bones: bones.map((b, i) => ({
          name: b.name,
          ...(i ? { parent: bones[i - 1].name } : {}),
          translation: b.position.toArray(),
          rotation: b.quaternion.toArray(),
        })),
        limb: def.path.slice(-3),
      },
    };
  }
}

function limbTarget(limb) {
  return { position: limb.target.position.toArray(), pole: limb.pole.position.toArray() };
}

function applyLimb(name, result) {
  const limb = limbs[name];
  if (!result.rotations) return;
  result.rotations.forEach((q, i) => limb.bones[i].quaternion.set(q[0], q[1], q[2], q[3]));
  character.updateMatrixWorld(true);
  const foot = character.worldToLocal(limb.foot.getWorldPosition(new THREE.Vector3()));
  /* measured on the drawn skeleton, in BVH units, against the target the answer was for */
  streamState(name).followError = foot.distanceTo(limb.lastTarget);
  streamState(name).effector = foot.toArray();
  /* the knee or elbow bends towards the pole: the cosine between the two
   * off the hip-to-target line (1 when the pole's plane holds the knee) */
  const local = (b) => character.worldToLocal(b.getWorldPosition(new THREE.Vector3()));
  const hip = local(limb.bones.at(-3));
  const axis = new THREE.Vector3().subVectors(limb.lastTarget, hip).normalize();
  const off = (p) => { const v = new THREE.Vector3().subVectors(p, hip); return v.addScaledVector(axis, -v.dot(axis)); };
  const k = off(local(limb.bones.at(-2))), q = off(limb.pole.position);
  streamState(name).poleCos = k.dot(q) / (k.length() * q.length() || 1);
}

/* ---- the robot ------------------------------------------------------------ */

const robot = new THREE.Group();
robot.rotation.x = -Math.PI / 2;
robot.position.set(1.45, 0, 0.1);
scene.add(robot);
const robotLinks = [];
const robotJoints = [];
const tool = new THREE.AxesHelper(0.12);
robot.add(tool);
const plinth = new THREE.Mesh(new THREE.CylinderGeometry(0.12, 0.14, 0.04, 24), matJoint);
plinth.rotation.x = Math.PI / 2;
plinth.position.z = 0.02;
robot.add(plinth);
const goal = handle('iiwa', robot, 0.045, matTarget);
goal.add(new THREE.AxesHelper(0.16));
let robotChain = null;

function drawRobot(result) {
  const pts = result.positions.map((p) => new THREE.Vector3(...p));
  pts.unshift(new THREE.Vector3(0, 0, 0));
  for (const m of robotLinks) robot.remove(m);
  robotLinks.length = 0;
  for (let i = 1; i < pts.length; i++) {
    const m = segment(robot, pts[i - 1], pts[i], 0.045, matRobot);
    if (m) robotLinks.push(m);
  }
  while (robotJoints.length < pts.length) {
    const j = new THREE.Mesh(new THREE.SphereGeometry(0.055, 16, 10), matJoint);
    robot.add(j);
    robotJoints.push(j);
  }
  robotJoints.forEach((j, i) => { j.visible = i < pts.length; if (i < pts.length) j.position.copy(pts[i]); });
  if (result.tip) {
    tool.position.set(...result.tip.position);
    tool.quaternion.set(...result.tip.orientation);
  }
}

function showJoints(joints) {
  const r = state.robot;
  r.joints = joints;
  r.withinLimits = joints.every((q, i) => q >= r.lower[i] - 1e-9 && q <= r.upper[i] + 1e-9);
  const body = ui('joints').tBodies[0];
  if (body.rows.length !== joints.length) {
    body.innerHTML = '';
    joints.forEach((_, i) => {
      const tr = body.insertRow();
      tr.innerHTML = `<th>${r.names[i]}</th><td class="v"></td><td><div class="bar"><i></i></div></td>`;
    });
  }
  joints.forEach((q, i) => {
    const row = body.rows[i];
    const deg = (q * 180) / Math.PI;
    row.cells[1].textContent = `${deg.toFixed(1)}°`;
    const f = (q - r.lower[i]) / (r.upper[i] - r.lower[i]);
    row.querySelector('i').style.left = `calc(${(Math.min(1, Math.max(0, f)) * 100).toFixed(1)}% - 1px)`;
    row.cells[1].className = f < 0.03 || f > 0.97 ? 'v warn' : 'v';
  });
  const b = ui('limits');
  b.textContent = r.withinLimits ? 'within limits' : 'OUT OF LIMITS';
  b.className = `badge ${r.withinLimits ? 'ok' : 'bad'}`;
}

/* ---- ikd ---------------------------------------------------------------- */

let ikd = null;
let conn = null;
const streams = {};

function onAnswer(name, s) {
  const st = streamState(name);
  st.answered = s.seq;
  st.solutions++;
  st.status = s.result.status;
  st.reason = s.result.reason;
  st.counts[st.status in st.counts ? st.status : 'other']++;
  state.skipped += s.skipped;
  const t = performance.now();
  answerTimes.push(t);
  if (s.rttMs > 0) {
    rtts.push(s.rttMs);
    if (rtts.length > 50) rtts.shift();
    state.rttMs = s.rttMs;
    state.rttMeanMs = rtts.reduce((a, b) => a + b, 0) / rtts.length;
  }
  if (name === 'iiwa') {
    drawRobot(s.result);
    showJoints(s.result.joints);
    const want = pendingGoal.get(s.seq);
    if (want && s.result.tip) {
      state.robot.tipError = new THREE.Vector3(...s.result.tip.position).distanceTo(want.position);
      const q = new THREE.Quaternion(...s.result.tip.orientation);
      state.robot.tipAngleError = want.orientation ? q.angleTo(want.orientation) : null;
    }
    for (const k of pendingGoal.keys()) if (k <= s.seq) pendingGoal.delete(k);
  } else {
    const limb = limbs[name];
    limb.lastTarget = limb.sentTargets.get(s.seq) || limb.lastTarget;
    for (const k of limb.sentTargets.keys()) if (k <= s.seq) limb.sentTargets.delete(k);
    applyLimb(name, s.result);
  }
  renderTables();
  redraw();
}

const pendingGoal = new Map();
function send(name) {
  const stream = streams[name];
  if (!stream || !stream.isOpen) return;
  let target;
  if (name === 'iiwa') {
    target = { position: goal.position.toArray() };
    if (state.robot.fullPose) target.orientation = goal.quaternion.toArray();
  } else {
    target = limbTarget(limbs[name]);
  }
  const p = stream.target(target);
  const seq = stream.seq;
  streamState(name).sent = seq;
  if (name === 'iiwa') pendingGoal.set(seq, { position: goal.position.clone(), orientation: target.orientation ? goal.quaternion.clone() : null });
  else limbs[name].sentTargets.set(seq, limbs[name].target.position.clone());
  p.catch((e) => {
    if (!(e instanceof IkdError)) throw e;
    if (e.code === 'connection_lost' || e.code === 'not_connected' || e.code === 'closed') return;
    streamState(name).error = `${e.code}: ${e.detail}${e.path ? ` (${e.path})` : ''}`;
    renderTables();
  });
}

tc.addEventListener('objectChange', () => {
  const name = tc.object?.name;
  if (name === 'iiwa') send('iiwa');
  else if (name) send(name.replace(/_(target|pole)$/, ''));
});

async function connect() {
  if (conn) await conn.close();
  const token = sessionStorage.getItem('ikd-token') || '';
  ikd = new Ikd(undefined, { token });
  say('');
  try {
    if (!robotChain) {
      const resp = await fetch(URDF_FILE);
      if (!resp.ok) throw new Error(`${URDF_FILE}: ${resp.status}`);
      const urdf = await resp.text();
      robotChain = { kind: 'urdf', urdf, base: 'base_link', tip: 'tool0' };
    }
    const desc = await ikd.registerChain(robotChain);
    state.robot.names = desc.joint_names;
    state.robot.lower = desc.joints.map((j) => j.lower);
    state.robot.upper = desc.joints.map((j) => j.upper);
  } catch (e) {
    say(e instanceof IkdError && e.code === 'unauthorized'
      ? 'ikd wants a token (it runs with --token): enter it above'
      : `cannot reach ikd: ${e.message}`);
    setConn('closed');
    return;
  }
  conn = ikd.connect({ maxDelayMs: 3000 });
  conn.on('state', setConn);
  conn.on('error', (e) => say(`${e.code}: ${e.detail}`));
  /* after a reconnection (ikd restarted, say) every stream is open again:
   * send each its current target so the stage shows fresh answers */
  conn.on('reopen', () => {
    state.reopened++;
    for (const name of Object.keys(streams)) send(name);
  });
  setConn(conn.state);
  try {
    await conn.ready();
    for (const name of Object.keys(limbs)) {
      streams[name] = await conn.open(name, { chain: limbs[name].chain, options: { solver: 'two_bone' } });
    }
    streams.iiwa = await conn.open('iiwa', { chain: robotChain, options: { timeout_ms: 5 } });
  } catch (e) {
    say(`cannot open the streams: ${e.message}`);
    return;
  }
  for (const [name, s] of Object.entries(streams)) s.onSolution((sol) => onAnswer(name, sol));
  for (const name of Object.keys(limbs)) send(name);
  /* the robot starts with a position-only target; its answered tool pose
   * becomes the gizmo's pose, and every later target is a full pose */
  if (!state.robot.fullPose) {
    goal.position.set(0.45, 0.1, 0.55);
    const first = await streams.iiwa.target({ position: goal.position.toArray() });
    goal.position.set(...first.result.tip.position);
    goal.quaternion.set(...first.result.tip.orientation);
    state.robot.fullPose = true;
  }
  send('iiwa');
  state.ready = true;
}

function setConn(s) {
  state.connection = s;
  const b = ui('conn');
  b.textContent = s;
  b.className = `badge ${s === 'open' ? 'ok' : s === 'closed' ? 'bad' : ''}`;
}

ui('auth').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = ui('token').value;
  if (t) sessionStorage.setItem('ikd-token', t);
  else sessionStorage.removeItem('ikd-token');
  ui('token').value = '';
  connect();
});

/* ---- numbers on screen ----------------------------------------------------- */

function renderTables() {
  const body = ui('streams').tBodies[0];
  const names = Object.keys(state.streams);
  if (body.rows.length !== names.length) {
    body.innerHTML = '';
    for (const n of names) body.insertRow().innerHTML = `<td>${n}</td><td></td><td></td><td></td><td></td>`;
  }
  names.forEach((n, i) => {
    const st = state.streams[n];
    const row = body.rows[i];
    row.cells[1].textContent = `${st.answered}/${st.sent}`;
    const c = st.counts;
    row.cells[4].textContent = `${c.success}/${c.no_ik_solution}/${c.timed_out}/${c.other}`;
    row.cells[2].textContent = st.status ? (st.status === 'success' ? 'success' : `${st.status} (${st.reason})`) : '–';
    row.cells[2].className = st.status === 'success' ? 'ok' : st.status ? 'warn' : '';
    row.cells[3].textContent = st.error;
    row.cells[3].className = 'bad';
  });
}

function renderStats() {
  const now = performance.now();
  while (answerTimes.length && answerTimes[0] < now - 1000) answerTimes.shift();
  state.solutionsPerSecond = answerTimes.length;
  ui('rtt').textContent = state.rttMs === null ? '–' : `${state.rttMs.toFixed(2)} ms (mean ${state.rttMeanMs.toFixed(2)})`;
  ui('rate').textContent = String(state.solutionsPerSecond);
  ui('skipped').textContent = String(state.skipped);
}

/* Drawn only when something changed (an answer, the gizmo, the camera, the
 * window), so that an idle page costs nothing and a software-rendered one
 * (headless tests) keeps its thread free for the stream. */
let dirty = true;
function redraw() { dirty = true; }
orbit.addEventListener('change', redraw);
tc.addEventListener('change', redraw);
window.addEventListener('resize', redraw);

function frame() {
  renderStats();
  if (renderer && dirty) {
    dirty = false;
    renderer.render(scene, camera);
  }
  requestAnimationFrame(frame);
}

window.ikdPage = { state, screenOf, select, handles, gizmo: tc };

(async () => {
  sessionStorage.getItem('ikd-token');
  initialToken();
  try {
    await loadCharacter();
  } catch (e) {
    say(`cannot load the character: ${e.message}`);
    return;
  }
  for (const limb of Object.values(limbs)) {
    limb.sentTargets = new Map();
    limb.lastTarget = limb.target.position.clone();
  }
  select('leg_target');
  frame();
  await connect();
})();

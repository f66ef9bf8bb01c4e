/*
 * app.js: the workbench page's logic: files in, rigs on the stage, streams
 * to ikd, the panel.
 *
 * What a user does here:
 *   - opens a URDF (file picker or drop on the page): a robot rig
 *     (urdf_rig.js); picks its base and tip(s) (several tips make a tree
 *     chain) and drags each tip's target; the page registers the chain
 *     (POST /v1/chains) and solves on a stream of its own;
 *   - opens a BVH: a character rig (bvh_rig.js) whose motion plays, pauses
 *     and scrubs with its feet (and hands, if asked) locked where they plant,
 *     one stream per limb;
 *   - chooses the solver and its options (tolerance, timeout, orientation,
 *     tip priorities; for limbs the pole and the plant thresholds), and
 *     reads the request and answer of the selected rig as JSON, with the
 *     same request as a curl command (POST /v1/solve with the chain's id
 *     and the seed the stream started from);
 *   - keeps several rigs at once (each file adds one; the list selects and
 *     removes them);
 *   - puts obstacles (boxes, spheres, capsules: obstacles.js) beside a
 *     robot, drags them like targets, and asks for answers clear of them
 *     and of the robot itself (avoid_collisions, collision_margin); the
 *     stream opens with the scene and a "scene" message replaces it when an
 *     obstacle moves, and the answer view says how clear the arm is
 *     (min_distance) or, when ikd found no pose clear, which pair collides.
 * The repository's KUKA iiwa 14 (URDF) and CMU walk (BVH), copied next to
 * the page by make web, are opened at start so that the stage is not empty.
 *
 * Every solve goes through the JavaScript client (ikd.js) over one
 * WebSocket. The token (ikd --token) comes from the fragment (#token=...,
 * never sent to a server and taken out of the address bar) or the form,
 * and is kept in sessionStorage.
 *
 * window.ikdPage exposes the state for the browser test
 * (tests/web/test_page.mjs): the connection, each stream's counts, every
 * rig's numbers (tip errors measured by the page's own forward kinematics,
 * locked-foot errors measured on the drawn skeleton), and the functions a
 * test needs to find and drive things.
 */
import * as THREE from 'three';
import { Ikd, IkdError } from './ikd.js';
import { Stage, materials } from './stage.js';
import { UrdfRig } from './urdf_rig.js';
import { BvhRig } from './bvh_rig.js';

const DEFAULT_URDF = 'kuka_iiwa14_r820.urdf';
const DEFAULT_BVH = 'cmu_02_01_walk.bvh';
const MAX_FILE = 8 << 20; /* what ikd takes in one request, --max-body's default */

const state = {
  ready: false,
  connection: 'starting',
  message: '',
  rttMs: null,
  rttMeanMs: null,
  solutionsPerSecond: 0,
  skipped: 0,
  reopened: 0,
  streams: {}, /* name -> {sent, answered, solutions, status, reason, error, counts} */
  rigs: {},    /* rig name -> numbers (see rigState) */
  selected: null,
  webgl: true,
};
const ui = (id) => document.getElementById(id);
const answerTimes = [];
const rtts = [];

function say(msg) {
  state.message = msg;
  ui('message').textContent = msg;
}

function streamState(name) {
  return (state.streams[name] ??= {
    sent: 0, answered: 0, solutions: 0, status: '', reason: '', error: '',
    counts: { success: 0, no_ik_solution: 0, timed_out: 0, other: 0 },
  });
}

/* ---- the stage ----------------------------------------------------------- */

const stage = new Stage(ui('view'));
state.webgl = stage.webgl;
if (!stage.webgl) say('WebGL is not available in this browser: the page cannot draw, but streams still run');

/* ---- rigs ------------------------------------------------------------------ */

const rigs = new Map(); /* name -> rig (UrdfRig or BvhRig) */
let slot = 0;
let ikd = null;
let conn = null;
let streamVersion = 0;

function uniqueName(base) {
  const stem = base.replace(/\.[^.]*$/, '').replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 40) || 'rig';
  let n = stem, k = 2;
  while (rigs.has(n)) n = `${stem}_${k++}`;
  return n;
}

function place(rig) {
  rig.group.position.x += slot * 1.6;
  slot++;
  rig.group.updateMatrixWorld(true);
}

async function addRobot(fileName, text) {
  const rig = new UrdfRig(uniqueName(fileName), text, stage);
  place(rig);
  rigs.set(rig.name, rig);
  rig.onMove = () => sendRobot(rig);
  rig.obstacles.onChange = () => sceneChanged(rig);
  state.rigs[rig.name] = { kind: 'robot', base: rig.base, tips: rig.tips };
  selectRig(rig.name);
  if (conn) await startRobot(rig);
  return rig.name;
}

async function addCharacter(fileName, text) {
  const rig = new BvhRig(uniqueName(fileName), text, stage);
  place(rig);
  rigs.set(rig.name, rig);
  state.rigs[rig.name] = { kind: 'character', frames: rig.frames, fps: rig.fps, limbs: Object.keys(rig.limbs), skate: rig.skate };
  selectRig(rig.name);
  if (conn) await startCharacter(rig);
  return rig.name;
}

function removeRig(name) {
  const rig = rigs.get(name);
  if (!rig) return;
  for (const s of rig.streams ? Object.values(rig.streams) : []) s.close().catch(() => {});
  if (rig.stream) rig.stream.close().catch(() => {});
  rig.streamName = null;
  rig.dispose();
  rigs.delete(name);
  delete state.rigs[name];
  if (state.selected === name) selectRig(rigs.keys().next().value ?? null);
  renderRigList();
  stage.redraw();
}

/** Opens a file by its name: .urdf makes a robot, .bvh a character. */
async function openFile(name, text) {
  say('');
  try {
    if (/\.urdf$/i.test(name) || /^\s*(<\?xml[^>]*>\s*)?<robot[\s>]/.test(text)) return await addRobot(name, text);
    if (/\.bvh$/i.test(name) || /^\s*HIERARCHY/.test(text)) return await addCharacter(name, text);
    throw new Error('open a .urdf (a robot) or a .bvh (a motion)');
  } catch (e) {
    say(`${name}: ${e.message}`);
    throw e;
  }
}

async function openFiles(files) {
  for (const f of files) {
    if (f.size > MAX_FILE) { say(`${f.name}: ${f.size} bytes is more than ikd takes (${MAX_FILE})`); continue; }
    await openFile(f.name, await f.text()).catch(() => {});
  }
}

for (const id of ['open-urdf', 'open-bvh']) {
  ui(id).addEventListener('change', async (e) => {
    await openFiles([...e.target.files]);
    e.target.value = '';
  });
}
window.addEventListener('dragover', (e) => { e.preventDefault(); document.body.classList.add('dropping'); });
window.addEventListener('dragleave', () => document.body.classList.remove('dropping'));
window.addEventListener('drop', (e) => {
  e.preventDefault();
  document.body.classList.remove('dropping');
  openFiles([...e.dataTransfer.files]);
});

/* ---- streams ---------------------------------------------------------------- */

function noteError(name, e) {
  if (!(e instanceof IkdError)) throw e;
  if (e.code === 'connection_lost' || e.code === 'not_connected' || e.code === 'closed') return;
  streamState(name).error = `${e.code}: ${e.detail}${e.path ? ` (at ${e.path})` : ''}`;
  renderTables();
}

function noteAnswer(name, s) {
  const st = streamState(name);
  st.answered = s.seq;
  st.solutions++;
  st.status = s.result.status;
  st.reason = s.result.reason;
  st.error = '';
  st.counts[st.status in st.counts ? st.status : 'other']++;
  state.skipped += s.skipped;
  answerTimes.push(performance.now());
  if (s.rttMs > 0) {
    rtts.push(s.rttMs);
    if (rtts.length > 50) rtts.shift();
    state.rttMs = s.rttMs;
    state.rttMeanMs = rtts.reduce((a, b) => a + b, 0) / rtts.length;
  }
}

async function startRobot(rig) {
  try {
    let desc;
    try {
      desc = await ikd.registerChain(rig.chain());
    } catch (e) {
      /* a URDF ikd cannot model as drawn (say, <collision> it cannot read):
       * the robot still moves, without collisions, and the panel says why */
      if (!rig.withModel || !(e instanceof IkdError) || e.status === undefined) throw e;
      rig.withModel = false;
      rig.modelError = e.message;
      desc = await ikd.registerChain(rig.chain());
    }
    rig.chainId = desc.id;
    rig.described(desc);
  } catch (e) {
    say(`${rig.name}: ${e.message}`);
    state.rigs[rig.name].error = e.message;
    return;
  }
  await openRobotStream(rig);
  renderRigPanel();
}

function robotOptions(rig) {
  const o = { ...rig.options };
  if (o.solver === 'auto') delete o.solver;
  if (!o.avoid_collisions || !rig.withModel) {
    delete o.avoid_collisions;
    delete o.collision_margin;
  }
  return o;
}

/** The robot's obstacles as the request's scene (null: none, or no model to check them against). */
function robotScene(rig) {
  return rig.withModel ? rig.obstacles.scene() : null;
}

/** An obstacle was added, moved, resized or removed: the stream's scene is
 * replaced (a "scene" message) and the target solved again among it. */
function sceneChanged(rig) {
  state.rigs[rig.name].scene = robotScene(rig);
  if (rig.stream?.isOpen && rig.withModel) {
    rig.stream.setScene(robotScene(rig) ?? {});
    sendRobot(rig);
  }
  stage.redraw();
}

async function openRobotStream(rig) {
  /* nothing more goes to the stream being replaced, and its answers still
   * on the way are not taken for the new stream's (both count from seq 1) */
  const old = rig.stream;
  rig.stream = null;
  if (old) old.close().catch(() => {});
  const name = `${rig.name}.${++streamVersion}`;
  rig.streamName = name;
  let stream;
  try {
    /* the chain itself, not its id: a restarted ikd has forgotten ids, and
     * the client opens the streams again as they were first opened */
    const spec = { chain: rig.chain(), options: robotOptions(rig) };
    const scene = robotScene(rig);
    if (scene) spec.scene = scene;
    stream = await conn.open(name, spec);
  } catch (e) {
    noteError(name, e);
    return;
  }
  if (rig.streamName !== name) {
    /* a newer opening (another option changed meanwhile) or the rig removed */
    stream.close().catch(() => {});
    return;
  }
  rig.stream = stream;
  const pending = new Map();
  rig.pending = pending;
  stream.onSolution((s) => {
    noteAnswer(name, s);
    if (rig.stream !== stream) return;
    const sent = pending.get(s.seq);
    for (const k of pending.keys()) if (k <= s.seq) pending.delete(k);
    if (!sent) return;
    rig.answered(s.result, sent.target);
    rig.lastAnswer = s.result;
    rig.lastRequest = sent.request;
    const r = state.rigs[rig.name];
    Object.assign(r, { status: s.result.status, joints: rig.joints, tipErrors: rig.tipErrors, withinLimits: rig.withinLimits, base: rig.base, tips: rig.tips, answered: s.seq });
    Object.assign(r, { minDistance: s.result.min_distance, closest: s.result.closest ?? null, cause: s.result.cause ?? null });
    const k = s.result.closest;
    rig.obstacles.mark(k?.obstacle);
    rig.markLinks(k ? [k.link, k.other_link].filter(Boolean) : []);
    renderTables();
    if (state.selected === rig.name) renderExchange();
    stage.redraw();
  });
  sendRobot(rig);
}

function sendRobot(rig) {
  const stream = rig.stream;
  if (!stream || !stream.isOpen) return;
  const target = rig.target();
  /* the same solve over HTTP: the chain's id, the target, and the pose the
   * stream continues from as the seed */
  const request = { chain_id: rig.chainId, target, seed: rig.joints, options: robotOptions(rig) };
  const scene = robotScene(rig);
  if (scene) request.scene = scene;
  const p = stream.target(target);
  const seq = stream.seq;
  streamState(rig.streamName).sent = seq;
  state.rigs[rig.name].sent = seq;
  rig.pending.set(seq, { target, request, seq });
  p.catch((e) => noteError(rig.streamName, e));
}

async function startCharacter(rig) {
  rig.streams = {};
  for (const limb of Object.keys(rig.limbs)) {
    const name = `${rig.name}.${limb}`;
    try {
      rig.streams[limb] = await conn.open(name, { chain: rig.chain(limb), options: { solver: 'two_bone' } });
    } catch (e) {
      noteError(name, e);
    }
  }
  rig.wanted = null;
  await stepCharacter(rig, 0);
}

/**
 * Poses frame f of a character, solves its locked limbs and draws the
 * result: the frame is shown with its answers (see bvh_rig.js).
 */
async function stepCharacter(rig, f) {
  if (rig.busy) { if (!rig.playing) rig.wanted = f; return; }
  rig.busy = true;
  try {
    const goals = rig.prepare(f);
    const solves = [];
    for (const [limb, g] of Object.entries(goals)) {
      const stream = rig.streams?.[limb];
      if (!g || !stream || !stream.isOpen) continue;
      const name = `${rig.name}.${limb}`;
      const target = rig.usePole === false ? { position: g.target.position } : g.target;
      const p = stream.target(target);
      streamState(name).sent = stream.seq;
      rig.lastRequests ??= {};
      rig.lastRequests[limb] = { chain: stream.spec.chain, target, options: { solver: 'two_bone' } };
      solves.push(p.then((s) => {
        noteAnswer(name, s);
        rig.answered(limb, s.result, g.world);
        rig.lastAnswers ??= {};
        rig.lastAnswers[limb] = s.result;
      }, (e) => noteError(name, e)));
    }
    await Promise.all(solves);
    if (Object.values(rig.limbs).some((l) => l.planting)) rig.lockedFrames++;
    const r = state.rigs[rig.name];
    Object.assign(r, {
      frame: rig.frame, playing: rig.playing, lockErrors: { ...rig.lockErrors }, lockedFrames: rig.lockedFrames,
      limbErrors: Object.fromEntries(Object.entries(rig.limbs).map(([k, l]) => [k, l.error])),
      planted: Object.fromEntries(Object.entries(rig.limbs).map(([k, l]) => [k, !!l.planting])),
      drawn: (r.drawn ?? 0) + 1,
    });
    if (state.selected === rig.name) { renderExchange(); syncScrubber(rig); }
    stage.redraw();
  } finally {
    rig.busy = false;
  }
}

async function connect() {
  if (conn) await conn.close();
  const token = sessionStorage.getItem('ikd-token') || '';
  ikd = new Ikd(undefined, { token });
  try {
    await ikd.solvers();
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
   * robots re-register (a new ikd has forgotten their ids) and send their
   * targets; characters solve their frame again */
  conn.on('reopen', async () => {
    state.reopened++;
    for (const rig of rigs.values()) {
      if (rig.kind === 'robot') sendRobot(rig);
      else stepCharacter(rig, rig.frame);
    }
  });
  setConn(conn.state);
  try {
    await conn.ready();
  } catch (e) {
    say(`cannot open a stream connection: ${e.message}`);
    return;
  }
  for (const rig of rigs.values()) {
    if (rig.kind === 'robot') await startRobot(rig);
    else await startCharacter(rig);
  }
  state.ready = true;
}

function setConn(s) {
  state.connection = s;
  const b = ui('conn');
  b.textContent = s;
  b.className = `badge ${s === 'open' ? 'ok' : s === 'closed' ? 'bad' : ''}`;
}

/* ---- playback ----------------------------------------------------------------- */

let lastTick = performance.now();
function play(rig, on) {
  rig.playing = on;
  rig.wanted = null;
  rig.clock = rig.frame * rig.dt;
  state.rigs[rig.name].playing = on;
  if (state.selected === rig.name) ui('play').textContent = on ? 'pause' : 'play';
}

function advance(now) {
  const dt = Math.min(0.1, (now - lastTick) / 1000);
  lastTick = now;
  for (const rig of rigs.values()) {
    if (rig.kind !== 'character' || !rig.streams) continue;
    if (rig.playing) {
      rig.clock = (rig.clock ?? 0) + dt * rig.speed;
      const f = Math.floor(rig.clock / rig.dt);
      if (f !== rig.frame && !rig.busy) stepCharacter(rig, f % rig.frames);
    } else if (rig.wanted != null && !rig.busy) {
      const f = rig.wanted;
      rig.wanted = null;
      if (f !== rig.frame) stepCharacter(rig, f);
    }
  }
}

/* ---- the panel ------------------------------------------------------------------ */

/** Points the camera at a rig. */
function frameRig(name) {
  const rig = rigs.get(name);
  if (!rig) return;
  const b = rig.bounds();
  stage.frame(b.center, Math.max(1.5, b.size * 1.4));
}

function selectRig(name) {
  state.selected = name;
  renderRigList();
  renderRigPanel();
  renderExchange();
}

function renderRigList() {
  const list = ui('rigs');
  list.innerHTML = '';
  for (const rig of rigs.values()) {
    const li = document.createElement('li');
    li.className = rig.name === state.selected ? 'on' : '';
    const pick = document.createElement('button');
    pick.textContent = `${rig.name} (${rig.kind})`;
    pick.className = 'pick';
    pick.onclick = () => { selectRig(rig.name); frameRig(rig.name); };
    const rm = document.createElement('button');
    rm.textContent = '×';
    rm.title = `remove ${rig.name}`;
    rm.onclick = () => removeRig(rig.name);
    li.append(pick, rm);
    list.append(li);
  }
}

function field(label, input) {
  const l = document.createElement('label');
  l.append(label, input);
  return l;
}
function numberInput(value, onChange, step = 'any') {
  const i = document.createElement('input');
  i.type = 'number';
  i.step = step;
  i.value = String(value);
  i.onchange = () => { const v = Number(i.value); if (Number.isFinite(v)) onChange(v); };
  return i;
}
function select(options, value, onChange, multiple = false) {
  const s = document.createElement('select');
  s.multiple = multiple;
  for (const o of options) {
    const opt = document.createElement('option');
    opt.value = opt.textContent = o;
    opt.selected = multiple ? value.includes(o) : o === value;
    s.append(opt);
  }
  s.onchange = () => onChange(multiple ? [...s.selectedOptions].map((o) => o.value) : s.value);
  return s;
}
function check(label, value, onChange) {
  const i = document.createElement('input');
  i.type = 'checkbox';
  i.checked = value;
  i.onchange = () => onChange(i.checked);
  return field(label, i);
}

function renderRigPanel() {
  const box = ui('rig');
  box.innerHTML = '';
  const rig = rigs.get(state.selected);
  ui('playback').hidden = !rig || rig.kind !== 'character';
  if (!rig) return;
  if (rig.kind === 'robot') {
    const h = document.createElement('h2');
    h.textContent = `${rig.name}: chain`;
    box.append(h);
    let base = rig.base, tips = rig.tips;
    const below = () => rig.descendants(base).map((d) => d.link).filter((l) => l !== base);
    const tipSel = select(below(), tips, (v) => { tips = v; }, true);
    tipSel.id = 'tips';
    tipSel.size = Math.min(6, below().length);
    const baseSel = select(rig.model.links, base, (v) => {
      base = v;
      tips = [rig.defaultTip(v)];
      const fresh = select(below(), tips, (t) => { tips = t; }, true);
      fresh.id = 'tips';
      fresh.size = Math.min(6, below().length);
      tipSel.replaceWith(fresh);
    });
    baseSel.id = 'base';
    const apply = document.createElement('button');
    apply.id = 'apply-chain';
    apply.textContent = 'use this chain';
    apply.onclick = async () => {
      try {
        rig.setChain(base, tips);
      } catch (e) {
        say(`${rig.name}: ${e.message}`);
        return;
      }
      state.rigs[rig.name].base = rig.base;
      state.rigs[rig.name].tips = rig.tips;
      await startRobot(rig);
    };
    box.append(field('base ', baseSel), field('tip(s) ', tipSel), apply);
    const o = document.createElement('h2');
    o.textContent = 'solver and options';
    box.append(o);
    const reopen = () => { if (conn && rig.chainId) openRobotStream(rig); };
    box.append(
      field('solver ', select(['auto', 'numeric', 'closed'], rig.options.solver, (v) => { rig.options.solver = v; reopen(); })),
      field('tolerance ', numberInput(rig.options.tolerance, (v) => { rig.options.tolerance = v; reopen(); })),
      field('timeout ms ', numberInput(rig.options.timeout_ms, (v) => { rig.options.timeout_ms = v; reopen(); })),
      check(' full pose (orientation too)', rig.fullPose, (v) => { rig.fullPose = v; sendRobot(rig); }),
    );
    if (rig.tips.length > 1) {
      for (const tip of rig.tips) {
        box.append(field(`priority of ${tip} `, numberInput(rig.priorities[tip] ?? 0, (v) => { rig.priorities[tip] = Math.max(0, Math.min(7, Math.round(v))); sendRobot(rig); }, 1)));
      }
    }
    box.append(collisionPanel(rig, reopen));
    const j = document.createElement('table');
    j.id = 'joints';
    box.append(j);
    renderJoints(rig);
  } else {
    const h = document.createElement('h2');
    h.textContent = `${rig.name}: ${rig.frames} frames at ${rig.fps.toFixed(0)} fps`;
    box.append(h);
    for (const [name, limb] of Object.entries(rig.limbs)) {
      box.append(check(` lock ${name.replace('_', ' ')}`, limb.lock, (v) => { limb.lock = v; stepCharacter(rig, rig.frame); }));
    }
    box.append(
      check(' pole from the animated knee', rig.usePole !== false, (v) => { rig.usePole = v; stepCharacter(rig, rig.frame); }),
      field('plant height m ', numberInput(rig.plant.height, (v) => { rig.plant.height = v; rig.detectPlants(); stepCharacter(rig, rig.frame); })),
      field('plant speed m/s ', numberInput(rig.plant.speed, (v) => { rig.plant.speed = v; rig.detectPlants(); stepCharacter(rig, rig.frame); })),
    );
    ui('scrub').max = String(rig.frames - 1);
    syncScrubber(rig);
    ui('play').textContent = rig.playing ? 'pause' : 'play';
  }
}

/** A robot's collisions: its obstacles (add, size, remove), avoid_collisions
 * and the margin, and the model ikd described. */
function collisionPanel(rig, reopen) {
  const sec = document.createElement('section');
  sec.id = 'collisions';
  const h = document.createElement('h2');
  h.textContent = 'collisions';
  sec.append(h);
  const note = document.createElement('p');
  note.className = 'hint';
  note.id = 'collision-model';
  if (!rig.withModel) {
    note.textContent = `no collision model: ${rig.modelError}`;
    sec.append(note);
    return sec;
  }
  const adds = document.createElement('div');
  adds.className = 'row';
  for (const kind of ['box', 'sphere', 'capsule']) {
    const b = document.createElement('button');
    b.id = `add-${kind}`;
    b.textContent = `+ ${kind}`;
    b.onclick = () => { const o = rig.obstacles.add(kind); renderRigPanel(); stage.select(rig.obstacles.handleName(o)); };
    adds.append(b);
  }
  const table = document.createElement('table');
  table.id = 'obstacles';
  for (const o of rig.obstacles.list) {
    const tr = table.insertRow();
    const name = document.createElement('th');
    name.textContent = o.name;
    const dims = document.createElement('td');
    dims.className = 'dims';
    const set = (k, v) => { try { rig.obstacles.resize(o, { [k]: v }); } catch (e) { say(e.message); } };
    const dim = (label, v, on) => { const i = numberInput(v, on); i.title = label; i.setAttribute('aria-label', `${o.name} ${label}`); return i; };
    if (o.kind === 'box') {
      o.size.forEach((v, i) => dims.append(dim(`size ${'xyz'[i]} m`, v, (x) => set('size', o.size.map((s, k) => (k === i ? x : s))))));
    } else {
      dims.append(dim('radius m', o.radius, (x) => set('radius', x)));
      if (o.kind === 'capsule') dims.append(dim('length m', o.length, (x) => set('length', x)));
    }
    const rm = document.createElement('button');
    rm.textContent = '×';
    rm.title = `remove ${o.name}`;
    rm.onclick = () => { rig.obstacles.remove(o); renderRigPanel(); };
    tr.append(name, dims);
    tr.insertCell().append(rm);
  }
  const avoid = check(' avoid collisions', rig.options.avoid_collisions, (v) => { rig.options.avoid_collisions = v; reopen(); });
  avoid.querySelector('input').id = 'avoid-collisions';
  const margin = numberInput(rig.options.collision_margin, (v) => { rig.options.collision_margin = Math.max(0, v); reopen(); });
  margin.id = 'collision-margin';
  margin.min = '0';
  const c = rig.collision;
  if (c?.error) note.textContent = `no collision model: ${c.error}`;
  else if (c) {
    const links = c.links.filter((l) => l.spheres > 0).length;
    note.textContent = `model: ${c.spheres} spheres on ${links} links (the arm as drawn: capsules of radius ${(rig.radius * 100).toFixed(1)} cm where the URDF has no primitives)` +
      (c.unmodelled.length ? `; not checked: ${c.unmodelled.join(', ')}` : '');
  }
  sec.append(adds, table, avoid, field('margin m ', margin), note);
  return sec;
}

function renderJoints(rig) {
  const t = document.getElementById('joints');
  if (!t || rig !== rigs.get(state.selected)) return;
  t.innerHTML = '';
  rig.jointNames.forEach((n, i) => {
    const [lo, hi] = rig.limits[i];
    const q = rig.joints[i] ?? 0;
    const f = (q - lo) / (hi - lo || 1);
    const tr = t.insertRow();
    tr.innerHTML = `<th></th><td class="v"></td><td><div class="bar"><i></i></div></td>`;
    tr.cells[0].textContent = n;
    tr.cells[1].textContent = `${((q * 180) / Math.PI).toFixed(1)}°`;
    tr.cells[1].className = f < 0.03 || f > 0.97 ? 'v warn' : 'v';
    tr.querySelector('i').style.left = `calc(${(Math.min(1, Math.max(0, f)) * 100).toFixed(1)}% - 1px)`;
  });
}

function syncScrubber(rig) {
  ui('scrub').value = String(rig.frame);
  ui('frame').textContent = `${rig.frame + 1}/${rig.frames}`;
  const planted = Object.entries(rig.limbs).filter(([, l]) => l.planting).map(([k]) => k.replace('_', ' '));
  ui('planted').textContent = planted.length ? `locked: ${planted.join(', ')}` : 'no limb planted';
}

ui('play').onclick = () => {
  const rig = rigs.get(state.selected);
  if (rig?.kind === 'character') play(rig, !rig.playing);
};
ui('scrub').oninput = () => {
  const rig = rigs.get(state.selected);
  if (rig?.kind !== 'character') return;
  play(rig, false);
  rig.wanted = Number(ui('scrub').value);
};
ui('speed').onchange = () => {
  const rig = rigs.get(state.selected);
  if (rig?.kind === 'character') rig.speed = Number(ui('speed').value);
};

/** The request and answer of the selected rig, as JSON and as curl. */
function exchange() {
  const rig = rigs.get(state.selected);
  if (!rig) return null;
  if (rig.kind === 'robot') return rig.lastRequest ? { request: rig.lastRequest, answer: rig.lastAnswer } : null;
  const limb = Object.keys(rig.limbs).find((l) => rig.lastRequests?.[l] && rig.limbs[l].lock);
  return limb ? { request: rig.lastRequests[limb], answer: rig.lastAnswers?.[limb] } : null;
}

function curl() {
  const x = exchange();
  if (!x) return '';
  const body = JSON.stringify(x.request).replace(/'/g, "'\\''");
  const auth = sessionStorage.getItem('ikd-token') ? ' -H "Authorization: Bearer $IKD_TOKEN"' : '';
  return `curl -sS ${location.origin}/v1/solve -H 'Content-Type: application/json'${auth} -d '${body}'`;
}

function renderExchange() {
  const x = exchange();
  const clip = (s) => (s.length > 4000 ? `${s.slice(0, 4000)}\n… (${s.length} characters; copy as curl has them all)` : s);
  ui('request').textContent = x ? clip(JSON.stringify(x.request, null, 1)) : '–';
  ui('answer').textContent = x?.answer ? clip(JSON.stringify(x.answer, null, 1)) : '–';
  const rig = rigs.get(state.selected);
  renderClearance(rig?.kind === 'robot' ? x?.answer : null, rig);
  if (rig?.kind === 'robot') renderJoints(rig);
}

/** The answer's clearance in words: how clear the arm is, or the pair that collides. */
function renderClearance(a, rig) {
  const el = ui('clearance');
  const cm = (d) => `${(d * 100).toFixed(1)} cm`;
  el.className = 'clearance';
  if (!a || a.min_distance === undefined) {
    el.textContent = '';
    return;
  }
  const margin = rig.options.avoid_collisions ? rig.options.collision_margin : 0;
  const k = a.closest;
  const pair = k ? `${k.link} and ${k.other_link ?? k.obstacle} at ${cm(k.distance)}` : '';
  if (a.cause === 'in_collision') {
    el.textContent = `no pose clear of collisions: ${pair}`;
    el.classList.add('bad');
  } else if (k) {
    el.textContent = `${k.distance < 0 ? 'in collision' : 'nearer than the margin'}: ${pair}`;
    el.classList.add(k.distance < 0 ? 'bad' : 'warn');
  } else {
    el.textContent = a.min_distance === null ? 'no pair to check' : `clear by ${cm(a.min_distance)}${margin ? ` (margin ${cm(margin)})` : ''}`;
    el.classList.add('ok');
  }
}

ui('copy-curl').onclick = async () => {
  const text = curl();
  try {
    await navigator.clipboard.writeText(text);
    say('copied the request as a curl command');
  } catch {
    const ta = ui('curl-text');
    ta.hidden = false;
    ta.value = text;
    ta.select();
    say('select and copy the curl command below');
  }
};

function setMode(mode) {
  stage.setMode(mode);
  for (const m of ['plane', 'axes', 'rotate']) ui(`mode-${m}`).classList.toggle('on', m === mode);
}
for (const m of ['plane', 'axes', 'rotate']) ui(`mode-${m}`).onclick = () => setMode(m);
window.addEventListener('keydown', (e) => {
  if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement) return;
  const m = { q: 'plane', w: 'axes', e: 'rotate' }[e.key.toLowerCase()];
  if (m) setMode(m);
  if (e.key === ' ') { e.preventDefault(); ui('play').click(); }
});
stage.onSelect((name) => {
  const rig = name.split(':')[0];
  if (rig !== state.selected && rigs.has(rig)) selectRig(rig);
});

ui('drawer').onclick = () => document.body.classList.toggle('open');

ui('auth').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = ui('token').value;
  if (t) sessionStorage.setItem('ikd-token', t);
  else sessionStorage.removeItem('ikd-token');
  ui('token').value = '';
  say('');
  connect();
});

function initialToken() {
  const m = /(?:^|&)token=([^&]*)/.exec(location.hash.slice(1));
  if (m) {
    sessionStorage.setItem('ikd-token', decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }
}

/* ---- numbers on screen ---------------------------------------------------------- */

function renderTables() {
  const body = ui('streams').tBodies[0];
  const names = Object.keys(state.streams);
  if (body.rows.length !== names.length) {
    body.innerHTML = '';
    for (const n of names) {
      const tr = body.insertRow();
      tr.innerHTML = '<td></td><td></td><td></td><td></td>';
      tr.cells[0].textContent = n;
    }
  }
  names.forEach((n, i) => {
    const st = state.streams[n];
    const row = body.rows[i];
    const c = st.counts;
    row.cells[1].textContent = `${st.answered}/${st.sent}`;
    row.cells[2].textContent = st.error || (st.status ? (st.status === 'success' ? 'success' : `${st.status} (${st.reason})`) : '–');
    row.cells[2].className = st.error ? 'bad' : st.status === 'success' ? 'ok' : st.status ? 'warn' : '';
    row.cells[3].textContent = `${c.success}/${c.no_ik_solution}/${c.timed_out}/${c.other}`;
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

let statsAt = 0;
function frame(now) {
  advance(now);
  if (now - statsAt > 250) { statsAt = now; renderStats(); }
  stage.render();
  requestAnimationFrame(frame);
}

window.ikdPage = {
  state, stage, rigs, materials,
  screenOf: (name) => stage.screenOf(name),
  select: (name) => stage.select(name),
  selectRig,
  frameRig,
  setMode,
  openFile,
  play: (name, on = true) => play(rigs.get(name), on),
  seek: (name, f) => { const r = rigs.get(name); play(r, false); r.wanted = f; },
  exchange,
  curl,
  /** the page's forward kinematics: where a robot's tip is with these joints (base frame) */
  tipAt(name, joints, tip) {
    const rig = rigs.get(name);
    const keep = rig.joints;
    rig.pose(rig.jointNames, joints);
    const p = rig.tipPose(tip ?? rig.tips[0]);
    rig.pose(rig.jointNames, keep);
    return { position: p.position.toArray(), orientation: p.orientation.toArray() };
  },
  /** moves a robot's obstacle to a point of the world (the screen's frame,
   * y up), as a drag there would */
  moveObstacle(name, obstacle, world) {
    const o = rigs.get(name).obstacles.byName(obstacle);
    o.mesh.position.copy(o.mesh.parent.worldToLocal(new THREE.Vector3(...world)));
    o.mesh.updateMatrixWorld();
    stage.moved(o.mesh);
  },
  /** a target handle's pose in its rig's base frame */
  handlePose(name) {
    const m = stage.handles.get(name)?.mesh;
    return m ? { position: m.position.toArray(), orientation: m.quaternion.toArray() } : null;
  },
};

(async () => {
  initialToken();
  if (window.matchMedia('(min-width: 701px)').matches) document.body.classList.add('open');
  requestAnimationFrame(frame);
  for (const [file, open] of [[DEFAULT_URDF, addRobot], [DEFAULT_BVH, addCharacter]]) {
    try {
      const resp = await fetch(file);
      if (!resp.ok) throw new Error(`${resp.status}`);
      await open(file, await resp.text());
    } catch (e) {
      say(`cannot load ${file}: ${e.message}`);
    }
  }
  stage.frame(new THREE.Vector3(0.8, 0.8, 0), 4.6);
  selectRig(rigs.keys().next().value ?? null);
  await connect();
})();

/**
 * js_client_bench.mjs: the JavaScript client under a Node game server's
 * load (make bench; issue 26), against the raw protocol over the same
 * "ws" package in the same run.
 *
 * 1000 characters (--characters), each a stream on a two-bone rig of its
 * own (the limb (0,0,0)-(0,0.5,0)-(0,1,0) scaled by 1 .. 1.05, as
 * ws_bench tick has them), answers reduced to local_rotations at 6 digits;
 * every tick moves each character to its next target (512 reachable
 * positions from ws_bench's xorshift sequence), closed loop (the next tick
 * when the answer is in). Four forms, each for --seconds, alternated
 * --rounds times on connections of their own:
 *
 *   api_tick     conn.tick({name: target, ...}) of the client;
 *   raw_tick     the same tick message by hand over "ws": JSON.stringify
 *                and JSON.parse only (what JSON itself costs Node);
 *   api_targets  1000 stream.target() promises per tick (Promise.all);
 *   raw_targets  1000 "target" messages by hand over "ws", a tick done
 *                when every stream has answered it (or a newer target).
 *
 * One JSON line per form and round (ticks/s, p50/p99 tick latency in us,
 * Node's CPU per tick in ms), then one with the ratios api over raw (issue
 * 26 asks at least 0.6 for api_targets over raw_targets). tests/bench/run.sh
 * puts api_tick next to ws_bench tick (C, libuv and wslay) measured on the
 * same daemon in the same run (issue 26 asks 0.9 of it, with the binary
 * form to come; this is what JSON reaches).
 *
 * Usage: node tests/bench/js_client_bench.mjs --url HOST:PORT
 *        [--seconds 5] [--characters 1000] [--rounds 1]
 */
import { Ikd } from '../../clients/js/ikd.js';
import WebSocket from 'ws';

const args = Object.fromEntries(process.argv.slice(2).reduce((a, v, i, all) => (i % 2 ? a : [...a, [v.replace(/^--/, ''), all[i + 1]]]), []));
const URL = args.url || '127.0.0.1:8080';
const SECONDS = Number(args.seconds || 5);
const N = Number(args.characters || 1000);
const ROUNDS = Number(args.rounds || 1);
const OPTIONS = { fields: ['local_rotations'], digits: 6 };

/* ws_bench's targets: the same xorshift sequence, kept within 0.15..0.95 */
const TARGETS = (() => {
  const out = [];
  let x = 0x9E3779B97F4A7C15n;
  const M = (1n << 64n) - 1n;
  while (out.length < 512) {
    const v = [];
    for (let k = 0; k < 3; k++) {
      x ^= (x << 13n) & M; x ^= x >> 7n; x ^= (x << 17n) & M;
      v.push(Number(x >> 11n) / 9007199254740992 * 2 - 1);
    }
    const r2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    if (r2 >= 0.15 * 0.15 && r2 <= 0.95 * 0.95) out.push({ position: v.map((c) => Number(c.toFixed(6))) });
  }
  return out;
})();
const chainOf = (k) => {
  const sc = 1 + 0.05 * k / N;
  return { kind: 'bones', positions: [[0, 0, 0], [0, 0.5 * sc, 0], [0, sc, 0]] };
};
const names = Array.from({ length: N }, (_, k) => `s${k}`);
const targetOf = (k, t) => TARGETS[(k + t) % TARGETS.length];

async function measure(form, step) {
  const lat = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let ticks = 0;
  while (performance.now() - t0 < SECONDS * 1000) {
    const s = performance.now();
    await step(ticks);
    lat.push(performance.now() - s);
    ticks++;
  }
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  lat.sort((a, b) => a - b);
  const r = {
    bench: 'js_client', form, characters: N, seconds: Number(secs.toFixed(2)), ticks,
    ticks_per_s: Number((ticks / secs).toFixed(1)),
    p50_us: Math.round(lat[lat.length >> 1] * 1000), p99_us: Math.round(lat[Math.floor(lat.length * 0.99)] * 1000),
    node_cpu_ms_per_tick: Number(((cpu.user + cpu.system) / 1000 / ticks).toFixed(3)),
  };
  console.log(JSON.stringify(r));
  return r;
}

async function apiForms() {
  const ikd = new Ikd(`http://${URL}`);
  const conn = ikd.connect({ reconnect: false });
  await conn.ready();
  const streams = await Promise.all(names.map((n, k) => conn.open(n, { chain: chainOf(k), options: OPTIONS })));
  const tick = () => measure('api_tick', async (t) => {
    const targets = {};
    for (let k = 0; k < N; k++) targets[names[k]] = targetOf(k, t);
    const ts = await conn.tick(targets);
    if (ts.solutions.length !== N) throw new Error('a tick answer of the wrong length');
  });
  const targets = () => measure('api_targets', async (t) => {
    const ps = new Array(N);
    for (let k = 0; k < N; k++) ps[k] = streams[k].target(targetOf(k, t));
    await Promise.all(ps);
  });
  return { tick, targets, close: () => conn.close() };
}

async function rawForms() {
  const ws = new WebSocket(`ws://${URL}/v1/stream`, ['ikd.v1']);
  await new Promise((ok, fail) => { ws.once('open', ok); ws.once('error', fail); });
  let onMessage = null;
  ws.on('message', (data) => onMessage(data.toString()));
  let opened = 0;
  await new Promise((ok) => {
    onMessage = (text) => { if (JSON.parse(text).type === 'opened' && ++opened === N) ok(); };
    names.forEach((n, k) => ws.send(JSON.stringify({ type: 'open', stream: n, chain: chainOf(k), options: OPTIONS })));
  });
  let tickSeq = 0;
  const seqs = new Array(N).fill(0);
  const tick = () => measure('raw_tick', (t) => new Promise((ok) => {
    const seq = ++tickSeq;
    const list = new Array(N);
    for (let k = 0; k < N; k++) {
      seqs[k]++;
      list[k] = seqs[k] === seq ? { stream: names[k], target: targetOf(k, t) } : { stream: names[k], seq: seqs[k], target: targetOf(k, t) };
    }
    onMessage = (text) => {
      const m = JSON.parse(text);
      if (m.type === 'tick_solution' && m.seq === seq) ok(m);
    };
    ws.send(JSON.stringify({ type: 'tick', seq, targets: list }));
  }));
  const index = new Map(names.map((n, k) => [n, k]));
  const targets = () => measure('raw_targets', (t) => new Promise((ok) => {
    let left = N;
    const want = new Array(N);
    onMessage = (text) => {
      const m = JSON.parse(text);
      const k = index.get(m.stream);
      if (m.type === 'solution' && want[k] !== undefined && m.seq >= want[k]) {
        want[k] = undefined;
        if (--left === 0) ok();
      }
    };
    for (let k = 0; k < N; k++) {
      want[k] = ++seqs[k];
      ws.send(JSON.stringify({ type: 'target', stream: names[k], seq: seqs[k], target: targetOf(k, t) }));
    }
  }));
  return { tick, targets, close: () => new Promise((ok) => { ws.once('close', ok); ws.close(1000); }) };
}

const api = await apiForms();
const raw = await rawForms();
const best = {};
const keep = (r) => { best[r.form] = Math.max(best[r.form] ?? 0, r.ticks_per_s); };
for (let round = 0; round < ROUNDS; round++) {
  keep(await raw.tick());
  keep(await api.tick());
  keep(await raw.targets());
  keep(await api.targets());
}
await api.close();
await raw.close();
console.log(JSON.stringify({
  bench: 'js_client_vs_raw_ws', characters: N, rounds: ROUNDS,
  api_tick_per_s: best.api_tick, raw_tick_per_s: best.raw_tick,
  tick_ratio: Number((best.api_tick / best.raw_tick).toFixed(3)),
  api_targets_per_s: best.api_targets, raw_targets_per_s: best.raw_targets,
  targets_ratio: Number((best.api_targets / best.raw_targets).toFixed(3)),
}));

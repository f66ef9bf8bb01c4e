/**
 * test_js_answers.mjs: clients/js/ikd.js against the real daemon
 * (tests/clients/ikd_daemon.mjs) on sequences of legitimate messages whose
 * answers the client must take, never refuse as bad_answer: the client
 * refuses answers that lie (a seq never sent, an older solution, a path
 * sample after its path_end, a tick answer of other targets), and ikd's
 * own answers must never look like one.
 *
 *   - A target, a path and a target sent at once on a numeric stream (its
 *     solves run on the pool): ikd ends the path that never started at
 *     once, before the first target's solution; that solution is taken
 *     (it answers its own promise) and the path resolves with its
 *     path_end (sent 0, not completed).
 *   - A random mix (fixed seed) of targets, awaited targets, paths, ticks
 *     (JSON and binary) and pauses on a numeric arm and a two-bone leg,
 *     then every promise settled: no bad_answer, every answer's seq one
 *     that was sent.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ikd, JsonCodec } from '../../clients/js/ikd.js';
import { start, IKD_DATA } from './ikd_daemon.mjs';

const LIMIT = { timeout: 60000 };
const LEG = { kind: 'bones', positions: [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]] };
const ARM = { kind: 'urdf', urdf: readFileSync(`${IKD_DATA}/robots/kuka_iiwa14_r820.urdf`, 'utf8'), base: 'base_link', tip: 'tool0' };
const armT = (x) => ({ position: [0.4 + 0.05 * Math.sin(x), 0.2 * Math.cos(x / 3), 0.6] });
const legT = (x) => ({ position: [0.2, 0.1 + 0.01 * Math.sin(x), 0.25] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let daemon;
let ikd;
before(async () => {
  daemon = await start([]);
  ikd = new Ikd(daemon.base);
});
after(async () => {
  if (daemon) assert.equal(await daemon.stop(), 0, daemon.log());
});

/** A connection whose "error" events are collected. */
async function connect(opts = {}) {
  const conn = ikd.connect(opts);
  const errors = [];
  conn.on('error', (e) => errors.push(e));
  await conn.ready();
  return { conn, errors };
}

test('a path ended before it started, ahead of an older target\'s solution: that solution is taken', LIMIT, async () => {
  const { conn, errors } = await connect();
  try {
    /* one write each: when ikd reads them in one go, seq 1 solves on the
     * pool while the path (seq 2) waits, and seq 3 cuts the path before it
     * starts. On a loaded machine ikd may read them apart and start the
     * path first: each try checks what holds either way, and the ordering
     * under test must come in one of 10 tries (it came in the first try
     * of every run on an idle machine) */
    let cutBeforeStart = 0;
    for (let k = 0; k < 10 && !cutBeforeStart; k++) {
      const arm = await conn.open(`arm${k}`, { chain: ARM, options: { solver: 'numeric' } });
      const seen = [];
      arm.onSolution((s) => seen.push(s.seq));
      const [first, path, third] = await Promise.all([
        arm.target(armT(0)),
        arm.path([armT(1), armT(2)], { rate_hz: 100, duration_s: 2 }),
        arm.target(armT(3)),
      ]);
      assert.deepEqual(errors.map((e) => e.message), [], 'nothing refused');
      assert.equal(first.seq, 1, 'the first target answered by its own solution');
      assert.equal(third.seq, 3);
      assert.equal(path.seq, 2);
      assert.equal(path.completed, false, 'cut by the third target');
      assert.deepEqual(seen.filter((q) => q !== 2), [1, 3]);
      assert.deepEqual(seen, [...seen].sort((a, b) => a - b), 'in the order of their seqs');
      if (path.sent + path.skipped === 0) cutBeforeStart++;
      await arm.close();
    }
    assert.equal(cutBeforeStart, 1, 'a path ended before it started, in one of 10 tries');
  } finally {
    conn.close();
  }
});

for (const form of ['binary', 'json']) {
  test(`a random mix of targets, paths and ticks (${form} ticks): nothing refused`, LIMIT, async () => {
    const { conn, errors } = await connect(form === 'json' ? { codec: new JsonCodec() } : {});
    try {
      const arm = await conn.open('arm', { chain: ARM, options: { solver: 'numeric' } });
      const leg = await conn.open('leg', { chain: LEG, options: { solver: 'two_bone' } });
      const sent = { arm: new Set(), leg: new Set() };
      const answered = [];
      for (const s of [arm, leg]) s.onSolution((sol) => answered.push([s.name, sol.seq]));
      let rnd = 12345;
      const r = () => (rnd = (rnd * 1103515245 + 12345) % 2147483648) / 2147483648;
      const waits = [];
      for (let i = 0; i < 1500; i++) {
        const x = r(), s = r() < 0.5 ? arm : leg, T = s === arm ? armT : legT;
        if (x < 0.3) {
          const q = s.send(T(i));
          if (q > 0) sent[s.name].add(q);
        } else if (x < 0.45) {
          waits.push(s.target(T(i)).catch(() => {}));
          sent[s.name].add(s.seq);
        } else if (x < 0.6) {
          waits.push(s.path([T(i), T(i + 1), T(i + 2)], { rate_hz: 1000, duration_s: 0.02 + 0.05 * r() }).catch(() => {}));
          sent[s.name].add(s.seq);
        } else if (x < 0.8) {
          if (conn.sendTick([{ stream: 'arm', target: armT(i) }, { stream: 'leg', target: legT(i) }]) > 0) {
            sent.arm.add(arm.seq);
            sent.leg.add(leg.seq);
          }
        } else if (x < 0.9) {
          waits.push(conn.tick({ leg: legT(i) }).catch(() => {}));
          sent.leg.add(leg.seq);
        } else {
          await sleep(r() * 5);
        }
        if (i % 100 === 0) await sleep(1);
      }
      await Promise.all(waits);
      await conn.tick({ arm: armT(0), leg: legT(0) }); /* after everything else */
      sent.arm.add(arm.seq);
      sent.leg.add(leg.seq);
      assert.deepEqual(errors.map((e) => e.message), [], 'nothing refused');
      for (const [name, seq] of answered) assert.ok(sent[name].has(seq), `${name}: seq ${seq} answered, never sent`);
      assert.ok(answered.length > 20, `${answered.length} answers`);
    } finally {
      conn.close();
    }
  });
}

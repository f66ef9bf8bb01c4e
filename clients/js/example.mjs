// example.mjs: the JavaScript client in a dozen lines (see README.md here).
// Run it against a daemon:  IKD_URL=http://127.0.0.1:8080 IKD_TOKEN=s3cret node clients/js/example.mjs
import { Ikd, IkdError } from './ikd.js';

const ikd = new Ikd(process.env.IKD_URL || 'http://127.0.0.1:8080', { token: process.env.IKD_TOKEN });
const leg = { kind: 'bones', positions: [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]] };

// One solve over HTTP: the knee bends towards the pole.
const one = await ikd.solve({ chain: leg, target: { position: [0.2, 0.1, 0.25], pole: [1, 0, 0.5] } });
console.log('solve:', one.status, 'knee at', one.positions[1].map((v) => v.toFixed(3)).join(' '));

// A batch: one chain, many targets, results in order.
const batch = await ikd.batch({ chain: leg, targets: [{ position: [0.2, 0, 0.3] }, { position: [0, 0, -2] }] });
console.log('batch:', batch.results.map((r) => r.status).join(', '));

// Errors carry the wire code and the JSON path of the offending value.
try {
  await ikd.solve({ chain: leg, target: { position: [0.2, 0.1] } });
} catch (e) {
  if (!(e instanceof IkdError)) throw e;
  console.log('error:', e.code, 'at', e.path);
}

// A stream: targets at frame rate, answers in seq order, warm-started.
const conn = ikd.connect();
const stream = await conn.open('left_leg', { chain: leg });
for (let i = 0; i < 10; i++) {
  const s = await stream.target({ position: [0.2, 0.1, 0.25 + 0.02 * i], pole: [1, 0, 0.5] });
  console.log(`stream: seq ${s.seq} ${s.result.status} in ${s.rttMs.toFixed(2)} ms`);
}
// A tick: targets for many streams in one message, answered in one.
await conn.open('right_leg', { chain: leg });
const tick = await conn.tick({ left_leg: { position: [0.2, 0.1, 0.3] }, right_leg: { position: [0.1, -0.1, 0.3] } });
console.log('tick:', tick.solutions.map((s) => `${s.stream} ${s.result.status}`).join(', '));
await conn.close();

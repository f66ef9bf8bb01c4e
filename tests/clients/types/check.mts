// check.mts: a typed use of the packed JavaScript client, compiled by tsc
// --noEmit in tests/clients/test_js_package.mjs against the package's own
// declarations (resolved as "ikd-client" through its package.json). The
// lines marked as expected errors are misuses the declarations must refuse:
// tsc fails when one of them is accepted.
import { Ikd, IkdError, JsonCodec, VERSION, streamProtocols } from 'ikd-client';
import type { Result, Solution, TickSolution, TickItem, ChainInfo, BatchAnswer, SolveAnswer } from 'ikd-client';

const ikd = new Ikd('https://ikd.example:8443', { token: 't', ca: '-----BEGIN CERTIFICATE-----', retries: 2 });
const leg = { kind: 'bones' as const, positions: [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]] };
const version: string = VERSION;
const protocols: string[] = streamProtocols('t');

export async function use(): Promise<number> {
  const one: SolveAnswer = await ikd.solve({ chain: leg, target: { position: [0.2, 0.1, 0.25] } });
  const status: string = one.status;
  const batch: BatchAnswer = await ikd.batch({ chain: leg, targets: [{ position: [0.2, 0.1, 0.25] }] });
  const counts: number = batch.counts.success ?? 0;
  const info: ChainInfo = await ikd.registerChain({ kind: 'urdf', urdf: '<robot/>', base: 'a', tip: 'b' });
  const conn = ikd.connect({ maxDelayMs: 1000, codec: new JsonCodec() });
  conn.on('error', (e: IkdError) => e.code === 'unknown_type');
  conn.on('tick', (t: TickSolution) => t.solutions.length);
  conn.on('state', (s) => s === 'reconnecting');
  await conn.ready();
  const s = await conn.open('leg', { chain_id: info.id, options: { solver: 'two_bone', fields: ['local_rotations'], digits: 6 } });
  const sol: Solution = await s.target({ position: [0.2, 0.1, 0.3] }, { seed: [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]] });
  const r: Result = sol.result;
  const seq: number = s.send({ position: [0.2, 0.1, 0.3] });
  const tick: TickSolution = await conn.tick({ leg: { position: [0.2, 0.1, 0.3] } });
  const item: TickItem = tick.solutions[0];
  const failed: string | undefined = item.error?.path;
  await conn.tick([{ stream: 'leg', target: { position: [0.2, 0.1, 0.3] } }]);
  // @ts-expect-error: a tick target needs its stream's name
  await conn.tick([{ target: { position: [0, 0, 0] } }]);
  // @ts-expect-error: there is no such event
  conn.on('solution', () => 0);
  // @ts-expect-error: a target's position is numbers
  await s.target({ position: 'here' });
  // @ts-expect-error: solve needs a target
  await ikd.solve({ chain: leg });
  // @ts-expect-error: states are a closed list
  const bad: typeof conn.state = 'half-open';
  await conn.close();
  return status.length + counts + r.status.length + seq + (failed ?? '').length + version.length + protocols.length + (bad ? 1 : 0);
}

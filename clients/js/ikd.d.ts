/**
 * ikd.d.ts: the TypeScript declarations of ikd.js, the JavaScript client of
 * ikd (proto/README.md for HTTP, proto/STREAM.md for streams and ticks).
 * tests/clients/types/ checks them with tsc against a typed example, and
 * tests/clients/test_js_package.mjs checks that every value exported by
 * ikd.js is declared here and nothing more.
 */

/** The version of this client (the ikd release it speaks to). */
export const VERSION: string;
/** The application subprotocol, "ikd.v1". */
export const PROTOCOL: string;
/** Prefix of the subprotocol that carries the bearer token. */
export const TOKEN_PROTOCOL_PREFIX: string;
/** HTTP statuses that are retried: 502, 503, 504. */
export const RETRY_STATUSES: number[];

/** base64url (RFC 4648 section 5, no padding) of a string's UTF-8 bytes. */
export function base64url(text: string): string;
/** ["ikd.v1"], and with a token the bearer subprotocol. */
export function streamProtocols(token?: string): string[];

/** Wire codes of ikd's errors, and the client's own. */
export type ErrorCode =
  | 'invalid_json' | 'invalid_request' | 'unknown_type' | 'stream_exists' | 'too_many_streams'
  | 'unauthorized' | 'forbidden_origin' | 'not_found' | 'unknown_chain' | 'unknown_scene'
  | 'unknown_stream'
  | 'method_not_allowed' | 'request_timeout' | 'too_large' | 'invalid_chain' | 'invalid_urdf'
  | 'invalid_srdf' | 'upgrade_required' | 'internal' | 'overloaded' | 'shutting_down'
  | 'network' | 'bad_answer' | 'not_connected' | 'connection_lost' | 'closed' | 'unexpected_message'
  | 'timeout' | 'send_queue_full' | 'message_too_large'
  | (string & {});

export class IkdError extends Error {
  constructor(code: string, message: string, more?: {
    path?: string; status?: number; stream?: string; seq?: number; retryAfter?: number;
  });
  readonly name: 'IkdError';
  /** the wire code, such as "invalid_request" */
  code: ErrorCode;
  /** ikd's own words */
  detail: string;
  /** JSON pointer into the request or message ("" for the whole) */
  path: string;
  /** HTTP status (HTTP errors only) */
  status?: number;
  stream?: string;
  seq?: number;
  /** seconds, from Retry-After */
  retryAfter?: number;
}

export type Vec2 = [number, number];
export type Vec3 = [number, number, number];
/** [x, y, z, w] */
export type Quat = [number, number, number, number];

/** A target (proto/README.md, "Target"); a tree's target has `tips`. */
export interface Target {
  position?: Vec3 | Vec2 | number[];
  orientation?: Quat | number[];
  rotation?: number[][];
  up?: number[];
  pole?: Vec3 | number[];
  weights?: number[];
  tips?: Record<string, Target & { priority?: number; weight?: number }>;
  keep?: 'pose' | 'joints';
}

/** A chain (proto/README.md, "Chains"): kind and its members. */
export interface Chain {
  kind: 'planar' | 'links3d' | 'bones' | 'skeleton' | 'joints' | 'urdf' | 'tree';
  [member: string]: unknown;
}

export type Seed = number[] | number[][];

/** Obstacles in the chain's base frame and units (proto/README.md, "Collisions"). */
export interface Scene {
  boxes?: Array<{ size: Vec3 | number[]; position: Vec3 | number[]; orientation?: Quat | number[]; name?: string }>;
  spheres?: Array<{ radius: number; position: Vec3 | number[]; name?: string }>;
  capsules?: Array<{ radius: number; from: Vec3 | number[]; to: Vec3 | number[]; name?: string }>;
}

/** Options (proto/README.md, "Options"); ikd checks them. */
export interface Options {
  solver?: string;
  tolerance?: number;
  angular_tolerance?: number;
  max_iterations?: number;
  timeout_ms?: number;
  search?: 'first' | 'nearest';
  units?: 'radians' | 'degrees';
  frame?: 'ros' | 'unity' | 'unreal';
  max_joint_step?: number;
  all_solutions?: boolean;
  servo?: { period_s: number; velocity?: number[] };
  bend?: 1 | -1;
  fields?: string[];
  digits?: number;
  objective?: string;
  avoid_collisions?: boolean;
  collision_margin?: number;
  [member: string]: unknown;
}

export interface Pose { position: number[]; orientation: Quat | number[] }

export interface TipAnswer {
  status?: string; code?: number; position: number[]; orientation: number[];
  position_error?: number; orientation_error?: number;
}

/** The per-target members of an answer ("status" always; the others
 * depending on the chain and options.fields). */
export interface Result {
  status: 'success' | 'no_ik_solution' | 'timed_out' | 'invalid_goal_constraints' | 'failure' | (string & {});
  code?: number;
  reason?: string;
  cause?: string;
  joints?: number[];
  positions?: number[][];
  rotations?: number[][];
  local_rotations?: number[][];
  tip?: Pose;
  tips?: TipAnswer[];
  position_error?: number;
  orientation_error?: number;
  max_joint_step?: number;
  arrived?: boolean;
  solutions?: number[][];
  solution_count?: number;
  iterations?: number;
  restarts?: number;
  time_ms?: number;
  /** on a chain with a collision model: the signed clearance of the pose */
  min_distance?: number | null;
  /** the pair nearer than the margin: a link and another link or an obstacle */
  closest?: { link: string; other_link?: string; obstacle?: string; distance: number };
}

export interface ChainMembers {
  chain_id: string;
  solver: string;
  units?: string;
  frame?: string;
  joint_names?: string[];
  bone_names?: string[];
  tip_names?: string[];
}

export type SolveAnswer = Result & ChainMembers;
export interface BatchAnswer extends ChainMembers {
  count: number;
  counts: Record<string, number>;
  results: Result[];
}

export interface ChainInfo {
  id: string;
  kind: string;
  dof?: number;
  joint_names?: string[];
  joints?: Array<{ type: string; lower?: number; upper?: number }>;
  solvers?: string[];
  closed_form?: { family: string; why?: string; message?: string };
  memory_bytes?: number;
  chain?: Chain;
  [member: string]: unknown;
}

export interface SolveRequest {
  chain?: Chain; chain_id?: string; target: Target; seed?: Seed; options?: Options; scene?: Scene;
}
export interface BatchRequest {
  chain?: Chain; chain_id?: string; targets: Target[]; seeds?: Seed[]; options?: Options; scene?: Scene;
}

export interface RequestOptions { signal?: AbortSignal }

export interface ClientOptions {
  /** bearer token (ikd started with --token) */
  token?: string;
  /** Node: a CA (PEM text) to trust for https:// and wss:// */
  ca?: string | Uint8Array;
  fetch?: typeof fetch;
  /** WebSocket constructor (default: global, else the "ws" package) */
  WebSocket?: unknown;
  /** how the stream upgrade carries the token (default "auto": protocol) */
  streamAuth?: 'auto' | 'protocol' | 'header';
  /** HTTP retries after network errors and 502/503/504 (default 3) */
  retries?: number;
  backoffMs?: number;
  maxBackoffMs?: number;
  /** registered chains remembered for re-registration (default 256) */
  keepChains?: number;
  /** each HTTP exchange, its answer read whole, in ms (default 30000; 0:
   * none): past it the request rejects with IkdError "timeout" */
  timeoutMs?: number;
  /** bytes of one HTTP answer's body at most (default 256 MiB): a larger
   * one is refused as it arrives, IkdError "bad_answer" */
  maxAnswer?: number;
}

export class Ikd {
  constructor(base?: string, opts?: ClientOptions);
  readonly base: string;
  token: string;
  /** chains registered through this client, by id */
  readonly chains: Map<string, Chain>;
  /** chains registered again after unknown_chain */
  readonly reregistered: number;
  request(method: string, path: string, body?: unknown, opts?: RequestOptions): Promise<any>;
  solve(req: SolveRequest, opts?: RequestOptions): Promise<SolveAnswer>;
  batch(req: BatchRequest, opts?: RequestOptions): Promise<BatchAnswer>;
  registerChain(chain: Chain, opts?: RequestOptions): Promise<ChainInfo>;
  getChain(id: string, opts?: RequestOptions): Promise<ChainInfo>;
  deleteChain(id: string, opts?: RequestOptions): Promise<null>;
  solvers(opts?: RequestOptions): Promise<any>;
  ready(opts?: RequestOptions): Promise<{ status: string }>;
  reregister(id: string, opts?: RequestOptions): Promise<boolean>;
  connect(opts?: ConnectOptions): IkdConnection;
  streamUrl(): string;
}

export interface ConnectOptions {
  /** re-open after a drop (default true) */
  reconnect?: boolean;
  minDelayMs?: number;
  maxDelayMs?: number;
  maxAttempts?: number;
  /** the tick form (default: BinaryCodec, binary where a tick fits it) */
  codec?: TickCodec;
  /** targets in a tick at most, as ikd's --max-streams (default 1024): a
   * tick answer of more entries is refused as "bad_answer" */
  maxStreams?: number;
  /** bytes waiting to be written at most (default 8 MiB, as the C client's
   * max_send_queue): a send past it is refused, IkdError "send_queue_full"
   * (send() and sendTick() return -1) */
  maxSendQueue?: number;
  /** bytes of one message from ikd at most (default 16 MiB, as the other
   * clients): a larger one drops the connection (the "ws" package's bound;
   * a browser keeps its own) */
  maxMessage?: number;
  /** the TCP, TLS and upgrade handshakes together, in ms (default 10000; 0:
   * no bound): past it the dial fails like a lost connection */
  connectTimeoutMs?: number;
  /** silent this long (ms, default 30000; 0: never): a ping at half of it,
   * and at all of it the connection is dropped ("error" event "timeout")
   * and dialled again. Needs the "ws" package (a browser cannot ping) */
  idleTimeoutMs?: number;
}

/** A stream's answer: a target's, a path sample's or a tick item's. */
export interface Answer {
  stream: string;
  /** the seq ikd answered */
  seq: number;
  /** targets ikd dropped since the previous solution */
  skipped: number;
  result: Result;
}

/** A "solution" as delivered to the caller. */
export interface Solution extends Answer {
  /** the seq of the target this promise was for (< seq when replaced) */
  requested: number;
  /** milliseconds from sending the seq to its answer */
  rttMs: number;
  index?: number;
  count?: number;
}

export interface PathEnd {
  type: 'path_end';
  stream: string;
  seq: number;
  sent: number;
  skipped: number;
  count: number;
  completed: boolean;
}

/** One target of a tick: its solution, or the error that refused it. */
export interface TickItem {
  stream: string;
  seq: number;
  skipped?: number;
  result?: Result;
  error?: IkdError;
}

export interface TickSolution {
  /** the tick ikd answered */
  seq: number;
  /** the tick this promise was for (< seq when a newer tick replaced it) */
  requested: number;
  /** ticks dropped since the previous tick_solution */
  skipped: number;
  /** one per target, in the order of the tick's targets */
  solutions: TickItem[];
}

export interface TickTarget { stream: string; target: Target; seed?: Seed }
export type TickTargets = TickTarget[] | Map<string, Target> | Record<string, Target>;

/** The seam of the tick form: JSON text, or binary (proto/STREAM.md, "Binary ticks"). */
export interface TickCodec {
  encodeTick(seq: number, targets: Array<TickTarget & { seq?: number }>): string | ArrayBufferLike | Uint8Array;
  decodeTick(msg: any): TickSolution;
  /** a binary message: its TickSolution, or null when it is not a tick answer */
  decodeBinary?(data: ArrayBuffer | ArrayBufferView, max?: number): TickSolution | null;
}

export class JsonCodec implements TickCodec {
  encodeTick(seq: number, targets: Array<TickTarget & { seq?: number }>): string;
  decodeTick(msg: any): TickSolution;
}

/** Ticks of {position, orientation?} targets (no seed) as binary messages,
 * answered in binary (numbers at full precision; no reason, cause or
 * solutions); any other tick as JSON. The default. */
export class BinaryCodec extends JsonCodec implements TickCodec {
  encodeTick(seq: number, targets: Array<TickTarget & { seq?: number }>): any;
  decodeBinary(data: ArrayBuffer | ArrayBufferView, max?: number): TickSolution | null;
}

export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface ConnectionEvents {
  state: (state: ConnectionState) => void;
  error: (error: IkdError) => void;
  reopen: () => void;
  message: (message: unknown) => void;
  tick: (tick: TickSolution) => void;
}

export class IkdConnection {
  constructor(ikd: Ikd, opts?: ConnectOptions);
  readonly ikd: Ikd;
  state: ConnectionState;
  readonly streams: Map<string, IkdStream>;
  readonly reconnects: number;
  /** the newest tick answered */
  latestTick: TickSolution | undefined;
  /** "error" events nobody listened to (written to console.warn) */
  readonly unheardErrors: number;
  codec: TickCodec;
  on<K extends keyof ConnectionEvents>(name: K, fn: ConnectionEvents[K]): () => boolean;
  ready(): Promise<void>;
  open(name: string, spec: { chain?: Chain; chain_id?: string; options?: Options; seed?: Seed; scene?: Scene }): Promise<IkdStream>;
  tick(targets: TickTargets): Promise<TickSolution>;
  sendTick(targets: TickTargets): number;
  /** sends one message object as it is; false when not open */
  send(msg: object): boolean;
  sendText(text: string): boolean;
  close(): Promise<void>;
}

export class IkdStream {
  readonly conn: IkdConnection;
  readonly name: string;
  chainId: string | undefined;
  /** the last seq sent */
  seq: number;
  isOpen: boolean;
  /** the newest answer (latest wins) */
  latest: Answer | undefined;
  onSolution(fn: (s: Solution) => void): () => boolean;
  target(target: Target, opts?: { seed?: Seed }): Promise<Solution>;
  send(target: Target, opts?: { seed?: Seed }): number;
  path(waypoints: Target[], timing?: { rate_hz?: number; duration_s?: number },
    onSample?: (s: Solution) => void): Promise<PathEnd>;
  /** replaces the stream's scene (a "scene" message); false when not open */
  setScene(scene: Scene): boolean;
  close(): Promise<void>;
}

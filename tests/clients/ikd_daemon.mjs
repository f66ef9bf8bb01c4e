/**
 * ikd_daemon.mjs: starts the real daemon for the Node tests (the
 * JavaScript client's and the live page's) and stops it.
 *
 * start(args) runs $IKD_BIN (default build/ikd) on 127.0.0.1 port 0 with
 * the extra flags given, reads its one stdout line "ikd listening on
 * HOST:PORT" (within a bounded time) and resolves to {base, port, stop,
 * log}. stop() sends SIGTERM and resolves to the exit code, killing the
 * process if it has not exited within the grace period; a test asserts
 * that the code is 0. log() is what the daemon wrote to stderr so far.
 */
import { spawn } from 'node:child_process';

export const IKD_BIN = process.env.IKD_BIN || 'build/ikd';
export const IKD_DATA = process.env.IKD_DATA || 'tests/data';

export function start(args = [], { startMs = 10000 } = {}) {
  const child = spawn(IKD_BIN, ['--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { if (err.length < 1 << 20) err += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve(code ?? `signal ${sig}`)));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`ikd did not start within ${startMs} ms: ${err}`)); }, startMs);
    child.on('error', (e) => { clearTimeout(timer); reject(new Error(`cannot run ${IKD_BIN}: ${e.message}`)); });
    exited.then((code) => { clearTimeout(timer); reject(new Error(`ikd exited (${code}) before listening: ${err}`)); });
    child.stdout.on('data', (d) => {
      out += d;
      const m = /ikd listening on (\S+):(\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      const port = Number(m[2]);
      resolve({
        base: `http://127.0.0.1:${port}`,
        port,
        log: () => err,
        stop: async (graceMs = 15000) => {
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
          const code = await exited;
          clearTimeout(t);
          return code;
        },
      });
    });
  });
}

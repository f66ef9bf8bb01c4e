"""
py_client_bench.py: the Python client at a robot controller's rate, against
a bare `websockets` loop in the same run (make bench; issue 26).

A UR5 stream (tests/data/robots/ur5.urdf, base_link to tool0) at 1 kHz: one
full-pose target per period along a smooth joint-space motion (poses by
forward kinematics, tests/server/robot_chain.py), each period waiting for
its solution before the next. The same loop runs twice, each in a process
of its own so that its memory is its own, alternated --rounds times:

  bare    websockets.connect, json.dumps of the target message, ws.recv(),
          json.loads (what a program without the client writes);
  client  ikd.AsyncClient(...).connect(), Stream.solve() (the package in
          clients/python, from the repository).

Each prints a JSON line: round trips (p50, p99, largest, in ms); missed
periods (a period whose answer came after it ended: the loop then goes on
with the period it is in, and the periods between count as missed too);
the process's RSS growth from the end of a 1 s warm-up to the end (MB); the
longest pause of the garbage collector (gc.callbacks) and the collections
per generation. The periods are kept by clock_nanosleep, as a controller's
timer would (asyncio's own timers wake up to a millisecond late, which
would be the figure). The last line compares the two, the worst round of
each: client over bare for the largest round trip and missed periods, the
RSS growth of each, and how far behind the reference the arm fell in servo
mode (the same two loops again with options.servo, period 1 ms: the largest
joint distance between an answer and the configuration its target came
from, in periods of motion at the UR5's velocity limit; a missed period is
one the arm does not move in).

Usage: py_client_bench.py --port PORT [--seconds 15] [--rate 1000] [--rounds 1]
                          [--forms plain,servo]
(run with /usr/bin/python3, which sees Debian's websockets). Issue 26's
goals over 60 s: RSS growth under 5 MB, largest round trip under 5 ms and
within 1.5x of the bare loop, missed periods within 1.5x.
"""
import argparse
import array
import asyncio
import gc
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
IKD_DATA = os.environ.get("IKD_DATA", os.path.join(ROOT, "tests", "data"))
MID = [0.3, -1.2, 1.4, -1.5, -1.4, 0.4]
VMAX = 3.15  # the UR5's slowest <limit velocity> (rad/s): one period's motion is VMAX / rate


def targets(n=4000):
    sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
    from robot_chain import Chain
    ur5 = Chain(os.path.join(IKD_DATA, "robots", "ur5.urdf"), "base_link", "tool0")
    out, qs = [], []
    for i in range(n):  # one loop of 4 s at 1 kHz: at most 0.0019 rad per period
        q = [MID[k] + 0.4 * math.sin(2 * math.pi * i / n * (1 + k % 3) + k) for k in range(6)]
        p, o = ur5.fk(q)
        out.append({"position": p, "orientation": o})
        qs.append(q)
    with open(os.path.join(IKD_DATA, "robots", "ur5.urdf")) as f:
        chain = {"kind": "urdf", "urdf": f.read(), "base": "base_link", "tip": "tool0"}
    return chain, qs[0], out, qs


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


class GcWatch:
    def __init__(self):
        self.t0 = 0.0
        self.longest = 0.0
        self.counts = [0, 0, 0]
        gc.callbacks.append(self.cb)

    def cb(self, phase, info):
        if phase == "start":
            self.t0 = time.perf_counter()
        else:
            self.longest = max(self.longest, time.perf_counter() - self.t0)
            self.counts[info["generation"]] += 1


async def loop(mode, port, seconds, rate, servo):
    chain, q0, tgts, qs = targets()
    period = 1.0 / rate
    options = {"servo": {"period_s": period}} if servo else None
    url = "http://127.0.0.1:%d" % port
    if mode == "bare":
        import websockets
        ws = await websockets.connect("ws://127.0.0.1:%d/v1/stream" % port,
                                      subprotocols=["ikd.v1"], max_size=None)
        msg = {"type": "open", "stream": "ur5", "chain": chain, "seed": q0}
        if options:
            msg["options"] = options
        await ws.send(json.dumps(msg))
        json.loads(await ws.recv())
        seq = [0]

        async def solve(t):
            seq[0] += 1
            await ws.send(json.dumps({"type": "target", "stream": "ur5", "seq": seq[0],
                                      "target": t}))
            return json.loads(await ws.recv())["result"]

        async def close():
            await ws.close()
    else:
        sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
        import ikd
        conn = await ikd.AsyncClient(url).connect().start()
        stream = await conn.open("ur5", chain=chain, seed=q0, options=options)

        async def solve(t):
            return (await stream.solve(t)).result

        async def close():
            await conn.close()

    watch = GcWatch()
    # round trips in a buffer allocated up front, so that the RSS growth
    # measured is the loop's own and not this list's
    cap = int(rate * (seconds + 2)) + 16
    rtts, n = array.array("d", bytes(8 * cap)), 0
    missed, fails, behind = 0, 0, 0.0
    start = time.perf_counter()
    rss0 = None
    k = 0  # the period now: its target is due at start + k * period
    while True:
        due = start + k * period
        now = time.perf_counter()
        if rss0 is None and now - start >= 1.0:  # the end of the warm-up
            rss0 = rss_mb()
            n, missed, fails, behind = 0, 0, 0, 0.0
            watch.longest, watch.counts = 0.0, [0, 0, 0]
            measured_from, k0 = now, k
        if now - start >= seconds + 1.0:
            break
        if due > now:
            # a controller's timer: clock_nanosleep (asyncio's own timers
            # wake up to a millisecond late, which would be the figure)
            time.sleep(due - now)
        t0 = time.perf_counter()
        result = await solve(tgts[k % len(tgts)])
        t1 = time.perf_counter()
        if n < cap:
            rtts[n] = t1 - t0
            n += 1
        if servo:  # how far the arm is from the reference's joints
            ref = qs[k % len(qs)]
            behind = max(behind, max(abs(a - b) for a, b in zip(result["joints"], ref)))
        else:
            fails += result["status"] != "success"
        # missed: the answer came after its period ended; the loop then
        # goes on with the period it is in (the ones between get nothing)
        end = start + (k + 1) * period
        if t1 > end:
            missed += 1 + int((t1 - end) / period)
            k = int((t1 - start) / period) + 1
        else:
            k += 1
    rss1 = rss_mb()
    await close()
    rtts = sorted(rtts[:n])
    return {"bench": "py_client_1khz", "mode": mode + ("_servo" if servo else ""), "rate_hz": rate,
            "seconds": round(time.perf_counter() - measured_from, 2), "round_trips": n,
            "periods": k - k0, "missed_periods": missed, "not_success": fails,
            "p50_ms": round(rtts[n // 2] * 1e3, 3), "p99_ms": round(rtts[int(n * 0.99)] * 1e3, 3),
            "max_ms": round(rtts[-1] * 1e3, 3), "rss_growth_mb": round(rss1 - rss0, 2),
            "gc_longest_ms": round(watch.longest * 1e3, 3), "gc_collections": watch.counts,
            **({"behind_rad": round(behind, 5),
                "behind_periods": round(behind / (VMAX * period), 1)} if servo else {})}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--mode", choices=["bare", "client"])
    ap.add_argument("--servo", action="store_true")
    ap.add_argument("--forms", default="plain,servo", help="plain, servo or both")
    a = ap.parse_args()
    if a.mode:
        print(json.dumps(asyncio.run(loop(a.mode, a.port, a.seconds, a.rate, a.servo))),
              flush=True)
        return
    results = {"bare": [], "client": [], "bare_servo": [], "client_servo": []}
    for _ in range(a.rounds):
        forms = a.forms.split(",")
        modes = (["bare", "client"] if "plain" in forms else []) + \
            (["bare_servo", "client_servo"] if "servo" in forms else [])
        for mode in modes:
            out = subprocess.run([sys.executable, os.path.abspath(__file__),
                                  "--mode", mode.split("_")[0], "--port", str(a.port),
                                  "--seconds", str(a.seconds), "--rate", str(a.rate)] +
                                 (["--servo"] if mode.endswith("servo") else []),
                                 capture_output=True, text=True)
            if out.returncode != 0:
                sys.stderr.write(out.stderr)
                sys.exit(1)
            line = out.stdout.strip().splitlines()[-1]
            print(line, flush=True)
            results[mode].append(json.loads(line))

    def worst(mode, key):
        return max((r[key] for r in results[mode]), default=0)
    ratio = lambda a_, b_: round(a_ / b_, 2) if b_ else None  # noqa: E731
    print(json.dumps({
        "bench": "py_client_1khz_vs_bare", "seconds": a.seconds, "rounds": a.rounds,
        "max_ms": worst("client", "max_ms"), "bare_max_ms": worst("bare", "max_ms"),
        "max_ratio": ratio(worst("client", "max_ms"), worst("bare", "max_ms")),
        "missed": worst("client", "missed_periods"), "bare_missed": worst("bare", "missed_periods"),
        "missed_ratio": ratio(worst("client", "missed_periods"), worst("bare", "missed_periods")),
        "rss_growth_mb": worst("client", "rss_growth_mb"),
        "bare_rss_growth_mb": worst("bare", "rss_growth_mb"),
        "gc_longest_ms": worst("client", "gc_longest_ms"),
        "bare_gc_longest_ms": worst("bare", "gc_longest_ms"),
        "servo_behind_periods": worst("client_servo", "behind_periods"),
        "bare_servo_behind_periods": worst("bare_servo", "behind_periods")}), flush=True)


if __name__ == "__main__":
    main()

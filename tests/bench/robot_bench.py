"""
robot_bench.py: the robot-controller figures of `make bench`, against a
running ikd (--port), with python3-websockets (Debian's: run it with
/usr/bin/python3). Every figure comes with its baseline measured in the same
run, and each benchmark prints one JSON line:

  stream_continuity  the KUKA iiwa 14 (7 joints) streaming smooth joint-space
                     motions (FK poses, one target at a time) whose own
                     largest step is 0.1 and 0.2 rad (the issue measured
                     flips of 0.42 and 2.7 rad; a 0.004 rad motion would
                     hide them): opened with the start configuration as
                     seed (how a controller streams now) against the same
                     motion opened without one (how it had to before):
                     flips (steps above 3x the motion's own largest step),
                     whole-turn jumps, the largest step over the motion's
                     own, and how far the first answer lands from the arm's
                     configuration.
  servo_rate         servo stream (options.servo) solutions per second on
                     the iiwa, a target per round trip, against the same
                     stream without servo: the ratio is what servo costs.
  path_1000hz        a 1000 Hz path of 1001 samples on a two-bone leg and on
                     the iiwa: samples skipped, out of how many, as the
                     machine is ("idle") and with two busy-looping processes
                     started beside the daemon ("loaded", stopped by their
                     process ids afterwards).
Robots come from $IKD_DATA (default tests/data).
"""
import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import time

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from robot_chain import Chain  # noqa: E402

IKD_DATA = os.environ.get("IKD_DATA", "tests/data")
IIWA_CENTRE = [0.2, 0.7, -0.2, -1.3, 0.3, 0.8, 0.1]


def iiwa():
    return Chain(os.path.join(IKD_DATA, "robots", "kuka_iiwa14_r820.urdf"), "base_link", "tool0")


def motion(chain, steps, amp=0.3):
    out = []
    for i in range(steps + 1):
        out.append([IIWA_CENTRE[k] + amp * math.sin(2 * math.pi * i / steps * (1 + 0.5 * (k % 3))
                                                     + 0.7 * k)
                    for k in range(chain.dof)])
    return out


def motion_with_step(chain, step, amp=0.5):
    """The motion above with as few steps as make its largest joint step
    about `step` radians (never below it)."""
    steps = 1000
    while steps > 8:
        qs = motion(chain, steps, amp)
        own = max(max(abs(a - b) for a, b in zip(x, y)) for x, y in zip(qs, qs[1:]))
        if own >= step:
            return qs
        steps = int(steps * 0.97)
    return motion(chain, steps, amp)


async def recv(ws):
    return json.loads(await asyncio.wait_for(ws.recv(), 10))


async def open_stream(ws, name, chain, seed=None, options=None):
    msg = {"type": "open", "stream": name, "chain": chain.request()}
    if seed is not None:
        msg["seed"] = seed
    if options:
        msg["options"] = options
    await ws.send(json.dumps(msg))
    m = await recv(ws)
    assert m["type"] == "opened", m


async def continuity(url, step):
    chain = iiwa()
    qs = motion_with_step(chain, step)
    poses = [chain.fk(q) for q in qs]
    own = max(max(abs(a - b) for a, b in zip(x, y)) for x, y in zip(qs, qs[1:]))
    out = {"bench": "stream_continuity", "robot": "kuka_iiwa14_r820", "steps": len(qs) - 1,
           "motion_largest_step": round(own, 5)}
    async with websockets.connect(url, max_size=None, ping_interval=None) as ws:
        for name, seed in (("seeded", qs[0]), ("unseeded", None)):
            await open_stream(ws, name, chain, seed)
            prev, worst, flips, turns, failed, first = None, 0.0, 0, 0, 0, None
            for i, (p, q) in enumerate(poses):
                await ws.send(json.dumps({"type": "target", "stream": name, "seq": i,
                                          "target": {"position": p, "orientation": q}}))
                r = (await recv(ws))["result"]
                if r["status"] != "success":
                    failed += 1
                    continue
                j = r["joints"]
                if first is None:
                    first = max(abs(a - b) for a, b in zip(j, qs[i]))
                if prev is not None:
                    step = max(abs(a - b) for a, b in zip(j, prev))
                    worst = max(worst, step)
                    flips += step > 3 * own
                    turns += step > math.pi
                prev = j
            out[name] = {"first_answer_from_arm": round(first, 4) if first is not None else None,
                         "flips": flips, "whole_turn_jumps": turns, "failed": failed,
                         "largest_step": round(worst, 5),
                         "largest_over_motion": round(worst / own, 3)}
    print(json.dumps(out))


async def rate(ws, name, pose, seconds):
    """(answers per second, answers that were not successes)."""
    n, bad, t0 = 0, 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        await ws.send(json.dumps({"type": "target", "stream": name, "seq": n,
                                  "target": {"position": pose[0], "orientation": pose[1]}}))
        r = (await recv(ws))["result"]
        bad += r["status"] != "success"
        n += 1
    return n / (time.monotonic() - t0), bad


async def servo_rate(url, seconds):
    chain = iiwa()
    q0 = IIWA_CENTRE
    q1 = [x + 0.4 * (1 if k % 2 else -1) for k, x in enumerate(q0)]
    far = chain.fk(q1)
    async with websockets.connect(url, max_size=None, ping_interval=None) as ws:
        # servo at 1 kHz with a tenth of the URDF's speed: the goal stays
        # ahead for the whole run, every answer is a bounded period
        vel = [J.velocity * 0.01 for J in chain.movable]
        await open_stream(ws, "servo", chain, q0,
                          {"servo": {"period_s": 0.001, "velocity": vel}})
        await open_stream(ws, "plain", chain, q0)
        plain, plain_bad = await rate(ws, "plain", far, seconds)
        servo, servo_bad = await rate(ws, "servo", far, seconds)
    print(json.dumps({"bench": "servo_rate", "robot": "kuka_iiwa14_r820",
                      "servo_solutions_per_s": round(servo), "plain_solutions_per_s": round(plain),
                      "ratio": round(servo / plain, 3), "servo_not_success": servo_bad,
                      "plain_not_success": plain_bad}))


def busy_loops(n):
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]


def stop_all(procs):
    for p in procs:
        p.kill()
        p.wait()


async def path_1000hz(url, busy=0):
    chain = iiwa()
    out = {"bench": "path_1000hz", "rate_hz": 1000, "busy_loops": busy}
    bones = {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}
    qa, qb = IIWA_CENTRE, [x + 0.2 for x in IIWA_CENTRE]
    pa, pb = chain.fk(qa), chain.fk(qb)
    cases = (
        ("two_bone", bones, None,
         [{"position": [0.3, 0.6, 0.2]}, {"position": [-0.3, 0.5, 0.2]}]),
        ("kuka_iiwa14_r820", chain.request(), qa,
         [{"position": pa[0], "orientation": pa[1]}, {"position": pb[0], "orientation": pb[1]}]),
    )
    async with websockets.connect(url, max_size=None, ping_interval=None) as ws:
        for name, c, seed, wps in cases:
            msg = {"type": "open", "stream": name, "chain": c}
            if seed is not None:
                msg["seed"] = seed
            await ws.send(json.dumps(msg))
            assert (await recv(ws))["type"] == "opened"
            await ws.send(json.dumps({"type": "path", "stream": name, "seq": 1, "rate_hz": 1000,
                                      "duration_s": 1.0, "waypoints": wps}))
            t0 = time.monotonic()
            while True:
                m = await recv(ws)
                if m["type"] == "path_end":
                    break
            out[name] = {"count": m["count"], "sent": m["sent"], "skipped": m["skipped"],
                         "seconds": round(time.monotonic() - t0, 3)}
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    url = "ws://127.0.0.1:%d/v1/stream" % a.port
    for step in (0.1, 0.2):
        asyncio.run(continuity(url, step))
    asyncio.run(servo_rate(url, a.seconds))
    asyncio.run(path_1000hz(url))
    procs = busy_loops(2)
    try:
        asyncio.run(path_1000hz(url, busy=2))
    finally:
        stop_all(procs)


if __name__ == "__main__":
    main()

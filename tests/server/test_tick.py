"""
test_tick.py: ticks over one WebSocket (proto/STREAM.md, "tick"), against
the real daemon: a game server's characters each have a stream on their own
rig, and one "tick" message carries a target for each of them; ikd answers
it with one "tick_solution" message holding every answer in the order
given.

Covered: a thousand characters on one connection answered by one message
in the tick's order (each answer checked by the two-bone geometry: the foot
on its reachable target, the bones' lengths kept), per-target seq (the
tick's when a target has none), compact answers (options.fields and
digits at open), errors per target (unknown stream, an invalid target with
its JSON path, a stream twice in one tick, a target without a stream) while
the others are solved, errors of the tick itself, warm start continuity
across ticks and single targets of the same streams (the knee never flips
side), conflation of ticks sent faster than they are solved (every tick and
every stream's target either answered or counted as skipped, the newest
tick always answered, seven-joint answers checked by forward kinematics of
the URDF), single targets interleaved with ticks answered in seq order,
"close" answered after the tick that holds the stream, --max-streams
bounding streams per connection and targets per tick, a tick still
answered when ikd shuts down (and one whose first frames were read before
the signal), and a close behind a waiting tick that a newer one replaces.

The daemon and client helpers are test_stream.py's.
"""
import asyncio
import json
import math
import os
import random
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from robot_chain import Chain, quat_angle  # noqa: E402
from test_stream import (IIWA_URDF_PATH, TIMEOUT, Daemon, RawWS, circle_pose, connect,  # noqa: E402
                         frame, held_bytes, iiwa_chain, iiwa_poses, recv, run, send)


def leg(i):
    """A two-bone leg of its own per character: hip, knee, foot (sizes
    differ, so that an answer solved on another character's rig fails the
    geometry check)."""
    s = 1.0 + 0.01 * (i % 17)
    return {"kind": "bones", "positions": [[0, 0, s], [0.1 * s, 0, 0.55 * s], [0, 0, 0.1 * s]]}


def foot_target(i, t=0.0):
    """A reachable foot target of leg(i), moving smoothly with t."""
    s = 1.0 + 0.01 * (i % 17)
    a = 0.1 * i + t
    return [0.2 * s * math.cos(a), 0.2 * s * math.sin(a), 0.3 * s + 0.05 * math.sin(3 * t)]


def dist(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def knee_offset(p):
    """The knee's offset from the hip-foot line (its bend side)."""
    hip, knee, foot = p
    d = [f - h for f, h in zip(foot, hip)]
    n = math.sqrt(sum(x * x for x in d))
    d = [x / n for x in d]
    k = [a - b for a, b in zip(knee, hip)]
    along = sum(a * b for a, b in zip(k, d))
    return [a - along * b for a, b in zip(k, d)]


async def open_legs(ws, names, options=None):
    """Opens one stream per name, each on its own leg; all sent, then all
    answers read."""
    for i, name in enumerate(names):
        msg = {"type": "open", "stream": name, "chain": leg(i)}
        if options is not None:
            msg["options"] = options
        await send(ws, msg)
    for name in names:
        m = await recv(ws)
        assert (m.get("type"), m.get("stream")) == ("opened", name), m


def tick(seq, targets):
    """targets: [(stream, seq or None, target)]."""
    out = []
    for stream, s, target in targets:
        t = {"stream": stream, "target": target}
        if s is not None:
            t["seq"] = s
        out.append(t)
    return {"type": "tick", "seq": seq, "targets": out}


class TickTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def check_leg(self, i, target, positions, tol=1e-9):
        p = leg(i)["positions"]
        self.assertLess(dist(positions[2], target), tol)
        self.assertAlmostEqual(dist(positions[0], positions[1]), dist(p[0], p[1]), delta=tol)
        self.assertAlmostEqual(dist(positions[1], positions[2]), dist(p[1], p[2]), delta=tol)

    def test_thousand_characters_one_answer(self):
        """1000 streams on one connection, one tick with a target for each
        in a shuffled order: one answer, in that order, each on its own
        rig's geometry; a target without "seq" carries the tick's."""
        n = 1000
        names = ["c%d" % i for i in range(n)]
        order = list(range(n))
        random.Random(7).shuffle(order)

        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, names)
                targets = [(names[i], 5000 + i if i % 2 else None, {"position": foot_target(i)})
                           for i in order]
                await send(ws, tick(77, targets))
                m = await recv(ws)
                self.assertEqual((m["type"], m["seq"], m["skipped"]), ("tick_solution", 77, 0))
                sol = m["solutions"]
                self.assertEqual(len(sol), n)
                for k, i in enumerate(order):
                    a = sol[k]
                    self.assertEqual((a["stream"], a["seq"], a["skipped"]),
                                     (names[i], 5000 + i if i % 2 else 77, 0), a)
                    self.assertEqual(a["result"]["status"], "success", a)
                    self.check_leg(i, foot_target(i), a["result"]["positions"])
                # nothing else was sent
                with self.assertRaises(asyncio.TimeoutError):
                    await recv(ws, timeout=0.3)
        run(body())

    def test_compact_answers(self):
        """Streams opened with options.fields and options.digits answer
        their tick targets with those members only, at those digits."""
        names = ["p%d" % i for i in range(20)]

        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, names, options={"fields": ["positions"], "digits": 9})
                await send(ws, tick(1, [(s, None, {"position": foot_target(i)})
                                        for i, s in enumerate(names)]))
                m = await recv(ws)
                self.assertEqual(m["type"], "tick_solution", m)
                for i, a in enumerate(m["solutions"]):
                    r = a["result"]
                    self.assertEqual(set(r), {"status", "positions"}, r)
                    for point in r["positions"]:
                        for x in point:
                            self.assertLessEqual(len(("%r" % x).lstrip("-0.").replace(".", "")
                                                     .split("e")[0]), 9, x)
                    self.check_leg(i, foot_target(i), r["positions"], tol=1e-7)
        run(body())

    def test_errors_per_target(self):
        """A bad target is answered with its error at its place in the tick
        (the JSON path into the tick message), the others are solved; the
        connection and the streams go on."""
        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, ["a", "b"])
                good_a, good_b = {"position": foot_target(0)}, {"position": foot_target(1)}
                msg = {"type": "tick", "seq": 9, "targets": [
                    {"stream": "a", "target": good_a},
                    {"stream": "zz", "seq": 3, "target": good_a},
                    {"stream": "b", "target": {"position": [0.1, 0.1, 2e9]}},
                    {"stream": "a", "seq": 4, "target": good_a},
                    {"target": good_b},
                    {"stream": "b", "seq": 5, "target": good_b, "extra": 1},
                ]}
                await send(ws, msg)
                m = await recv(ws)
                self.assertEqual((m["type"], m["seq"]), ("tick_solution", 9), m)
                s = m["solutions"]
                self.assertEqual(len(s), 6)
                self.assertEqual((s[0]["stream"], s[0]["seq"], s[0]["result"]["status"]),
                                 ("a", 9, "success"))
                want = [(1, "zz", 3, "unknown_stream", "/targets/1/stream"),
                        (2, "b", 9, "invalid_request", "/targets/2/target/position/2"),
                        (3, "a", 4, "invalid_request", "/targets/3/stream"),
                        (5, "b", 5, "invalid_request", "/targets/5/extra")]
                for k, stream, seq, code, path in want:
                    self.assertEqual((s[k]["stream"], s[k]["seq"], s[k]["error"]["code"],
                                      s[k]["error"]["path"]), (stream, seq, code, path), s[k])
                    self.assertNotIn("result", s[k])
                self.assertNotIn("stream", s[4])
                self.assertEqual((s[4]["seq"], s[4]["error"]["path"]), (9, "/targets/4/stream"))
                # the same streams go on, in another tick
                await send(ws, tick(10, [("b", None, good_b), ("a", None, good_a)]))
                m = await recv(ws)
                self.assertEqual([(a["stream"], a["result"]["status"]) for a in m["solutions"]],
                                 [("b", "success"), ("a", "success")])
        run(body())

    def test_metrics_count_the_answered_words(self):
        """/metrics counts a tick's solves with the status words they were
        answered with, one sample per target."""
        def counts():
            status, text = self.d.http("GET", "/metrics")
            self.assertEqual(status, 200)
            got = {}
            for line in text.splitlines():
                if line.startswith("ikd_solves_total{"):
                    word = line.split('status="')[1].split('"')[0]
                    got[word] = got.get(word, 0) + int(float(line.split()[1]))
            return got

        async def body():
            async with connect(self.d) as ws:
                names = ["m%d" % i for i in range(5)]
                await open_legs(ws, names)
                before = counts()
                far = {"position": [0, 0, 9]}
                await send(ws, tick(3, [(s, None, far if i >= 3 else {"position": foot_target(i)})
                                        for i, s in enumerate(names)]))
                m = await recv(ws)
                words = [a["result"]["status"] for a in m["solutions"]]
                self.assertEqual(words, ["success"] * 3 + ["no_ik_solution"] * 2, m)
                after = counts()
                self.assertEqual({w: after.get(w, 0) - before.get(w, 0) for w in after
                                  if after.get(w, 0) != before.get(w, 0)},
                                 {"success": 3, "no_ik_solution": 2})
        run(body())

    def test_tick_envelope_errors(self):
        async def body():
            async with connect(self.d) as ws:
                for msg, path in (({"type": "tick", "seq": 5}, "/targets"),
                                  ({"type": "tick", "seq": 6, "targets": []}, "/targets"),
                                  ({"type": "tick", "targets": [{}]}, "/seq"),
                                  ({"type": "tick", "seq": 8, "stream": "a", "targets": [{}]},
                                   "/stream")):
                    await send(ws, msg)
                    m = await recv(ws)
                    self.assertEqual((m["type"], m["error"]["code"], m["error"]["path"]),
                                     ("error", "invalid_request", path), m)
                    self.assertEqual(m.get("seq"), msg.get("seq"), m)
                    self.assertNotIn("stream", m)
        run(body())

    def test_warm_start_across_ticks_and_targets(self):
        """Eight legs follow smooth motions for 120 ticks, one tick at a
        time, with a single target message for one of them now and then:
        every answer's knee stays on the side of the stream's first answer
        and moves by small steps (a flip would swing it across)."""
        names = ["w%d" % i for i in range(8)]

        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, names)
                side = {}
                last = {}

                def check(i, target, positions):
                    self.check_leg(i, target, positions)
                    off = knee_offset(positions)
                    if names[i] in side:
                        self.assertGreater(sum(a * b for a, b in zip(off, side[names[i]])), 0,
                                           "the knee of %s flipped" % names[i])
                        self.assertLess(dist(positions[1], last[names[i]]), 0.05)
                    else:
                        side[names[i]] = off
                    last[names[i]] = positions[1]

                for k in range(120):
                    t = 0.02 * k
                    await send(ws, tick(k, [(s, None, {"position": foot_target(i, t)})
                                            for i, s in enumerate(names)]))
                    m = await recv(ws)
                    self.assertEqual((m["type"], m["seq"], m["skipped"]), ("tick_solution", k, 0))
                    for i, a in enumerate(m["solutions"]):
                        self.assertEqual(a["stream"], names[i])
                        check(i, foot_target(i, t), a["result"]["positions"])
                    if k % 10 == 5:
                        t2 = t + 0.01
                        await send(ws, {"type": "target", "stream": names[3], "seq": 10000 + k,
                                        "target": {"position": foot_target(3, t2)}})
                        m = await recv(ws)
                        self.assertEqual((m["type"], m["seq"]), ("solution", 10000 + k))
                        check(3, foot_target(3, t2), m["result"]["positions"])
        run(body())

    def test_interleaved_with_targets(self):
        """Ticks and single targets of the same streams sent at once, seqs
        increasing across both: every stream's answers (in ticks and in
        solution messages) come in seq order, and each answer's "skipped"
        counts exactly the seqs dropped before it."""
        names = ["i0", "i1", "i2"]

        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, names)
                frames, seq = [], 0
                for k in range(200):
                    if k % 3 == 1:
                        seq += 1
                        frames.append({"type": "target", "stream": names[k % 2], "seq": seq,
                                       "target": {"position": foot_target(k % 2, 0.01 * k)}})
                    else:
                        seq += 1
                        frames.append(tick(seq, [(s, None, {"position": foot_target(i, 0.01 * k)})
                                                 for i, s in enumerate(names)]))
                for f in frames:
                    await ws.send(json.dumps(f))
                sent = {s: [f["seq"] for f in frames if f["type"] == "tick" or f["stream"] == s]
                        for s in names}
                answers = {s: [] for s in names}
                ticks = []
                while any(not answers[s] or answers[s][-1]["seq"] != sent[s][-1] for s in names):
                    m = await recv(ws)
                    if m["type"] == "tick_solution":
                        ticks.append(m)
                        for a in m["solutions"]:
                            answers[a["stream"]].append(a)
                    else:
                        self.assertEqual(m["type"], "solution", m)
                        answers[m["stream"]].append(m)
                # the tick's own accounting; the last tick is answered
                last_tick = max(f["seq"] for f in frames if f["type"] == "tick")
                self.assertEqual(ticks[-1]["seq"], last_tick)
                prev = 0
                for m in ticks:
                    self.assertGreater(m["seq"], prev)
                    between = [f for f in frames if f["type"] == "tick" and prev < f["seq"] < m["seq"]]
                    self.assertEqual(m["skipped"], len(between), m["seq"])
                    prev = m["seq"]
                for s in names:
                    got = [a["seq"] for a in answers[s]]
                    self.assertEqual(got, sorted(got), s)
                    self.assertEqual(got[-1], sent[s][-1], s)
                    prev_idx = -1
                    for a in answers[s]:
                        idx = sent[s].index(a["seq"])
                        self.assertEqual(a["skipped"], idx - prev_idx - 1, (s, a["seq"]))
                        prev_idx = idx
        run(body())

    def test_close_after_tick(self):
        """A close sent right behind a tick holding the stream: the tick's
        answer (with that stream's solution) comes first, then "closed"."""
        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, ["x", "y"])
                await send(ws, tick(1, [("x", None, {"position": foot_target(0)}),
                                        ("y", None, {"position": foot_target(1)})]))
                await send(ws, {"type": "close", "stream": "x"})
                m = await recv(ws)
                self.assertEqual(m["type"], "tick_solution", m)
                self.assertEqual([a["stream"] for a in m["solutions"]], ["x", "y"])
                self.assertEqual(await recv(ws), {"type": "closed", "stream": "x"})
                await send(ws, tick(2, [("x", None, {"position": foot_target(0)})]))
                m = await recv(ws)
                self.assertEqual(m["solutions"][0]["error"]["code"], "unknown_stream")
        run(body())

    def test_close_behind_a_tick_that_is_replaced(self):
        """A close (and a target) behind a waiting tick that a newer tick
        without the stream replaces, all in one read: the target is solved,
        "closed" follows, and the name can be opened again. Before, the
        replaced tick let go of the stream without settling it: "closed"
        never came and the stream stayed open (and its name taken) for the
        life of the connection."""
        w = RawWS(self.d.port)
        try:
            for k, s in enumerate(("a", "b", "t")):
                w.send_text(json.dumps({"type": "open", "stream": s, "chain": leg(k)}))
                self.assertEqual(w.recv_json()["type"], "opened")
            at = {"position": foot_target(0)}
            w.sock.sendall(b"".join(frame(0x1, json.dumps(m).encode()) for m in (
                tick(1, [("a", None, at), ("b", None, at)]),
                {"type": "target", "stream": "b", "seq": 5, "target": at},
                {"type": "close", "stream": "a"}, {"type": "close", "stream": "b"},
                tick(2, [("t", None, at)]))))
            got = [w.recv_json() for _ in range(4)]
            kinds = sorted((m["type"], m.get("stream"), m.get("seq")) for m in got)
            self.assertEqual(kinds, [("closed", "a", None), ("closed", "b", None),
                                     ("solution", "b", 5), ("tick_solution", None, 2)], got)
            w.send_text(json.dumps({"type": "open", "stream": "a", "chain": leg(0)}))
            self.assertEqual(w.recv_json()["type"], "opened")
        finally:
            w.close()


class TickConflationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_ticks_faster_than_solved(self):
        """300 ticks of twelve seven-joint arms sent at once: ikd solves far
        fewer ticks than that (one running and one waiting per connection,
        a newer tick replacing the waiting one), answers the newest, and
        every tick and every stream's target is either answered or counted
        in a later "skipped". The last tick's answers are checked by
        forward kinematics of the URDF."""
        arms = 12
        n = 300
        names = ["arm%d" % k for k in range(arms)]
        poses = iiwa_poses(arms)
        fk = Chain(IIWA_URDF_PATH, "base_link", "tool0")

        def target(k, i):
            p0, q0 = poses[k]
            return circle_pose(p0, q0, i / n)

        async def body():
            async with connect(self.d) as ws:
                for s in names:
                    await send(ws, {"type": "open", "stream": s, "chain": iiwa_chain()})
                for s in names:
                    self.assertEqual((await recv(ws))["type"], "opened")
                frames = [json.dumps(tick(i, [(s, 1000 * i + k, target(k, i))
                                              for k, s in enumerate(names)])) for i in range(n)]
                for f in frames:
                    await ws.send(f)
                answers = []
                while not answers or answers[-1]["seq"] != n - 1:
                    m = await recv(ws, timeout=4 * TIMEOUT)
                    self.assertEqual(m["type"], "tick_solution", m)
                    answers.append(m)
                prev, total = -1, 0
                for m in answers:
                    self.assertGreater(m["seq"], prev, "out of order")
                    self.assertEqual(m["skipped"], m["seq"] - prev - 1, m["seq"])
                    for k, a in enumerate(m["solutions"]):
                        self.assertEqual((a["stream"], a["seq"]), (names[k], 1000 * m["seq"] + k))
                        # per stream: the same ticks were skipped
                        self.assertEqual(a["skipped"], m["skipped"])
                    total += 1 + m["skipped"]
                    prev = m["seq"]
                self.assertEqual(total, n)
                self.assertGreater(sum(m["skipped"] for m in answers), 0,
                                   "no tick was ever conflated")
                for k, a in enumerate(answers[-1]["solutions"]):
                    r = a["result"]
                    self.assertEqual(r["status"], "success", a)
                    want = target(k, n - 1)
                    p, q = fk.fk(r["joints"])
                    self.assertLess(dist(p, want["position"]), 1e-4, (k, p, want))
                    self.assertLess(quat_angle(q, want["orientation"]), 1e-4, k)
        run(body(), limit=120 * (TIMEOUT / 5))


class TickLimitsTest(unittest.TestCase):
    def test_max_streams(self):
        """--max-streams bounds the streams of a connection and so the
        targets of a tick (too_large for a longer tick, nothing solved)."""
        d = Daemon("--max-streams", "4")
        try:
            async def body():
                async with connect(d) as ws:
                    await open_legs(ws, ["a", "b", "c", "d"])
                    await send(ws, {"type": "open", "stream": "e", "chain": leg(4)})
                    m = await recv(ws)
                    self.assertEqual((m["type"], m["stream"], m["error"]["code"]),
                                     ("error", "e", "too_many_streams"), m)
                    self.assertIn("4", m["error"]["message"])
                    await send(ws, tick(3, [(s, None, {"position": foot_target(0)})
                                            for s in "abcda"]))
                    m = await recv(ws)
                    self.assertEqual((m["type"], m["seq"], m["error"]["code"], m["error"]["path"]),
                                     ("error", 3, "too_large", "/targets"), m)
                    await send(ws, tick(4, [(s, None, {"position": foot_target(i)})
                                            for i, s in enumerate("abcd")]))
                    m = await recv(ws)
                    self.assertEqual([a["result"]["status"] for a in m["solutions"]],
                                     ["success"] * 4)
            run(body())
        finally:
            d.stop()

    def test_sigterm_answers_the_tick(self):
        """A tick of slow solves in flight when SIGTERM arrives is still
        answered before the 1001 close."""
        d = Daemon()
        stopped = False
        try:
            async def body():
                async with connect(d) as ws:
                    names = ["s%d" % k for k in range(6)]
                    for s in names:
                        await send(ws, {"type": "open", "stream": s, "chain": iiwa_chain()})
                    for s in names:
                        self.assertEqual((await recv(ws))["type"], "opened")
                    poses = iiwa_poses(len(names))
                    await send(ws, tick(1, [(s, None, circle_pose(*poses[k], 0.3))
                                            for k, s in enumerate(names)]))
                    await asyncio.sleep(0.001)
                    d.proc.send_signal(15)
                    m = await recv(ws)
                    self.assertEqual((m["type"], m["seq"]), ("tick_solution", 1), m)
                    self.assertEqual(len(m["solutions"]), len(names))
                    with self.assertRaises(Exception) as cm:
                        await recv(ws)
                    self.assertEqual(getattr(getattr(cm.exception, "rcvd", None), "code", None), 1001)
            run(body())
            stopped = True
            d.stop()
        finally:
            if not stopped:
                d.proc.kill()
                d.proc.wait()

    def test_sigterm_answers_a_tick_begun_before_it(self):
        """A tick whose first 64 kB were read when SIGTERM arrives, its
        end sent after: the tick was begun before the signal, so it is
        read to its end and answered before the 1001 close. Before, the
        messages read after the signal were ignored and the client got
        1001 without its answer (and so did a tick still in the socket
        beyond one read's worth, or behind a message decoded off the
        loop)."""
        d = Daemon()
        stopped = False
        w = RawWS(d.port)
        try:
            names = ["s%d" % k for k in range(20)]
            for k, s in enumerate(names):
                w.send_text(json.dumps({"type": "open", "stream": s, "chain": leg(k)}))
            for s in names:
                self.assertEqual(w.recv_json()["type"], "opened")
            text = json.dumps(tick(9, [(s, None, {"position": foot_target(k)})
                                       for k, s in enumerate(names)]))
            text = (text[:-1] + " " * (100 * 1024) + "}").encode()
            w.sock.sendall(frame(0x1, text[:64 * 1024], fin=False))
            deadline = time.monotonic() + TIMEOUT
            while held_bytes(d, "request_bodies") < 64 * 1024:  # read by ikd
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.01)
            d.proc.send_signal(15)
            time.sleep(0.05)
            w.sock.sendall(frame(0x0, text[64 * 1024:], fin=True))
            m = w.recv_json()
            self.assertEqual((m["type"], m["seq"], len(m["solutions"])),
                             ("tick_solution", 9, len(names)), m)
            self.assertTrue(all("result" in a for a in m["solutions"]))
            self.assertEqual(w.wait_close(), 1001)
            w.close()
            stopped = True
            d.stop()
        finally:
            if not stopped:
                w.close()
                d.proc.kill()
                d.proc.wait()


if __name__ == "__main__":
    unittest.main()

"""
test_tick_binary.py: binary ticks (proto/STREAM.md, "Binary ticks") against
the real daemon: a game server's tick as one binary WebSocket message,
answered by one binary message, on the same streams as JSON ticks.

Covered, with this test's own writer and reader of the documented layout
(struct, little-endian): 300 characters' targets in one binary tick, each
answer on its own rig's two-bone geometry (the foot on its target, the
bones' lengths kept) in the tick's order with its stream, seq (the
tick's when the target has none) and skipped; per-target errors named as
the JSON tick names them (the same tick sent both ways on one connection:
unknown stream, a stream twice, a bad name, a bad seq, a position out of
range, an orientation that is not a unit quaternion: code, path and
message equal); the binary form's own errors (NaN, the framing) and the
tick's own errors answered with a JSON "error" message, the connection
kept; JSON ticks on the same connection still answered in text (a client
that never sends binary never gets binary); conflation of binary ticks
sent faster than they are solved (each answered or counted as skipped).

The daemon and client helpers are test_stream.py's.
"""
import asyncio
import json
import math
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import TIMEOUT, Daemon, connect, recv, run, send  # noqa: E402
from test_tick import dist, foot_target, leg, open_legs, tick  # noqa: E402

MEMBERS = ["joints", "positions", "rotations", "local_rotations", "tip", "position_error",
           "orientation_error", "max_joint_step", "time_ms"]


def binary_tick(seq, targets, orientation=False):
    """targets: [(stream, seq or None, position, orientation or None)]."""
    names = b"".join(bytes([len(s.encode())]) + s.encode() for s, _, _, _ in targets)
    head = struct.pack("<4sHHIId", b"IKDT", 1, 1 if orientation else 0, len(targets), len(names),
                       float(seq))
    body = head + names
    body += b"\0" * (-len(body) % 8)
    for _, s, p, q in targets:
        body += struct.pack("<4d", math.nan if s is None else float(s), *p)
        if orientation:
            body += struct.pack("<4d", *q)
    return body


def read_answer(b):
    """The binary answer as {"seq", "skipped", "solutions": [...]}, each
    solution {"stream", "seq", "skipped", "code", "fields": {member:
    [doubles]}} or {"stream", "seq", "error": {code, path, message}}."""
    magic, version, _, n, skipped, seq = struct.unpack_from("<4sHHIId", b, 0)
    assert (magic, version) == (b"IKDS", 1), b[:8]
    at, sols = 24, []
    for _ in range(n):
        size, kind, lname, flags, _, eseq, a, c = struct.unpack_from("<IBBBBdII", b, at)
        assert size % 8 == 0 and at + size <= len(b), (size, at, len(b))
        e = {}
        if flags & 1:
            e["seq"] = int(eseq)
        if kind == 2:
            lc, lp, lm = a & 0xFFFF, a >> 16, c
            x = b[at + 24:at + size]
            if lname:
                e["stream"] = x[:lname].decode()
            e["error"] = {"code": x[lname:lname + lc].decode(),
                          "path": x[lname + lc:lname + lc + lp].decode(),
                          "message": x[lname + lc + lp:lname + lc + lp + lm].decode()}
        else:
            assert kind == 1, kind
            e["skipped"] = a
            rec = c
            fields, dof, npos, nrot, dims = struct.unpack_from("<IHHHH", b, at + 24)
            r = at + 40
            code, rflags, iters, restarts = struct.unpack_from("<iIII", b, r)
            r += 16
            sizes = [dof, dims * npos, 4 * nrot, 4 * nrot, 7, 1, 1, 1, 1]
            got = {}
            for m, k in enumerate(sizes):
                if fields & (1 << m):
                    got[MEMBERS[m]] = list(struct.unpack_from("<%dd" % k, b, r))
                    r += 8 * k
            assert r == at + 40 + rec
            e["stream"] = b[r:r + lname].decode()
            e["code"], e["fields"], e["dims"] = code, got, dims
        sols.append(e)
        at += size
    assert at == len(b), (at, len(b))
    return {"seq": int(seq), "skipped": skipped, "solutions": sols}


async def recv_binary(ws, timeout=TIMEOUT):
    m = await asyncio.wait_for(ws.recv(), timeout)
    assert isinstance(m, bytes), "a text answer to a binary tick: %r" % (m,)
    return read_answer(m)


class BinaryTickTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def check_leg(self, i, target, flat, tol=1e-9):
        p = leg(i)["positions"]
        pos = [flat[0:3], flat[3:6], flat[6:9]]
        self.assertLess(dist(pos[2], target), tol)
        self.assertAlmostEqual(dist(pos[0], pos[1]), dist(p[0], p[1]), delta=tol)
        self.assertAlmostEqual(dist(pos[1], pos[2]), dist(p[1], p[2]), delta=tol)

    def test_characters_one_answer(self):
        """300 streams, one binary tick in a shuffled order: one binary
        answer in that order, each on its own rig; a JSON tick after it
        on twin streams is still answered in text, with the same
        numbers."""
        n = 300
        names = ["c%d" % i for i in range(n)]
        order = [(7 * k) % n for k in range(n)]

        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, names)
                targets = [(names[i], 5000 + i if i % 2 else None, foot_target(i), None)
                           for i in order]
                await ws.send(binary_tick(77, targets))
                m = await recv_binary(ws)
                self.assertEqual((m["seq"], m["skipped"]), (77, 0))
                sol = m["solutions"]
                self.assertEqual(len(sol), n)
                for k, i in enumerate(order):
                    a = sol[k]
                    self.assertEqual((a["stream"], a["seq"], a["skipped"], a["code"]),
                                     (names[i], 5000 + i if i % 2 else 77, 0, 1), a)
                    self.check_leg(i, foot_target(i), a["fields"]["positions"])
                # the same targets as JSON on twin streams (the same rigs,
                # fresh as the first were): text, and every number the
                # binary answer's
                twins = ["d%d" % i for i in range(n)]
                await open_legs(ws, twins)
                await send(ws, tick(77, [("d" + s[1:], q, {"position": p})
                                         for s, q, p, _ in targets]))
                j = await recv(ws)
                self.assertEqual(j["type"], "tick_solution")
                for a, x in zip(sol, j["solutions"]):
                    for member, v in a["fields"].items():
                        if member == "time_ms":
                            continue
                        flat = v
                        want = x["result"].get(member)
                        if want is None:
                            self.assertTrue(all(math.isnan(d) for d in flat), member)
                            continue
                        if isinstance(want, list) and want and isinstance(want[0], list):
                            want = [d for row in want for d in row]
                        elif not isinstance(want, list):
                            want = [want]
                        self.assertEqual(flat, want, member)
        run(body())

    def test_errors_named_as_json(self):
        """One tick with bad targets, sent as JSON and as binary on one
        connection: each target's error alike (code, path, message), the
        good targets solved in both."""
        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, ["a", "b"])
                good = foot_target(0)
                targets = [("a", None, good, [0, 0, 0, 1]),
                           ("nope", None, good, [0, 0, 0, 1]),       # unknown stream
                           ("a", 3, good, [0, 0, 0, 1]),             # a stream twice
                           ("bad name", None, good, [0, 0, 0, 1]),   # not a name
                           ("b", 0.5, good, [0, 0, 0, 1]),           # seq not an integer
                           ("b", None, [2e9, 0, 0], [0, 0, 0, 1]),   # out of range
                           ("b", None, good, [0, 0, 0, 3])]          # not a unit quaternion
                for k in range(len(targets)):
                    one = [targets[0]] + ([targets[k]] if k else [])
                    jt = []
                    for s, q, p, o in one:
                        t = {"stream": s, "target": {"position": p, "orientation": o}}
                        if q is not None:
                            t["seq"] = q
                        jt.append(t)
                    await send(ws, {"type": "tick", "seq": 10 + k, "targets": jt})
                    j = await recv(ws)
                    await ws.send(binary_tick(10 + k, one, orientation=True))
                    b = await recv_binary(ws)
                    self.assertEqual(len(j["solutions"]), len(b["solutions"]))
                    for x, y in zip(j["solutions"], b["solutions"]):
                        self.assertEqual(x.get("stream"), y.get("stream"), (x, y))
                        self.assertEqual(x.get("seq"), y.get("seq"), (x, y))
                        self.assertEqual(x.get("error"), y.get("error"), (x, y))
                        if "error" not in x:
                            self.assertEqual(y["code"], 1, y)
                    if k:
                        self.assertIn("error", b["solutions"][1], (k, b))
        run(body())

    def test_errors_of_the_form(self):
        """NaN in a target: that target's error; a broken binary message or
        a bad tick seq: one JSON error message, the connection kept."""
        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, ["a"])
                await ws.send(binary_tick(1, [("a", None, [math.nan, 0, 0], None)]))
                b = await recv_binary(ws)
                e = b["solutions"][0]["error"]
                self.assertEqual((e["code"], e["path"]),
                                 ("invalid_request", "/targets/0/target/position/0"))
                good = binary_tick(2, [("a", None, foot_target(0), None)])
                for bad, path in [(b"\x01\x02", ""), (good[:-1], ""),
                                  (b"IKDT" + b"\x02" + good[5:], ""),
                                  (good[:16] + struct.pack("<d", 0.5) + good[24:], "/seq")]:
                    await ws.send(bad)
                    m = await recv(ws)
                    self.assertEqual((m["type"], m["error"]["code"], m["error"]["path"]),
                                     ("error", "invalid_request", path), m)
                await ws.send(good)
                b = await recv_binary(ws)
                self.assertEqual(b["solutions"][0]["code"], 1)
        run(body())

    def test_conflation(self):
        """Binary ticks sent faster than they are solved: every tick
        answered or counted as skipped, the last one answered."""
        n, ticks = 200, 30
        names = ["c%d" % i for i in range(n)]

        async def body():
            async with connect(self.d) as ws:
                await open_legs(ws, names)
                for t in range(ticks):
                    await ws.send(binary_tick(t, [(names[i], None, foot_target(i, 0.01 * t), None)
                                                  for i in range(n)]))
                seen = 0
                while True:
                    m = await recv_binary(ws)
                    seen += 1 + m["skipped"]
                    for a in m["solutions"]:
                        self.assertEqual(a["code"], 1)
                    if m["seq"] == ticks - 1:
                        break
                self.assertEqual(seen, ticks)
        run(body())


if __name__ == "__main__":
    unittest.main()

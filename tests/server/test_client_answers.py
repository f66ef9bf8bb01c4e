"""
test_client_answers.py: the Python client (clients/python, imported from
the repository's folder) against the real daemon on sequences of
legitimate messages whose answers it must take, never refuse as
bad_answer: the client refuses answers that lie (a seq never sent, an
older solution, a path sample after its path_end, a tick answer of other
targets), and ikd's own answers must never look like one.

- A target, a path and a target sent at once on a numeric stream (its
  solves run on the pool): ikd ends the path that never started at once,
  before the first target's solution; that solution is taken (it answers
  its own future) and the path returns its path_end (sent 0, not
  completed).
- A random mix (fixed seed) of targets, paths and ticks (JSON and binary)
  on a numeric arm and a two-bone leg: no bad_answer, every answer's seq
  one that was sent.
"""
import asyncio
import math
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
sys.path.insert(0, HERE)

import ikd  # noqa: E402
from test_stream import Daemon, TIMEOUT, TEST_LIMIT  # noqa: E402

LEG = {"kind": "bones", "positions": [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]]}
with open(os.path.join(os.environ.get("IKD_DATA", "tests/data"), "robots",
                       "kuka_iiwa14_r820.urdf")) as f:
    ARM = {"kind": "urdf", "urdf": f.read(), "base": "base_link", "tip": "tool0"}


def arm_t(x):
    return {"position": [0.4 + 0.05 * math.sin(x), 0.2 * math.cos(x / 3), 0.6]}


def leg_t(x):
    return {"position": [0.2, 0.1 + 0.01 * math.sin(x), 0.25]}


class AnswersTakenTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.a = ikd.AsyncClient("http://127.0.0.1:%d" % cls.d.port, timeout=TIMEOUT)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def run_body(self, body):
        asyncio.run(asyncio.wait_for(body(), TEST_LIMIT))

    def test_path_ended_before_an_older_solution(self):
        async def body():
            async with self.a.connect() as conn:
                errors = []
                conn.on_error(errors.append)
                # sent back to back: when ikd reads them in one go, seq 1
                # solves on the pool while the path (seq 2) waits, and seq 3
                # cuts the path before it starts. On a loaded machine ikd
                # may read them apart and start the path first: each try
                # checks what holds either way, and the ordering under test
                # must come in one of 10 tries
                cut_before_start = 0
                for k in range(10):
                    arm = await conn.open("arm%d" % k, chain=ARM, options={"solver": "numeric"})
                    seen = []
                    arm.on_solution(lambda s, seen=seen: seen.append(s.seq))
                    first = await arm.submit(arm_t(0))
                    path = asyncio.ensure_future(arm.path([arm_t(1), arm_t(2)], rate_hz=100,
                                                          duration_s=2))
                    await asyncio.sleep(0)
                    third = await arm.submit(arm_t(3))
                    first, path, third = await asyncio.wait_for(
                        asyncio.gather(first, path, third), TIMEOUT)
                    self.assertEqual([str(e) for e in errors], [], "nothing refused")
                    self.assertEqual((first.seq, first.requested), (1, 1),
                                     "the first target answered by its own solution")
                    self.assertEqual((third.seq, third.requested), (3, 3))
                    self.assertEqual((path.end.seq, path.end.completed), (2, False))
                    self.assertEqual([q for q in seen if q != 2], [1, 3])
                    self.assertEqual(seen, sorted(seen), "in the order of their seqs")
                    await arm.close()
                    if path.end.sent + path.end.skipped == 0:
                        cut_before_start += 1
                        break
                self.assertEqual(cut_before_start, 1,
                                 "a path ended before it started, in one of 10 tries")
        self.run_body(body)

    def test_random_mix_nothing_refused(self):
        for binary in (False, True):
            with self.subTest(binary=binary):
                self.random_mix(binary)

    def random_mix(self, binary):
        async def body():
            opts = {"codec": ikd.BinaryCodec()} if binary else {}
            async with self.a.connect(**opts) as conn:
                errors = []
                conn.on_error(errors.append)
                arm = await conn.open("arm", chain=ARM, options={"solver": "numeric"})
                leg = await conn.open("leg", chain=LEG, options={"solver": "two_bone"})
                sent = {"arm": set(), "leg": set()}
                answered = []
                for s in (arm, leg):
                    s.on_solution(lambda sol, s=s: answered.append((s.name, sol.seq)))
                rnd = random.Random(12345)
                waits = []
                for i in range(1500):
                    x = rnd.random()
                    s, t = (arm, arm_t) if rnd.random() < 0.5 else (leg, leg_t)
                    if x < 0.3:
                        sent[s.name].add(await s.send(t(i)))
                    elif x < 0.45:
                        waits.append(await s.submit(t(i)))
                        sent[s.name].add(s.seq)
                    elif x < 0.6:
                        waits.append(asyncio.ensure_future(s.path(
                            [t(i), t(i + 1), t(i + 2)], rate_hz=1000,
                            duration_s=0.02 + 0.05 * rnd.random())))
                        await asyncio.sleep(0)
                        sent[s.name].add(s.seq)
                    elif x < 0.8:
                        await conn.send_tick([("arm", arm_t(i)), ("leg", leg_t(i))])
                        sent["arm"].add(arm.seq)
                        sent["leg"].add(leg.seq)
                    elif x < 0.9:
                        waits.append(asyncio.ensure_future(conn.tick({"leg": leg_t(i)})))
                        await asyncio.sleep(0)
                        sent["leg"].add(leg.seq)
                    else:
                        await asyncio.sleep(rnd.random() * 0.005)
                await asyncio.wait_for(asyncio.gather(*waits, return_exceptions=True), TIMEOUT)
                await conn.tick({"arm": arm_t(0), "leg": leg_t(0)}, timeout=TIMEOUT)
                sent["arm"].add(arm.seq)
                sent["leg"].add(leg.seq)
                self.assertEqual([str(e) for e in errors], [], "nothing refused")
                for name, seq in answered:
                    self.assertIn(seq, sent[name], "%s: seq %d answered, never sent" % (name, seq))
                self.assertGreater(len(answered), 20)
        self.run_body(body)


if __name__ == "__main__":
    unittest.main()

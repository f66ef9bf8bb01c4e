"""
test_game.py: what a game server uses, over the real daemon: many rigs in
one batch ("items", each its own chain, target and seed, answered in order,
a bad item answered with its error while the others are solved), compact
answers (options.fields and options.digits).

Answers are checked by their geometry (the two-bone end on a reachable
target, the bones' lengths kept), never against ikd's own output.

The daemon is started as test_stream.py starts it (its Daemon class).
"""
import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import Daemon, TIMEOUT  # noqa: E402


def leg(i):
    """A two-bone leg of its own per character: hip, knee, foot."""
    s = 1.0 + 0.01 * (i % 7)
    return {"kind": "bones", "positions": [[0, 0, s], [0.1 * s, 0, 0.55 * s], [0, 0, 0.1 * s]]}


def foot_target(i):
    """A reachable foot target of leg(i)."""
    s = 1.0 + 0.01 * (i % 7)
    a = 0.1 * i
    return [0.2 * s * math.cos(a), 0.2 * s * math.sin(a), 0.3 * s]


def dist(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def check_leg(test, chain, target, positions, tol=1e-9):
    """positions solve chain for target: the end on it, bone lengths kept."""
    p = chain["positions"]
    test.assertLess(dist(positions[2], target), tol)
    test.assertAlmostEqual(dist(positions[0], positions[1]), dist(p[0], p[1]), delta=tol)
    test.assertAlmostEqual(dist(positions[1], positions[2]), dist(p[1], p[2]), delta=tol)


class Items(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--max-items", "500")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_many_rigs_in_order(self):
        """200 characters, each its own leg, in one request: answered in
        order, each on its own target."""
        n = 200
        body = {"options": {"fields": ["positions"]},
                "items": [{"chain": leg(i), "target": {"position": foot_target(i)}}
                          for i in range(n)]}
        status, text = self.d.http("POST", "/v1/solve/batch", body)
        self.assertEqual(status, 200, text)
        a = json.loads(text)
        self.assertEqual(a["count"], n)
        self.assertEqual(a["counts"]["success"], n)
        self.assertEqual(len(a["results"]), n)
        for i, r in enumerate(a["results"]):
            self.assertEqual(set(r), {"status", "positions"})
            check_leg(self, leg(i), foot_target(i), r["positions"])

    def test_bad_item_does_not_fail_others(self):
        """A bad item answers its error with its path; a registered chain
        by id works beside inline ones."""
        status, text = self.d.http("POST", "/v1/chains", leg(3))
        self.assertIn(status, (200, 201), text)
        cid = json.loads(text)["id"]
        body = {"items": [
            {"chain_id": cid, "target": {"position": foot_target(3)},
             "options": {"fields": ["positions"], "digits": 17}},
            {"chain": leg(1), "target": {"position": [0, 0]}},
            {"chain_id": "f" * 32, "target": {"position": [0, 0, 0.5]}},
            {"chain": leg(2), "target": {"position": foot_target(2)}, "options": {"digits": 0}},
            {"chain": leg(4), "target": {"position": foot_target(4)},
             "options": {"fields": ["positions"]}},
        ]}
        status, text = self.d.http("POST", "/v1/solve/batch", body)
        self.assertEqual(status, 200, text)
        a = json.loads(text)
        res = a["results"]
        self.assertEqual(a["counts"]["error"], 3)
        self.assertEqual(a["counts"]["success"], 2)
        check_leg(self, leg(3), foot_target(3), res[0]["positions"])
        check_leg(self, leg(4), foot_target(4), res[4]["positions"])
        self.assertEqual(res[1]["error"]["path"], "/items/1/target/position")
        self.assertEqual(res[2]["error"]["code"], "unknown_chain")
        self.assertEqual(res[2]["error"]["path"], "/items/2/chain_id")
        self.assertEqual(res[3]["error"]["path"], "/items/3/options/digits")

    def test_item_limit(self):
        """--max-items bounds the items of one request: 413 too_large."""
        body = {"items": [{"chain": leg(0), "target": {"position": foot_target(0)}}] * 501}
        status, text = self.d.http("POST", "/v1/solve/batch", body)
        self.assertEqual(status, 413, text)
        self.assertEqual(json.loads(text)["error"]["path"], "/items")
        status, text = self.d.http("GET", "/v1/solvers")
        self.assertEqual(json.loads(text)["limits"]["max_items"], 500)


if __name__ == "__main__":
    unittest.main()

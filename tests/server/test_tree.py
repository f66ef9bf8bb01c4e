"""
test_tree.py: tree chains (several end effectors over shared joints) on the
real daemon ($IKD_BIN on 127.0.0.1 port 0), over HTTP and WebSocket.

Every answer is checked by forward kinematics computed here from the URDF
(robot_chain.py: each tip's serial path read with xml.etree, plain Python
math, independent of ikd), the answered joints matched to the path's joints
by name. Covered:
  - POST /v1/chains with a tree (201, then 200; content-addressed id),
    GET /v1/chains/{id} (tips, each tip's joints, the shared torso joint),
    DELETE;
  - both PR2 arms from torso_lift_link and from base_link (the prismatic
    torso joint shared) and the Baxter-like tree of tests/data: targets
    from random configurations inside the limits (FK here), both tips full
    pose at 1e-5, single solves by chain_id and a batch: every answer on
    target (at least 99.9%), inside the limits, its tips' poses those of FK;
  - a stream on both PR2 arms from base_link along a smooth motion of the
    whole tree: every answer on target, no joint step above 0.2 rad;
  - conflicting priorities on a small planar tree: the high-priority tip on
    its target to 1e-6, the low one as close as a brute-force search over
    the freedom left (done here) allows;
  - rejections with their paths: an unknown tip in a target, a tip that is
    no link of the URDF, options.objective on a single chain.
Budgets are in iterations (timeout_ms 0), not time, so that a busy machine
or a sanitizer build changes no answer.
"""
import asyncio
import json
import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from robot_chain import Chain, quat_angle  # noqa: E402
from test_stream import Daemon, connect, recv, run, send  # noqa: E402

IKD_DATA = os.environ.get("IKD_DATA", "tests/data")
ROBOTS = os.path.join(IKD_DATA, "robots")
TOL = 1.5e-5  # the daemon checks 1e-5 per component; FK here differs in rounding only
OPTIONS = {"timeout_ms": 0, "max_iterations": 10000}

TREES = {
    "pr2_torso": ("pr2", "torso_lift_link", ["l_wrist_roll_link", "r_wrist_roll_link"]),
    "pr2_base": ("pr2", "base_link", ["l_wrist_roll_link", "r_wrist_roll_link"]),
    "baxter": ("baxter_like", "base_link", ["left_hand", "right_hand"]),
}


class Tree:
    """A URDF tree: its chain object and each tip's serial path for FK."""

    def __init__(self, key):
        robot, base, tips = TREES[key]
        path = os.path.join(ROBOTS, robot + ".urdf")
        self.tips = tips
        self.paths = [Chain(path, base, t) for t in tips]
        self.chain = {"kind": "tree", "urdf": self.paths[0].text, "base": base, "tips": tips}

    def fk(self, k, names, q):
        """Tip k's (position, quaternion) for joints q named names."""
        value = dict(zip(names, q))
        c = self.paths[k]
        return c.fk([value[J.name] for J in c.movable])


def random_joints(desc, rng):
    q = []
    for j in desc["joints"]:
        if "lower" in j:
            q.append(rng.uniform(j["lower"], j["upper"]))
        else:
            q.append(rng.uniform(-math.pi, math.pi))
    return q


def full_pose_target(tree, names, q):
    tips = {}
    for k, name in enumerate(tree.tips):
        p, quat = tree.fk(k, names, q)
        tips[name] = {"position": p, "orientation": quat}
    return {"tips": tips}


class TreeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def post(self, path, body):
        status, text = self.d.http("POST", path, body)
        return status, json.loads(text) if text else None

    def register(self, tree):
        status, desc = self.post("/v1/chains", tree.chain)
        self.assertIn(status, (200, 201), desc)
        return desc

    def check(self, tree, desc, target, result):
        """Checks an answer to full-pose targets; True when it says
        success (and then every tip is on its target by FK here)."""
        names = desc["joint_names"]
        q = result["joints"]
        self.assertEqual(len(q), len(names))
        for v, j in zip(q, desc["joints"]):
            if "lower" in j:
                self.assertTrue(j["lower"] - 1e-9 <= v <= j["upper"] + 1e-9, (v, j))
        ok = result["status"] == "success"
        self.assertEqual(len(result["tips"]), len(tree.tips))
        for k, name in enumerate(tree.tips):
            p, quat = tree.fk(k, names, q)
            a = result["tips"][k]
            self.assertLess(max(abs(x - y) for x, y in zip(p, a["position"])), 1e-9)
            self.assertLess(quat_angle(quat, a["orientation"]), 1e-6)  # acos: ~3e-8 at best
            want = target["tips"][name]
            on = (max(abs(x - y) for x, y in zip(p, want["position"])) <= TOL and
                  quat_angle(quat, want["orientation"]) <= 2 * TOL)
            if ok or a["status"] == "success":
                self.assertTrue(on, (name, p, quat, want))
        return ok

    def test_register_describe_delete(self):
        tree = Tree("pr2_base")
        status, desc = self.post("/v1/chains", tree.chain)
        self.assertIn(status, (200, 201), desc)
        self.assertEqual(desc["kind"], "tree")
        self.assertEqual(desc["dof"], 15)
        self.assertEqual(desc["shared_joints"], ["torso_lift_joint"])
        self.assertEqual([t["name"] for t in desc["tips"]], tree.tips)
        for t, path in zip(desc["tips"], tree.paths):
            self.assertEqual(t["joints"], [J.name for J in path.movable])
        again, d2 = self.post("/v1/chains", tree.chain)
        self.assertEqual(again, 200)
        self.assertEqual(d2["id"], desc["id"])
        status, text = self.d.http("GET", "/v1/chains/" + desc["id"])
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(text)["tips"], desc["tips"])
        status, _ = self.d.http("DELETE", "/v1/chains/" + desc["id"])
        self.assertEqual(status, 204)
        status, _ = self.d.http("GET", "/v1/chains/" + desc["id"])
        self.assertEqual(status, 404)

    def solve_random(self, key, n, seed):
        tree = Tree(key)
        desc = self.register(tree)
        rng = random.Random(seed)
        ok = 0
        targets = []
        for i in range(n):
            q = random_joints(desc, rng)
            target = full_pose_target(tree, desc["joint_names"], q)
            status, r = self.post("/v1/solve", {"chain_id": desc["id"], "target": target,
                                                "options": OPTIONS})
            self.assertEqual(status, 200, r)
            self.assertEqual(r["joint_names"], desc["joint_names"])
            self.assertEqual(r["tip_names"], tree.tips)
            ok += self.check(tree, desc, target, r)
            if i < 100:
                targets.append(target)
        self.assertGreaterEqual(ok * 1000, n * 999, "%s: %d of %d" % (key, ok, n))
        status, b = self.post("/v1/solve/batch", {"chain_id": desc["id"], "targets": targets,
                                                  "options": OPTIONS})
        self.assertEqual(status, 200, b)
        self.assertEqual(b["count"], len(targets))
        bok = sum(self.check(tree, desc, t, r) for t, r in zip(targets, b["results"]))
        self.assertGreaterEqual(bok * 1000, len(targets) * 999)
        self.assertEqual(b["counts"]["success"], bok)

    def test_pr2_from_torso_lift_link(self):
        self.solve_random("pr2_torso", 300, 1)

    def test_pr2_from_base_link(self):
        self.solve_random("pr2_base", 300, 2)

    def test_baxter_like(self):
        self.solve_random("baxter", 300, 3)

    def test_stream_smooth(self):
        tree = Tree("pr2_base")
        desc = self.register(tree)
        names = desc["joint_names"]
        rng = random.Random(7)
        q = random_joints(desc, rng)
        dq = [rng.uniform(-0.01, 0.01) for _ in q]

        async def go():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "arms", "chain_id": desc["id"],
                                "seed": q, "options": OPTIONS})
                m = await recv(ws)
                self.assertEqual(m["type"], "opened", m)
                prev = list(q)
                for i in range(80):
                    for k, j in enumerate(desc["joints"]):
                        x = q[k] + dq[k]
                        if "lower" in j and not (j["lower"] + 0.02 < x < j["upper"] - 0.02):
                            dq[k] = -dq[k]
                        q[k] += dq[k]
                    target = full_pose_target(tree, names, q)
                    await send(ws, {"type": "target", "stream": "arms", "seq": i,
                                    "target": target})
                    m = await recv(ws)
                    self.assertEqual((m["type"], m["seq"]), ("solution", i), m)
                    r = m["result"]
                    self.assertTrue(self.check(tree, desc, target, r), r)
                    step = max(abs(a - b) for a, b in zip(r["joints"], prev))
                    self.assertLessEqual(step, 0.2, (i, step))
                    self.assertLessEqual(r["max_joint_step"], 0.2)
                    prev = r["joints"]
        run(go())

    def test_priorities_conflict(self):
        # s at the root; tip A after one more joint (1.0 then 0.8), tip B
        # after two (-0.6, -0.7, then -0.5 along x), every axis z
        def j(name, parent, x):
            o = {"name": name, "type": "continuous", "axis": [0, 0, 1]}
            if parent:
                o["parent"] = parent
            if x:
                o["origin"] = {"xyz": [x, 0, 0]}
            return o
        chain = {"kind": "tree", "tips": ["a_tip", "b_tip"], "joints": [
            j("s", None, 0), j("a", "s", 1.0),
            {"name": "a_tip", "parent": "a", "type": "fixed", "origin": {"xyz": [0.8, 0, 0]}},
            j("b1", "s", -0.6), j("b2", "b1", -0.7),
            {"name": "b_tip", "parent": "b2", "type": "fixed", "origin": {"xyz": [-0.5, 0, 0]}}]}

        def b_cost(s, b1, b2, tx, ty, tyaw):
            x = -0.6 * math.cos(s) - 0.7 * math.cos(s + b1) - 0.5 * math.cos(s + b1 + b2)
            y = -0.6 * math.sin(s) - 0.7 * math.sin(s + b1) - 0.5 * math.sin(s + b1 + b2)
            d = math.remainder(tyaw - (s + b1 + b2), 2 * math.pi)
            return (tx - x) ** 2 + (ty - y) ** 2 + d * d

        def b_best(s, tx, ty, tyaw):
            best, c1, c2, n = math.inf, 0.0, 0.0, 60
            h = 2 * math.pi / n
            for i in range(n):
                for k in range(n):
                    c = b_cost(s, -math.pi + i * h, -math.pi + k * h, tx, ty, tyaw)
                    if c < best:
                        best, c1, c2 = c, -math.pi + i * h, -math.pi + k * h
            while h > 1e-10:  # pattern search down to 1e-10 rad
                moved = False
                for d1, d2 in ((h, 0), (-h, 0), (0, h), (0, -h), (h, h), (-h, -h), (h, -h), (-h, h)):
                    c = b_cost(s, c1 + d1, c2 + d2, tx, ty, tyaw)
                    if c < best:
                        best, c1, c2, moved = c, c1 + d1, c2 + d2, True
                if not moved:
                    h /= 2
            return best

        rng = random.Random(11)
        cases = 0
        while cases < 4:
            r = rng.uniform(0.25, 1.75)
            ang = rng.uniform(-math.pi, math.pi)
            ax, ay = r * math.cos(ang), r * math.sin(ang)
            bx, by, byaw = rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5), rng.uniform(-math.pi, math.pi)
            phi = math.acos(max(-1, min(1, (1.0 + r * r - 0.64) / (2 * r))))
            ref = min(b_best(ang - phi, bx, by, byaw), b_best(ang + phi, bx, by, byaw))
            if ref < 1e-4:
                continue
            cases += 1
            target = {"tips": {
                "a_tip": {"position": [ax, ay, 0]},
                "b_tip": {"position": [bx, by, 0],
                          "orientation": [0, 0, math.sin(byaw / 2), math.cos(byaw / 2)],
                          "weights": [1, 1, 0, 0, 0, 1], "priority": 1}}}
            status, res = self.post("/v1/solve", {
                "chain": chain, "target": target,
                "options": {"tolerance": 1e-6, "angular_tolerance": 1e-6, "timeout_ms": 0,
                            "max_iterations": 10000}})
            self.assertEqual(status, 200, res)
            self.assertEqual(res["status"], "no_ik_solution")
            self.assertEqual([t["status"] for t in res["tips"]], ["success", "no_ik_solution"])
            s, a, b1, b2 = res["joints"]
            px, py = math.cos(s) + 0.8 * math.cos(s + a), math.sin(s) + 0.8 * math.sin(s + a)
            self.assertLess(max(abs(px - ax), abs(py - ay)), 1e-6)
            cost = b_cost(s, b1, b2, bx, by, byaw)
            self.assertLessEqual(cost, ref + 1e-6 * (1 + ref), (cases, cost, ref))
            self.assertGreaterEqual(cost, ref - 1e-5 * (1 + ref), (cases, cost, ref))

    def test_rejections(self):
        tree = Tree("pr2_torso")
        desc = self.register(tree)
        status, r = self.post("/v1/solve", {"chain_id": desc["id"], "target": {
            "tips": {"nose": {"position": [0.5, 0, 0]}}}})
        self.assertEqual(status, 400, r)
        self.assertEqual((r["error"]["code"], r["error"]["path"]),
                         ("invalid_request", "/target/tips/nose"))
        bad = dict(tree.chain, tips=["l_wrist_roll_link", "no_such_link"])
        status, r = self.post("/v1/chains", bad)
        self.assertEqual(status, 422, r)
        self.assertEqual((r["error"]["code"], r["error"]["path"]), ("invalid_urdf", "/urdf"))
        status, r = self.post("/v1/solve", {
            "chain": tree.paths[0].request(), "target": {"position": [0.5, 0, 0]},
            "options": {"objective": "distance"}})
        self.assertEqual(status, 400, r)
        self.assertEqual(r["error"]["path"], "/options/objective")


if __name__ == "__main__":
    unittest.main()

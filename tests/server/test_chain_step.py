"""
test_chain_step.py: options.max_joint_step on chains whose solve FAILS,
over the real daemon ($IKD_BIN on 127.0.0.1 port 0): proto/README.md ("How
the numeric solver chooses an answer", item 4) and STREAM.md promise that
no answer moves a joint farther than max_joint_step from the seed, failed
answers included. A failed solve whose best pose is past the step is
refused as a solution past it is: status no_ik_solution, reason
joint_step, the seed's joints, max_joint_step the step refused (above the
option), and the failure's cause kept, as a tree answers the same request.
Covered, on a two-joint arm written here (as joints, as a tree, as a
planar arm on the numeric solver), on a slider and a turn (a prismatic
joint), on the UR5 and the iiwa from $IKD_DATA:
  - POST /v1/solve with a target beyond reach, and one reachable only
    outside the joint limits, numeric and closed solvers;
  - POST /v1/solve/batch with such a target next to one within the step;
  - a stream whose target jumps far out of reach: the previous joints.
Every pose is checked by forward kinematics computed here (robot_chain.py
for the URDFs, plain trigonometry for the arms written here), never by
ikd's own answers; the refused step is checked against the pose the
failure leaves (the arm stretched towards the target, or the slider on its
limit).
"""
import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from robot_chain import Chain  # noqa: E402
from test_stream import Daemon, connect, recv, run, send  # noqa: E402

IKD_DATA = os.environ.get("IKD_DATA", "tests/data")
ROBOTS = os.path.join(IKD_DATA, "robots")
STEP = 0.3

# s turns about z, then 1.0 along x, a turns about z, then 0.8 to the tip:
# reach 1.8. s is kept within +-0.4 so that targets behind the base are
# reachable only outside the limits.
ARM_JOINTS = [
    {"name": "s", "type": "revolute", "axis": [0, 0, 1], "limits": {"lower": -3, "upper": 3}},
    {"name": "a", "type": "revolute", "origin": {"xyz": [1.0, 0, 0]}, "axis": [0, 0, 1],
     "limits": {"lower": -3, "upper": 3}},
    {"name": "tip", "type": "fixed", "origin": {"xyz": [0.8, 0, 0]}},
]


def arm(s_limit=3.0):
    j = json.loads(json.dumps(ARM_JOINTS))
    j[0]["limits"] = {"lower": -s_limit, "upper": s_limit}
    return {"kind": "joints", "joints": j}


def arm_tree(s_limit=3.0):
    """The same arm as a tree with one tip."""
    j = json.loads(json.dumps(ARM_JOINTS))
    j[0]["limits"] = {"lower": -s_limit, "upper": s_limit}
    j[1]["parent"] = "s"
    j[2]["parent"] = "a"
    return {"kind": "tree", "joints": j, "tips": ["tip"]}


def arm_fk(q):
    s, a = q
    return [math.cos(s) + 0.8 * math.cos(s + a), math.sin(s) + 0.8 * math.sin(s + a), 0.0]


# a slider along z (stroke +-1), then a turn about z and 1.0 along x
SLIDER = {"kind": "joints", "joints": [
    {"name": "p", "type": "prismatic", "axis": [0, 0, 1], "limits": {"lower": -1, "upper": 1}},
    {"name": "t", "type": "revolute", "axis": [0, 0, 1], "limits": {"lower": -3, "upper": 3}},
    {"name": "tip", "type": "fixed", "origin": {"xyz": [1.0, 0, 0]}},
]}


def slider_fk(q):
    p, t = q
    return [math.cos(t), math.sin(t), p]


def largest_step(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


class ChainStepTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def post(self, path, body):
        status, text = self.d.http("POST", path, body)
        self.assertEqual(status, 200, text)
        return json.loads(text)

    def solve(self, chain, target, seed, options):
        return self.post("/v1/solve", {"chain": chain, "target": target, "seed": seed,
                                       "options": options})

    def check_refused(self, r, seed, step=STEP, cause=None):
        """r refuses a failed solve past the step: the seed's joints, reason
        joint_step, max_joint_step above the option, cause as given."""
        self.assertEqual((r["status"], r["code"], r["reason"]),
                         ("no_ik_solution", -31, "joint_step"), r)
        self.assertLessEqual(largest_step(r["joints"], seed), 1e-12, r)
        self.assertGreater(r["max_joint_step"], step, r)
        if cause is not None:
            self.assertEqual(r.get("cause"), cause, r)

    def test_beyond_reach_refused(self):
        """Beyond the arm's reach (1.8) on +y, from s = 0: the pose
        stretched towards the target turns s by pi/2; refused, cause
        out_of_reach, the tip where the seed puts it."""
        seed = [0.0, 0.5]
        target = {"position": [0.0, 3.0, 0.0]}
        opts = {"max_joint_step": STEP, "timeout_ms": 0, "max_iterations": 2000}
        r = self.solve(arm(), target, seed, opts)
        self.check_refused(r, seed, cause="out_of_reach")
        # the refused step: the stretched pose's (s = pi/2, a = 0)
        self.assertLess(abs(r["max_joint_step"] - math.pi / 2), 0.05, r)
        for x, y in zip(r["tip"]["position"], arm_fk(seed)):
            self.assertLess(abs(x - y), 1e-9, (r["tip"], arm_fk(seed)))
        # without the option the failure is answered with its best pose
        r0 = self.solve(arm(), target, seed, {"timeout_ms": 0, "max_iterations": 2000})
        self.assertEqual((r0["reason"], r0["cause"]), ("unreachable", "out_of_reach"), r0)
        # a tree of the same arm answers the same shape
        t = self.solve(arm_tree(), {"tips": {"tip": target}}, seed, opts)
        self.check_refused(t, seed, cause="out_of_reach")
        members = ("status", "code", "reason", "cause", "joints", "max_joint_step")
        self.assertEqual([m for m in members if m in t], [m for m in members if m in r])
        self.assertEqual(t["joints"], r["joints"])

    def test_outside_limits_refused(self):
        """Behind the base (reachable only with s near pi, s kept within
        +-0.4): the best pose folds the elbow far from the seed's; refused,
        the cause that of the same solve without the option."""
        seed = [0.0, 0.0]
        target = {"position": [-1.2, 0.3, 0.0]}
        base = {"timeout_ms": 0, "max_iterations": 300}
        r0 = self.solve(arm(0.4), target, seed, base)
        self.assertEqual(r0["status"], "no_ik_solution", r0)
        self.assertGreater(largest_step(r0["joints"], seed), STEP, r0)
        r = self.solve(arm(0.4), target, seed, dict(base, max_joint_step=STEP))
        self.check_refused(r, seed, cause=r0["cause"])
        t = self.solve(arm_tree(0.4), {"tips": {"tip": target}}, seed,
                       dict(base, max_joint_step=STEP))
        self.check_refused(t, seed)
        self.assertEqual(t.get("cause") is None, r.get("cause") is None, (t, r))

    def test_planar_numeric_refused(self):
        """A planar arm (1.0, 0.8) on the numeric solver, beyond reach on +y
        from angle 0: refused, the seed's positions by FK here."""
        seed = [0.0, 0.5]
        r = self.solve({"kind": "planar", "lengths": [1.0, 0.8]}, {"position": [0.0, 3.0]},
                       seed, {"solver": "numeric", "max_joint_step": STEP, "timeout_ms": 0,
                              "max_iterations": 2000})
        self.check_refused(r, seed, cause="out_of_reach")
        self.assertLess(abs(r["max_joint_step"] - math.pi / 2), 0.05, r)
        for x, y in zip(r["positions"][-1], arm_fk(seed)):
            self.assertLess(abs(x - y), 1e-9)

    def test_prismatic_refused(self):
        """Straight up past the slider's stroke: the best pose has the
        slider on its limit (1.0 from the seed's 0); refused, max_joint_step
        that stroke in length units."""
        seed = [0.0, 0.2]
        r = self.solve(SLIDER, {"position": [0.0, 0.0, 5.0]}, seed,
                       {"max_joint_step": STEP, "timeout_ms": 0, "max_iterations": 2000})
        self.check_refused(r, seed, cause="out_of_reach")
        self.assertLess(abs(r["max_joint_step"] - 1.0), 1e-6, r)
        for x, y in zip(r["tip"]["position"], slider_fk(seed)):
            self.assertLess(abs(x - y), 1e-9)

    def test_batch(self):
        """A batch: the target beyond reach refused, the one within the step
        answered (its pose checked by FK here)."""
        seed = [0.0, 0.5]
        near = arm_fk([0.1, 0.55])
        body = {"chain": arm(), "targets": [{"position": [0.0, 3.0, 0.0]}, {"position": near}],
                "seeds": [seed, seed],
                "options": {"max_joint_step": STEP, "timeout_ms": 0, "max_iterations": 2000}}
        b = self.post("/v1/solve/batch", body)
        r, ok = b["results"]
        self.check_refused(r, seed, cause="out_of_reach")
        self.assertEqual(ok["status"], "success", ok)
        self.assertLessEqual(largest_step(ok["joints"], seed), STEP)
        for x, y in zip(arm_fk(ok["joints"]), near):
            self.assertLess(abs(x - y), 1e-4)
        self.assertEqual(b["counts"]["no_ik_solution"], 1, b)

    def test_robots(self):
        """The UR5 and the iiwa (URDF), numeric on a position beyond reach
        and closed on a full pose beyond reach: the seed's joints, reason
        joint_step, the tip the seed's by FK here."""
        cases = [
            ("ur5.urdf", "base_link", "tool0", [2.5, -1.2, 1.0, -1.0, -1.5, 0.3], "numeric"),
            ("kuka_iiwa14_r820.urdf", "base_link", "tool0",
             [2.0, 0.5, -0.2, -1.2, 0.4, 0.8, 0.1], "numeric"),
            ("ur5.urdf", "base_link", "tool0", [2.5, -1.2, 1.0, -1.0, -1.5, 0.3], "closed"),
        ]
        for urdf, base, tip, seed, solver in cases:
            with self.subTest(urdf=urdf, solver=solver):
                c = Chain(os.path.join(ROBOTS, urdf), base, tip)
                target = {"position": [-2.0, -1.0, 0.5]}
                if solver == "closed":
                    target["orientation"] = [0.0, 0.0, 0.0, 1.0]
                opts = {"max_joint_step": STEP, "timeout_ms": 0, "max_iterations": 3000,
                        "solver": solver}
                r = self.solve(c.request(), target, seed, opts)
                self.check_refused(r, seed)
                p, _ = c.fk(r["joints"])
                for x, y in zip(p, c.fk(seed)[0]):
                    self.assertLess(abs(x - y), 1e-6)
                r0 = self.solve(c.request(), target, seed,
                                {k: v for k, v in opts.items() if k != "max_joint_step"})
                self.assertEqual(r0["status"], "no_ik_solution", r0)
                self.assertEqual(r.get("cause"), r0.get("cause"), (r, r0))

    def test_stream_jump_out_of_reach(self):
        """An iiwa stream with max_joint_step: a reachable target near the
        seed is answered, then one far out of reach is refused with the
        previous joints and joint_step."""
        c = Chain(os.path.join(ROBOTS, "kuka_iiwa14_r820.urdf"), "base_link", "tool0")
        q0 = [0.3, 0.5, -0.2, -1.2, 0.4, 0.8, 0.1]
        q1 = [x + 0.01 for x in q0]

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "far", "chain": c.request(),
                                "seed": q0, "options": {"max_joint_step": STEP, "timeout_ms": 0,
                                                        "max_iterations": 3000}})
                m = await recv(ws)
                self.assertEqual(m["type"], "opened", m)
                p, quat = c.fk(q1)
                await send(ws, {"type": "target", "stream": "far", "seq": 1,
                                "target": {"position": p, "orientation": quat}})
                m = await recv(ws)
                r = m["result"]
                self.assertEqual(r["status"], "success", r)
                prev = r["joints"]
                self.assertLessEqual(largest_step(prev, q0), STEP)
                p1, _ = c.fk(prev)
                self.assertLess(largest_step(p1, p), 1e-4)
                # far out of reach, behind the arm
                await send(ws, {"type": "target", "stream": "far", "seq": 2,
                                "target": {"position": [-2.5, -1.5, 0.5]}})
                m = await recv(ws)
                self.check_refused(m["result"], prev, cause="out_of_reach")
        run(body())


if __name__ == "__main__":
    unittest.main()

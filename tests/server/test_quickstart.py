"""
test_quickstart.py: the "Quick start" of README.md, pasted as a newcomer
would, against a real ikd.

Every ```sh block under the "## Quick start" heading (up to the next "## "
heading) is run as written with sh -e from the repository's root, one after
the other against one daemon, with two substitutions only: the daemon
listens on a free port instead of 8080 (so "127.0.0.1:8080" becomes that
address), and "./build/ikd" becomes $IKD_BIN when the tests run another
build. The blocks are, in order, and each output is checked on its own
terms, independently of ikd where it can be:

  1. a two-bone solve with curl: success; the hip kept, both bone lengths
     kept, the foot on the target (geometry of the request's own numbers);
  2. "ikd chain" on the UR5 piped into POST /v1/chains: a six-joint urdf
     chain whose id is the one the later blocks use (the README says the id
     is the reader's too: it is content-addressed);
  3. a full-pose solve by chain_id: success, position_error and
     orientation_error below 1e-5, and forward kinematics of the answered
     joints (tests/server/robot_chain.py, from the URDF) on the target the
     command asked for, within 1e-5 m and 1e-5 rad;
  4. a batch by chain_id: every target success, each checked by forward
     kinematics the same way;
  5. a stream with the Python client: five lines in seq order, each
     success, the printed joints (4 decimals) by forward kinematics near
     the target of the README's motion, and no joint jumping between
     consecutive answers (warm start).
A block count other than five fails, so that the README and this test
change together.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from test_stream import Daemon, IKD_BIN  # noqa: E402
import robot_chain  # noqa: E402

UR5 = os.path.join(ROOT, "tests", "data", "robots", "ur5.urdf")


def quick_start_blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        raise AssertionError("README.md has no '## Quick start' section")
    return re.findall(r"^```sh\n(.*?)^```\n", m.group(1), re.S | re.M)


def request_body(block):
    """The JSON after curl's -d '...' in a block."""
    m = re.search(r"-d '(.*?)'\s*$", block, re.S)
    return json.loads(m.group(1))


def dist(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


class QuickStartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.blocks = quick_start_blocks()
        cls.d = Daemon()
        cls.ur5 = robot_chain.Chain(UR5, "base_link", "tool0")
        cls.outputs = []
        cls.errors = []
        for b in cls.blocks:
            script = b.replace("127.0.0.1:8080", "127.0.0.1:%d" % cls.d.port)
            if os.path.abspath(IKD_BIN) != os.path.join(ROOT, "build", "ikd"):
                script = script.replace("./build/ikd", os.path.abspath(IKD_BIN))
            with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
                f.write(script)
                f.flush()
                r = subprocess.run(["sh", "-e", f.name], cwd=ROOT, capture_output=True,
                                   text=True, timeout=60)
            cls.outputs.append(r.stdout)
            cls.errors.append((r.returncode, r.stderr))

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def answer(self, i):
        rc, err = self.errors[i]
        self.assertEqual(rc, 0, "block %d exited %d: %s" % (i + 1, rc, err))
        return json.loads(self.outputs[i])

    def check_pose(self, joints, target):
        """Forward kinematics of joints (from the URDF) against a target."""
        p, q = self.ur5.fk(joints)
        self.assertLess(dist(p, target["position"]), 1e-5, (joints, p, target))
        o = target["orientation"]
        n = math.sqrt(sum(x * x for x in o))
        self.assertLess(robot_chain.quat_angle(q, [x / n for x in o]), 1e-5, (joints, q, target))

    def test_0_five_blocks(self):
        self.assertEqual(len(self.blocks), 5, "the Quick start has %d sh blocks" % len(self.blocks))

    def test_1_two_bone(self):
        a = self.answer(0)
        body = request_body(self.blocks[0])
        p0, p1, p2 = body["chain"]["positions"]
        t = body["target"]["position"]
        self.assertEqual(a["status"], "success", a)
        hip, knee, foot = a["positions"]
        self.assertLess(dist(hip, p0), 1e-12)
        self.assertAlmostEqual(dist(hip, knee), dist(p0, p1), delta=1e-9)
        self.assertAlmostEqual(dist(knee, foot), dist(p1, p2), delta=1e-9)
        self.assertLess(dist(foot, t), 1e-9)

    def test_2_register_urdf(self):
        a = self.answer(1)
        self.assertRegex(a["id"], r"^[0-9a-f]{32}$")
        self.assertEqual(a["kind"], "urdf")
        self.assertEqual(a["dof"], 6)
        self.assertEqual(a["joint_names"], [j.name for j in self.ur5.movable])
        # the id the README prints, and that the later blocks use
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        ids = set(re.findall(r'"chain_id": ?"([0-9a-f]{32})"', "".join(self.blocks)))
        self.assertEqual(ids, {a["id"]})
        self.assertIn("`%s`" % a["id"], readme)

    def test_3_full_pose(self):
        a = self.answer(2)
        target = request_body(self.blocks[2])["target"]
        self.assertEqual(a["status"], "success", a)
        self.assertLess(a["position_error"], 1e-5)
        self.assertLess(a["orientation_error"], 1e-5)
        self.assertTrue(self.ur5.within_limits(a["joints"]))
        self.check_pose(a["joints"], target)

    def test_4_batch(self):
        a = self.answer(3)
        targets = request_body(self.blocks[3])["targets"]
        self.assertEqual(a["counts"]["success"], len(targets), a["counts"])
        self.assertEqual(len(a["results"]), len(targets))
        for r, t in zip(a["results"], targets):
            self.assertEqual(r["status"], "success")
            self.check_pose(r["joints"], t)

    def test_5_stream(self):
        rc, err = self.errors[4]
        self.assertEqual(rc, 0, err)
        lines = self.outputs[4].split("\n")
        self.assertEqual(lines[-1], "")
        lines = lines[:-1]
        self.assertEqual(len(lines), 5, self.outputs[4])
        prev = None
        for i, line in enumerate(lines):
            f = line.split()
            self.assertEqual(f[0], str(i + 1), line)
            self.assertEqual(f[1], "success", line)
            q = [float(x) for x in f[2:]]
            self.assertEqual(len(q), 6)
            # the README's motion: 4 cm steps along y, pointing down; the
            # printed joints are rounded to 1e-4 rad
            p, o = self.ur5.fk(q)
            self.assertLess(dist(p, [0.4, 0.1 + 0.04 * i, 0.3]), 2e-3, (line, p))
            self.assertLess(robot_chain.quat_angle(o, [0, 1, 0, 0]), 2e-3, (line, o))
            if prev:
                self.assertLess(max(abs(x - y) for x, y in zip(q, prev)), 0.3, (prev, q))
            prev = q


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""
test_skeleton_scale_noise.py: skeleton chains whose hip, or a bone above
it, scales alike on every axis up to float32 noise, as engines export them
(Unity's and FBX importers' 1.0000001 and 0.99999994, a 0.01 armature
scale read back through float32). ikd refuses a hip or a bone above it
that scales unevenly (the limb would shear as it turns and miss the
target); a scale uneven only by float32 rounding shears the limb by less
than the solvers' tolerance and is taken. Each answer is checked by the
test's own forward kinematics of the bones (test_tree_skeleton's
compose and trs): the foot within 1e-6 of a target answered success, and
the answer's positions within 1e-6 of the composed bones' (a tenth of the
solvers' default tolerance; measured: 3.4e-8 at most). A scale uneven by
1e-4 is still refused at its path.
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_stream import Daemon  # noqa: E402
from test_tree_skeleton import compose, dist, origin, trs  # noqa: E402

TOL = 1e-6  # a tenth of the solvers' default position tolerance (proto/README.md)


def bones(pelvis, thigh):
    return [{"name": "pelvis", "translation": [0, 0, 1.0], "scale": pelvis},
            {"name": "thigh", "parent": "pelvis", "translation": [0, 0.1, 0],
             "rotation": [0.0, -0.258819, 0.0, 0.9659258], "scale": thigh},
            {"name": "shin", "parent": "thigh", "translation": [0.05, 0, -0.45],
             "rotation": [0.0, 0.5, 0.0, 0.8660254]},
            {"name": "foot", "parent": "shin", "translation": [0, 0.02, -0.45]}]


def fk(bs, rots):
    out = []
    for b, q in zip(bs, rots):
        m = trs(b["translation"], q, b.get("scale", [1, 1, 1]))
        out.append(m if "parent" not in b else compose(out[-1], m))
    return out


class SkeletonScaleNoiseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def solve(self, pelvis, thigh, target):
        chain = {"kind": "skeleton", "bones": bones(pelvis, thigh),
                 "limb": ["thigh", "shin", "foot"]}
        status, text = self.d.http("POST", "/v1/solve", {"chain": chain,
                                                         "target": {"position": target}})
        return status, json.loads(text)

    def test_float32_noise_taken(self):
        targets = [[0.1, 0.1, 0.45], [0.2, 0.05, 0.5], [-0.1, 0.15, 0.4], [0.15, 0.2, 0.6]]
        for pelvis, thigh in (([1, 1.0000001, 0.99999994], [1, 1, 1]),
                              ([1, 1, 1], [0.99999994, 1, 1.0000001]),
                              ([0.01, 0.0099999998, 0.010000001], [100, 100, 100.00001]),
                              ([-1, 1.0000001, -1], [1, 1, 1])):
            for t in targets:
                status, r = self.solve(pelvis, thigh, t)
                self.assertEqual(status, 200, (pelvis, thigh, r))
                g = fk(bones(pelvis, thigh), r["rotations"])
                for k, p in zip((1, 2, 3), r["positions"]):
                    self.assertLess(dist(origin(g[k]), p), TOL, (pelvis, thigh, t, k))
                if r["status"] == "success":
                    self.assertLess(dist(origin(g[3]), t), TOL, (pelvis, thigh, t))

    def test_uneven_past_float32_refused(self):
        for pelvis, thigh, bad in (([1, 1.0001, 1], [1, 1, 1], 0),
                                   ([1, 1, 1], [1, 1, 0.9999], 1)):
            status, r = self.solve(pelvis, thigh, [0.1, 0.1, 0.45])
            self.assertEqual(status, 422, r)
            self.assertEqual((r["error"]["code"], r["error"]["path"]),
                             ("invalid_chain", "/chain/bones/%d/scale" % bad), r)


if __name__ == "__main__":
    unittest.main()

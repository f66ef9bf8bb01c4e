"""
test_tree_skeleton.py: a skeleton's end bones solved as a tree on the real
daemon ($IKD_BIN on 127.0.0.1 port 0), over HTTP and WebSocket: the CMU
02_01 walk of $IKD_DATA/motion as a tree of bones ({"kind": "tree",
"bones": [...], "tips": [...]}, proto/README.md, "tree").

The chain is the whole BVH hierarchy as translate-rotate-scale bones: each
joint a bone, its OFFSET the bone's translation, the rest pose its own
pose, the hips at the origin (targets are sent relative to the recorded
hips, as an animation system solves limbs under its root motion) and
scaled to metres by a uniform scale on the hips; the left foot, a tip,
scales non-uniformly (its toe moves with it, nothing solved does), and so
does the head, off the tips' paths. Three tips: both feet and the left
hand.

Everything is checked here, independently of ikd: the BVH is parsed and
its recorded frames composed by the BVH definition (OFFSET plus the
rotation channels in their listed order, ZYX), and every answer's bone
rotations are composed down the hierarchy as the skeleton chain defines
it (each bone's transform translation * rotation * scale, times its
parent's), with plain Python math:
  - a stream opened on the recorded pose of frame 1, one target message per
    frame of the walk: both feet on their recorded poses (full pose), the
    left hand on a target circling its recorded position (priority 1);
    every answer success with the feet and the hand where this test's
    forward kinematics puts them, the answered tip poses and bone
    positions those of this forward kinematics, every bone as long as in
    the chain (scale kept), the bones off the paths unturned, no knee or
    elbow flipped against the recording, no bone turning more than 0.3 rad
    from one frame to the next (max_joint_step says the same);
  - a path whose waypoints are targets of the walk: every sample on its
    interpolated target;
  - the chain registered and described (bone names, each tip's bones, the
    shared hips), and a batch of frames each seeded with the recorded pose
    of the frame before, checked the same way;
  - rejections with their paths: a non-uniform scale above a tip, an end
    bone that is no bone, a skeleton chain given tips, mid_limits on bones,
    a seed of the wrong length.
Budgets are in iterations (timeout_ms 0), not time, so that a busy machine
or a sanitizer build changes no answer.
"""
import asyncio
import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_stream import Daemon, connect, recv, run, send  # noqa: E402

IKD_DATA = os.environ.get("IKD_DATA", "tests/data")
WALK = os.path.join(IKD_DATA, "motion", "cmu_02_01_walk.bvh")
TOL = 1.5e-5  # the daemon checks 1e-5 per component; FK here differs in rounding only
OPTIONS = {"timeout_ms": 0, "max_iterations": 10000}
SCALE = 0.056444  # the file's units to metres, on the hips
TIPS = ["LeftFoot", "RightFoot", "LeftHand"]
LIMBS = [("LeftUpLeg", "LeftLeg", "LeftFoot"), ("RightUpLeg", "RightLeg", "RightFoot"),
         ("LeftArm", "LeftForeArm", "LeftHand")]


# ---- vectors, quaternions [x, y, z, w] and affine 3x4 maps -----------------

def sub(a, b):
    return [x - y for x, y in zip(a, b)]


def add(a, b):
    return [x + y for x, y in zip(a, b)]


def scale(a, s):
    return [x * s for x in a]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def norm(a):
    return math.sqrt(dot(a, a))


def dist(a, b):
    return norm(sub(a, b))


def qmul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz]


def qaxis(axis, angle):
    v = [0.0, 0.0, 0.0]
    v[axis] = math.sin(angle / 2)
    return v + [math.cos(angle / 2)]


def qangle(a, b):
    """The angle between the rotations of unit quaternions a and b."""
    d = qmul([-a[0], -a[1], -a[2], a[3]], b)
    return 2 * math.atan2(norm(d[:3]), abs(d[3]))


def qmat(q):
    n = math.sqrt(dot(q, q))
    x, y, z, w = (c / n for c in q)
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]


def trs(t, q, s):
    """translation(t) * rotation(q) * scale(s) as a 3x4 row-major map."""
    r = qmat(q)
    return [[r[i][0] * s[0], r[i][1] * s[1], r[i][2] * s[2], t[i]] for i in range(3)]


def compose(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) + (a[i][3] if j == 3 else 0.0)
             for j in range(4)] for i in range(3)]


def origin(m):
    return [m[0][3], m[1][3], m[2][3]]


def rotation_of(m):
    """The rotation of a map R * diag(s) with s > 0 (its columns normalised),
    as a quaternion."""
    c = [[m[i][j] for i in range(3)] for j in range(3)]
    c = [scale(v, 1 / norm(v)) for v in c]
    r = [[c[j][i] for j in range(3)] for i in range(3)]
    tr = r[0][0] + r[1][1] + r[2][2]
    if tr > 0:
        s = 2 * math.sqrt(tr + 1)
        return [(r[2][1] - r[1][2]) / s, (r[0][2] - r[2][0]) / s, (r[1][0] - r[0][1]) / s, s / 4]
    i = max(range(3), key=lambda k: r[k][k])
    j, k = (i + 1) % 3, (i + 2) % 3
    s = 2 * math.sqrt(1 + r[i][i] - r[j][j] - r[k][k])
    q = [0.0, 0.0, 0.0, (r[k][j] - r[j][k]) / s]
    q[i] = s / 4
    q[j] = (r[j][i] + r[i][j]) / s
    q[k] = (r[k][i] + r[i][k]) / s
    return q


# ---- the BVH: its hierarchy, its frames, its own forward kinematics -----------

class Walk:
    def __init__(self, path):
        with open(path) as fh:
            tok = fh.read().split()
        i, stack, self.joints = 1, [], []
        assert tok[0] == "HIERARCHY"
        while True:
            t = tok[i]
            if t in ("ROOT", "JOINT"):
                assert tok[i + 2] == "{" and tok[i + 3] == "OFFSET" and tok[i + 7] == "CHANNELS"
                n = int(tok[i + 8])
                self.joints.append({"name": tok[i + 1], "parent": stack[-1] if stack else -1,
                                    "offset": [float(x) for x in tok[i + 4:i + 7]],
                                    "channels": tok[i + 9:i + 9 + n]})
                stack.append(len(self.joints) - 1)
                i += 9 + n
            elif t == "End":  # End Site { OFFSET x y z
                stack.append(None)
                i += 7
            elif t == "}":
                stack.pop()
                i += 1
                if not stack:
                    break
            else:
                raise ValueError(t)
        assert tok[i] == "MOTION" and tok[i + 1] == "Frames:"
        nframes = int(tok[i + 2])
        values = [float(x) for x in tok[i + 6:]]
        self.first = []
        nch = 0
        for j in self.joints:
            self.first.append(nch)
            nch += len(j["channels"])
        self.frames = [values[f * nch:(f + 1) * nch] for f in range(nframes)]
        self.index = {j["name"]: k for k, j in enumerate(self.joints)}

    def local_rotation(self, f, k):
        """Joint k's rotation at frame f: its rotation channels in order."""
        q = [0.0, 0.0, 0.0, 1.0]
        for c, name in enumerate(self.joints[k]["channels"]):
            if name.endswith("rotation"):
                v = math.radians(self.frames[f][self.first[k] + c])
                q = qmul(q, qaxis("XYZ".index(name[0]), v))
        return q

    def globals(self, f):
        """Every joint's (position, rotation) at frame f, as the BVH says:
        OFFSET (plus the position channels) and the rotation channels."""
        out = []
        for k, j in enumerate(self.joints):
            t = list(j["offset"])
            for c, name in enumerate(j["channels"]):
                if name.endswith("position"):
                    t["XYZ".index(name[0])] += self.frames[f][self.first[k] + c]
            q = self.local_rotation(f, k)
            if j["parent"] < 0:
                out.append((t, q))
            else:
                pp, pq = out[j["parent"]]
                r = qmat(pq)
                out.append((add(pp, [dot(r[i], t) for i in range(3)]), qmul(pq, q)))
        return out


def bone_scales(walk, noise=None):
    """The bones' scales; noise: {bone: scale} replacing some."""
    s = {"Hips": [SCALE] * 3, "LeftFoot": [1.0, 1.5, 0.8], "Head": [1.3, 0.7, 1.0]}
    s.update(noise or {})
    return [s.get(j["name"], [1.0, 1.0, 1.0]) for j in walk.joints]


def skeleton_chain(walk, noise=None):
    bones = []
    for j, s in zip(walk.joints, bone_scales(walk, noise)):
        b = {"name": j["name"]}
        if j["parent"] >= 0:
            b["parent"] = walk.joints[j["parent"]]["name"]
            b["translation"] = j["offset"]
        if s != [1.0, 1.0, 1.0]:
            b["scale"] = s
        bones.append(b)
    return {"kind": "tree", "bones": bones, "tips": TIPS}


def skeleton_fk(walk, rotations, noise=None):
    """Every bone's global map for local rotations, as the skeleton chain
    defines it: G = G_parent * translation * rotation * scale."""
    out = []
    for j, q, s in zip(walk.joints, rotations, bone_scales(walk, noise)):
        t = j["offset"] if j["parent"] >= 0 else [0.0, 0.0, 0.0]
        m = trs(t, q, s)
        out.append(m if j["parent"] < 0 else compose(out[j["parent"]], m))
    return out


def on_paths(walk):
    """The bones whose rotation the tree solves: the tips and above."""
    on = set()
    for t in TIPS:
        k = walk.index[t]
        while k >= 0:
            on.add(k)
            k = walk.joints[k]["parent"]
    return on


def bend(a, m, c):
    """The unit offset of the middle joint m from the line a-c, and its
    length."""
    ac = sub(c, a)
    ac = scale(ac, 1 / norm(ac))
    am = sub(m, a)
    perp = sub(am, scale(ac, dot(am, ac)))
    n = norm(perp)
    return scale(perp, 1 / n) if n > 0 else perp, n


class WalkTargets:
    """Frame f's targets in the chain's frame (the hips at the origin, in
    metres): the recorded feet and a hand target circling the recorded
    hand."""

    def __init__(self, walk):
        self.walk = walk
        self.rec = [walk.globals(f) for f in range(len(walk.frames))]

    def world(self, f, p):
        return scale(sub(p, self.rec[f][self.walk.index["Hips"]][0]), SCALE)

    def feet(self, f):
        return {t: (self.world(f, self.rec[f][self.walk.index[t]][0]),
                    self.rec[f][self.walk.index[t]][1]) for t in TIPS[:2]}

    def hand(self, f):
        ph = 2 * math.pi * f / 120
        p = add(self.rec[f][self.walk.index["LeftHand"]][0],
                [math.cos(ph), 0.5 * math.sin(2 * ph), math.sin(ph)])
        return self.world(f, p)

    def target(self, f):
        tips = {t: {"position": p, "orientation": q} for t, (p, q) in self.feet(f).items()}
        tips["LeftHand"] = {"position": self.hand(f), "priority": 1}
        return {"tips": tips}


class SkeletonTreeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.walk = Walk(WALK)
        cls.targets = WalkTargets(cls.walk)
        cls.chain = skeleton_chain(cls.walk)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def post(self, path, body):
        status, text = self.d.http("POST", path, body)
        return status, json.loads(text) if text else None

    def recorded(self, f):
        return [self.walk.local_rotation(f, k) for k in range(len(self.walk.joints))]

    def check(self, f, result, seed, noise=None, length_rel=1e-9, tip_tol=1e-9):
        """Checks the answer to frame f's target (seed: the local rotations
        it started from): the rotations composed here (noise: the chain's
        scales that bone_scales replaces; length_rel: how much a bone's
        length may change, relative; tip_tol: how far an answered tip's
        position may be from the composed bones')."""
        walk = self.walk
        self.assertEqual(result["status"], "success", (f, result.get("reason")))
        rot = result["rotations"]
        self.assertEqual(len(rot), len(walk.joints))
        g = skeleton_fk(walk, rot, noise)
        rest = skeleton_fk(walk, [[0.0, 0.0, 0.0, 1.0]] * len(walk.joints), noise)
        on = on_paths(walk)
        for k, j in enumerate(walk.joints):
            self.assertLess(dist(origin(g[k]), result["positions"][k]), 1e-9, (f, j["name"]))
            if j["parent"] >= 0:  # every bone as long as in the chain
                want = dist(origin(rest[k]), origin(rest[j["parent"]]))
                got = dist(origin(g[k]), origin(g[j["parent"]]))
                self.assertAlmostEqual(got, want, delta=length_rel * (1 + want),
                                       msg=(f, j["name"]))
            if k not in on:  # bones off the paths keep their rotation
                self.assertLess(qangle(rot[k], seed[k]), 1e-9, (f, j["name"]))
        for t, (p, q) in self.targets.feet(f).items():
            m = g[walk.index[t]]
            self.assertLessEqual(max(abs(x) for x in sub(origin(m), p)), TOL, (f, t))
            self.assertLessEqual(qangle(rotation_of(m), q), 2 * TOL, (f, t))
        hand = origin(g[walk.index["LeftHand"]])
        self.assertLessEqual(max(abs(x) for x in sub(hand, self.targets.hand(f))), TOL, f)
        for k, t in enumerate(TIPS):  # the answered tip poses
            m = g[walk.index[t]]
            self.assertLess(dist(result["tips"][k]["position"], origin(m)), tip_tol)
            self.assertLess(qangle(result["tips"][k]["orientation"], rotation_of(m)), 1e-7)
            self.assertEqual(result["tips"][k]["status"], "success")
        flips = 0
        for limb in LIMBS:  # knees and elbows bend to the recorded side
            rec = [self.targets.rec[f][walk.index[n]][0] for n in limb]
            br, lr = bend(*rec)
            bg, lg = bend(*(origin(g[walk.index[n]]) for n in limb))
            if lr < 0.1:  # straight in the recording: no side to keep
                continue
            flips += 1
            self.assertGreater(dot(br, bg), 0.0, (f, limb))
        return flips

    def test_walk_stream(self):
        walk, n = self.walk, len(self.walk.frames)

        async def go():
            seed = self.recorded(1)
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "walk", "chain": self.chain,
                                "seed": seed, "options": OPTIONS})
                m = await recv(ws)
                self.assertEqual(m["type"], "opened", m)
                prev, bends, worst = seed, 0, 0.0
                for f in range(1, n):
                    await send(ws, {"type": "target", "stream": "walk", "seq": f,
                                    "target": self.targets.target(f)})
                    m = await recv(ws)
                    self.assertEqual((m["type"], m["seq"]), ("solution", f), m)
                    r = m["result"]
                    bends += self.check(f, r, seed)
                    step = max(qangle(a, b) for a, b in zip(prev, r["rotations"]))
                    self.assertLessEqual(step, 0.3, (f, step))
                    self.assertAlmostEqual(r["max_joint_step"], step, delta=1e-6)
                    worst = max(worst, step)
                    prev = r["rotations"]
                self.assertGreater(bends, n)
                print("walk as a skeleton tree: %d frames, largest bone turn %.3f rad"
                      % (n - 1, worst), file=sys.stderr)
        run(go())

    def test_path(self):
        """A path whose waypoints are the walk's targets of frames 1, 11, 21
        and 31: every sample on its interpolated target (positions
        linearly, orientations by slerp), computed here."""
        frames, rate, duration = [1, 11, 21, 31], 120.0, 0.25
        waypoints = [self.targets.target(f) for f in frames]

        def lerp(a, b, u):
            return [x + (y - x) * u for x, y in zip(a, b)]

        def slerp(a, b, u):
            d = dot(a, b)
            if d < 0:
                b, d = scale(b, -1), -d
            th = math.acos(min(1.0, d))
            if th < 1e-12:
                return a
            return add(scale(a, math.sin((1 - u) * th) / math.sin(th)),
                       scale(b, math.sin(u * th) / math.sin(th)))

        async def go():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "walk", "chain": self.chain,
                                "seed": self.recorded(1), "options": OPTIONS})
                self.assertEqual((await recv(ws))["type"], "opened")
                await send(ws, {"type": "path", "stream": "walk", "seq": 1,
                                "waypoints": waypoints, "rate_hz": rate,
                                "duration_s": duration})
                prev, count = self.recorded(1), None
                while True:
                    m = await recv(ws)
                    if m["type"] == "path_end":
                        break
                    self.assertEqual(m["type"], "solution", m)
                    count = m["count"]
                    r = m["result"]
                    self.assertEqual(r["status"], "success", m["index"])
                    u = min(m["index"] / rate / (duration / (len(frames) - 1)), len(frames) - 1)
                    k = min(int(u), len(frames) - 2)
                    a, b = waypoints[k]["tips"], waypoints[k + 1]["tips"]
                    g = skeleton_fk(self.walk, r["rotations"])
                    for t in TIPS:
                        p = lerp(a[t]["position"], b[t]["position"], u - k)
                        m_t = g[self.walk.index[t]]
                        self.assertLessEqual(max(abs(x) for x in sub(origin(m_t), p)), TOL)
                        if "orientation" in a[t]:
                            q = slerp(a[t]["orientation"], b[t]["orientation"], u - k)
                            self.assertLessEqual(qangle(rotation_of(m_t), q), 2 * TOL)
                    step = max(qangle(x, y) for x, y in zip(prev, r["rotations"]))
                    self.assertLessEqual(step, 0.3)
                    prev = r["rotations"]
                # a sample is skipped only when ikd is 100 ms behind (a very busy machine)
                self.assertEqual((m["sent"] + m["skipped"], m["count"], m["completed"]),
                                 (count, 31, True), m)
        run(go())

    def test_register_describe_batch(self):
        status, desc = self.post("/v1/chains", self.chain)
        self.assertIn(status, (200, 201), desc)
        self.assertEqual(desc["kind"], "tree")
        self.assertEqual(desc["bones"], len(self.walk.joints))
        self.assertEqual(desc["bone_names"], [j["name"] for j in self.walk.joints])
        self.assertEqual(desc["shared_bones"], ["Hips"])
        self.assertEqual([t["name"] for t in desc["tips"]], TIPS)
        for t in desc["tips"]:
            path, k = [], self.walk.index[t["name"]]
            while k >= 0:
                path.insert(0, self.walk.joints[k]["name"])
                k = self.walk.joints[k]["parent"]
            self.assertEqual(t["bones"], path)
        frames = list(range(2, len(self.walk.frames), 17))
        seeds = [self.recorded(f - 1) for f in frames]
        status, b = self.post("/v1/solve/batch", {
            "chain_id": desc["id"], "targets": [self.targets.target(f) for f in frames],
            "seeds": seeds, "options": OPTIONS})
        self.assertEqual(status, 200, b)
        self.assertEqual(b["bone_names"], desc["bone_names"])
        self.assertEqual(b["tip_names"], TIPS)
        self.assertEqual(b["counts"]["success"], len(frames))
        for f, s, r in zip(frames, seeds, b["results"]):
            self.check(f, r, s)

    def test_float32_noise_in_scales_above_tips_taken(self):
        """Scales alike on every axis up to float32 rounding, as engines
        export them (1.0000001, 0.99999994), on the hips and a spine bone
        above both hands' tips: taken (they were refused as non-uniform,
        422), and each answer checked here with those scales; a bone's
        length may change by the shear of such noise (1e-6 relative), and
        an answered tip's position, made with the x component as the
        uniform factor, be 1e-6 from the composed bones' (a tenth of the
        default tolerance; measured: 9e-8)."""
        noise = {"Hips": [SCALE, SCALE * 1.0000001, SCALE * 0.99999994],
                 "Spine": [0.99999994, 1.0, 1.0000001]}
        chain = skeleton_chain(self.walk, noise)
        for f in range(3, len(self.walk.frames), 41):
            seed = self.recorded(f - 1)
            status, r = self.post("/v1/solve", {"chain": chain, "target": self.targets.target(f),
                                                "seed": seed, "options": OPTIONS})
            self.assertEqual(status, 200, (f, r))
            self.check(f, r, seed, noise, length_rel=1e-6, tip_tol=1e-6)

    def test_rejections(self):
        def expect(body, status, code, path, route="/v1/solve"):
            st, r = self.post(route, body)
            self.assertEqual(st, status, r)
            self.assertEqual((r["error"]["code"], r["error"]["path"]), (code, path), r)
            return r["error"]["message"]

        target = self.targets.target(5)
        spine = self.walk.index["Spine"]
        bad = json.loads(json.dumps(self.chain))
        bad["bones"][spine]["scale"] = [1.0, 2.0, 1.0]
        msg = expect({"chain": bad, "target": target}, 422, "invalid_chain",
                     "/chain/bones/%d/scale" % spine)
        self.assertIn("LeftHand", msg)
        expect(dict(self.chain, tips=["LeftFoot", "RightFoot", "Nose"]), 422, "invalid_chain",
               "/tips/2", route="/v1/chains")
        skel = {"kind": "skeleton", "bones": self.chain["bones"], "tips": TIPS}
        expect({"chain": skel, "target": target}, 400, "invalid_request", "/chain/tips")
        expect({"chain": self.chain, "target": target, "options": {"objective": "mid_limits"}},
               400, "invalid_request", "/options/objective")
        expect({"chain": self.chain, "target": target, "seed": self.recorded(4)[:-1]}, 400,
               "invalid_request", "/seed")


if __name__ == "__main__":
    unittest.main()

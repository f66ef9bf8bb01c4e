"""
test_collide_fk.py: a hostile review of ikd's collision-aware answers
(proto/README.md "Collisions", "Registered scenes"), each answer checked by
forward kinematics and geometry written here, independently of ikd's
solver/ik_collide.c, as a robot controller would use them.

The geometry here: every link's frame by FK of the URDF (robot_chain.py's
rotations; links rigidly fixed to the chain's links ride with them); the
robot's spheres (the client's collision_spheres) placed exactly; URDF
<collision> boxes and cylinders sampled on their surface (the smallest
distance of the samples is an UPPER bound of the primitive's distance,
minus the sampling step a lower bound); obstacles (boxes rotated,
spheres, capsules) by their signed distance functions in ROS's
convention, the scene converted here into the caller's convention
(unity, unreal) before it is sent.

Checked on every answer:
  - joints within limits, the tip on its target (FK here);
  - a success with avoid_collisions is clear by collision_margin (here:
    exactly for spheres; for primitives the samples' distance, an upper
    bound, must already reach the margin);
  - min_distance is the distance here (spheres: within 1e-6; primitives:
    never above the sampled distance, ikd's spheres covering them);
  - an answer that is not clear is never a success: no_ik_solution, code
    -31, reason in_collision, and closest names the pair.
Cases (IKD_COLLIDE_CASES sets how many random ones, 30 by default): the
UR5, the Panda and the iiwa with their sphere models, position and full
pose targets reached by configurations near obstacles of every kind
placed at random (rotated boxes, spheres, capsules); scenes written in
ros, unity and unreal, inline, registered (in another convention than
the request's) and in items of a batch; answers in degrees; the same
arms as joint lists written in each convention and in degrees; the UR5
with box and cylinder primitives at turned origins; targets that cannot
be reached clear (the tip inside a box, the base inside a sphere or
pierced by a capsule); a stream following a joint path past obstacles,
the world moved on the way by a scene message naming a registered
scene; the PR2's two arms as a tree, the arms against each other
included; max_joint_step and max_iterations kept by avoiding solves.
The bad collision members a client can send are refused by
test_collide.py and test_scenes.py.
"""
import json
import math
import os
import random
import sys
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from robot_chain import _axis_angle, _mat_mul, _mat_vec, _rpy, quat_angle  # noqa: E402
from robot_chain import mat_to_quat as mat_quat  # noqa: E402
from test_stream import Daemon, connect, recv, run, send  # noqa: E402

IKD_DATA = os.environ.get("IKD_DATA", "tests/data")
MARGIN = 0.01
TOL = 1e-6
CASES = int(os.environ.get("IKD_COLLIDE_CASES", "30"))


# ---- geometry written for this test -----------------------------------------

def quat_mat(q):
    x, y, z, w = q
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]


def transpose(m):
    return [[m[j][i] for j in range(3)] for i in range(3)]


def add(a, b):
    return [x + y for x, y in zip(a, b)]


def sub(a, b):
    return [x - y for x, y in zip(a, b)]


def segment_point(p, a, b):
    ab = sub(b, a)
    n = sum(x * x for x in ab)
    t = 0.0 if n == 0 else max(0.0, min(1.0, sum(x * y for x, y in zip(sub(p, a), ab)) / n))
    return math.dist(p, [x + t * y for x, y in zip(a, ab)])


def point_sdf(p, ob):
    """Signed distance from point p to an obstacle (ROS frame)."""
    if ob["kind"] == "sphere":
        return math.dist(p, ob["position"]) - ob["radius"]
    if ob["kind"] == "capsule":
        return segment_point(p, ob["from"], ob["to"]) - ob["radius"]
    local = _mat_vec(transpose(quat_mat(ob["orientation"])), sub(p, ob["position"]))
    d = [abs(v) - s / 2 for v, s in zip(local, ob["size"])]
    out = math.sqrt(sum(max(v, 0.0) ** 2 for v in d))
    return out + min(max(d), 0.0)


def random_quat(rng):
    u1, u2, u3 = rng.random(), rng.random(), rng.random()
    a, b = math.sqrt(1 - u1), math.sqrt(u1)
    return [a * math.sin(2 * math.pi * u2), a * math.cos(2 * math.pi * u2),
            b * math.sin(2 * math.pi * u3), b * math.cos(2 * math.pi * u3)]


# Conventions: a caller's point (x, y, z) is, in ROS terms, FROM[frame](p);
# TO[frame] the inverse. Quaternions' vector parts are pseudovectors: under a
# left-handed change (det -1) they turn as minus the point map.
FROM = {"ros": lambda p: list(p), "unity": lambda p: [p[2], -p[0], p[1]],
        "unreal": lambda p: [p[0], -p[1], p[2]]}
TO = {"ros": lambda p: list(p), "unity": lambda p: [-p[1], p[2], p[0]],
      "unreal": lambda p: [p[0], -p[1], p[2]]}


def quat_to(frame, q):
    if frame == "ros":
        return list(q)
    v = [-c for c in TO[frame](q[:3])]
    return v + [q[3]]


def size_to(frame, s):
    if frame == "unity":
        return [s[1], s[2], s[0]]
    return list(s)


def scene_to(frame, obs):
    """The obstacles (ROS frame, this test's dicts) written as a scene in
    `frame`."""
    scene = {"boxes": [], "spheres": [], "capsules": []}
    for ob in obs:
        if ob["kind"] == "box":
            scene["boxes"].append({"name": ob["name"], "size": size_to(frame, ob["size"]),
                                   "position": TO[frame](ob["position"]),
                                   "orientation": quat_to(frame, ob["orientation"])})
        elif ob["kind"] == "sphere":
            scene["spheres"].append({"name": ob["name"], "radius": ob["radius"],
                                     "position": TO[frame](ob["position"])})
        else:
            scene["capsules"].append({"name": ob["name"], "radius": ob["radius"],
                                      "from": TO[frame](ob["from"]), "to": TO[frame](ob["to"])})
    return scene


def mat_rpy(R):
    """roll, pitch, yaw of R = Rz(y) Ry(p) Rx(r) (URDF)."""
    p = -math.asin(max(-1.0, min(1.0, R[2][0])))
    if math.hypot(R[2][1], R[2][2]) < 1e-9:  # pitch +-90 degrees: yaw only
        return [0.0, p, math.atan2(-R[0][1], R[1][1])]
    return [math.atan2(R[2][1], R[2][2]), p, math.atan2(R[1][0], R[0][0])]


def conj(frame, R):
    """Rotation R (ROS) seen in `frame`: M R M^-1, M the point map."""
    M = [[0.0] * 3 for _ in range(3)]
    for i in range(3):
        e = [0.0, 0.0, 0.0]
        e[i] = 1.0
        v = TO[frame](_mat_vec(R, FROM[frame](e)))
        for r in range(3):
            M[r][i] = v[r]
    return M


def joint_list(robot, frame, degrees=False):
    """The robot's chain as a `joints` chain written in `frame` (and in
    degrees), its spheres renamed for the joints and written in `frame`."""
    ang = math.degrees if degrees else (lambda v: v)
    joints = []
    name_of = {robot.base: "base"}
    for J in robot.path:
        j = {"name": J["name"], "type": J["type"],
             "origin": {"xyz": TO[frame](J["xyz"]),
                        "rpy": [ang(v) for v in mat_rpy(conj(frame, J["rot"]))]}}
        if J["type"] != "fixed":
            j["axis"] = quat_to(frame, J["axis"] + [0.0])[:3]  # a pseudovector
            j["limits"] = {"lower": ang(J["lower"]), "upper": ang(J["upper"])}
        joints.append(j)
        name_of[J["child"]] = J["name"]
    spheres = {name_of[ln]: [TO[frame](s[:3]) + [s[3]] for s in lst]
               for ln, lst in robot.spheres.items()}
    chain = {"kind": "joints", "frame": frame, "joints": joints, "collision_spheres": spheres}
    if robot.srdf_off:
        chain["srdf"] = "<robot name='r'>%s</robot>" % "".join(
            "<disable_collisions link1='%s' link2='%s'/>" % tuple(name_of[x] for x in sorted(pair))
            for pair in robot.srdf_off)
    if degrees:
        chain["units"] = "degrees"
    return chain


def box_samples(size, step):
    """Points on the surface of a box of `size` centred at 0, no point of
    the surface farther than step * sqrt(2) / 2 from one."""
    pts = []
    for axis in range(3):
        u, v = [a for a in range(3) if a != axis]
        nu = max(1, math.ceil(size[u] / step))
        nv = max(1, math.ceil(size[v] / step))
        for side in (-0.5, 0.5):
            for i in range(nu + 1):
                for j in range(nv + 1):
                    p = [0.0, 0.0, 0.0]
                    p[axis] = side * size[axis]
                    p[u] = (i / nu - 0.5) * size[u]
                    p[v] = (j / nv - 0.5) * size[v]
                    pts.append(p)
    return pts


def cylinder_samples(radius, length, step):
    pts = []
    na = max(8, math.ceil(2 * math.pi * radius / step))
    nz = max(1, math.ceil(length / step))
    for k in range(nz + 1):
        z = (k / nz - 0.5) * length
        for i in range(na):
            t = 2 * math.pi * i / na
            pts.append([radius * math.cos(t), radius * math.sin(t), z])
    nr = max(1, math.ceil(radius / step))
    for z in (-length / 2, length / 2):
        for k in range(nr):
            rr = radius * k / nr
            for i in range(na):
                t = 2 * math.pi * i / na
                pts.append([rr * math.cos(t), rr * math.sin(t), z])
    return pts


class Robot:
    """A URDF chain with the links that move with it (fixed joints), the
    client's spheres and the URDF's box and cylinder primitives."""

    def __init__(self, urdf_text, base, tip, spheres=None, srdf=None, step=0.01):
        self.text = urdf_text
        root = ET.fromstring(urdf_text)
        joints = {j.find("child").get("link"): j for j in root.findall("joint")}
        self.children = {}
        for j in root.findall("joint"):
            self.children.setdefault(j.find("parent").get("link"), []).append(j)
        tips = tip if isinstance(tip, list) else [tip]
        path, seen = [], set()
        for t in tips:  # a tree: the union of the tips' paths, parents first
            one = []
            link = t
            while link != base:
                one.append(joints[link])
                link = joints[link].find("parent").get("link")
            for j in reversed(one):
                if j.get("name") not in seen:
                    seen.add(j.get("name"))
                    path.append(j)
        self.path = [self._joint(j) for j in path]
        self.movable = [J for J in self.path if J["type"] != "fixed"]
        self.base, self.tip, self.tips = base, tips[0], tips
        self.spheres = spheres or {}
        self.step = step
        # body index of each link: 0 base, k the k-th movable joint's;
        # bparent[k] the body its joint hangs on
        body = {base: 0}
        bparent = {0: -1}
        k = 0
        for J in self.path:
            if J["type"] != "fixed":
                k += 1
                bparent[k] = body[J["parent"]]
                body[J["child"]] = k
            else:
                body[J["child"]] = body[J["parent"]]
        # links hanging on the chain's links by fixed joints only
        self.rigid = []
        for link in list(body):
            stack = [link]
            while stack:
                ln = stack.pop()
                for j in self.children.get(ln, []):
                    J = self._joint(j)
                    if J["type"] == "fixed" and J["child"] not in body:
                        body[J["child"]] = body[ln]
                        self.rigid.append(J)
                        stack.append(J["child"])
        self.body = body
        self.prims = {}
        for ln in root.findall("link"):
            name = ln.get("name")
            if name not in body or name in self.spheres:
                continue
            for c in ln.findall("collision"):
                g = c.find("geometry")[0]
                o = c.find("origin")
                xyz = [float(x) for x in (o.get("xyz", "0 0 0") if o is not None
                                          else "0 0 0").split()]
                rpy = [float(x) for x in (o.get("rpy", "0 0 0") if o is not None
                                          else "0 0 0").split()]
                if g.tag == "box":
                    pts = box_samples([float(x) for x in g.get("size").split()], step)
                elif g.tag == "cylinder":
                    pts = cylinder_samples(float(g.get("radius")), float(g.get("length")), step)
                else:
                    continue
                R = _rpy(*rpy)
                self.prims.setdefault(name, []).append([add(_mat_vec(R, p), xyz) for p in pts])
        self.delta = step * math.sqrt(2) / 2
        off = set()
        if srdf:
            for e in ET.fromstring(srdf).findall("disable_collisions"):
                off.add(frozenset((e.get("link1"), e.get("link2"))))
        names = list(self.spheres)
        self.srdf_off = off
        def near(a, b):  # the same body or adjacent ones
            return a == b or bparent[a] == b or bparent[b] == a
        self.pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
                      if frozenset((a, b)) not in off and not near(body[a], body[b])]
        self.request = {"kind": "urdf", "urdf": urdf_text, "base": base, "tip": tip}
        if spheres:
            self.request["collision_spheres"] = spheres
        if srdf:
            self.request["srdf"] = srdf

    @staticmethod
    def _joint(j):
        o = j.find("origin")
        xyz = [float(x) for x in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()]
        rpy = [float(x) for x in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
        a = j.find("axis")
        lim = j.find("limit")
        return {"name": j.get("name"), "type": j.get("type"), "xyz": xyz, "rot": _rpy(*rpy),
                "axis": [float(x) for x in (a.get("xyz") if a is not None else "1 0 0").split()],
                "lower": float(lim.get("lower", 0)) if lim is not None else 0.0,
                "upper": float(lim.get("upper", 0)) if lim is not None else 0.0,
                "parent": j.find("parent").get("link"), "child": j.find("child").get("link")}

    def frames(self, q):
        out = {self.base: ([0.0, 0.0, 0.0], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])}
        k = 0
        for J in self.path:
            p, R = out[J["parent"]]
            p = add(p, _mat_vec(R, J["xyz"]))
            R = _mat_mul(R, J["rot"])
            if J["type"] in ("revolute", "continuous"):
                R = _mat_mul(R, _axis_angle(J["axis"], q[k]))
                k += 1
            elif J["type"] == "prismatic":
                n = math.sqrt(sum(x * x for x in J["axis"]))
                p = add(p, _mat_vec(R, [c / n * q[k] for c in J["axis"]]))
                k += 1
            out[J["child"]] = (p, R)
        for J in self.rigid:
            pp, PR = out[J["parent"]]
            out[J["child"]] = (add(pp, _mat_vec(PR, J["xyz"])), _mat_mul(PR, J["rot"]))
        return out

    def tip_pose(self, q):
        return self.frames(q)[self.tip]

    def within_limits(self, q, eps=1e-9):
        return all(J["type"] == "continuous" or J["lower"] - eps <= v <= J["upper"] + eps
                   for J, v in zip(self.movable, q))

    def placed(self, q):
        f = self.frames(q)
        sph = []
        for link, lst in self.spheres.items():
            p, R = f[link]
            for x, y, z, r in lst:
                sph.append((link, add(p, _mat_vec(R, [x, y, z])), r))
        prim = []
        for link, lst in self.prims.items():
            p, R = f[link]
            for pts in lst:
                prim.append((link, [add(p, _mat_vec(R, v)) for v in pts]))
        return sph, prim

    def distances(self, q, obs, placed=None):
        """(obstacle distance upper bound, its lower bound, the pair,
        self distance): exact where the robot is spheres."""
        sph, prim = placed or self.placed(q)
        hi, lo, pair = math.inf, math.inf, None
        for ob in obs:
            for link, c, r in sph:
                d = point_sdf(c, ob) - r
                if d < hi:
                    hi, pair = d, (link, ob["name"])
                lo = min(lo, d)
            for link, pts in prim:
                d = min(point_sdf(v, ob) for v in pts)
                if d < hi:
                    hi, pair = d, (link, ob["name"])
                lo = min(lo, d - self.delta)
        by = {}
        for link, c, r in sph:
            by.setdefault(link, []).append((c, r))
        s = math.inf
        for a, b in self.pairs:
            for ca, ra in by.get(a, []):
                for cb, rb in by.get(b, []):
                    s = min(s, math.dist(ca, cb) - ra - rb)
        return hi, lo, pair, s


def load_model(name):
    with open(os.path.join(IKD_DATA, "collision", name + ".json")) as f:
        m = json.load(f)
    with open(os.path.join(IKD_DATA, "robots", m["robot"])) as f:
        text = f.read()
    srdf = None
    p = os.path.join(IKD_DATA, "collision", name + ".srdf")
    if os.path.exists(p):
        with open(p) as f:
            srdf = f.read()
    return Robot(text, m["base"], m["tip"], m["collision_spheres"], srdf)


def random_obstacles(rng, robot, q, near, count=3):
    """Obstacles of every kind placed 0-6 cm from random points of the
    arm at q (never the base's), each clear of the arm at q by `near`."""
    sph, prim = robot.placed(q)
    pts = [(ln, c, r) for ln, c, r in sph if robot.body[ln] >= 2]
    pts += [(ln, v, 0.0) for ln, vs in prim if robot.body[ln] >= 2 for v in vs[::7]]
    obs = []
    tries = 0
    while len(obs) < count and tries < 200:
        tries += 1
        _, c, r = rng.choice(pts)
        kind = ("box", "sphere", "capsule")[len(obs) % 3]
        dirn = [rng.gauss(0, 1) for _ in range(3)]
        n = math.sqrt(sum(x * x for x in dirn))
        gap = r + rng.uniform(0.0, 0.06)
        name = "%s%d" % (kind, len(obs))
        if kind == "box":
            size = [rng.uniform(0.02, 0.2) for _ in range(3)]
            quat = random_quat(rng)
            centre = [a + (gap + 0.5 * min(size)) * b / n for a, b in zip(c, dirn)]
            ob = {"kind": "box", "name": name, "size": size, "position": centre,
                  "orientation": quat}
        elif kind == "sphere":
            rad = rng.uniform(0.01, 0.08)
            centre = [a + (gap + rad) * b / n for a, b in zip(c, dirn)]
            ob = {"kind": "sphere", "name": name, "radius": rad, "position": centre}
        else:
            rad = rng.uniform(0.005, 0.04)
            centre = [a + (gap + rad) * b / n for a, b in zip(c, dirn)]
            along = [rng.gauss(0, 1) for _ in range(3)]
            half = rng.uniform(0.0, 0.15)
            m = math.sqrt(sum(x * x for x in along))
            ob = {"kind": "capsule", "name": name, "radius": rad,
                  "from": [a - half * b / m for a, b in zip(centre, along)],
                  "to": [a + half * b / m for a, b in zip(centre, along)]}
        hi, _, _, _ = robot.distances(q, [ob], (sph, prim))
        if hi >= near:
            obs.append(ob)
    return obs


# ---- the review ----------------------------------------------------------------

class Review(unittest.TestCase):
    stats = {}

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()
        for k, v in sorted(cls.stats.items()):
            sys.stderr.write("collide_fk %s: %s\n" % (k, v))

    def note(self, key, value, worst=max):
        old = self.stats.get(key)
        self.stats[key] = value if old is None else worst(old, value)

    def count(self, key):
        self.stats[key] = self.stats.get(key, 0) + 1

    def register(self, robot):
        st, text = self.d.http("POST", "/v1/chains", robot.request)
        self.assertIn(st, (200, 201), text)
        return json.loads(text)["id"]

    def register_request(self, request):
        st, text = self.d.http("POST", "/v1/chains", request)
        self.assertIn(st, (200, 201), text)
        return json.loads(text)["id"]

    def post(self, req):
        st, text = self.d.http("POST", "/v1/solve", req)
        self.assertEqual(st, 200, text)
        return json.loads(text)

    def check(self, robot, a, target_ros, obs, avoid, frame="ros", degrees=False, what="",
              rot=None):
        """Checks one answer; returns whether it succeeded."""
        q = a["joints"]
        if degrees:
            q = [math.radians(v) for v in q]
        self.assertTrue(robot.within_limits(q), (what, a))
        hi, lo, pair, s = robot.distances(q, obs)
        dist_hi = min(hi, s)
        exact = not robot.prims
        md = a.get("min_distance")
        self.assertIsNotNone(md, (what, a))
        self.count("answers")
        if exact:
            self.assertAlmostEqual(md, dist_hi, delta=TOL, msg=(what, a, pair, hi, s))
            self.note("max |min_distance - geometry| (spheres)", abs(md - dist_hi))
        else:
            # ikd's spheres cover the primitives: never farther than they
            self.assertLessEqual(md, dist_hi + TOL, (what, a, pair, hi, s))
            self.note("max (primitives' sampled distance - min_distance)", dist_hi - md)
        clear = md >= (MARGIN if avoid else 0.0)
        if a["status"] == "success":
            p, _ = robot.tip_pose(q)
            err = math.dist(p, target_ros)
            self.assertLess(err, 1e-4, (what, a))
            self.note("max tip error of successes", err)
            if rot is not None:
                ang = quat_angle(mat_quat(robot.tip_pose(q)[1]), mat_quat(rot))
                self.assertLess(ang, 1e-4, (what, a))
                self.note("max tip angle error of full-pose successes", ang)
            if avoid:
                self.count("clear successes")
                self.assertGreaterEqual(dist_hi, MARGIN - TOL, (what, a, pair, hi, s))
                self.note("min geometry distance of an avoid success", dist_hi, min)
        elif a["status"] == "no_ik_solution" and a.get("reason") == "in_collision":
            self.count("in_collision answers")
            self.assertEqual(a["code"], -31, a)
            self.assertFalse(clear, a)
        if not clear:
            self.assertIn("closest", a, (what, a))
            self.assertAlmostEqual(a["closest"]["distance"], md, delta=1e-12)
        return a["status"] == "success"

    def review(self, robot, rng, cases, frames=("ros", "unity", "unreal"), by_id=False,
               degrees=False, request=None):
        cid = self.register(robot) if request is None else self.register_request(request)
        collided = 0
        for i in range(cases):
            frame = frames[i % len(frames)]
            q = [rng.uniform(J["lower"], J["upper"]) for J in robot.movable]
            _, _, _, s = robot.distances(q, [])
            if s < 0.01:
                continue
            obs = random_obstacles(rng, robot, q, 0.02)
            if not obs:
                continue
            p, rot = robot.tip_pose(q)
            if i % 2 == 0:
                rot = None
            scene = scene_to(frame, obs)
            opts = {"frame": frame, "timeout_ms": 0, "max_iterations": 3000}
            if degrees:
                opts["units"] = "degrees"
            target = {"position": TO[frame](p)}
            if rot is not None:
                target["orientation"] = quat_to(frame, mat_quat(rot))
            req = {"chain_id": cid, "target": target, "options": opts}
            if by_id:  # registered in another convention than the request's
                other = frames[(i + 1) % len(frames)]
                body = dict(scene_to(other, obs), frame=other)
                st, text = self.d.http("POST", "/v1/scenes", body)
                self.assertIn(st, (200, 201), text)
                req["scene_id"] = json.loads(text)["id"]
            else:
                req["scene"] = scene
            what = "%s case %d frame %s" % (robot.tip, i, frame)
            avoid = dict(req, options=dict(opts, avoid_collisions=True, collision_margin=MARGIN))
            if i % 4 == 3:  # both as items of one batch
                st, text = self.d.http("POST", "/v1/solve/batch", {"items": [req, avoid]})
                self.assertEqual(st, 200, text)
                plain, clear = json.loads(text)["results"]
                self.count("batch items")
            else:
                plain, clear = self.post(req), self.post(avoid)
            self.check(robot, plain, p, obs, False, frame, degrees, what, rot)
            collided += plain["min_distance"] < 0
            if plain["min_distance"] < 0:
                self.count("plain answers in collision")
            self.check(robot, clear, p, obs, True, frame, degrees, what + " avoid", rot)
        return collided

    def test_sphere_models(self):
        rng = random.Random(9)
        for name in ("ur5", "franka_panda", "kuka_iiwa14_r820"):
            robot = load_model(name)
            self.review(robot, rng, CASES)

    def test_degrees_and_registered_scenes(self):
        rng = random.Random(10)
        robot = load_model("kuka_iiwa14_r820")
        self.review(robot, rng, CASES // 2, by_id=True, degrees=True)

    def test_joint_lists_in_every_convention(self):
        """The UR5 and the iiwa as joint lists written in ros, unity and
        unreal (and in degrees), spheres in the chain's convention, scenes
        in the request's: the geometry here is the ROS URDF's."""
        rng = random.Random(11)
        for name in ("ur5", "kuka_iiwa14_r820"):
            robot = load_model(name)
            robot.prims, robot.rigid = {}, []
            for cf in ("ros", "unity", "unreal"):
                for deg in (False, True):
                    req = joint_list(robot, cf, deg)
                    self.review(robot, rng, max(4, CASES // 6), request=req)

    def test_urdf_primitives(self):
        """The UR5 with its collision meshes replaced by boxes and
        cylinders at turned origins (no client spheres): ikd covers them
        with spheres, so its min_distance may be below the primitives'
        but never above, and a clear success is clear of the primitives."""
        rng = random.Random(12)
        with open(os.path.join(IKD_DATA, "robots", "ur5.urdf")) as f:
            root = ET.fromstring(f.read())
        for k, c in enumerate(root.iter("collision")):
            g = c.find("geometry")
            if g.find("mesh") is None:
                continue
            g.remove(g.find("mesh"))
            if k % 2:
                ET.SubElement(g, "cylinder", radius="%.4f" % rng.uniform(0.02, 0.05),
                              length="%.4f" % rng.uniform(0.03, 0.12))
            else:
                ET.SubElement(g, "box", size="%.4f %.4f %.4f" % tuple(
                    rng.uniform(0.02, 0.08) for _ in range(3)))
            o = c.find("origin")
            if o is None:
                o = ET.SubElement(c, "origin")
            o.set("rpy", "%.4f %.4f %.4f" % tuple(rng.uniform(-3, 3) for _ in range(3)))
            o.set("xyz", "%.4f %.4f %.4f" % tuple(rng.uniform(-0.02, 0.02) for _ in range(3)))
        text = ET.tostring(root, encoding="unicode")
        links = [ln.get("name") for ln in root.findall("link")]
        # no self pairs: min_distance is then the obstacles' alone
        srdf = "<robot name='ur5'>%s</robot>" % "".join(
            "<disable_collisions link1='%s' link2='%s'/>" % (a, b)
            for i, a in enumerate(links) for b in links[i + 1:])
        robot = Robot(text, "base_link", "tool0", srdf=srdf, step=0.008)
        self.assertTrue(robot.prims)
        self.review(robot, rng, max(6, CASES // 3))

    def test_unavoidable_is_honest(self):
        """Targets that cannot be reached clear: the tip inside a rotated
        box, the base swallowed by a sphere, a small sphere inside one of
        the base's own spheres; never a success, always code -31 with the
        closest pair, in every convention."""
        rng = random.Random(13)
        for name in ("ur5", "franka_panda", "kuka_iiwa14_r820"):
            robot = load_model(name)
            cid = self.register(robot)
            for i in range(6):
                frame = ("ros", "unity", "unreal")[i % 3]
                q = [rng.uniform(J["lower"], J["upper"]) for J in robot.movable]
                p, _ = robot.tip_pose(q)
                sph, _ = robot.placed(q)
                mid = rng.choice([c for ln, c, r in sph if robot.body[ln] == 0])
                obs = [
                    [{"kind": "box", "name": "around_tip", "size": [0.3, 0.25, 0.35],
                      "position": p, "orientation": random_quat(rng)}],
                    [{"kind": "sphere", "name": "ball", "radius": 0.3, "position": [0, 0, 0]}],
                    [{"kind": "capsule", "name": "pin", "radius": 0.001,
                      "from": mid, "to": [x + 0.002 for x in mid]}],
                ][i % 3]
                req = {"chain_id": cid, "target": {"position": TO[frame](p)},
                       "scene": scene_to(frame, obs),
                       "options": {"frame": frame, "timeout_ms": 0, "max_iterations": 400,
                                   "avoid_collisions": True, "collision_margin": MARGIN}}
                a = self.post(req)
                self.check(robot, a, p, obs, True, frame, False, "%s unavoidable %d" % (name, i))
                self.assertEqual(a["status"], "no_ik_solution", a)
                self.assertEqual(a["reason"], "in_collision", a)
                self.assertEqual(a["closest"]["obstacle"], obs[0]["name"], a)

    def test_stream_with_a_scene(self):
        """A controller's stream: full poses along a smooth joint path
        near obstacles (the arm's path clear of them by 2 cm, of itself by
        the margin), the scene sent at
        open in the stream's convention, then moved by a scene message.
        Every answer checked as above; consecutive answers never jump:
        max_joint_step is the step here, and at most a few times the
        path's own step."""
        rng = random.Random(14)
        for name, frame in (("kuka_iiwa14_r820", "unity"), ("ur5", "unreal"),
                            ("franka_panda", "ros")):
            robot = load_model(name)
            cid = self.register(robot)
            while True:
                q0 = [rng.uniform(0.6 * J["lower"], 0.6 * J["upper"]) for J in robot.movable]
                q1 = [v + rng.uniform(-0.4, 0.4) for v in q0]
                steps = 40
                path = [[a + (b - a) * k / steps for a, b in zip(q0, q1)] for k in range(steps + 1)]
                if not all(robot.within_limits(q) for q in path):
                    continue
                if min(robot.distances(q, [])[3] for q in path) < MARGIN + 0.002:
                    continue
                obs = random_obstacles(rng, robot, q0, 0.03)
                if min(robot.distances(q, obs)[0] for q in path) >= 0.02:
                    break
            path_step = max(abs(a - b) for a, b in zip(path[0], path[1]))

            async def go():
                ws = await connect(self.d)
                await send(ws, {"type": "open", "stream": "s", "chain_id": cid,
                                "seed": path[0], "scene": scene_to(frame, obs),
                                "options": {"frame": frame, "avoid_collisions": True,
                                            "collision_margin": MARGIN, "timeout_ms": 0,
                                            "max_iterations": 3000}})
                m = await recv(ws)
                self.assertEqual(m["type"], "opened", m)
                prev = path[0]
                for k, q in enumerate(path[1:], 1):
                    if k == steps // 2:  # the world moves: the obstacles 1 cm nearer the base
                        moved = [dict(o) for o in obs]
                        for o in moved:
                            for key in ("position", "from", "to"):
                                if key in o:
                                    o[key] = [v * 0.99 for v in o[key]]
                        # registered in another convention, sent by id
                        other = "ros" if frame != "ros" else "unity"
                        st, text = self.d.http("POST", "/v1/scenes",
                                               dict(scene_to(other, moved), frame=other))
                        self.assertIn(st, (200, 201), text)
                        await send(ws, {"type": "scene", "stream": "s",
                                        "scene_id": json.loads(text)["id"]})
                    world = obs if k < steps // 2 else moved
                    p, rot = robot.tip_pose(q)
                    await send(ws, {"type": "target", "stream": "s", "seq": k,
                                    "target": {"position": TO[frame](p),
                                               "orientation": quat_to(frame, mat_quat(rot))}})
                    m = await recv(ws)
                    self.assertEqual(m["type"], "solution", m)
                    a = m["result"]
                    what = "%s stream step %d" % (name, k)
                    self.check(robot, a, p, world, True, frame, False, what, rot)
                    step = max(abs(x - y) for x, y in zip(a["joints"], prev))
                    self.assertAlmostEqual(a["max_joint_step"], step, delta=1e-9, msg=what)
                    self.note("max stream step / path step", step / path_step)
                    if a["status"] == "success":
                        self.assertLess(step, 5 * path_step + 0.02, (what, a))
                        prev = a["joints"]
                await ws.close()
            run(go())

    def test_tree_of_two_arms(self):
        """The PR2's two arms as a tree, spheres on the torso and on every
        arm link (the grippers' accelerometer boxes overridden by points):
        min_distance is the distance here, the arms against each other
        included; a clear success is clear; each tip on its target."""
        rng = random.Random(15)
        with open(os.path.join(IKD_DATA, "robots", "pr2.urdf")) as f:
            text = f.read()
        tips = ["l_wrist_roll_link", "r_wrist_roll_link"]
        spheres = {"torso_lift_link": [[-0.1, 0.0, -0.15, 0.15]]}
        for side in "lr":
            spheres.update({
                side + "_shoulder_pan_link": [[0.0, 0.0, 0.0, 0.1]],
                side + "_upper_arm_link": [[0.1, 0.0, 0.0, 0.07], [0.25, 0.0, 0.0, 0.07]],
                side + "_elbow_flex_link": [[0.0, 0.0, 0.0, 0.06]],
                side + "_forearm_link": [[0.1, 0.0, 0.0, 0.06], [0.25, 0.0, 0.0, 0.05]],
                side + "_wrist_flex_link": [[0.0, 0.0, 0.0, 0.04]],
                side + "_gripper_palm_link": [[0.08, 0.0, 0.0, 0.05]],
                side + "_gripper_motor_accelerometer_link": [[0.0, 0.0, 0.0, 0.0]]})
        robot = Robot(text, "torso_lift_link", tips, spheres)
        self.assertFalse(robot.prims)
        req = dict(robot.request, kind="tree", tips=tips)
        del req["tip"]
        st, text = self.d.http("POST", "/v1/chains", req)
        self.assertIn(st, (200, 201), text)
        desc = json.loads(text)
        order = [J["name"] for J in robot.movable]
        cross = 0
        done = 0
        for i in range(1000):
            if done == max(6, CASES // 2):
                break
            q = [rng.uniform(-math.pi, math.pi) if J["type"] == "continuous"
                 else rng.uniform(J["lower"], J["upper"]) for J in robot.movable]
            if robot.distances(q, [])[3] < MARGIN + 0.002:
                continue
            done += 1
            obs = random_obstacles(rng, robot, q, 0.02)
            f = robot.frames(q)
            target = {"tips": {t: {"position": f[t][0]} for t in tips}}
            if i % 2:
                for t in tips:
                    target["tips"][t]["orientation"] = mat_quat(f[t][1])
            for avoid in (False, True):
                opts = {"timeout_ms": 0, "max_iterations": 5000}
                if avoid:
                    opts.update(avoid_collisions=True, collision_margin=MARGIN)
                a = self.post({"chain_id": desc["id"], "target": target,
                               "scene": scene_to("ros", obs), "options": opts})
                what = "tree case %d avoid %s" % (i, avoid)
                by_name = dict(zip(a["joint_names"], a["joints"]))
                qa = [by_name[n] for n in order]
                self.assertTrue(robot.within_limits(qa), (what, a))
                hi, _, pair, s = robot.distances(qa, obs)
                self.assertAlmostEqual(a["min_distance"], min(hi, s), delta=TOL,
                                       msg=(what, a, pair, hi, s))
                self.note("max |min_distance - geometry| (tree)",
                          abs(a["min_distance"] - min(hi, s)))
                self.count("tree answers")
                cross += s < hi
                fa = robot.frames(qa)
                if a["status"] == "success":
                    for t in tips:
                        self.assertLess(math.dist(fa[t][0], target["tips"][t]["position"]), 1e-4)
                    if avoid:
                        self.assertGreaterEqual(min(hi, s), MARGIN - TOL, (what, a))
                        self.count("tree clear successes")
                else:
                    self.assertNotEqual(a["code"], 1, a)
                if a["min_distance"] < (MARGIN if avoid else 0.0):
                    self.assertIn("closest", a, (what, a))
        self.note("tree answers nearest themselves", cross)

    def test_no_answer_past_the_step(self):
        """options.max_joint_step bounds every answer's motion from the
        seed, the clearest colliding pose included: with an obstacle on
        the forearm at the seed, the numeric solver's answers (as the
        closed form's) never move a joint farther than the step, and a
        success is clear. (The numeric solver answered in_collision with
        its clearest pose up to 3.9 rad away, past a 0.2 step.)"""
        rng = random.Random(16)
        step = 0.2
        for name, link in (("ur5", "forearm_link"), ("kuka_iiwa14_r820", "link_4")):
            robot = load_model(name)
            cid = self.register(robot)
            for i in range(12):
                q = [rng.uniform(0.6 * J["lower"], 0.6 * J["upper"]) for J in robot.movable]
                if robot.distances(q, [])[3] < MARGIN + 0.002:
                    continue
                p, rot = robot.tip_pose(q)
                sph, _ = robot.placed(q)
                c = [c for ln, c, r in sph if ln == link][0]
                obs = [{"kind": "sphere", "name": "ball", "radius": 0.04, "position": c}]
                for solver in ("numeric", "auto"):
                    a = self.post({"chain_id": cid, "seed": q, "scene": scene_to("ros", obs),
                                   "target": {"position": p, "orientation": mat_quat(rot)},
                                   "options": {"solver": solver, "avoid_collisions": True,
                                               "collision_margin": MARGIN, "max_joint_step": step,
                                               "timeout_ms": 0, "max_iterations": 2000}})
                    what = "%s %s case %d" % (name, solver, i)
                    moved = max(abs(x - y) for x, y in zip(a["joints"], q))
                    self.assertLessEqual(moved, step + 1e-9, (what, a))
                    self.check(robot, a, p, obs, True, "ros", False, what, rot)
                    self.count("step-bounded answers " + a.get("reason", "?"))

    def test_iteration_budget_kept(self):
        """max_iterations bounds a collision-avoiding solve as any other:
        answers near crowded obstacles never report more iterations than
        asked. (The repair's halvings and projections evaluated past the
        budget: up to 23 iterations beyond it, 73 for 50.)"""
        rng = random.Random(17)
        for name in ("ur5", "franka_panda", "kuka_iiwa14_r820"):
            robot = load_model(name)
            cid = self.register(robot)
            for i in range(max(6, CASES // 2)):
                q = [rng.uniform(J["lower"], J["upper"]) for J in robot.movable]
                obs = random_obstacles(rng, robot, q, 0.0, count=6)
                p, _ = robot.tip_pose(q)
                for budget in (50, 300):
                    a = self.post({"chain_id": cid, "target": {"position": p},
                                   "scene": scene_to("ros", obs),
                                   "options": {"avoid_collisions": True, "collision_margin": 0.03,
                                               "timeout_ms": 0, "max_iterations": budget}})
                    self.assertLessEqual(a["iterations"], budget, (name, i, a))
                    self.note("max iterations of a budget-limited avoid solve / budget",
                              a["iterations"] / budget)


if __name__ == "__main__":
    unittest.main()

"""
test_collide.py: collision-aware IK on the real daemon ($IKD_BIN on
127.0.0.1 port 0), over HTTP and WebSocket (proto/README.md "Collisions",
proto/STREAM.md "Scenes").

The robot is the KUKA iiwa of tests/data/robots with our sphere model and
SRDF (tests/data/collision), beside a pillar, a plank and a shelf. Every
answer is checked here with geometry written for this test, independently
of ikd's solver/ik_collide.c: each link's frame by forward kinematics from
the URDF (robot_chain.py), each sphere placed in it, its signed distance to
each box (the point-to-box distance in the box's frame) and to the spheres
of the links the SRDF and adjacency leave checked. Covered:
  - POST /v1/chains with collision_spheres and srdf: the description says
    which links are modelled and how; the same URDF without spheres says
    its links are unmodelled (meshes only);
  - targets reached by a configuration clear of everything by 1-8 cm,
    near an obstacle (sampled here): without avoid_collisions some answers
    collide (the test can fail: today's answers would), with it every
    success is clear by the margin by the geometry here, and min_distance
    is the distance computed here;
  - a batch of the same targets with the scene;
  - a tool inside the pillar: no_ik_solution, code -31, cause
    in_collision, closest naming the link and the pillar;
  - a stream with a scene at open, then a scene message moving the pillar
    onto the arm: the next answers are clear of the moved pillar;
  - rejections with their paths and codes: a negative radius, an unknown
    link, a bad SRDF, a zero-size box, too many obstacles, avoid_collisions
    on a chain without geometry;
  - the same arm written as a `joints` chain (its links named "base" and
    by the joints that move them, the spheres and SRDF renamed so): plain
    answers collide for some targets, avoid_collisions answers are clear by
    the margin, min_distance is the geometry's here, closest names the
    joint list's links, and a URDF link name is refused with its path.
Budgets are in iterations where a count matters (timeout_ms 0).
"""
import asyncio
import json
import math
import os
import random
import sys
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from robot_chain import Chain, _axis_angle, _mat_mul, _mat_vec  # noqa: E402
from test_stream import Daemon, RawWS, connect, frame, recv, run, send  # noqa: E402

IKD_DATA = os.environ.get("IKD_DATA", "tests/data")
URDF = os.path.join(IKD_DATA, "robots", "kuka_iiwa14_r820.urdf")
MODEL = os.path.join(IKD_DATA, "collision", "kuka_iiwa14_r820.json")
SRDF = os.path.join(IKD_DATA, "collision", "kuka_iiwa14_r820.srdf")
MARGIN = 0.005
TOL = 1e-6


# ---- geometry written for this test -----------------------------------------

def quat_mat(q):
    x, y, z, w = q
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]


def transpose(m):
    return [[m[j][i] for j in range(3)] for i in range(3)]


def link_frames(chain, q):
    """{link name: (p, R)} of the base link and every joint's child link."""
    R = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    p = [0.0, 0.0, 0.0]
    frames = {chain.base: (p, R)}
    k = 0
    for J in chain.joints:
        p = [a + b for a, b in zip(p, _mat_vec(R, J.xyz))]
        R = _mat_mul(R, J.rot)
        if J.type in ("revolute", "continuous"):
            R = _mat_mul(R, _axis_angle(J.axis, q[k]))
            k += 1
        frames[J.child] = (p, R)
    return frames


def placed_spheres(chain, spheres, q):
    """[(link, centre, radius)] in the base frame."""
    out = []
    frames = link_frames(chain, q)
    for link, lst in spheres.items():
        p, R = frames[link]
        for x, y, z, r in lst:
            c = [a + b for a, b in zip(p, _mat_vec(R, [x, y, z]))]
            out.append((link, c, r))
    return out


def box_distance(c, r, box):
    """Signed distance from sphere (c, r) to a box dict."""
    Rt = transpose(quat_mat(box.get("orientation", [0, 0, 0, 1])))
    local = _mat_vec(Rt, [a - b for a, b in zip(c, box["position"])])
    half = [s / 2 for s in box["size"]]
    out = [max(abs(v) - h, 0.0) for v, h in zip(local, half)]
    n = math.sqrt(sum(v * v for v in out))
    if n > 0:
        return n - r
    return max(abs(v) - h for v, h in zip(local, half)) - r  # inside: minus the depth


def obstacle_distance(placed, scene):
    best = (math.inf, None, None)
    for link, c, r in placed:
        for box in scene.get("boxes", []):
            d = box_distance(c, r, box)
            if d < best[0]:
                best = (d, link, box.get("name"))
    return best


def checked_pairs(links, body, srdf_text):
    """The pairs MoveIt checks: not on the same or adjacent bodies (links
    joined by fixed joints move as one body), not disabled by the SRDF."""
    off = set()
    for e in ET.fromstring(srdf_text).findall("disable_collisions"):
        off.add(frozenset((e.get("link1"), e.get("link2"))))
    return [(a, b) for i, a in enumerate(links) for b in links[i + 1:]
            if frozenset((a, b)) not in off and abs(body[a] - body[b]) > 1]


def self_distance(placed, pairs):
    best = math.inf
    by = {}
    for link, c, r in placed:
        by.setdefault(link, []).append((c, r))
    for a, b in pairs:
        for ca, ra in by.get(a, []):
            for cb, rb in by.get(b, []):
                best = min(best, math.dist(ca, cb) - ra - rb)
    return best


# ---- the robot and the scene --------------------------------------------------

class Robot:
    def __init__(self, urdf=URDF, model=MODEL, srdf=SRDF):
        self.chain = Chain(urdf, "base_link", "tool0")
        root = ET.fromstring(self.chain.text)
        child = {j.get("name"): j.find("child").get("link") for j in root.findall("joint")}
        for J in self.chain.joints:
            J.child = child[J.name]
        with open(model) as f:
            model = json.load(f)
        self.srdf = '<robot name="none"/>'
        if srdf:
            with open(srdf) as f:
                self.srdf = f.read()
        self.spheres = model["collision_spheres"]
        self.scene = model["scene"]
        body, k = {self.chain.base: 0}, 0
        for J in self.chain.joints:
            k += J.type != "fixed"
            body[J.child] = k
        self.pairs = checked_pairs(list(self.spheres), body, self.srdf)
        self.request = dict(self.chain.request(), collision_spheres=self.spheres)
        if srdf:
            self.request["srdf"] = self.srdf

    def distances(self, q, scene=None):
        placed = placed_spheres(self.chain, self.spheres, q)
        d_obs = obstacle_distance(placed, self.scene if scene is None else scene)
        return d_obs, self_distance(placed, self.pairs)

    def targets(self, count, rng):
        """Full poses reached by configurations clear by 1-8 cm, near an
        obstacle, with the configurations."""
        out = []
        while len(out) < count:
            q = [rng.uniform(J.lower, J.upper) for J in self.chain.movable]
            (d, _, _), s = self.distances(q)
            if 0.01 <= d <= 0.08 and s >= 0.01:
                p, o = self.chain.fk(q)
                out.append(({"position": p, "orientation": o}, q))
        return out


ROBOT = Robot()


class CollideTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        st, text = cls.d.http("POST", "/v1/chains", ROBOT.request)
        assert st in (200, 201), (st, text)
        cls.desc = json.loads(text)
        cls.rng = random.Random(21)
        cls.targets = ROBOT.targets(40, cls.rng)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def solve(self, target, options, scene=None):
        req = {"chain_id": self.desc["id"], "target": target, "options": options}
        if scene is not False:
            req["scene"] = ROBOT.scene if scene is None else scene
        st, text = self.d.http("POST", "/v1/solve", req)
        self.assertEqual(st, 200, text)
        return json.loads(text)

    def check_answer(self, a, target, avoid):
        """The answer on target, its min_distance the geometry's here, and
        with avoid a success clear by the margin."""
        q = a["joints"]
        (d, _, _), s = ROBOT.distances(q)
        self.assertAlmostEqual(a["min_distance"], min(d, s), delta=TOL)
        if a["status"] == "success":
            p, _ = ROBOT.chain.fk(q)
            self.assertLess(math.dist(p, target["position"]), 1e-4)
            self.assertTrue(ROBOT.chain.within_limits(q))
            if avoid:
                self.assertGreaterEqual(min(d, s), MARGIN - TOL, a)
        if min(d, s) < (MARGIN if avoid else 0.0) - TOL:
            self.assertIn("closest", a)
        return min(d, s)

    def test_description(self):
        c = self.desc["collision"]
        self.assertEqual(c["spheres"], sum(len(v) for v in ROBOT.spheres.values()))
        states = {k["name"]: k["state"] for k in c["links"]}
        for link in ROBOT.spheres:
            self.assertEqual(states[link], "spheres")
        st, text = self.d.http("GET", "/v1/chains/" + self.desc["id"])
        self.assertEqual(st, 200)
        self.assertEqual(json.loads(text)["collision"], c)
        # the URDF alone: its links have meshes only, reported unmodelled
        st, text = self.d.http("POST", "/v1/chains", ROBOT.chain.request())
        self.assertIn(st, (200, 201), text)
        plain = json.loads(text)["collision"]
        self.assertEqual(plain["spheres"], 0)
        self.assertIn("link_4", plain["unmodelled"])
        # and refuses what needs geometry
        st, text = self.d.http("POST", "/v1/solve", {"chain": ROBOT.chain.request(),
                                                     "target": self.targets[0][0],
                                                     "options": {"avoid_collisions": True}})
        self.assertEqual(st, 422, text)
        self.assertEqual(json.loads(text)["error"]["path"], "/options/avoid_collisions")

    def test_links_off_the_chain_are_counted_not_kept(self):
        """A URDF with 10,000 more links off the chain: the description
        counts them (off_chain) and the chain's memory grows with the text
        it keeps, not per link (88 bytes each were kept before: +880 kB)."""
        pad = "".join('<link name="pad%d"/>\n' % i for i in range(10000))
        sizes = []
        for text in (ROBOT.chain.text, ROBOT.chain.text.replace("</robot>", pad + "</robot>")):
            st, body = self.d.http("POST", "/v1/chains", dict(ROBOT.request, urdf=text))
            self.assertIn(st, (200, 201), body)
            desc = json.loads(body)
            sizes.append((len(text), desc["memory_bytes"], desc["collision"]["off_chain"]))
        (n0, m0, off0), (n1, m1, off1) = sizes
        self.assertEqual(off1 - off0, 10000)
        self.assertLess(m1 - m0, 2 * (n1 - n0) + 8 * 10000, sizes)

    def test_solve_avoids(self):
        plain_hits = 0
        reached = 0
        for target, _ in self.targets:
            a = self.solve(target, {"timeout_ms": 0, "max_iterations": 3000})
            plain_hits += self.check_answer(a, target, False) < 0
            b = self.solve(target, {"timeout_ms": 0, "max_iterations": 10000,
                                    "avoid_collisions": True, "collision_margin": MARGIN})
            self.check_answer(b, target, True)
            reached += b["status"] == "success"
        # the check matters: plain answers collide near these obstacles
        self.assertGreater(plain_hits, 0)
        self.assertGreaterEqual(reached, len(self.targets) - 1)

    def test_batch(self):
        targets = [t for t, _ in self.targets[:20]]
        st, text = self.d.http("POST", "/v1/solve/batch", {
            "chain_id": self.desc["id"], "targets": targets, "scene": ROBOT.scene,
            "options": {"timeout_ms": 0, "max_iterations": 10000, "avoid_collisions": True,
                        "collision_margin": MARGIN}})
        self.assertEqual(st, 200, text)
        res = json.loads(text)["results"]
        self.assertEqual(len(res), len(targets))
        for a, t in zip(res, targets):
            self.check_answer(a, t, True)
        self.assertGreaterEqual(sum(a["status"] == "success" for a in res), len(targets) - 1)

    def test_in_collision(self):
        pillar = ROBOT.scene["boxes"][0]
        a = self.solve({"position": pillar["position"], "orientation": [0, 1, 0, 0]},
                       {"avoid_collisions": True})
        self.assertEqual(a["status"], "no_ik_solution")
        self.assertEqual(a["code"], -31)
        self.assertEqual(a["cause"], "in_collision")
        self.assertEqual(a["closest"]["obstacle"], "pillar")
        self.assertIn(a["closest"]["link"], ROBOT.spheres)
        self.assertLess(a["closest"]["distance"], 0)
        self.assertAlmostEqual(a["min_distance"], a["closest"]["distance"], delta=TOL)
        (d, link, name), _ = ROBOT.distances(a["joints"])
        self.assertLess(d, 0)
        # an unnamed obstacle is named by its list and index
        scene = {"boxes": [dict((k, v) for k, v in pillar.items() if k != "name")]}
        a = self.solve({"position": pillar["position"], "orientation": [0, 1, 0, 0]},
                       {"avoid_collisions": True}, scene)
        self.assertEqual(a["closest"]["obstacle"], "boxes/0")

    def test_stream_scene(self):
        async def go():
            ws = await connect(self.d)
            target, q0 = self.targets[0]
            await send(ws, {"type": "open", "stream": "c", "chain_id": self.desc["id"],
                            "scene": ROBOT.scene,
                            "options": {"avoid_collisions": True, "collision_margin": MARGIN,
                                        "timeout_ms": 0, "max_iterations": 10000}})
            m = await recv(ws)
            self.assertEqual(m["type"], "opened", m)
            await send(ws, {"type": "target", "stream": "c", "seq": 1, "target": target})
            m = await recv(ws)
            self.assertEqual(m["type"], "solution", m)
            r = m["result"]
            self.check_answer(r, target, True)
            self.assertEqual(r["status"], "success")
            # an obstacle comes onto the arm's elbow
            q1 = r["joints"]
            placed = placed_spheres(ROBOT.chain, ROBOT.spheres, q1)
            elbow = [c for link, c, r in placed if link == "link_4"][0]
            moved = {"boxes": [{"name": "moved", "size": [0.1, 0.1, 0.1],
                                "position": elbow}]}
            await send(ws, {"type": "scene", "stream": "c", "scene": moved})
            await send(ws, {"type": "target", "stream": "c", "seq": 2, "target": target})
            m = await recv(ws)
            self.assertEqual(m["type"], "solution", m)
            self.assertEqual(m["seq"], 2)
            r = m["result"]
            (d, _, _), s = ROBOT.distances(r["joints"], moved)
            self.assertAlmostEqual(r["min_distance"], min(d, s), delta=TOL)
            if r["status"] == "success":
                self.assertGreaterEqual(min(d, s), MARGIN - TOL)
            # the old answer is inside the moved box; the new one is not
            (d_old, _, _), _ = ROBOT.distances(q1, moved)
            self.assertLess(d_old, 0)
            self.assertEqual(r["status"], "success", r)
            # a bad scene is refused with its path, and the stream stays
            await send(ws, {"type": "scene", "stream": "c", "scene": {"spheres": [
                {"radius": -1, "position": [0, 0, 0]}]}})
            m = await recv(ws)
            self.assertEqual(m["type"], "error", m)
            self.assertEqual(m["error"]["path"], "/scene/spheres/0/radius")
            await ws.close()
        run(go())

    def test_scene_after_a_tick(self):
        """A tick, a scene message and a target for one stream in one read:
        the tick's target was sent before the scene, so it is answered in
        the old world (its min_distance is the distance to the old scene);
        the target after it, in the new one. Before, a tick's targets were
        decoded after the whole read, with the new scene (and read it on the
        pool while the loop could replace it)."""
        target, q0 = self.targets[1]
        raw = RawWS(self.d.port)
        raw.send_text(json.dumps({"type": "open", "stream": "c", "chain_id": self.desc["id"],
                                  "scene": ROBOT.scene, "seed": q0,
                                  "options": {"timeout_ms": 0, "max_iterations": 10000}}))
        self.assertEqual(json.loads(raw.recv_frame()[1])["type"], "opened")
        moved = {"boxes": [{"name": "far", "size": [0.1, 0.1, 0.1],
                            "position": [3.0, 0.0, 0.0]}]}
        raw.sock.sendall(b"".join(frame(0x1, json.dumps(m).encode()) for m in (
            {"type": "tick", "seq": 1, "targets": [{"stream": "c", "target": target}]},
            {"type": "scene", "stream": "c", "scene": moved},
            {"type": "target", "stream": "c", "seq": 2, "target": target})))
        tick = json.loads(raw.recv_frame()[1])
        self.assertEqual(tick["type"], "tick_solution", tick)
        r = tick["solutions"][0]["result"]
        (d, _, _), s = ROBOT.distances(r["joints"])
        self.assertAlmostEqual(r["min_distance"], min(d, s), delta=TOL)
        sol = json.loads(raw.recv_frame()[1])
        self.assertEqual((sol["type"], sol["seq"]), ("solution", 2), sol)
        r = sol["result"]
        (d, _, _), s = ROBOT.distances(r["joints"], moved)
        self.assertAlmostEqual(r["min_distance"], min(d, s), delta=TOL)
        raw.sock.close()

    def test_servo_slows_and_stops_short(self):
        """A servo stream swinging the arm about its base toward a box in
        the way: it slows near the box and stops short of it, never closer
        than the margin (by the geometry here); sent back, it moves away at
        full speed."""
        q0 = [0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0]
        q1 = [1.2] + q0[1:]
        mid = [0.6] + q0[1:]
        tool = link_frames(ROBOT.chain, mid)["tool0"][0]
        box = {"name": "box", "size": [0.12, 0.12, 0.12], "position": tool}
        scene = {"boxes": [box]}
        period = 0.01
        margin = 0.01

        async def go():
            ws = await connect(self.d)
            await send(ws, {"type": "open", "stream": "s", "chain_id": self.desc["id"],
                            "seed": q0, "scene": scene,
                            "options": {"servo": {"period_s": period}, "timeout_ms": 0,
                                        "max_iterations": 2000, "avoid_collisions": True,
                                        "collision_margin": margin}})
            m = await recv(ws)
            self.assertEqual(m["type"], "opened", m)
            prev, far_steps, near_steps, seq = q0, [], [], 0
            target, _ = ROBOT.chain.fk(q1)[0], None
            p1, o1 = ROBOT.chain.fk(q1)
            for _ in range(150):
                seq += 1
                await send(ws, {"type": "target", "stream": "s", "seq": seq,
                                "target": {"position": p1, "orientation": o1}})
                m = await recv(ws)
                self.assertEqual(m["type"], "solution", m)
                q = m["result"]["joints"]
                (d, _, _), sd = ROBOT.distances(q, scene)
                self.assertGreaterEqual(min(d, sd), margin - TOL, (seq, q))
                step = max(abs(a - b) for a, b in zip(q, prev))
                d_prev = ROBOT.distances(prev, scene)[0][0]
                (far_steps if d_prev > margin + 0.12 else near_steps).append(step)
                if os.environ.get("COLLIDE_TRACE"):
                    print(seq, m["result"]["status"], round(d, 4), round(step, 5))
                prev = q
            self.assertFalse(m["result"]["arrived"])
            # stopped short: within 2 cm of the margin, no longer moving
            self.assertLess(d, margin + 0.02)
            self.assertLess(near_steps[-1], 1e-3)
            self.assertGreater(max(far_steps), 10 * near_steps[-1])
            # sent back, it moves away from the box at once
            p0, o0 = ROBOT.chain.fk(q0)
            seq += 1
            await send(ws, {"type": "target", "stream": "s", "seq": seq,
                            "target": {"position": p0, "orientation": o0}})
            m = await recv(ws)
            q = m["result"]["joints"]
            self.assertGreater(ROBOT.distances(q, scene)[0][0], d)
            self.assertGreater(max(abs(a - b) for a, b in zip(q, prev)), 10 * near_steps[-1])
            await ws.close()
        run(go())

    def test_servo_slow_distance(self):
        """options.servo.slow_distance: the same swing toward the box with
        0.3 instead of the default 0.1 slows from farther away (steps
        taken 15-25 cm beyond the margin, by the geometry here, are full
        with the default and at most 85% of full with 0.3); 0 is refused
        with its path."""
        q0 = [0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0]
        q1 = [1.2] + q0[1:]
        tool = link_frames(ROBOT.chain, [0.6] + q0[1:])["tool0"][0]
        scene = {"boxes": [{"name": "box", "size": [0.12, 0.12, 0.12], "position": tool}]}
        margin = 0.01
        p1, o1 = ROBOT.chain.fk(q1)

        async def swing(ws, name, servo):
            await send(ws, {"type": "open", "stream": name, "chain_id": self.desc["id"],
                            "seed": q0, "scene": scene,
                            "options": {"servo": servo, "timeout_ms": 0,
                                        "max_iterations": 2000, "avoid_collisions": True,
                                        "collision_margin": margin}})
            m = await recv(ws)
            if m["type"] != "opened":
                return m
            prev, steps = q0, []
            for seq in range(1, 80):
                await send(ws, {"type": "target", "stream": name, "seq": seq,
                                "target": {"position": p1, "orientation": o1}})
                m = await recv(ws)
                self.assertEqual(m["type"], "solution", m)
                q = m["result"]["joints"]
                gap = ROBOT.distances(prev, scene)[0][0] - margin
                steps.append((gap, max(abs(a - b) for a, b in zip(q, prev))))
                prev = q
            return steps

        async def go():
            ws = await connect(self.d)
            plain = await swing(ws, "a", {"period_s": 0.01})
            wide = await swing(ws, "b", {"period_s": 0.01, "slow_distance": 0.3})
            full = max(step for _, step in plain)
            band = [(g, st) for g, st in plain if 0.15 <= g <= 0.25]
            self.assertTrue(band)
            for g, st in band:
                self.assertGreater(st, 0.99 * full, (g, st))
            band = [(g, st) for g, st in wide if 0.15 <= g <= 0.25]
            self.assertTrue(band)
            for g, st in band:
                self.assertLess(st, 0.85 * full, (g, st))
            m = await swing(ws, "c", {"period_s": 0.01, "slow_distance": 0})
            self.assertEqual((m["type"], m["error"]["path"]),
                             ("error", "/options/servo/slow_distance"), m)
            await ws.close()
        run(go())

    def test_tree(self):
        """A PR2 tree of both arms with spheres at the wrists: answers carry
        min_distance, at most the wrists' distance to a box computed here
        (the model holds these spheres and more); a tip target inside the
        box is in_collision, the pair named."""
        from test_tree import Tree, full_pose_target, random_joints
        tree = Tree("pr2_torso")
        spheres = {t: [[0.0, 0.0, 0.0, 0.06]] for t in tree.tips}
        st, text = self.d.http("POST", "/v1/chains", dict(tree.chain, collision_spheres=spheres))
        self.assertIn(st, (200, 201), text)
        desc = json.loads(text)
        states = {k["name"]: k["state"] for k in desc["collision"]["links"]}
        self.assertEqual([states[t] for t in tree.tips], ["spheres", "spheres"])
        # the PR2's links off the two arms (head, grippers' fingers, ...)
        # are counted, not listed: the description grows with the chain
        self.assertNotIn("off_chain", states.values())
        self.assertGreater(desc["collision"]["off_chain"], 10)
        rng = random.Random(3)
        q = random_joints(desc, rng)
        target = full_pose_target(tree, desc["joint_names"], q)
        left = target["tips"][tree.tips[0]]["position"]
        box = {"size": [0.1, 0.1, 0.1], "position": [left[0] + 0.3, left[1], left[2]]}

        def wrist_distance(joints):
            best = math.inf
            for k in range(2):
                p, _ = tree.fk(k, desc["joint_names"], joints)
                best = min(best, box_distance(p, 0.06, box))
            return best
        st, text = self.d.http("POST", "/v1/solve", {
            "chain_id": desc["id"], "target": target, "scene": {"boxes": [box]},
            "options": {"avoid_collisions": True, "timeout_ms": 0, "max_iterations": 10000}})
        self.assertEqual(st, 200, text)
        a = json.loads(text)
        self.assertEqual(a["status"], "success", a)
        self.assertLessEqual(a["min_distance"], wrist_distance(a["joints"]) + TOL)
        self.assertGreaterEqual(a["min_distance"], 0)
        box["position"] = left
        st, text = self.d.http("POST", "/v1/solve", {
            "chain_id": desc["id"], "target": target, "scene": {"boxes": [box]},
            "options": {"avoid_collisions": True, "timeout_ms": 0, "max_iterations": 2000}})
        a = json.loads(text)
        self.assertEqual((a["status"], a["code"], a["cause"]), ("no_ik_solution", -31, "in_collision"), a)
        self.assertEqual(a["closest"]["obstacle"], "boxes/0")
        self.assertLess(wrist_distance(a["joints"]), 0)

    def test_rejections(self):
        def chain_error(change, status, code, path):
            c = dict(ROBOT.request, **change)
            st, text = self.d.http("POST", "/v1/chains", c)
            self.assertEqual(st, status, text)
            e = json.loads(text)["error"]
            self.assertEqual((e["code"], e["path"]), (code, path), e)
        chain_error({"collision_spheres": {"link_1": [[0, 0, 0, -0.1]]}}, 400, "invalid_request",
                    "/collision_spheres/link_1/0")
        chain_error({"collision_spheres": {"nope": [[0, 0, 0, 0.1]]}}, 422, "invalid_chain",
                    "/collision_spheres/nope")
        chain_error({"collision_spheres": {"link_1": [[0, 0, 0]]}}, 400, "invalid_request",
                    "/collision_spheres/link_1/0")
        chain_error({"collision_spheres": {"link_1": [[0, 0, 0, 0.1]] * 1025}}, 413, "too_large",
                    "/collision_spheres/link_1")
        chain_error({"srdf": "<robot><disable_collisions link1='x' link2='link_1'/></robot>"},
                    422, "invalid_srdf", "/srdf")
        chain_error({"srdf": "<robot"}, 422, "invalid_srdf", "/srdf")

        def solve_error(scene, status, code, path):
            st, text = self.d.http("POST", "/v1/solve", {
                "chain_id": self.desc["id"], "target": self.targets[0][0], "scene": scene})
            self.assertEqual(st, status, text)
            e = json.loads(text)["error"]
            self.assertEqual((e["code"], e["path"]), (code, path), e)
        solve_error({"boxes": [{"size": [0, 1, 1], "position": [0, 0, 0]}]}, 400,
                    "invalid_request", "/scene/boxes/0/size")
        solve_error({"spheres": [{"radius": -1, "position": [0, 0, 0]}]}, 400,
                    "invalid_request", "/scene/spheres/0/radius")
        solve_error({"capsules": [{"radius": 0.1, "from": [0, 0, 0]}]}, 400,
                    "invalid_request", "/scene/capsules/0/to")
        solve_error({"cones": []}, 400, "invalid_request", "/scene/cones")
        solve_error({"spheres": [{"radius": 0.1, "position": [5, 5, 5]}] * 257}, 413,
                    "too_large", "/scene/spheres")
        # the inline chain's paths are under /chain
        st, text = self.d.http("POST", "/v1/solve", {
            "chain": dict(ROBOT.request, srdf="<robot"), "target": self.targets[0][0]})
        self.assertEqual(st, 422, text)
        self.assertEqual(json.loads(text)["error"]["path"], "/chain/srdf")


def joints_chain():
    """The iiwa as a joint list, its sphere model and SRDF on the joint
    list's link names ("base", then the joint moving each link)."""
    root = ET.fromstring(ROBOT.chain.text)
    by_name = {j.get("name"): j for j in root.findall("joint")}
    rename = {ROBOT.chain.base: "base"}
    joints = []
    for J in ROBOT.chain.joints:
        rename[J.child] = J.name
        o = by_name[J.name].find("origin")
        rpy = [float(x) for x in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
        j = {"name": J.name, "type": J.type, "origin": {"xyz": J.xyz, "rpy": rpy}}
        if J.type != "fixed":
            j["axis"] = J.axis
        if J.type in ("revolute", "prismatic"):
            j["limits"] = {"lower": J.lower, "upper": J.upper}
        joints.append(j)
    spheres = {rename[link]: lst for link, lst in ROBOT.spheres.items()}
    entries = "".join('<disable_collisions link1="%s" link2="%s" reason="%s"/>'
                      % (rename[e.get("link1")], rename[e.get("link2")], e.get("reason"))
                      for e in ET.fromstring(ROBOT.srdf).findall("disable_collisions"))
    srdf = '<robot name="iiwa_joints">%s</robot>' % entries
    return ({"kind": "joints", "joints": joints, "collision_spheres": spheres, "srdf": srdf},
            rename)


class JointsChainCollideTest(unittest.TestCase):
    """The iiwa as a joints chain: the same geometry by other names."""

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.chain, cls.rename = joints_chain()
        st, text = cls.d.http("POST", "/v1/chains", cls.chain)
        assert st in (200, 201), (st, text)
        cls.desc = json.loads(text)
        cls.targets = ROBOT.targets(24, random.Random(2121))

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def solve(self, target, options):
        st, text = self.d.http("POST", "/v1/solve", {
            "chain_id": self.desc["id"], "target": target, "scene": ROBOT.scene,
            "options": options})
        self.assertEqual(st, 200, text)
        return json.loads(text)

    def test_links_named_by_joints(self):
        c = self.desc["collision"]
        self.assertEqual(c["spheres"], sum(len(v) for v in ROBOT.spheres.values()))
        states = {k["name"]: k["state"] for k in c["links"]}
        self.assertEqual(set(states), set(self.rename.values()))
        for link in self.chain["collision_spheres"]:
            self.assertEqual(states[link], "spheres")

    def test_solve_avoids(self):
        names = set(self.rename.values())
        plain_hits = reached = 0
        for target, _ in self.targets:
            for avoid in (False, True):
                opts = {"timeout_ms": 0, "max_iterations": 10000 if avoid else 3000}
                if avoid:
                    opts.update(avoid_collisions=True, collision_margin=MARGIN)
                a = self.solve(target, opts)
                q = a["joints"]
                (d, _, _), s = ROBOT.distances(q)
                self.assertAlmostEqual(a["min_distance"], min(d, s), delta=TOL)
                if min(d, s) < (MARGIN if avoid else 0.0) - TOL:
                    self.assertIn(a["closest"]["link"], names, a["closest"])
                if a["status"] != "success":
                    continue
                p, _ = ROBOT.chain.fk(q)
                self.assertLess(math.dist(p, target["position"]), 1e-4)
                self.assertTrue(ROBOT.chain.within_limits(q))
                if avoid:
                    self.assertGreaterEqual(min(d, s), MARGIN - TOL, a)
                    reached += 1
                else:
                    plain_hits += min(d, s) < 0
        # the check matters: plain answers collide near these obstacles
        self.assertGreater(plain_hits, 0)
        self.assertGreaterEqual(reached, len(self.targets) - 1)

    def test_rejections(self):
        def chain_error(change, status, code, path):
            st, text = self.d.http("POST", "/v1/chains", dict(self.chain, **change))
            self.assertEqual(st, status, text)
            e = json.loads(text)["error"]
            self.assertEqual((e["code"], e["path"]), (code, path), e)
        # the URDF's link names are not the joint list's
        chain_error({"collision_spheres": {"link_4": [[0, 0, 0, 0.1]]}}, 422, "invalid_chain",
                    "/collision_spheres/link_4")
        chain_error({"collision_spheres": {"base": [[0, 0, 0, -0.1]]}}, 400, "invalid_request",
                    "/collision_spheres/base/0")
        chain_error({"srdf": "<robot><disable_collisions link1='base' link2='link_1'/></robot>"},
                    422, "invalid_srdf", "/srdf")
        renamed = [dict(j) for j in self.chain["joints"]]
        renamed[2]["name"] = "base"
        chain_error({"joints": renamed}, 422, "invalid_chain", "/joints/2/name")
        # without collision members: no model, so avoid_collisions is refused
        plain = {k: v for k, v in self.chain.items() if k not in ("collision_spheres", "srdf")}
        st, text = self.d.http("POST", "/v1/solve", {"chain": plain, "target": self.targets[0][0],
                                                     "options": {"avoid_collisions": True}})
        self.assertEqual(st, 422, text)
        self.assertEqual(json.loads(text)["error"]["path"], "/options/avoid_collisions")



class ClosedFormCollideTest(unittest.TestCase):
    """The UR5 (a closed form: "auto" solves full poses with it) with the
    sphere model of tests/data/collision/ur5.json, no SRDF (every pair
    that is not adjacent is checked), beside its table and post. With
    avoid_collisions the closed form answers its nearest solution that is
    clear, by the geometry here; when it answers in_collision, every
    solution it lists (all_solutions, without avoidance) collides here
    too. Plain answers collide for some of these targets."""

    @classmethod
    def setUpClass(cls):
        cls.robot = Robot(os.path.join(IKD_DATA, "robots", "ur5.urdf"),
                          os.path.join(IKD_DATA, "collision", "ur5.json"), None)
        cls.d = Daemon()
        st, text = cls.d.http("POST", "/v1/chains", cls.robot.request)
        assert st in (200, 201), (st, text)
        cls.id = json.loads(text)["id"]
        cls.targets = cls.robot.targets(30, random.Random(2626))

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def solve(self, target, options, **more):
        st, text = self.d.http("POST", "/v1/solve", dict({
            "chain_id": self.id, "target": target, "scene": self.robot.scene,
            "options": options}, **more))
        return st, json.loads(text)

    def clearance(self, q):
        (d, _, _), s = self.robot.distances(q)
        return min(d, s)

    def test_nearest_clear_solution(self):
        plain_hits = reached = 0
        for target, _ in self.targets:
            st, a = self.solve(target, {})
            self.assertEqual(st, 200, a)
            self.assertEqual(a["solver"], "closed")
            plain_hits += self.clearance(a["joints"]) < 0
            st, b = self.solve(target, {"avoid_collisions": True, "collision_margin": MARGIN})
            self.assertEqual(st, 200, b)
            self.assertEqual(b["solver"], "closed")
            c = self.clearance(b["joints"])
            self.assertAlmostEqual(b["min_distance"], c, delta=TOL)
            p, _ = self.robot.chain.fk(b["joints"])
            self.assertLess(math.dist(p, target["position"]), 1e-4)
            self.assertTrue(self.robot.chain.within_limits(b["joints"]))
            if b["status"] == "success":
                reached += 1
                self.assertGreaterEqual(c, MARGIN - TOL, b)
            else:
                self.assertEqual((b["status"], b["cause"], b["code"]),
                                 ("no_ik_solution", "in_collision", -31))
                st, every = self.solve(target, {"all_solutions": True})
                self.assertEqual(st, 200, every)
                for q in every["solutions"]:
                    self.assertLess(self.clearance(q), MARGIN + TOL)
        # the check matters: the nearest solution collides for some targets
        self.assertGreater(plain_hits, 0)
        # each target has a clear configuration (sampled so)
        self.assertEqual(reached, len(self.targets))

    def test_with_a_step_and_refusals(self):
        target, q = self.targets[0]
        seed = [v + 0.05 for v in q]
        st, a = self.solve(target, {"avoid_collisions": True, "collision_margin": MARGIN,
                                    "max_joint_step": 0.2}, seed=seed)
        self.assertEqual(st, 200, a)
        self.assertEqual(a["status"], "success", a)
        self.assertGreaterEqual(self.clearance(a["joints"]), MARGIN - TOL)
        self.assertLessEqual(max(abs(x - y) for x, y in zip(a["joints"], seed)), 0.2 + 1e-9)
        st, e = self.solve(target, {"avoid_collisions": True, "all_solutions": True})
        self.assertEqual(st, 400, e)
        self.assertEqual(e["error"]["path"], "/options/avoid_collisions")



def segment_distance(a0, a1, b0, b1):
    """The distance between segments a0-a1 and b0-b1 (clamped closest
    points, as in Ericson's Real-Time Collision Detection, 5.1.9)."""
    d1 = [y - x for x, y in zip(a0, a1)]
    d2 = [y - x for x, y in zip(b0, b1)]
    r = [x - y for x, y in zip(a0, b0)]
    dot = lambda u, v: sum(x * y for x, y in zip(u, v))  # noqa: E731
    a, e, f = dot(d1, d1), dot(d2, d2), dot(d2, r)
    if a <= 1e-18 and e <= 1e-18:
        return math.dist(a0, b0)
    if a <= 1e-18:
        s, t = 0.0, min(max(f / e, 0.0), 1.0)
    else:
        c = dot(d1, r)
        if e <= 1e-18:
            s, t = min(max(-c / a, 0.0), 1.0), 0.0
        else:
            b = dot(d1, d2)
            den = a * e - b * b
            s = min(max((b * f - c * e) / den, 0.0), 1.0) if den > 1e-18 else 0.0
            t = (b * s + f) / e
            if t < 0:
                s, t = min(max(-c / a, 0.0), 1.0), 0.0
            elif t > 1:
                s, t = min(max((b - c) / a, 0.0), 1.0), 1.0
    p = [x + s * y for x, y in zip(a0, d1)]
    q = [x + t * y for x, y in zip(b0, d2)]
    return math.dist(p, q)


class SkeletonCollideTest(unittest.TestCase):
    """The iiwa with collision_skeleton alone (capsules from each joint to
    the next) and no SRDF. Its link_2, link_4 and link_6 have no length, so
    the capsules of link_1 and link_3 (3 and 5, 5 and 7) meet at a joint
    in every pose: such pairs are allowed as adjacent ones are, and the arm
    is not in collision with itself everywhere. Checked here with capsules
    of our own (segment distances between the joint origins of
    robot_chain's forward kinematics): targets from poses whose capsules
    that do not meet at a joint are 4 cm apart are solved with
    avoid_collisions, and the answers are clear by that geometry."""
    RADIUS = 0.04

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        st, text = cls.d.http("POST", "/v1/chains", dict(
            ROBOT.chain.request(), collision_skeleton=cls.RADIUS))
        assert st in (200, 201), (st, text)
        cls.id = json.loads(text)["id"]

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def clearance(self, q):
        """The smallest gap between capsules neither adjacent nor meeting at
        a joint (a shared end point)."""
        frames = link_frames(ROBOT.chain, q)
        points = [frames[ROBOT.chain.base][0]]
        for J in ROBOT.chain.joints:
            if J.type != "fixed":
                points.append(frames[J.child][0])
        points.append(frames[ROBOT.chain.joints[-1].child][0])
        segs = list(zip(points, points[1:]))
        best = math.inf
        for i in range(len(segs)):
            for j in range(i + 2, len(segs)):
                if any(math.dist(u, v) < 1e-9 for u in segs[i] for v in segs[j]):
                    continue
                best = min(best, segment_distance(*segs[i], *segs[j]) - 2 * self.RADIUS)
        return best

    def test_skeleton_not_always_in_collision(self):
        rng = random.Random(77)
        solved = tried = 0
        while tried < 15:
            q = [rng.uniform(J.lower, J.upper) for J in ROBOT.chain.movable]
            if self.clearance(q) < 0.04:
                continue
            tried += 1
            p, o = ROBOT.chain.fk(q)
            st, text = self.d.http("POST", "/v1/solve", {
                "chain_id": self.id, "target": {"position": p, "orientation": o},
                "options": {"avoid_collisions": True, "timeout_ms": 0,
                            "max_iterations": 10000}})
            self.assertEqual(st, 200, text)
            a = json.loads(text)
            if a["status"] == "success":
                solved += 1
                # ikd's spheres cover the capsules: clear by them, clear here
                self.assertGreaterEqual(self.clearance(a["joints"]), -1e-6, a)
                self.assertGreaterEqual(a["min_distance"], 0.0)
        self.assertGreaterEqual(solved, tried - 1)


class SkeletonTreeCollideTest(unittest.TestCase):
    """A tree whose torso branches toward two shoulders and a neck, with
    collision_skeleton alone; the left shoulder is two joints at one point
    (l_a has no length), so the left upper arm's capsule starts where the
    torso's capsule toward that shoulder ends. The torso's link also holds
    its capsule toward the neck: with the left arm swung through the neck
    (10 cm deep by capsules of our own, segment distances between the
    joint origins of forward kinematics written here), min_distance must
    not be larger than that geometry's, so that avoid_collisions cannot
    call such a pose clear. (The pair meeting at the shoulder was allowed
    whole, and ikd said 8.7 cm clear.)"""
    RADIUS = 0.05
    # (child link, parent link, origin, axis or None for a fixed joint, joint)
    BODIES = [("torso", "base_link", (0, 0, 0.4), (0, 0, 1), "waist"),
              ("l_a", "torso", (0, 0.2, 0.3), (0, 0, 1), "l_sh1"),
              ("l_upper", "l_a", (0, 0, 0), (0, 1, 0), "l_sh2"),
              ("l_fore", "l_upper", (0.4, 0, 0), (0, 1, 0), "l_elbow"),
              ("l_tool", "l_fore", (0.25, 0, 0), None, "l_w"),
              ("r_upper", "torso", (0, -0.2, 0.1), (0, 1, 0), "r_sh"),
              ("r_fore", "r_upper", (0.3, 0, 0), (0, 1, 0), "r_elbow"),
              ("r_tool", "r_fore", (0.25, 0, 0), None, "r_w"),
              ("head", "torso", (0, 0, 0.5), (0, 0, 1), "neck"),
              ("head_tip", "head", (0, 0, 0.2), None, "h_w")]
    TIPS = ["l_tool", "r_tool", "head_tip"]

    @classmethod
    def setUpClass(cls):
        joints = ""
        for child, parent, xyz, axis, name in cls.BODIES:
            joints += '<joint name="%s" type="%s"><parent link="%s"/><child link="%s"/>' % (
                name, "revolute" if axis else "fixed", parent, child)
            joints += '<origin xyz="%g %g %g"/>' % xyz
            if axis:
                joints += ('<axis xyz="%g %g %g"/><limit lower="-3" upper="3" effort="1" '
                           'velocity="1"/>' % axis)
            joints += "</joint>"
        links = ["base_link"] + [b[0] for b in cls.BODIES]
        urdf = '<robot name="torso_tree">%s%s</robot>' % (
            "".join('<link name="%s"/>' % k for k in links), joints)
        cls.d = Daemon()
        st, text = cls.d.http("POST", "/v1/chains", {
            "kind": "tree", "urdf": urdf, "base": "base_link", "tips": cls.TIPS,
            "collision_skeleton": cls.RADIUS})
        assert st in (200, 201), (st, text)
        cls.desc = json.loads(text)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def origins(self, q):
        value = dict(zip(self.desc["joint_names"], q))
        p = {"base_link": [0.0, 0.0, 0.0]}
        rot = {"base_link": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]}
        for child, parent, xyz, axis, name in self.BODIES:
            p[child] = [a + b for a, b in zip(p[parent], _mat_vec(rot[parent], xyz))]
            rot[child] = (_mat_mul(rot[parent], _axis_angle(axis, value[name])) if axis
                          else rot[parent])
        return p

    def clearance(self, q):
        """The smallest gap between capsules (a link's from its origin to
        each child link's) of links that are not adjacent, pairs that share
        an end point (meet at a joint) aside."""
        p = self.origins(q)
        parent = {b[0]: b[1] for b in self.BODIES}
        caps = {}
        for child, up, _, _, _ in self.BODIES:
            caps.setdefault(up, []).append((p[up], p[child]))
        best = math.inf
        names = list(caps)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if parent.get(a) == b or parent.get(b) == a:
                    continue
                for s in caps[a]:
                    for t in caps[b]:
                        if any(math.dist(u, v) < 1e-9 for u in s for v in t):
                            continue
                        best = min(best, segment_distance(*s, *t) - 2 * self.RADIUS)
        return best

    def test_arm_through_the_neck_is_not_clear(self):
        names = self.desc["joint_names"]
        q = [0.0] * len(names)
        q[names.index("l_sh1")] = -math.pi / 2  # the upper arm across the neck
        q[names.index("l_elbow")] = -math.pi / 2  # the forearm up, clear of all
        p = self.origins(q)
        st, text = self.d.http("POST", "/v1/solve", {
            "chain_id": self.desc["id"], "seed": q,
            "target": {"tips": {t: {"position": p[t]} for t in self.TIPS}}})
        self.assertEqual(st, 200, text)
        a = json.loads(text)
        self.assertLess(max(abs(x - y) for x, y in zip(a["joints"], q)), 1e-6, a)
        c = self.clearance(a["joints"])
        self.assertLess(c, -0.05)  # the arm is in the neck by this geometry
        self.assertLessEqual(a["min_distance"], c + TOL, a)


if __name__ == "__main__":
    unittest.main()

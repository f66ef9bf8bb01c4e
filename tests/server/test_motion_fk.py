"""
test_motion_fk.py: the answers that move a robot over time (paths on
streams, servo streams, skeleton limbs), checked on the real daemon
($IKD_BIN on 127.0.0.1 port 0) by forward kinematics computed here from
the robot and motion files themselves (robot_chain.py reads the URDF,
test_tree_skeleton.py's Walk reads the BVH; neither uses ikd), never by
comparing with ikd's own output.

Covered:
  - paths of full-pose waypoints on the KUKA iiwa 14, the Franka Panda and
    the UR5: the samples come in order, index 0 .. count - 1 with count
    floor(duration_s * rate_hz) + 1 (proto/STREAM.md), each one's joints
    inside the limits and, by FK here, on the target interpolated here
    (positions linearly, orientations by shortest-arc slerp) within the
    tolerances README.md promises (1e-5 per position component, 1e-5 rad
    per component of the rotation error), the last on the last waypoint,
    path_end counting sent + skipped = count and completed; no joint step
    between samples beyond 3 times the motion's own, no whole-turn jump;
  - a path keeps its samples while the client sends other messages
    meanwhile (targets, an open and a close, a tick, on other streams);
  - a path replaced mid-way by another: path_end (completed false) before
    any sample of the new one, whose samples then all come; the same, and
    a target or a close cutting the path, while the cut path's sample
    waits on a busy pool (BusyPoolTest);
  - a path in Unity's frame, checked by FK in the URDF's frame; on the
    PR2's continuous rolls (swept 2.5 and 3.2 rad); each sample's
    max_joint_step, position_error and orientation_error those of its
    joints;
  - a skeleton chain (kind "skeleton", the whole CMU walk hierarchy, the
    left leg its limb) following a path of the recorded left foot: every
    answer's bone rotations composed down the hierarchy here put the foot
    on the interpolated target and on the answer's positions, every bone
    keeps its length, only the hip and knee turn, and the knee bends to
    the side it had (and the same for the left arm); a skeleton whose
    hip, or a bone above it, scales unevenly is refused (its answers put
    the foot off the target they claimed);
  - servo across the PR2's continuous wrist roll at +-pi: every period
    within the velocity limit, the target reached on the turn nearest
    the arm (no unwinding) in the periods that distance needs; servo from
    a joint past its limit: back inside at its velocity, never a jump;
  - hostile paths and servo options: too many waypoints or samples, zero,
    negative, non-numeric or non-finite rates and durations, paths on a
    closed or unknown stream, absurd servo velocities and periods: each an
    error naming what was wrong, the connection kept, the memory streams
    hold back to where it was.
Robots and motion come from $IKD_DATA (tests/run.sh sets it).
"""
import asyncio
import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from robot_chain import quat_angle  # noqa: E402
from test_robot_stream import CENTRES, chain_of, largest_step, motion  # noqa: E402
from test_stream import SLOW, Daemon, connect, recv, run, send  # noqa: E402
from test_tree_skeleton import (WALK, Walk, WalkTargets, bend, dist, origin,  # noqa: E402
                                qangle, skeleton_fk)

POS_TOL = 1e-5 + 1e-9               # README: 1e-5 per position component
ROT_TOL = math.sqrt(3) * 1e-5 + 1e-9  # 1e-5 rad per rotation-vector component
OPTS = {"timeout_ms": 100}          # a shared machine: no timed_out answers
TIMEOUT_AFTER_BATCH = 5.0 * SLOW    # a second of pool work, then the answers
# the UR5 away from its wrist singularity (joint 5 at zero), where a
# Cartesian path asks for large joint steps whatever the solver does
PATH_CENTRES = {"ur5": [0.3, -1.2, 1.4, -1.5, 1.2, 0.4]}


def lerp(a, b, u):
    return [x + (y - x) * u for x, y in zip(a, b)]


def slerp(a, b, u):
    """Shortest-arc spherical interpolation of unit quaternions [x, y, z, w]."""
    d = sum(x * y for x, y in zip(a, b))
    if d < 0:
        b, d = [-x for x in b], -d
    th = math.acos(min(1.0, d))
    if th < 1e-12:
        return list(a)
    sa, sb = math.sin((1 - u) * th) / math.sin(th), math.sin(u * th) / math.sin(th)
    return [sa * x + sb * y for x, y in zip(a, b)]


def sample_target(waypoints, index, count, rate, duration):
    """Sample index's target as proto/STREAM.md defines it: due at
    index / rate seconds, the waypoints equally spaced over duration, the
    last sample exactly on the last waypoint."""
    nseg = len(waypoints) - 1
    u = nseg if index == count - 1 else min(index / rate / duration * nseg, nseg)
    k = min(int(u), nseg - 1)
    a, b = waypoints[k], waypoints[k + 1]
    t = {"position": lerp(a["position"], b["position"], u - k)}
    if "orientation" in a:
        t["orientation"] = slerp(a["orientation"], b["orientation"], u - k)
    return t


async def read_path(test, ws, stream, seq, others=None):
    """The samples of path seq on stream, then its path_end; messages of
    other streams go to others (a list) when given."""
    samples = []
    while True:
        m = await recv(ws, timeout=10 * SLOW)
        if m.get("stream") != stream:
            test.assertIsNotNone(others, m)
            others.append(m)
            continue
        test.assertIn(m["type"], ("solution", "path_end"), m)
        test.assertEqual(m["seq"], seq, m)
        if m["type"] == "path_end":
            return samples, m
        samples.append(m)


class MotionFkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def held(self):
        status, text = self.d.http("GET", "/metrics")
        self.assertEqual(status, 200)
        for line in text.splitlines():
            if line.startswith('ikd_held_bytes{what="stream_chains"}'):
                return int(float(line.split()[1]))
        self.fail("no stream_chains gauge")

    def check_path_order(self, samples, end, count, completed=True):
        """Indices strictly rising, skips accounted, the last sample sent."""
        idx = [m["index"] for m in samples]
        self.assertEqual(idx, sorted(set(idx)), "samples out of order or repeated")
        for m in samples:
            self.assertEqual(m["count"], count)
        self.assertEqual(end["count"], count, end)
        self.assertEqual(end["completed"], completed, end)
        self.assertEqual(end["sent"], len(samples), end)
        self.assertEqual(end["skipped"], sum(m["skipped"] for m in samples), end)
        if completed:
            self.assertEqual(idx[-1], count - 1)
            self.assertEqual(end["sent"] + end["skipped"], count, end)
            # a gap is a skip, and skips only come with a sample 100 ms late
            gaps = sum(b - a - 1 for a, b in zip([-1] + idx, idx))
            self.assertEqual(gaps, end["skipped"])

    # ---- paths of full poses on real arms, by FK --------------------------

    def robot_path(self, robot, nway=9, rate=100.0, duration=1.2, steps=48, **kw):
        chain = chain_of(robot)
        qs = motion(chain, steps, centre=PATH_CENTRES.get(robot, CENTRES.get(robot)), **kw)
        picks = [qs[round(i * steps / (nway - 1))] for i in range(nway)]
        waypoints = []
        for i, q in enumerate(picks):
            p, quat = chain.fk(q)
            if i % 2:  # the same rotations, the other sign: slerp must take the short arc
                quat = [-x for x in quat]
            waypoints.append({"position": p, "orientation": quat})
        count = math.floor(duration * rate + 1e-9) + 1
        # the motion's own largest joint step between two samples
        per_seg = (count - 1) / (nway - 1)
        own = max(largest_step(a, b) for a, b in zip(picks, picks[1:])) / per_seg
        figures = {"pos": 0.0, "rot": 0.0, "step": 0.0}

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": robot, "chain": chain.request(),
                                "seed": picks[0], "options": OPTS})
                self.assertEqual((await recv(ws))["type"], "opened")
                await send(ws, {"type": "path", "stream": robot, "seq": 7, "rate_hz": rate,
                                "duration_s": duration, "waypoints": waypoints})
                samples, end = await read_path(self, ws, robot, 7)
                self.check_path_order(samples, end, count)
                prev = picks[0]
                for m in samples:
                    r = m["result"]
                    self.assertEqual(r["status"], "success", (m["index"], r.get("reason")))
                    q = r["joints"]
                    self.assertTrue(chain.within_limits(q), (m["index"], q))
                    t = sample_target(waypoints, m["index"], count, rate, duration)
                    p, quat = chain.fk(q)
                    pe = max(abs(a - b) for a, b in zip(p, t["position"]))
                    re = quat_angle(quat, t["orientation"])
                    self.assertLessEqual(pe, POS_TOL, (m["index"], p, t))
                    self.assertLessEqual(re, ROT_TOL, (m["index"], re))
                    # the errors answered are those of the joints answered
                    self.assertAlmostEqual(r["position_error"], dist(p, t["position"]),
                                           delta=1e-9)
                    self.assertAlmostEqual(r["orientation_error"], re, delta=1e-7)
                    step = largest_step(q, prev)
                    # the step reported is the step made (from the previous answer)
                    self.assertAlmostEqual(r["max_joint_step"], step, delta=1e-9)
                    for k in range(chain.dof):
                        if chain.periodic(k):
                            self.assertLess(abs(q[k] - prev[k]), math.pi, (m["index"], k))
                    # a skipped sample lets the motion move on further
                    self.assertLessEqual(step, 3 * own * (1 + m["skipped"]) + 1e-6,
                                         (m["index"], step, own))
                    figures["pos"] = max(figures["pos"], pe)
                    figures["rot"] = max(figures["rot"], re)
                    figures["step"] = max(figures["step"], step)
                    prev = q
                # the last sample is the last waypoint itself
                self.assertEqual(samples[-1]["index"], count - 1)
                print("path %s: %d samples, max position error %.2e, max rotation error "
                      "%.2e rad, max joint step %.4f (motion's %.4f)"
                      % (robot, len(samples), figures["pos"], figures["rot"], figures["step"],
                         own), file=sys.stderr)
        run(body(), limit=60 * SLOW)

    def test_path_iiwa(self):
        self.robot_path("iiwa")

    def test_path_panda(self):
        self.robot_path("panda")

    def test_path_ur5(self):
        self.robot_path("ur5", rate=250.0, duration=0.5)

    def test_path_pr2_continuous_rolls(self):
        """The PR2's right arm, whose forearm and wrist rolls are
        continuous, swept by 2.5 rad either side of 0.3: no sample jumps
        a whole turn."""
        self.robot_path("pr2", nway=25, rate=100.0, duration=2.4, amp=0.2, spin=2.5)

    def test_path_pr2_fast_rolls(self):
        """The same swept by 3.2 rad: the answers drifted in the arm's
        self-motion (its elbow's swivel) onto the wrist flex's upper limit,
        0, the wrist's singularity, and one sample jumped 1.4 rad after
        ten restarts; the solver's following now also draws the
        self-motion towards the middle of the joint ranges
        (solver/ik_numeric.c, MID_PULL)."""
        self.robot_path("pr2", nway=25, rate=100.0, duration=2.4, amp=0.2, spin=3.2)

    def test_path_in_unity_frame(self):
        """Waypoints in Unity's frame (y up, left-handed: a ROS point is
        (z, -x, y) of it): every sample's joints, by FK in the URDF's
        frame, on the target interpolated in Unity's frame and carried to
        ROS's by the change of frame written here (rotations R -> M R M^T,
        M of determinant -1)."""
        from test_tree_skeleton import qmat
        chain = chain_of("ur5")
        qs = motion(chain, 20, centre=PATH_CENTRES["ur5"])
        M = [[0, 0, 1], [-1, 0, 0], [0, 1, 0]]  # Unity -> ROS
        Mt = [list(r) for r in zip(*M)]

        def mm(a, b):
            return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]

        def to_unity(p, quat):
            # p_u = M^T p; R_u = M^T R M, as a quaternion through robot_chain
            from robot_chain import mat_to_quat
            return {"position": [sum(Mt[i][k] * p[k] for k in range(3)) for i in range(3)],
                    "orientation": mat_to_quat(mm(Mt, mm(qmat(quat), M)))}

        waypoints = [to_unity(*chain.fk(q)) for q in qs[::5]]
        rate, duration, count = 100.0, 0.6, 61

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "u", "chain": chain.request(),
                                "seed": qs[0], "options": dict(OPTS, frame="unity")})
                self.assertEqual((await recv(ws))["type"], "opened")
                await send(ws, {"type": "path", "stream": "u", "seq": 1, "rate_hz": rate,
                                "duration_s": duration, "waypoints": waypoints})
                samples, end = await read_path(self, ws, "u", 1)
                self.check_path_order(samples, end, count)
                for m in samples:
                    r = m["result"]
                    self.assertEqual(r["status"], "success")
                    t = sample_target(waypoints, m["index"], count, rate, duration)
                    p, quat = chain.fk(r["joints"])
                    want_p = [sum(M[i][k] * t["position"][k] for k in range(3)) for i in range(3)]
                    want_r = mm(M, mm(qmat(t["orientation"]), Mt))
                    got_r = qmat(quat)
                    tr = sum(got_r[k][i] * want_r[k][i] for i in range(3) for k in range(3))
                    angle = math.acos(max(-1.0, min(1.0, (tr - 1) / 2)))
                    self.assertLessEqual(max(abs(a - b) for a, b in zip(p, want_p)), POS_TOL)
                    self.assertLessEqual(angle, ROT_TOL + 1e-7, m["index"])
        run(body(), limit=60 * SLOW)

    def test_path_while_other_messages(self):
        """While a path runs on one stream, targets, an open, a close and
        a tick on other streams: every sample still comes, in order, and
        the other messages are all answered."""
        chain = chain_of("iiwa")
        qs = motion(chain, 20, centre=CENTRES["iiwa"])
        waypoints = [dict(zip(("position", "orientation"), chain.fk(q))) for q in qs[::5]]
        bones = {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}
        rate, duration = 60.0, 1.0
        count = 61

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "arm", "chain": chain.request(),
                                "seed": qs[0], "options": OPTS})
                self.assertEqual((await recv(ws))["type"], "opened")
                await send(ws, {"type": "open", "stream": "leg", "chain": bones})
                self.assertEqual((await recv(ws))["type"], "opened")
                await send(ws, {"type": "path", "stream": "arm", "seq": 1, "rate_hz": rate,
                                "duration_s": duration, "waypoints": waypoints})
                for i in range(30):
                    await send(ws, {"type": "target", "stream": "leg", "seq": 100 + i,
                                    "target": {"position": [0.3, 0.6, 0.1 + 0.01 * i]}})
                    if i == 10:
                        await send(ws, {"type": "open", "stream": "x", "chain": bones})
                    if i == 15:
                        await send(ws, {"type": "tick", "seq": 500, "targets": [
                            {"stream": "leg", "target": {"position": [0.2, 0.6, 0.3]}}]})
                    if i == 20:
                        await send(ws, {"type": "close", "stream": "x"})
                    await asyncio.sleep(0.01)
                others = []
                samples, end = await read_path(self, ws, "arm", 1, others)
                self.check_path_order(samples, end, count)
                for m in samples:
                    r = m["result"]
                    self.assertEqual(r["status"], "success")
                    t = sample_target(waypoints, m["index"], count, rate, duration)
                    p, quat = chain.fk(r["joints"])
                    self.assertLessEqual(max(abs(a - b) for a, b in zip(p, t["position"])),
                                         POS_TOL)
                    self.assertLessEqual(quat_angle(quat, t["orientation"]), ROT_TOL)
                # everything else: 30 targets (answered or skipped), the
                # open, the tick, the close
                while not any(m.get("type") == "closed" for m in others) or \
                        not any(m.get("type") == "tick_solution" for m in others):
                    others.append(await recv(ws))
                leg = [m for m in others if m.get("stream") == "leg" and m["type"] == "solution"]
                seqs = [m["seq"] for m in leg]
                self.assertEqual(seqs, sorted(seqs))
                answered = len(leg) + sum(m["skipped"] for m in leg)
                # a target waiting when the tick came is counted in its entry
                for m in others:
                    if m.get("type") == "tick_solution":
                        answered += sum(e["skipped"] for e in m["solutions"])
                # the last target may still be on its way
                while answered < 30:
                    m = await recv(ws)
                    self.assertEqual((m["stream"], m["type"]), ("leg", "solution"), m)
                    answered += 1 + m["skipped"]
                self.assertEqual(answered, 30)
                types = [m["type"] for m in others if m.get("stream") == "x"]
                self.assertEqual(types, ["opened", "closed"])
        run(body(), limit=60 * SLOW)

    def test_path_replaced_midway(self):
        """A second path on the stream cuts the first: its path_end
        (completed false) comes before any sample of the second, whose
        samples then all come on their own targets."""
        chain = chain_of("ur5")
        qs = motion(chain, 20)
        wa = [dict(zip(("position", "orientation"), chain.fk(q))) for q in qs[:11:5]]
        wb = [dict(zip(("position", "orientation"), chain.fk(q))) for q in qs[10::5]]

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "u", "chain": chain.request(),
                                "seed": qs[0], "options": OPTS})
                self.assertEqual((await recv(ws))["type"], "opened")
                await send(ws, {"type": "path", "stream": "u", "seq": 1, "rate_hz": 50,
                                "duration_s": 4, "waypoints": wa})
                first = [await recv(ws) for _ in range(5)]
                await send(ws, {"type": "path", "stream": "u", "seq": 2, "rate_hz": 100,
                                "duration_s": 0.3, "waypoints": wb})
                samples, end = [m for m in first], None
                while True:
                    m = await recv(ws)
                    self.assertEqual(m["seq"], 1, "a sample of path 2 before path 1 ended")
                    if m["type"] == "path_end":
                        end = m
                        break
                    samples.append(m)
                self.check_path_order(samples, end, 201, completed=False)
                samples, end = await read_path(self, ws, "u", 2)
                self.check_path_order(samples, end, 31)
                for m in samples:
                    t = sample_target(wb, m["index"], 31, 100.0, 0.3)
                    p, quat = chain.fk(m["result"]["joints"])
                    self.assertLessEqual(max(abs(a - b) for a, b in zip(p, t["position"])),
                                         POS_TOL)
                    self.assertLessEqual(quat_angle(quat, t["orientation"]), ROT_TOL)
                with self.assertRaises(asyncio.TimeoutError):
                    await recv(ws, timeout=0.3)
        run(body(), limit=60 * SLOW)

    # ---- a skeleton limb on a path, by the hierarchy composed here ----------

    def test_skeleton_path_bvh(self):
        self.skeleton_path(["LeftUpLeg", "LeftLeg", "LeftFoot"])

    def test_skeleton_path_bvh_arm(self):
        self.skeleton_path(["LeftArm", "LeftForeArm", "LeftHand"])

    def skeleton_path(self, limb):
        walk = Walk(WALK)
        targets = WalkTargets(walk)
        hip, knee, foot = (walk.index[n] for n in limb)
        from test_tree_skeleton import skeleton_chain
        chain = dict(skeleton_chain(walk), kind="skeleton", limb=limb)
        del chain["tips"]
        seed = [walk.local_rotation(1, k) for k in range(len(walk.joints))]
        rest = skeleton_fk(walk, seed)
        # the recorded foot (or hand) of frames 1, 6, ..., 61 relative to the hips
        frames = list(range(1, 62, 5))
        waypoints = [{"position": targets.world(f, targets.rec[f][foot][0])} for f in frames]
        rate, duration = 120.0, 1.0
        count = 121
        worst = {"pos": 0.0, "len": 0.0, "step": 0.0, "solved": 0}

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "leg", "chain": chain, "seed": seed})
                m = await recv(ws)
                self.assertEqual(m["type"], "opened", m)
                await send(ws, {"type": "path", "stream": "leg", "seq": 3, "rate_hz": rate,
                                "duration_s": duration, "waypoints": waypoints})
                samples, end = await read_path(self, ws, "leg", 3)
                self.check_path_order(samples, end, count)
                prev = seed
                side, _ = bend(*(origin(rest[k]) for k in (hip, knee, foot)))
                for m in samples:
                    r = m["result"]
                    rot = r["rotations"]
                    self.assertEqual(len(rot), len(walk.joints))
                    g = skeleton_fk(walk, rot)
                    t = sample_target(waypoints, m["index"], count, rate, duration)
                    for k, p in zip((hip, knee, foot), r["positions"]):
                        self.assertLess(dist(origin(g[k]), p), 1e-9, (m["index"], k))
                    self.assertAlmostEqual(r["position_error"], dist(origin(g[foot]),
                                                                     t["position"]), delta=1e-9)
                    if r["status"] == "success":
                        pe = max(abs(a - b) for a, b in zip(origin(g[foot]), t["position"]))
                        self.assertLessEqual(pe, POS_TOL, m["index"])
                        worst["pos"] = max(worst["pos"], pe)
                        worst["solved"] += 1
                    for k, j in enumerate(walk.joints):
                        if k not in (hip, knee):
                            self.assertLess(qangle(rot[k], seed[k]), 1e-9, (m["index"], k))
                        if j["parent"] >= 0:
                            want = dist(origin(rest[k]), origin(rest[j["parent"]]))
                            got = dist(origin(g[k]), origin(g[j["parent"]]))
                            self.assertAlmostEqual(got, want, delta=1e-9 * (1 + want))
                            worst["len"] = max(worst["len"], abs(got - want))
                    b, length = bend(*(origin(g[k]) for k in (hip, knee, foot)))
                    if length > 0.02:
                        self.assertGreater(sum(x * y for x, y in zip(b, side)), 0.0,
                                           "the knee flipped at sample %d" % m["index"])
                    step = max(qangle(a, c) for a, c in zip(prev, rot))
                    self.assertLessEqual(step, 0.3, m["index"])
                    if "max_joint_step" in r:
                        self.assertAlmostEqual(r["max_joint_step"], step, delta=1e-6)
                    worst["step"] = max(worst["step"], step)
                    prev = rot
                print("skeleton path %s: %d samples (%d solved), max end error %.2e, max bone "
                      "length change %.2e, max bone turn %.4f rad"
                      % (limb[2], len(samples), worst["solved"], worst["pos"], worst["len"],
                         worst["step"]), file=sys.stderr)
                self.assertGreater(worst["solved"], count // 2)
        run(body(), limit=60 * SLOW)

    def test_skeleton_scale_that_shears_the_limb(self):
        """A skeleton whose hip, or a bone above it, scales non-uniformly:
        the hip's and knee's turns then shear, and the foot misses the
        target although the two-bone solve reached it. Such an answer
        said success, position_error 0 and the target as the foot's
        position while the bones, composed here, put the foot up to 0.25
        away: the chain is now refused at the offending scale. A uniform
        scale, mirrored or not, keeps every bone's length: answered, the
        foot where the composed bones put it."""
        def bones(pelvis, thigh, shin):
            return [{"name": "pelvis", "translation": [0, 0, 1.0], "scale": pelvis},
                    {"name": "thigh", "parent": "pelvis", "translation": [0, 0.1, 0],
                     "rotation": [0.0, -0.258819, 0.0, 0.9659258], "scale": thigh},
                    {"name": "shin", "parent": "thigh", "translation": [0.05, 0, -0.45],
                     "rotation": [0.0, 0.5, 0.0, 0.8660254], "scale": shin},
                    {"name": "foot", "parent": "shin", "translation": [0, 0.02, -0.45]}]

        def fk(bs, rots):
            from test_tree_skeleton import compose, trs
            out = []
            for b, q in zip(bs, rots):
                m = trs(b["translation"], q, b.get("scale", [1, 1, 1]))
                out.append(m if "parent" not in b else compose(out[-1], m))
            return out

        targets = [[0.25 * math.cos(a), 0.1 + 0.2 * math.sin(a), 0.45] for a in
                   (0.3 * k for k in range(12))]
        for sc, bad in ((([1, 1, 1], [1, 1.5, 0.7], [1, 1, 1]), 1),
                        (([1, 1.3, 1], [1, 1, 1], [1, 1, 1]), 0),
                        (([1, 1, 1], [1, 1, 1], [0.5, 2, 1]), None),
                        (([-2, -2, -2], [1, 1, 1], [1, 1, 1]), None),
                        (([1, 1, 1], [-1.2, 1.2, 1.2], [3, 1, 1]), None)):
            bs = bones(*sc)
            chain = {"kind": "skeleton", "bones": bs, "limb": ["thigh", "shin", "foot"]}
            for t in targets:
                status, text = self.d.http("POST", "/v1/solve",
                                           {"chain": chain, "target": {"position": t}})
                r = json.loads(text)
                if bad is not None:
                    self.assertEqual(status, 422, (sc, r))
                    self.assertEqual((r["error"]["code"], r["error"]["path"]),
                                     ("invalid_chain", "/chain/bones/%d/scale" % bad), r)
                    self.assertIn(bs[bad]["name"], r["error"]["message"])
                    break
                self.assertEqual(status, 200, r)
                g = fk(bs, r["rotations"])
                for k, p in zip((1, 2, 3), r["positions"]):
                    self.assertLess(dist(origin(g[k]), p), 1e-9, (sc, t, k))
                if r["status"] == "success":
                    self.assertLess(dist(origin(g[3]), t), 1e-9, (sc, t))

    # ---- servo -------------------------------------------------------------

    def test_servo_continuous_roll_nearest_turn(self):
        """The PR2's wrist roll (continuous) at 2.9 rad, sent the pose of
        -2.9 rad: the same pose as 2.9 + 0.48, so the arm turns 0.48 rad
        on, never 5.8 rad back, within its velocity limit every period."""
        chain = chain_of("pr2")
        roll = chain.dof - 1
        vel = [J.velocity for J in chain.movable]
        q0 = [0.5 * (J.upper + J.lower) if J.type != "continuous" else 0.3 for J in chain.movable]
        q0[roll] = 2.9
        goal = list(q0)
        goal[roll] = -2.9
        period = 0.01
        p, quat = chain.fk(goal)
        t = {"position": p, "orientation": quat}

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "s", "chain": chain.request(),
                                "seed": q0, "options": dict(OPTS, servo={"period_s": period})})
                self.assertEqual((await recv(ws))["type"], "opened")
                prev = q0
                for i in range(1000):
                    await send(ws, {"type": "target", "stream": "s", "seq": i, "target": t})
                    r = (await recv(ws))["result"]
                    self.assertEqual(r["status"], "success", r)
                    q = r["joints"]
                    for k in range(chain.dof):
                        self.assertLessEqual(abs(q[k] - prev[k]), vel[k] * period * (1 + 1e-9))
                    self.assertGreaterEqual(q[roll], prev[roll] - 1e-9, "the roll unwinds")
                    prev = q
                    if r["arrived"]:
                        break
                self.assertTrue(r["arrived"])
                # on the turn of 2.9 + 0.48 (the 7-joint arm may share a
                # little of the turn with the other joints), not of -2.9
                self.assertAlmostEqual(q[roll], 2 * math.pi - 2.9, delta=0.05)
                fp, fq = chain.fk(q)
                self.assertLessEqual(max(abs(a - b) for a, b in zip(fp, p)), POS_TOL)
                self.assertLessEqual(quat_angle(fq, quat), ROT_TOL)
                need = math.ceil((q[roll] - 2.9) / (vel[roll] * period) - 1e-9)
                self.assertLessEqual(i + 1, need + 2)
        run(body(), limit=60 * SLOW)

    def test_servo_from_past_a_limit(self):
        """An arm whose joint 1 reads 0.23 rad past its limit (a seed
        within a turn of the limits is taken): the first answer jumped
        the joint onto its limit, 0.24 rad in one 4 ms period (60 rad/s
        against a limit of 1.48), while max_joint_step reported 0.006.
        Each period now moves from where the arm is: the joint comes back
        inside at its velocity limit, every step within it and reported
        as it is, and the arm then goes on to the target."""
        chain = chain_of("iiwa")
        vel = [J.velocity for J in chain.movable]
        q0 = [0.2, 0.7, -0.2, -1.3, 0.3, 0.8, 0.1]
        seed = list(q0)
        seed[0] = chain.movable[0].upper + 0.23
        goal = list(q0)
        goal[0] = 2.5
        p, quat = chain.fk(goal)
        period = 0.004

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "s", "chain": chain.request(),
                                "seed": seed, "options": dict(OPTS, servo={"period_s": period})})
                self.assertEqual((await recv(ws))["type"], "opened")
                prev, inside = seed, False
                for i in range(1000):
                    await send(ws, {"type": "target", "stream": "s", "seq": i,
                                    "target": {"position": p, "orientation": quat}})
                    r = (await recv(ws))["result"]
                    self.assertEqual(r["status"], "success", r)
                    q = r["joints"]
                    step = largest_step(q, prev)
                    for k in range(chain.dof):
                        self.assertLessEqual(abs(q[k] - prev[k]), vel[k] * period * (1 + 1e-9),
                                             (i, k))
                    self.assertAlmostEqual(r["max_joint_step"], step, delta=1e-9)
                    # back inside, it stays inside
                    if inside:
                        self.assertTrue(chain.within_limits(q), (i, q))
                    inside = chain.within_limits(q)
                    tp, _ = chain.fk(q)
                    for a, b in zip(tp, r["tip"]["position"]):
                        self.assertAlmostEqual(a, b, delta=1e-9)
                    prev = q
                    if r["arrived"]:
                        break
                self.assertTrue(r["arrived"] and inside, r)
                fp, fq = chain.fk(q)
                self.assertLessEqual(max(abs(a - b) for a, b in zip(fp, p)), POS_TOL)
                self.assertLessEqual(quat_angle(fq, quat), ROT_TOL)
        run(body(), limit=60 * SLOW)

    # ---- hostile paths and servo options ------------------------------------

    def test_hostile_paths(self):
        wp = [{"position": [0.3, 0.6, 0.2]}, {"position": [-0.3, 0.5, 0.2]}]
        bones = {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}
        before = self.held()

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "h", "chain": bones})
                self.assertEqual((await recv(ws))["type"], "opened")

                async def refused(msg, code, path, raw=None):
                    await ws.send(raw if raw is not None else json.dumps(msg))
                    m = await recv(ws)
                    self.assertEqual(m["type"], "error", m)
                    self.assertEqual((m["error"]["code"], m["error"].get("path")), (code, path),
                                     m)
                    return m

                path = {"type": "path", "stream": "h", "seq": 1, "waypoints": wp}
                await refused(dict(path, waypoints=wp * 513), "too_large", "/waypoints")
                await refused(dict(path, waypoints=wp[:1]), "invalid_request", "/waypoints")
                await refused(dict(path, waypoints=[]), "invalid_request", "/waypoints")
                for rate in (0, -1, 1000.5, "60", None, True, 1e308):
                    m = await refused(dict(path, rate_hz=rate), "invalid_request", "/rate_hz")
                    self.assertEqual(m["seq"], 1)
                    self.assertIn("rate_hz", m["error"]["message"])
                for dur in (0, -0.5, "1", None, -1e308):
                    m = await refused(dict(path, duration_s=dur), "invalid_request",
                                      "/duration_s")
                    self.assertIn("duration_s", m["error"]["message"])
                for dur in (100.001, 1e308):
                    await refused(dict(path, rate_hz=1000, duration_s=dur), "too_large",
                                  "/duration_s")
                # not JSON: NaN and infinities have no JSON form
                for tok in ("NaN", "Infinity", "-Infinity", "1e400"):
                    await refused(None, "invalid_json", "",
                                  raw='{"type":"path","stream":"h","seq":1,"rate_hz":%s,'
                                      '"waypoints":[{"position":[0,0.5,0]},'
                                      '{"position":[0,0.6,0]}]}' % tok)
                bad = [{"position": [0.3, 0.6, 0.2]}, {"position": [0.1, "x", 0.2]}]
                await refused(dict(path, waypoints=bad), "invalid_request",
                              "/waypoints/1/position")
                mixed = [{"position": [0.3, 0.6, 0.2], "orientation": [0, 0, 0, 1]},
                         {"position": [0.1, 0.6, 0.2]}]
                await refused(dict(path, waypoints=mixed), "invalid_request", "/waypoints/1")
                # the largest path there is: 1024 waypoints, 100,000 samples,
                # replaced at once, then the stream closed
                big = [{"position": [0.3 + 0.0001 * i, 0.6, 0.2]} for i in range(1024)]
                await send(ws, dict(path, seq=2, waypoints=big, rate_hz=1000, duration_s=99.999))
                m = await recv(ws)
                self.assertEqual((m["type"], m["seq"], m["count"]), ("solution", 2, 100000), m)
                self.assertGreater(self.held(), before)
                await send(ws, dict(path, seq=3, rate_hz=1000, duration_s=0.01))
                seen = []
                while True:
                    m = await recv(ws)
                    seen.append(m)
                    if m["type"] == "path_end" and m["seq"] == 3:
                        break
                ends = [m for m in seen if m["type"] == "path_end"]
                self.assertEqual([(e["seq"], e["completed"]) for e in ends],
                                 [(2, False), (3, True)])
                await send(ws, {"type": "close", "stream": "h"})
                self.assertEqual((await recv(ws))["type"], "closed")
                # a path on the closed stream, and on one never opened
                for name in ("h", "never"):
                    m = await refused(dict(path, stream=name), "unknown_stream", "/stream")
                    self.assertIn(name, m["error"]["message"])
                self.assertEqual(self.held(), before)
        run(body(), limit=60 * SLOW)

    def test_hostile_servo(self):
        chain = chain_of("ur5")
        q0 = [0.3, -1.2, 1.4, -1.5, 1.2, 0.4]
        q1 = [0.8, -1.0, 1.1, -1.2, 1.0, 1.6]
        p, quat = chain.fk(q1)
        t = {"position": p, "orientation": quat}

        async def body():
            async with connect(self.d) as ws:
                async def opened(name, servo):
                    await send(ws, {"type": "open", "stream": name, "chain": chain.request(),
                                    "seed": q0, "options": dict(OPTS, servo=servo)})
                    return await recv(ws)

                for servo, path in (({"period_s": 0}, "/options/servo/period_s"),
                                    ({"period_s": -0.01}, "/options/servo/period_s"),
                                    ({"period_s": 2}, "/options/servo/period_s"),
                                    ({"period_s": "0.01"}, "/options/servo/period_s"),
                                    ({}, "/options/servo"),
                                    ({"period_s": 0.01, "velocity": [1] * 5},
                                     "/options/servo/velocity"),
                                    ({"period_s": 0.01, "velocity": [1, 1, 1, 1, 1, -1]},
                                     "/options/servo/velocity"),
                                    ({"period_s": 0.01, "velocity": [1, 1, 1, 1, 1, 0]},
                                     "/options/servo/velocity"),
                                    ({"period_s": 0.01, "velocity": [1e6] * 5 + ["x"]},
                                     "/options/servo/velocity"),
                                    ({"period_s": 0.01, "velocity": [1e308] * 6},
                                     "/options/servo/velocity"),
                                    ({"period_s": 0.01, "spin": 1}, "/options/servo")):
                    m = await opened("bad", servo)
                    self.assertEqual(m["type"], "error", (servo, m))
                    self.assertTrue(m["error"]["path"].startswith(path), (servo, m))
                # absurdly fast: the goal in one period, on the right pose
                m = await opened("fast", {"period_s": 1.0, "velocity": [1e6] * 6})
                self.assertEqual(m["type"], "opened", m)
                await send(ws, {"type": "target", "stream": "fast", "seq": 1, "target": t})
                r = (await recv(ws))["result"]
                self.assertEqual((r["status"], r["arrived"]), ("success", True), r)
                fp, fq = chain.fk(r["joints"])
                self.assertLessEqual(max(abs(a - b) for a, b in zip(fp, p)), POS_TOL)
                self.assertLessEqual(quat_angle(fq, quat), ROT_TOL)
                # absurdly slow (a limit times the period below the smallest
                # double): the arm holds, finite, never arrived
                m = await opened("slow", {"period_s": 1e-300, "velocity": [1e-300] * 6})
                self.assertEqual(m["type"], "opened", m)
                for i in range(3):
                    await send(ws, {"type": "target", "stream": "slow", "seq": i, "target": t})
                    r = (await recv(ws))["result"]
                    self.assertFalse(r["arrived"], r)
                    self.assertTrue(all(math.isfinite(x) for x in r["joints"]), r)
                    self.assertLessEqual(largest_step(r["joints"], q0), 1e-12, r)
                    self.assertGreater(r["position_error"], 0.1)
        run(body(), limit=60 * SLOW)



class BusyPoolTest(unittest.TestCase):
    """One solver thread, kept busy by a batch over HTTP, so that a
    path's sample waits on the pool while the client's next message cuts
    the path: that sample's solve, when it ends, is discarded, and what
    the stream was asked meanwhile must still be done. It was not: the
    target that cut the path was answered only when the client sent
    something more, the new path never started, "closed" never came."""

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--threads", "1")
        cls.chain = chain_of("iiwa")
        q = CENTRES["iiwa"]
        cls.q0 = q
        cls.pose = dict(zip(("position", "orientation"), cls.chain.fk(q)))
        q2 = [x + 0.05 for x in q]
        cls.pose2 = dict(zip(("position", "orientation"), cls.chain.fk(q2)))

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    async def cut_while_queued(self, cut, until):
        """Opens an iiwa stream, fills the pool with a batch (about a
        second of solving), sends a path whose first sample queues behind
        it, then cut (a message); returns the messages that follow, up to
        one of (type, seq) until, each within TIMEOUT_AFTER_BATCH."""
        import threading
        done = []

        def batch():
            # unreachable (the tool down at the top of the reach): every
            # solve runs its whole 10 ms budget
            self.d.http("POST", "/v1/solve/batch", {
                "chain": self.chain.request(),
                "targets": [{"position": [0, 0, 1.25], "orientation": [1, 0, 0, 0]}] * 100,
                "options": {"timeout_ms": 10}})
            done.append(True)

        async with connect(self.d) as ws:
            await send(ws, {"type": "open", "stream": "a", "chain": self.chain.request(),
                            "seed": self.q0, "options": OPTS})
            self.assertEqual((await recv(ws))["type"], "opened")
            th = threading.Thread(target=batch)
            th.start()
            try:
                await asyncio.sleep(0.3)  # the batch is on the pool
                self.assertFalse(done, "the batch ended too soon to hold the pool")
                await send(ws, {"type": "path", "stream": "a", "seq": 1, "rate_hz": 10,
                                "duration_s": 5, "waypoints": [self.pose, self.pose2]})
                await send(ws, cut)
                out = []
                while True:
                    m = await recv(ws, timeout=TIMEOUT_AFTER_BATCH)
                    out.append(m)
                    if (m["type"], m.get("seq")) == until:
                        return out
            finally:
                th.join()

    def test_target_cutting_a_queued_sample_is_answered(self):
        async def body():
            out = await self.cut_while_queued({"type": "target", "stream": "a", "seq": 2,
                                               "target": self.pose2},
                                              ("solution", 2))
            types = [(m["type"], m["seq"]) for m in out]
            self.assertEqual(types[-2:], [("path_end", 1), ("solution", 2)], types)
            p, quat = self.chain.fk(out[-1]["result"]["joints"])
            self.assertLessEqual(max(abs(a - b) for a, b in zip(p, self.pose2["position"])),
                                 POS_TOL)
        run(body(), limit=60 * SLOW)

    def test_path_replacing_a_queued_sample_runs(self):
        async def body():
            out = await self.cut_while_queued({
                "type": "path", "stream": "a", "seq": 3, "rate_hz": 50, "duration_s": 0.2,
                "waypoints": [self.pose2, self.pose]}, ("path_end", 3))
            ends = [(m["seq"], m["completed"]) for m in out if m["type"] == "path_end"]
            self.assertEqual(ends, [(1, False), (3, True)])
            self.assertEqual([m["index"] for m in out if m.get("seq") == 3 and "index" in m],
                             list(range(11)))
        run(body(), limit=60 * SLOW)

    def test_close_while_a_sample_is_queued_is_answered(self):
        async def body():
            out = await self.cut_while_queued({"type": "close", "stream": "a"}, ("closed", None))
            self.assertEqual([m["type"] for m in out][-2:], ["path_end", "closed"])
        run(body(), limit=60 * SLOW)


if __name__ == "__main__":
    unittest.main()

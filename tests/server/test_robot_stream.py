"""
test_robot_stream.py: streams as a robot controller uses them, over the
real daemon ($IKD_BIN on 127.0.0.1 port 0) with python3-websockets.

Every answer is checked by forward kinematics computed here from the URDF
(robot_chain.py, independent of ikd), inside the joint limits. Covered:
  - smooth joint-space motions (sinusoids inside the limits, 300 steps),
    turned into full poses by FK and streamed one target at a time on the
    KUKA iiwa 14, the Franka Panda, the UR5 and the PR2's right arm (whose
    forearm and wrist rolls are continuous, swept 2.5 and 3.2 rad either
    side: fast enough, the second, that the elbow's swivel used to drift
    the wrist flex onto its limit), each stream opened with the
    start configuration as its seed: the first answer is that configuration,
    no joint step exceeds 3 times the motion's own largest step, and no
    answer jumps by a whole turn;
  - a continuous joint swept through +-pi and beyond comes back monotonic;
  - a target's seed re-synchronises a stream (the arm moved by other means);
  - max_joint_step on a stream refuses a larger step with joint_step;
  - a wrong seed at open or on a target is an error naming /seed;
  - servo streams (options.servo): no joint ever moves more than its
    velocity limit (the URDF's, or given per joint) times the period, a
    reachable target is reached in the expected number of periods and
    answered "arrived", a target across the UR5's wrist singularity is
    approached without a jump, and servo is refused over HTTP, without a
    seed, or without velocity limits.
Robots come from $IKD_DATA (tests/run.sh sets it, default tests/data).
"""
import asyncio
import math
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from robot_chain import Chain, quat_angle  # noqa: E402
from test_stream import SLOW, Daemon, connect, recv, run, send  # noqa: E402

IKD_DATA = os.environ.get("IKD_DATA", "tests/data")
ROBOTS = os.path.join(IKD_DATA, "robots")

POS_TOL = 1e-4   # the daemon checks 1e-5 per component; FK here differs in rounding only
ROT_TOL = 1e-4


def chain_of(name):
    return {
        "iiwa": Chain(os.path.join(ROBOTS, "kuka_iiwa14_r820.urdf"), "base_link", "tool0"),
        "iiwa_singular": Chain(os.path.join(ROBOTS, "kuka_iiwa14_r820.urdf"), "base_link",
                               "tool0"),
        "panda": Chain(os.path.join(ROBOTS, "franka_panda.urdf"), "panda_link0", "panda_link8"),
        "ur5": Chain(os.path.join(ROBOTS, "ur5.urdf"), "base_link", "tool0"),
        "pr2": Chain(os.path.join(ROBOTS, "pr2.urdf"), "torso_lift_link", "r_wrist_roll_link"),
    }[name]


# Working poses the motions run around, away from the arms' singular
# configurations (the iiwa's and the Panda's joints 2 and 6 at zero line
# two axes up; a stretched elbow is the edge of the workspace); None: the
# middle of the limits.
CENTRES = {
    "iiwa": [0.2, 0.7, -0.2, -1.3, 0.3, 0.8, 0.1],
    "panda": [0.1, -0.4, 0.1, -2.0, 0.1, 1.7, 0.7],
    # joints 2 and 6 at zero: the iiwa's two aligned-axes singularities
    "iiwa_singular": [0.2, 0.0, -0.2, -1.3, 0.3, 0.0, 0.1],
}


def motion(chain, steps, amp=0.25, spin=2.5, phase=0.0, centre=None):
    """A smooth closed joint-space motion: each joint a sinusoid around
    `centre` (default the middle of its limits) with `amp` of its half range
    (at most 0.3 rad for the arms' working poses; continuous joints +-`spin`
    radians around 0.3), each at its own frequency."""
    out = []
    for i in range(steps + 1):
        q = []
        for k, J in enumerate(chain.movable):
            w = 2 * math.pi * i / steps * (1 + 0.5 * (k % 3)) + phase + 0.7 * k
            if J.type == "continuous":
                q.append(0.3 + spin * math.sin(w))
            else:
                half = 0.5 * min(J.upper - J.lower, 2 * math.pi)
                if centre is not None:
                    q.append(centre[k] + min(amp * half, 0.3) * math.sin(w))
                else:
                    q.append(0.5 * (J.upper + J.lower) + amp * half * math.sin(w))
        out.append(q)
    return out


def largest_step(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


class RobotStreamTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def check_answer(self, chain, r, target, per_radian=1.0):
        self.assertEqual(r["status"], "success", r)
        q = [x / per_radian for x in r["joints"]]
        self.assertTrue(chain.within_limits(q), q)
        p, quat = chain.fk(q)
        for a, b in zip(p, target["position"]):
            self.assertLess(abs(a - b), POS_TOL, (p, target))
        self.assertLess(quat_angle(quat, target["orientation"]), ROT_TOL)
        return q

    async def stream_motion(self, ws, chain, name, qs, options=None):
        """Streams FK(qs[i]) one at a time on a stream opened with qs[0] as
        its seed; returns the answers' joints."""
        # a generous time budget: the machine may be shared, and a solve
        # preempted past the default 5 ms would answer timed_out
        msg = {"type": "open", "stream": name, "chain": chain.request(), "seed": qs[0],
               "options": dict(options or {}, timeout_ms=100)}
        await send(ws, msg)
        m = await recv(ws)
        self.assertEqual(m["type"], "opened", m)
        answers = []
        for i, q in enumerate(qs):
            p, quat = chain.fk(q)
            t = {"position": p, "orientation": quat}
            await send(ws, {"type": "target", "stream": name, "seq": i, "target": t})
            m = await recv(ws)
            self.assertEqual((m["type"], m["seq"]), ("solution", i), m)
            answers.append(self.check_answer(chain, m["result"], t))
            if i > 0:
                self.assertIn("max_joint_step", m["result"])
        return answers

    def check_continuity(self, chain, qs, answers):
        own = max(largest_step(a, b) for a, b in zip(qs, qs[1:]))
        # the first answer is the arm's own configuration (the open seed)
        self.assertLess(largest_step(answers[0], qs[0]), 1e-3)
        worst = 0.0
        for i in range(1, len(answers)):
            step = largest_step(answers[i], answers[i - 1])
            worst = max(worst, step)
            if os.environ.get("IKD_TEST_DEBUG") and step > 2 * own:
                print("step %d: %.4f (motion %.4f)" % (i, step, own), file=sys.stderr)
            for k in range(chain.dof):
                if chain.periodic(k):
                    self.assertLess(abs(answers[i][k] - answers[i - 1][k]), math.pi,
                                    "a whole-turn jump at step %d joint %d" % (i, k))
        self.assertLessEqual(worst, 3 * own, "largest step %.4f, the motion's %.4f" % (worst, own))

    def smooth(self, robot, **kw):
        chain = chain_of(robot)
        qs = motion(chain, 300, centre=CENTRES.get(robot), **kw)

        async def body():
            async with connect(self.d) as ws:
                answers = await self.stream_motion(ws, chain, robot, qs)
                self.check_continuity(chain, qs, answers)
        run(body(), limit=120)

    def test_smooth_iiwa14(self):
        self.smooth("iiwa")

    def test_smooth_panda(self):
        self.smooth("panda")

    def test_smooth_ur5(self):
        self.smooth("ur5")

    def test_smooth_iiwa14_through_singular_centre(self):
        """Issue 10: the iiwa's motion centred where joints 2 and 6 are zero
        (axes 1 and 3, and 5 and 7, line up there), the region the other
        tests keep away from: the rule is no step above 3 times the
        motion's own. The targets are poses, so the part of the motion in
        the arm's null space is invisible: with the nearest solution alone
        the answers drifted from the motion's configurations, passing near
        the aligned axes swept joints 1 and 3 at up to 5.3 times the
        motion's step, and the drift carried joints 5 and 7 onto their
        limits, where a restart answered 2.89 rad away (step 277). Stream
        solves now follow the motion (solver/ik_numeric.h, FOLLOWING A
        MOTION): the self-motion is steered towards the configurations
        that reach the next pose with the smallest step, and off the
        limits (largest step 1.9 times the motion's, no restart)."""
        self.smooth("iiwa_singular")

    def test_smooth_pr2_continuous_rolls(self):
        self.smooth("pr2", amp=0.2, spin=2.5)

    def test_smooth_pr2_fast_rolls(self):
        """The PR2's forearm and wrist rolls swept 3.2 rad either side of
        0.3: the elbow's swivel (the arm's one spare freedom; the targets
        place the wrist's centre with the first four joints) drifted with
        the fast rolls, answer after answer, until the wrist flex sat on
        its upper limit, 0, the wrist's singularity, where the next target
        was met only with both rolls turned by pi: one answer jumped 1.4
        rad after ten restarts (step 276, 13 times the motion's step).
        Stream solves now also draw the self-motion towards the middle of
        the joint ranges (solver/ik_numeric.c, MID_PULL): every answer by
        FK, no step above 3 times the motion's own."""
        self.smooth("pr2", amp=0.2, spin=3.2)

    def test_ur5_seed_a_turn_up(self):
        """UR5 joints range over +-2 pi: a stream whose arm is a whole turn up
        on its last joint is answered on that turn."""
        chain = chain_of("ur5")
        qs = motion(chain, 300)
        for q in qs:  # joint 6 within [-0.79, 0.79] moved to [4.7, 6.27]
            q[5] += 2 * math.pi - 0.8

        async def body():
            async with connect(self.d) as ws:
                answers = await self.stream_motion(ws, chain, "ur5up", qs)
                for a, q in zip(answers, qs):
                    self.assertLess(abs(a[5] - q[5]), math.pi)
        run(body(), limit=120)

    def test_continuous_sweep_monotonic(self):
        """The PR2's wrist roll swept from -4 to +4 rad (through +-pi), the
        rest of the arm still: the answers rise monotonically."""
        chain = chain_of("pr2")
        base = [0.5 * (J.upper + J.lower) if J.type != "continuous" else 0.3 for J in chain.movable]
        roll = chain.dof - 1
        qs = []
        for i in range(301):
            q = list(base)
            q[roll] = -4.0 + 8.0 * i / 300
            qs.append(q)

        async def body():
            async with connect(self.d) as ws:
                answers = await self.stream_motion(ws, chain, "sweep", qs)
                for a, b in zip(answers, answers[1:]):
                    self.assertGreater(b[roll], a[roll])
                self.assertLess(abs(answers[-1][roll] - 4.0), math.pi)  # the motion's turn
        run(body(), limit=120)

    def test_seed_on_target_resyncs(self):
        """After the arm moved by other means, a target with a seed starts
        from there: the answer is next to that seed, not to the previous
        answer."""
        chain = chain_of("iiwa")
        qa = [0.3, 0.5, -0.2, -1.2, 0.4, 0.8, 0.1]
        qb = [-0.9, -0.4, 0.6, -1.6, -0.5, 1.1, -0.7]

        async def body():
            async with connect(self.d) as ws:
                await self.stream_motion(ws, chain, "r", [qa])
                p, quat = chain.fk(qb)
                t = {"position": p, "orientation": quat}
                await send(ws, {"type": "target", "stream": "r", "seq": 9, "target": t,
                                "seed": qb})
                m = await recv(ws)
                q = self.check_answer(chain, m["result"], t)
                self.assertLess(largest_step(q, qb), 1e-3)
                self.assertLess(m["result"]["max_joint_step"], 1e-3)
        run(body())

    def test_max_joint_step_on_stream(self):
        """max_joint_step 0.05 rad: small steps are answered, a jump is
        refused with joint_step and the previous configuration."""
        chain = chain_of("iiwa")
        q0 = [0.3, 0.5, -0.2, -1.2, 0.4, 0.8, 0.1]
        q1 = [x + 0.01 for x in q0]
        q2 = [x + 0.5 for x in q0]

        async def body():
            async with connect(self.d) as ws:
                answers = await self.stream_motion(ws, chain, "m", [q0, q1],
                                                   options={"max_joint_step": 0.05})
                p, quat = chain.fk(q2)
                await send(ws, {"type": "target", "stream": "m", "seq": 5,
                                "target": {"position": p, "orientation": quat}})
                m = await recv(ws)
                r = m["result"]
                self.assertEqual((r["status"], r["code"], r["reason"]),
                                 ("no_ik_solution", -31, "joint_step"))
                self.assertLess(largest_step(r["joints"], answers[-1]), 1e-9)
                # the step reported is the one refused (about 0.5 rad), not
                # the zero step of the joints returned
                self.assertGreater(r["max_joint_step"], 0.05)
                self.assertGreater(r["max_joint_step"], 0.3)
        run(body())

    async def servo_to(self, ws, chain, name, q0, goal_q, period, vel, units_deg=False,
                       velocity=None, limit_periods=2000):
        """Opens a servo stream at q0 and sends FK(goal_q) once per period
        until an answer says arrived; checks every step against vel * period
        (vel in rad/s) and every answer's pose by FK; returns (periods,
        answers)."""
        k = 180 / math.pi if units_deg else 1.0
        opts = {"servo": {"period_s": period}, "timeout_ms": 100}
        if velocity is not None:
            opts["servo"]["velocity"] = velocity
        if units_deg:
            opts["units"] = "degrees"
        await send(ws, {"type": "open", "stream": name, "chain": chain.request(),
                        "seed": [x * k for x in q0], "options": opts})
        m = await recv(ws)
        self.assertEqual(m["type"], "opened", m)
        p, quat = chain.fk(goal_q)
        t = {"position": p, "orientation": quat}
        prev, answers = list(q0), []
        for i in range(limit_periods):
            await send(ws, {"type": "target", "stream": name, "seq": i, "target": t})
            m = await recv(ws)
            r = m["result"]
            self.assertEqual(r["status"], "success", r)
            q = [x / k for x in r["joints"]]
            self.assertTrue(chain.within_limits(q))
            for j in range(chain.dof):
                self.assertLessEqual(abs(q[j] - prev[j]), vel[j] * period * (1 + 1e-9) + 1e-12,
                                     "joint %d moved %.6f in one period" % (j, abs(q[j] - prev[j])))
            # the answer's tip is where these joints put it
            tp, _ = chain.fk(q)
            for a, b in zip(tp, r["tip"]["position"]):
                self.assertAlmostEqual(a, b, delta=1e-6)
            answers.append(q)
            prev = q
            if r["arrived"]:
                self.check_answer(chain, r, t, per_radian=k)
                return i + 1, answers
        self.fail("never arrived")

    def test_servo_reaches_within_velocity(self):
        chain = chain_of("ur5")
        vel = [J.velocity for J in chain.movable]
        q0 = [0.3, -1.2, 1.4, -1.5, 1.2, 0.4]
        q1 = [0.8, -1.0, 1.1, -1.2, 1.0, 1.6]
        period = 0.01

        async def body():
            async with connect(self.d) as ws:
                n, answers = await self.servo_to(ws, chain, "servo", q0, q1, period, vel)
                expect = max(math.ceil(abs(b - a) / (v * period) - 1e-9)
                             for a, b, v in zip(q0, q1, vel))
                self.assertIn(n, (expect, expect + 1), (n, expect))
                # given per joint, in degrees per second: half the speed
                half = [v / 2 for v in vel]
                n2, _ = await self.servo_to(ws, chain, "servo2", q0, q1, period, half,
                                            units_deg=True,
                                            velocity=[v * 180 / math.pi for v in half])
                self.assertIn(n2, (2 * expect - 1, 2 * expect, 2 * expect + 1), (n2, expect))
        run(body(), limit=120)

    def test_servo_across_wrist_singularity(self):
        """Joint 5 of the UR5 from 0.4 to -0.4 (through the wrist singularity
        at 0, where joints 4 and 6 line up): bounded steps all the way."""
        chain = chain_of("ur5")
        vel = [J.velocity for J in chain.movable]
        q0 = [0.2, -1.3, 1.5, -1.6, 0.4, 0.3]
        q1 = [0.3, -1.2, 1.4, -1.5, -0.4, 0.9]

        period = 0.004

        async def body():
            async with connect(self.d) as ws:
                n, answers = await self.servo_to(ws, chain, "sing", q0, q1, period, vel)
                # arrived on the target configuration's own branch (the
                # answer, checked by FK in servo_to, is q1 itself, not its
                # wrist-flipped twin), in the periods the slowest joint needs
                for a, b in zip(answers[-1], q1):
                    self.assertAlmostEqual(a, b, delta=1e-4)  # its twin is pi away
                expect = max(math.ceil(abs(b - a) / (v * period) - 1e-9)
                             for a, b, v in zip(q0, q1, vel))
                self.assertIn(n, (expect, expect + 1), (n, expect))
                # a smooth profile: every joint moves monotonically towards
                # q1 (no reversal, however near the singular q5 = 0 it
                # passes), and the joint that sets the pace moves at its
                # velocity limit every period but the last (no slow-down
                # or spike on the way)
                path = [q0] + answers
                for j in range(chain.dof):
                    sense = math.copysign(1.0, q1[j] - q0[j])
                    for a, b in zip(path, path[1:]):
                        self.assertGreaterEqual((b[j] - a[j]) * sense, -1e-9,
                                                "joint %d reversed" % j)
                pace = max(range(chain.dof), key=lambda j: abs(q1[j] - q0[j]) / vel[j])
                steps = [abs(b[pace] - a[pace]) for a, b in zip(path, path[1:])]
                for st in steps[:-1]:
                    self.assertAlmostEqual(st, vel[pace] * period, delta=1e-9)
                self.assertLessEqual(steps[-1], vel[pace] * period + 1e-9)
        run(body(), limit=120)

    def test_servo_refusals(self):
        chain = chain_of("ur5")
        status, text = self.d.http("POST", "/v1/solve", {
            "chain": chain.request(), "target": {"position": [0.4, 0.1, 0.4]},
            "seed": [0] * 6, "options": {"servo": {"period_s": 0.01}}})
        self.assertEqual(status, 400, text)
        self.assertIn("/options/servo", text)

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "a", "chain": chain.request(),
                                "options": {"servo": {"period_s": 0.01}}})
                m = await recv(ws)
                self.assertEqual((m["type"], m["error"]["path"]), ("error", "/seed"), m)
                joints = {"kind": "joints", "joints": [
                    {"name": "a", "type": "revolute", "axis": [0, 0, 1],
                     "limits": {"lower": -1, "upper": 1}},
                    {"name": "t", "type": "fixed", "origin": {"xyz": [0.1, 0, 0]}}]}
                await send(ws, {"type": "open", "stream": "b", "chain": joints, "seed": [0],
                                "options": {"servo": {"period_s": 0.01}}})
                m = await recv(ws)
                self.assertEqual((m["type"], m["error"]["path"]),
                                 ("error", "/options/servo/velocity"), m)
                await send(ws, {"type": "open", "stream": "b", "chain": joints, "seed": [0],
                                "options": {"servo": {"period_s": 0.01, "velocity": [1.0]}}})
                self.assertEqual((await recv(ws))["type"], "opened")
        run(body())

    def test_path_1000hz_on_schedule(self):
        """A 1000 Hz path of 301 samples on a two-bone leg (microsecond
        solves): every sample answered in order, path_end counting them, and
        none skipped unless the daemon really was behind. ikd skips only a
        sample more than 100 ms late (proto/STREAM.md); this client measures
        how late each solution arrived against the schedule counted from
        when it sent the path (ikd's own clock starts later, and a solution
        is sent before it arrives, so the lateness seen here is at least
        ikd's). Never 100 ms late here means nothing may be skipped; a
        machine that stalled the daemon beyond that (seen here) excuses
        the skips it caused, as do sanitizer builds (SLOW)."""
        bones = {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}
        rate = 1000.0

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "p", "chain": bones})
                self.assertEqual((await recv(ws))["type"], "opened")
                t_send = time.monotonic()
                await send(ws, {"type": "path", "stream": "p", "seq": 1, "rate_hz": rate,
                                "duration_s": 0.3,
                                "waypoints": [{"position": [0.3, 0.6, 0.2]},
                                              {"position": [-0.3, 0.5, 0.2]}]})
                indices, skipped, late = [], 0, 0.0
                while True:
                    m = await recv(ws)
                    now = time.monotonic()
                    if m["type"] == "path_end":
                        break
                    self.assertEqual(m["result"]["status"], "success")
                    indices.append(m["index"])
                    skipped += m["skipped"]
                    late = max(late, now - (t_send + m["index"] / rate))
                self.assertEqual(indices, sorted(indices))
                self.assertEqual(indices[-1], 300)
                self.assertEqual((m["sent"], m["skipped"], m["count"]), (len(indices), skipped, 301))
                self.assertEqual(m["sent"] + m["skipped"], 301)
                if SLOW > 1:
                    self.assertLessEqual(skipped, 15, "skipped %d of 301" % skipped)
                elif late < 0.1:
                    self.assertEqual(skipped, 0, "skipped %d of 301 although never more than "
                                     "%.1f ms behind" % (skipped, late * 1e3))
                else:
                    # the daemon was stalled past the lag window: skips are
                    # what it is for, but only as many as the stall explains
                    self.assertLessEqual(skipped, int(late * rate) + 1,
                                         "skipped %d, %.1f ms behind" % (skipped, late * 1e3))
        run(body())

    def test_bad_seeds(self):
        chain = chain_of("iiwa")

        async def body():
            async with connect(self.d) as ws:
                await send(ws, {"type": "open", "stream": "b", "chain": chain.request(),
                                "seed": [0, 0, 0]})
                m = await recv(ws)
                self.assertEqual((m["type"], m["error"]["path"]), ("error", "/seed"), m)
                await send(ws, {"type": "open", "stream": "b", "chain": chain.request(),
                                "seed": [0] * 7})
                self.assertEqual((await recv(ws))["type"], "opened")
                await send(ws, {"type": "target", "stream": "b", "seq": 1,
                                "target": {"position": [0.5, 0, 0.6]}, "seed": [0, "x"]})
                m = await recv(ws)
                self.assertEqual((m["type"], m["seq"]), ("error", 1), m)
                self.assertTrue(m["error"]["path"].startswith("/seed"), m)
        run(body())


if __name__ == "__main__":
    unittest.main()

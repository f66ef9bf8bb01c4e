"""
test_scenes.py: registered scenes (POST /v1/scenes, "scene_id"; issue 21)
on the real daemon ($IKD_BIN on 127.0.0.1 port 0), over HTTP and
WebSocket (proto/README.md "Registered scenes", proto/STREAM.md
"Scenes").

The robot, its sphere model and the scene (a pillar, a plank, a shelf) are
test_collide.py's, and so is the geometry every answer is checked with
(forward kinematics from the URDF, each sphere placed in its link, signed
distances to boxes written for the test, not ikd's). Covered:
  - registration: 201 with a 32-digit id and Location, the same scene again
    (even written differently: key order, 1 for 1.0, an identity
    orientation, empty lists, "frame": "ros") 200 with the same id,
    GET describes it (counts, frame, bytes), ?include=source gives the
    scene back, another include is refused;
  - a scene registered in Unity's frame is the same world: answers in
    ROS's frame have the geometry's min_distance with the ROS scene (the
    plank's rotation and the boxes' sizes converted);
  - solves by scene_id with avoid_collisions: every success clear by the
    margin by the geometry here, min_distance the geometry's, and without
    avoid_collisions some answers collide (the check can fail);
  - batches: JSON targets, items (one item by scene_id, one with an
    inline scene: items with scenes were untested), and the binary form
    with scene and with scene_id in its head;
  - errors: an unknown id 404 unknown_scene at /scene_id, scene beside
    scene_id 400 at /scene_id, a bad registration 400 with its path, DELETE
    then GET, solve and DELETE 404;
  - a stream opened by scene_id, then a scene message by scene_id moving an
    obstacle onto the arm: answers clear of the moved one; DELETE of that
    scene while the stream uses it: the stream keeps it (its reference);
    an unknown id and scene beside scene_id refused with their paths;
  - --registry-bytes counts scene bytes (ikd_held_bytes{what="registry"}
    grows by the description's "memory_bytes"), scenes are evicted least recently
    used with chains, and a scene larger than the bound is 413;
  - a registration of more than 64 KiB (decoded on the pool);
  - the same registered scene sent again and again while a target waits.
"""
import asyncio
import json
import math
import os
import random
import re
import struct
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_collide import MARGIN, ROBOT, TOL, placed_spheres  # noqa: E402
from test_stream import TIMEOUT, Daemon, RawWS, connect, frame, recv, run, send  # noqa: E402

BINARY = "application/vnd.ikd.batch"
AVOID = {"timeout_ms": 0, "max_iterations": 10000, "avoid_collisions": True,
         "collision_margin": MARGIN}


def to_unity(scene):
    """The scene written in Unity's convention (p_ros = (z, -x, y)): points
    (-y, z, x), sides permuted, quaternions' vector part (y, -z, -x)."""
    out = {"frame": "unity", "boxes": []}
    for b in scene["boxes"]:
        px, py, pz = b["position"]
        sx, sy, sz = b["size"]
        qx, qy, qz, qw = b.get("orientation", [0, 0, 0, 1])
        out["boxes"].append({"name": b["name"], "position": [-py, pz, px],
                             "size": [sy, sz, sx], "orientation": [qy, -qz, -qx, qw]})
    return out


def post_raw(d, path, data, content_type):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (d.port, path), data=data,
                                 method="POST", headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def binary_request(head, positions, orientations):
    h = json.dumps(head).encode()
    b = b"IKDB" + struct.pack("<HHII", 1, 1, len(h), len(positions)) + h
    b += b"\0" * (-len(b) % 8)
    for p, o in zip(positions, orientations):
        b += struct.pack("<3d", *p) + struct.pack("<4d", *o)
    return b


def held_registry(d):
    st, text = d.http("GET", "/metrics")
    m = re.search(r'^ikd_held_bytes\{what="registry"\} (\S+)$', text, re.M)
    return float(m.group(1))


class ScenesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        st, text = cls.d.http("POST", "/v1/chains", ROBOT.request)
        assert st in (200, 201), (st, text)
        cls.chain_id = json.loads(text)["id"]
        st, text = cls.d.http("POST", "/v1/scenes", ROBOT.scene)
        assert st in (200, 201), (st, text)
        cls.scene = json.loads(text)
        cls.rng = random.Random(2121)
        cls.targets = ROBOT.targets(16, cls.rng)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def solve(self, target, options, **member):
        req = dict({"chain_id": self.chain_id, "target": target, "options": options}, **member)
        st, text = self.d.http("POST", "/v1/solve", req)
        self.assertEqual(st, 200, text)
        return json.loads(text)

    def check_answer(self, a, target, avoid, scene=None):
        """min_distance the geometry's (with scene, default the robot's), a
        success on the target, and with avoid clear by the margin."""
        q = a["joints"]
        (d, _, _), s = ROBOT.distances(q, scene)
        self.assertAlmostEqual(a["min_distance"], min(d, s), delta=TOL)
        if a["status"] == "success":
            p, _ = ROBOT.chain.fk(q)
            self.assertLess(math.dist(p, target["position"]), 1e-4)
            if avoid:
                self.assertGreaterEqual(min(d, s), MARGIN - TOL, a)
        return min(d, s)

    def error(self, st, text, status, code, path):
        self.assertEqual(st, status, text)
        e = json.loads(text)["error"]
        self.assertEqual((e["code"], e["path"]), (code, path), e)

    def test_registration(self):
        sid = self.scene["id"]
        self.assertRegex(sid, "^[0-9a-f]{32}$")
        self.assertEqual((self.scene["boxes"], self.scene["spheres"], self.scene["capsules"],
                          self.scene["obstacles"], self.scene["frame"]), (3, 0, 0, 3, "ros"))
        self.assertGreater(self.scene["memory_bytes"], 0)
        self.assertNotIn("scene", self.scene)
        # the same scene written otherwise: the same id, 200, Location
        again = json.loads(json.dumps(ROBOT.scene))
        again["boxes"][0]["position"] = [0.45, -0.35, 0.75]
        again["boxes"] = [dict(reversed(list(b.items()))) for b in again["boxes"]]
        again["boxes"][2]["orientation"] = [0, 0, 0, 1.0]
        req = urllib.request.Request("http://127.0.0.1:%d/v1/scenes" % self.d.port,
                                     data=json.dumps(again).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            self.assertEqual(r.status, 200)
            self.assertEqual(r.headers["Location"], "/v1/scenes/" + sid)
            self.assertEqual(json.loads(r.read())["id"], sid)
        st, text = self.d.http("GET", "/v1/scenes/" + sid)
        self.assertEqual(st, 200, text)
        self.assertEqual(json.loads(text), self.scene)
        st, text = self.d.http("GET", "/v1/scenes/%s?include=source" % sid)
        self.assertEqual(st, 200, text)
        src = json.loads(text)["scene"]
        for got, want in zip(src["boxes"], ROBOT.scene["boxes"]):
            self.assertEqual(got["name"], want["name"])
            for k in ("size", "position", "orientation"):
                # canonical: an orientation without rotation is left out
                self.assertEqual([float(v) for v in got.get(k, [0, 0, 0, 1])],
                                 [float(v) for v in want[k]])
        self.assertNotIn("orientation", src["boxes"][0])
        # equal worlds, one id: empty lists and defaults are left out
        st, text = self.d.http("POST", "/v1/scenes", {})
        self.assertIn(st, (200, 201), text)
        empty = json.loads(text)["id"]
        self.assertNotEqual(empty, sid)
        for same in ({"spheres": []}, {"frame": "ros", "boxes": [], "capsules": []}):
            st, text = self.d.http("POST", "/v1/scenes", same)
            self.assertEqual((st, json.loads(text)["id"]), (200, empty), (same, text))
        st, text = self.d.http("GET", "/v1/scenes/%s?include=source" % empty)
        self.assertEqual(json.loads(text)["scene"], {}, text)
        st, text = self.d.http("GET", "/v1/scenes/%s?include=chain" % sid)
        self.assertEqual(st, 400, text)
        # a scene's id names no chain
        st, text = self.d.http("GET", "/v1/chains/" + sid)
        self.error(st, text, 404, "unknown_chain", "")

    def test_bad_registrations(self):
        st, text = self.d.http("POST", "/v1/scenes", {"spheres": [
            {"radius": -1, "position": [0, 0, 0]}]})
        self.error(st, text, 400, "invalid_request", "/spheres/0/radius")
        st, text = self.d.http("POST", "/v1/scenes", {"boxes": [], "frame": "left"})
        self.error(st, text, 400, "invalid_request", "/frame")
        st, text = self.d.http("POST", "/v1/scenes", {"walls": []})
        self.error(st, text, 400, "invalid_request", "/walls")
        st, text = self.d.http("POST", "/v1/scenes", [1, 2])
        self.error(st, text, 400, "invalid_request", "")
        st, text = self.d.http("POST", "/v1/scenes", {"spheres": [
            {"radius": 0.01, "position": [0, 0, i * 0.01]} for i in range(257)]})
        self.error(st, text, 413, "too_large", "/spheres")

    def test_large_body_on_the_pool(self):
        """A registration over 64 KiB is decoded on the pool: the same
        scene spaced otherwise has the same id, and it is used by id."""
        rng = random.Random(3)
        big = {"spheres": [{"name": "s%03d_%s" % (i, "x" * 56), "radius": 0.01,
                            "position": [rng.uniform(2, 3), rng.uniform(2, 3),
                                         rng.uniform(2, 3)]} for i in range(255)]}
        big["boxes"] = ROBOT.scene["boxes"][:1]
        text = json.dumps(big, indent=8)
        self.assertGreater(len(text), 65536)
        st, body = post_raw(self.d, "/v1/scenes", text.encode(), "application/json")
        self.assertEqual(st, 201, body)
        desc = json.loads(body)
        self.assertEqual((desc["obstacles"], desc["spheres"]), (256, 255))
        st, body = self.d.http("POST", "/v1/scenes", big)
        self.assertEqual((st, json.loads(body)["id"]), (200, desc["id"]), body)
        target, _ = self.targets[1]
        a = self.solve(target, {"timeout_ms": 0, "max_iterations": 3000}, scene_id=desc["id"])
        self.check_answer(a, target, False, big)

    def test_unity_frame(self):
        st, text = self.d.http("POST", "/v1/scenes", to_unity(ROBOT.scene))
        self.assertEqual(st, 201, text)
        desc = json.loads(text)
        self.assertEqual(desc["frame"], "unity")
        self.assertNotEqual(desc["id"], self.scene["id"])
        for target, _ in self.targets[:6]:
            a = self.solve(target, {"timeout_ms": 0, "max_iterations": 3000},
                           scene_id=desc["id"])
            self.check_answer(a, target, False)

    def test_solve_by_id(self):
        plain_hits = reached = 0
        for target, _ in self.targets:
            a = self.solve(target, {"timeout_ms": 0, "max_iterations": 3000},
                           scene_id=self.scene["id"])
            plain_hits += self.check_answer(a, target, False) < 0
            b = self.solve(target, AVOID, scene_id=self.scene["id"])
            self.check_answer(b, target, True)
            reached += b["status"] == "success"
        self.assertGreater(plain_hits, 0)  # the check matters
        self.assertGreaterEqual(reached, len(self.targets) - 1)

    def test_errors(self):
        target = self.targets[0][0]
        req = {"chain_id": self.chain_id, "target": target, "options": AVOID}
        st, text = self.d.http("POST", "/v1/solve", dict(req, scene_id="0" * 32))
        self.error(st, text, 404, "unknown_scene", "/scene_id")
        st, text = self.d.http("POST", "/v1/solve", dict(req, scene_id=self.scene["id"],
                                                         scene=ROBOT.scene))
        self.error(st, text, 400, "invalid_request", "/scene_id")
        st, text = self.d.http("POST", "/v1/solve", dict(req, scene_id=7))
        self.error(st, text, 400, "invalid_request", "/scene_id")
        st, text = self.d.http("POST", "/v1/solve/batch", {
            "chain_id": self.chain_id, "targets": [target], "scene": ROBOT.scene,
            "scene_id": self.scene["id"]})
        self.error(st, text, 400, "invalid_request", "/scene_id")
        # a chain without geometry has no use for a scene
        st, text = self.d.http("POST", "/v1/solve", {"chain": ROBOT.chain.request(),
                                                     "target": target,
                                                     "scene_id": self.scene["id"]})
        self.assertEqual(st, 422, text)
        self.assertEqual(json.loads(text)["error"]["path"], "/scene_id")
        # DELETE: then 404 everywhere
        st, text = self.d.http("POST", "/v1/scenes", {"spheres": [
            {"radius": 0.05, "position": [0.3, 0.3, 0.3]}]})
        self.assertEqual(st, 201, text)
        sid = json.loads(text)["id"]
        a = self.solve(target, {"timeout_ms": 0, "max_iterations": 100}, scene_id=sid)
        self.assertIn("min_distance", a)
        st, _ = self.d.http("DELETE", "/v1/scenes/" + sid)
        self.assertEqual(st, 204)
        st, text = self.d.http("GET", "/v1/scenes/" + sid)
        self.error(st, text, 404, "unknown_scene", "")
        st, text = self.d.http("DELETE", "/v1/scenes/" + sid)
        self.error(st, text, 404, "unknown_scene", "")
        st, text = self.d.http("POST", "/v1/solve", dict(req, scene_id=sid))
        self.error(st, text, 404, "unknown_scene", "/scene_id")
        st, text = self.d.http("PUT", "/v1/scenes/" + sid)
        self.assertEqual(st, 405, text)

    def test_batches(self):
        targets = [t for t, _ in self.targets[:8]]
        st, text = self.d.http("POST", "/v1/solve/batch", {
            "chain_id": self.chain_id, "targets": targets, "scene_id": self.scene["id"],
            "options": AVOID})
        self.assertEqual(st, 200, text)
        res = json.loads(text)["results"]
        for a, t in zip(res, targets):
            self.check_answer(a, t, True)
        self.assertGreaterEqual(sum(a["status"] == "success" for a in res), len(targets) - 1)
        # items: by id, inline, an unknown id answered on its own
        moved = {"boxes": [{"name": "moved", "size": [0.3, 0.3, 0.3],
                            "position": targets[2]["position"]}]}
        items = [{"chain_id": self.chain_id, "target": targets[0], "scene_id": self.scene["id"]},
                 {"chain_id": self.chain_id, "target": targets[1], "scene": ROBOT.scene},
                 {"chain_id": self.chain_id, "target": targets[2], "scene": moved,
                  "options": {"timeout_ms": 0, "max_iterations": 100,
                              "avoid_collisions": True}},
                 {"chain_id": self.chain_id, "target": targets[3], "scene_id": "f" * 32}]
        st, text = self.d.http("POST", "/v1/solve/batch", {"items": items, "options": AVOID})
        self.assertEqual(st, 200, text)
        res = json.loads(text)["results"]
        self.check_answer(res[0], targets[0], True)
        self.check_answer(res[1], targets[1], True)
        # a box around the target: the tool is inside it, by the geometry
        self.assertLess(self.check_answer(res[2], targets[2], True, moved), 0)
        self.assertEqual(res[2]["cause"], "in_collision", res[2])
        self.assertEqual(res[3]["error"]["code"], "unknown_scene")
        self.assertEqual(res[3]["error"]["path"], "/items/3/scene_id")
        # the binary form: the head carries scene or scene_id
        pos = [t["position"] for t in targets]
        ori = [t["orientation"] for t in targets]
        for member in ({"scene": ROBOT.scene}, {"scene_id": self.scene["id"]}):
            head = dict({"chain_id": self.chain_id, "options": AVOID}, **member)
            st, text = post_raw(self.d, "/v1/solve/batch", binary_request(head, pos, ori),
                                BINARY)
            self.assertEqual(st, 200, text)
            res = json.loads(text)["results"]
            self.assertEqual(len(res), len(targets))
            for a, t in zip(res, targets):
                self.check_answer(a, t, True)
            self.assertGreaterEqual(sum(a["status"] == "success" for a in res),
                                    len(targets) - 1)
        head = {"chain_id": self.chain_id, "scene_id": "e" * 32}
        st, text = post_raw(self.d, "/v1/solve/batch", binary_request(head, pos, ori), BINARY)
        self.error(st, text, 404, "unknown_scene", "/scene_id")

    def test_stream(self):
        async def go():
            ws = await connect(self.d)
            target, _ = self.targets[0]
            await send(ws, {"type": "open", "stream": "s", "chain_id": self.chain_id,
                            "scene_id": self.scene["id"], "options": AVOID})
            m = await recv(ws)
            self.assertEqual(m["type"], "opened", m)
            await send(ws, {"type": "target", "stream": "s", "seq": 1, "target": target})
            m = await recv(ws)
            self.assertEqual(m["type"], "solution", m)
            r = m["result"]
            self.check_answer(r, target, True)
            self.assertEqual(r["status"], "success")
            # a registered scene with a box on the arm's elbow
            q1 = r["joints"]
            placed = placed_spheres(ROBOT.chain, ROBOT.spheres, q1)
            elbow = [c for link, c, _ in placed if link == "link_4"][0]
            moved = {"boxes": [{"name": "moved", "size": [0.1, 0.1, 0.1], "position": elbow}]}
            st, text = self.d.http("POST", "/v1/scenes", moved)
            self.assertEqual(st, 201, text)
            mid = json.loads(text)["id"]
            await send(ws, {"type": "scene", "stream": "s", "scene_id": mid})
            (d_old, _, _), _ = ROBOT.distances(q1, moved)
            self.assertLess(d_old, 0)
            for seq in (2, 3):
                if seq == 3:
                    # deleted while the stream uses it (after target 2's
                    # answer, so after the scene message was read: the
                    # DELETE comes on another connection): the stream keeps
                    # its own
                    st, _ = self.d.http("DELETE", "/v1/scenes/" + mid)
                    self.assertEqual(st, 204)
                await send(ws, {"type": "target", "stream": "s", "seq": seq, "target": target})
                m = await recv(ws)
                self.assertEqual((m["type"], m["seq"]), ("solution", seq), m)
                r = m["result"]
                self.check_answer(r, target, True, moved)
                self.assertEqual(r["status"], "success", r)
            # refusals, with their paths; the stream stays
            await send(ws, {"type": "scene", "stream": "s", "scene_id": mid})
            m = await recv(ws)
            self.assertEqual((m["type"], m["error"]["code"], m["error"]["path"]),
                             ("error", "unknown_scene", "/scene_id"), m)
            await send(ws, {"type": "scene", "stream": "s", "scene_id": self.scene["id"],
                            "scene": ROBOT.scene})
            m = await recv(ws)
            self.assertEqual((m["type"], m["error"]["path"]), ("error", "/scene_id"), m)
            await send(ws, {"type": "scene", "stream": "s"})
            m = await recv(ws)
            self.assertEqual((m["type"], m["error"]["path"]), ("error", "/scene"), m)
            await send(ws, {"type": "open", "stream": "t", "chain_id": self.chain_id,
                            "scene_id": mid})
            m = await recv(ws)
            self.assertEqual((m["type"], m["error"]["code"], m["error"]["path"]),
                             ("error", "unknown_scene", "/scene_id"), m)
            # the scene by id again: the old answer is clear of the registered world
            await send(ws, {"type": "scene", "stream": "s", "scene_id": self.scene["id"]})
            await send(ws, {"type": "target", "stream": "s", "seq": 4, "target": target})
            m = await recv(ws)
            self.assertEqual((m["type"], m["seq"]), ("solution", 4), m)
            self.check_answer(m["result"], target, True)
            await ws.close()
        run(go())


class SceneRegistryBoundTest(unittest.TestCase):
    def test_scene_bytes_count(self):
        d = Daemon("--registry-bytes", "1M")
        try:
            rng = random.Random(5)

            def big(k):
                return {"spheres": [{"radius": 0.01, "position": [k, rng.uniform(-1, 1),
                                                                    rng.uniform(-1, 1)]}
                                    for _ in range(256)]}
            st, text = d.http("POST", "/v1/chains", ROBOT.request)
            self.assertIn(st, (200, 201), text)
            chain_id = json.loads(text)["id"]
            before = held_registry(d)
            st, text = d.http("POST", "/v1/scenes", big(0))
            self.assertEqual(st, 201, text)
            first = json.loads(text)
            self.assertEqual(held_registry(d), before + first["memory_bytes"])
            self.assertGreater(first["memory_bytes"], 256 * 100)
            ids = [first["id"]]
            n = 2 * (1 << 20) // first["memory_bytes"] + 2
            for k in range(1, n):
                st, text = d.http("POST", "/v1/scenes", big(k))
                self.assertEqual(st, 201, text)
                ids.append(json.loads(text)["id"])
                self.assertLessEqual(held_registry(d), 1 << 20)
            # the oldest went first, the chain among them; the newest is held
            st, text = d.http("GET", "/v1/scenes/" + ids[0])
            self.assertEqual(st, 404, text)
            st, text = d.http("GET", "/v1/chains/" + chain_id)
            self.assertEqual(st, 404, text)
            st, text = d.http("GET", "/v1/scenes/" + ids[-1])
            self.assertEqual(st, 200, text)
        finally:
            d.stop()
        d = Daemon("--registry-bytes", "16K")
        try:
            st, text = d.http("POST", "/v1/scenes", {"spheres": [
                {"radius": 0.01, "position": [0, 0, i * 0.01]} for i in range(200)]})
            self.assertEqual(st, 413, text)
            self.assertEqual(json.loads(text)["error"]["code"], "too_large")
        finally:
            d.stop()


def send_together(raw, msgs):
    """msgs as text frames in one write (read by ikd together)."""
    raw.sock.sendall(b"".join(frame(0x1, json.dumps(m).encode()) for m in msgs))


def held_streams(d):
    st, text = d.http("GET", "/metrics")
    m = re.search(r'^ikd_held_bytes\{what="stream_chains"\} (\S+)$', text, re.M)
    return int(float(m.group(1)))


class StreamSceneBytesTest(unittest.TestCase):
    """A stream's own scene (open's, or a scene message's) counts with its
    chain against --stream-chain-bytes and in ikd_held_bytes: a registered
    one by its memory_bytes (once however many streams hold it), given
    back when replaced or when the stream closes; past the bound an open
    or a scene message is refused as an open's chain is (overloaded, the
    flag named, the scene's path), and the stream keeps the scene it had."""

    @staticmethod
    def world(k, n=256):
        return {"spheres": [{"radius": 0.01, "position": [3 + k, 0.01 * i, 0]}
                            for i in range(n)]}

    def exchange(self, d, msgs):
        """Sends msgs on one connection, each followed by a target (which
        answers once what came before it is done): the first answer of each
        (an error of the message, else the target's solution), and
        ikd_held_bytes{what="stream_chains"} after each."""
        async def go():
            out = []
            async with connect(d) as ws:
                for k, msg in enumerate(msgs):
                    await send(ws, msg)
                    if msg["type"] == "close":
                        m = await recv(ws)
                    else:
                        await send(ws, {"type": "target", "stream": msg["stream"],
                                        "seq": k, "target": self.target})
                        m = await recv(ws)
                        if m["type"] in ("error", "opened") and m.get("seq") is None:
                            await recv(ws)  # the target's own answer (or error)
                    out.append((m, held_streams(d)))
            return out
        return run(go())

    @classmethod
    def setUpClass(cls):
        cls.target = ROBOT.targets(1, random.Random(3))[0][0]

    def test_stream_scenes_are_counted(self):
        d = Daemon()
        try:
            st, text = d.http("POST", "/v1/scenes", self.world(0))
            self.assertEqual(st, 201, text)
            reg = json.loads(text)
            opened = {"type": "open", "stream": "s", "chain": ROBOT.request}
            out = self.exchange(d, [
                opened,
                {"type": "scene", "stream": "s", "scene_id": reg["id"]},
                {"type": "open", "stream": "t", "chain": ROBOT.request,
                 "scene_id": reg["id"]},
                {"type": "scene", "stream": "s", "scene": self.world(1)},
                {"type": "scene", "stream": "s", "scene": self.world(2, 1)},
                {"type": "close", "stream": "t"},
                {"type": "scene", "stream": "s", "scene": {}},
            ])
            for m, _ in out:
                self.assertNotEqual(m["type"], "error", m)
            held = [h for _, h in out]
            chain = held[0]
            self.assertGreater(chain, 0)
            # the registered scene by its memory_bytes, once for two streams
            self.assertEqual(held[1], chain + reg["memory_bytes"])
            t_chain = held[2] - held[1]  # t's chain (its own, decoded again)
            self.assertGreaterEqual(t_chain, 0)
            # s's own 256 spheres: the block without the registered text
            own = held[3] - held[2]
            self.assertGreater(own, 256 * 64)
            self.assertLess(own, reg["memory_bytes"])
            # one sphere instead: the 256 given back
            self.assertLess(held[4], held[3] - 255 * 64)
            self.assertGreater(held[4], held[2] - reg["memory_bytes"])
            # t closed: its chain and the registered scene given back
            self.assertEqual(held[5], held[4] - t_chain - reg["memory_bytes"])
            self.assertLess(held[6], held[5])
        finally:
            d.stop()

    def test_past_the_bound_is_refused(self):
        d = Daemon()
        try:
            out = self.exchange(d, [{"type": "open", "stream": "s", "chain": ROBOT.request}])
            chain = out[0][1]
        finally:
            d.stop()
        # room for the chain and a few spheres, not for 256 of them
        d = Daemon("--stream-chain-bytes", str(chain + 4096))
        try:
            st, text = d.http("POST", "/v1/scenes", self.world(0))
            self.assertEqual(st, 201, text)
            sid = json.loads(text)["id"]
            small = self.world(1, 4)
            out = self.exchange(d, [
                {"type": "open", "stream": "s", "chain": ROBOT.request,
                 "scene": self.world(2)},
                {"type": "open", "stream": "s", "chain": ROBOT.request, "scene": small},
                {"type": "scene", "stream": "s", "scene": self.world(3)},
                {"type": "scene", "stream": "s", "scene_id": sid},
                {"type": "close", "stream": "s"},
            ])
            for (m, _), path in zip(out[:4:2] + out[3:4], ("/scene", "/scene", "/scene_id")):
                self.assertEqual((m["type"], m["error"]["code"], m["error"]["path"]),
                                 ("error", "overloaded", path), m)
                self.assertIn("--stream-chain-bytes", m["error"]["message"])
            self.assertEqual(out[0][1], 0)  # the refused open holds nothing
            self.assertEqual(out[1][0]["type"], "opened", out[1][0])
            with_small = out[1][1]
            self.assertGreater(with_small, chain)
            # refused scene messages change nothing: the stream keeps its
            # scene (answers as before) and its bytes
            self.assertEqual((out[2][1], out[3][1]), (with_small, with_small))
            self.assertEqual(out[4][0]["type"], "closed", out[4][0])
            self.assertEqual(out[4][1], 0)
        finally:
            d.stop()

    def tight_stream(self):
        """A daemon whose --stream-chain-bytes holds the chain and one scene
        of 256 spheres (and 4 kB more), measured on another one first, and
        a raw connection with stream "s" open in such a scene:
        (daemon, connection, the chain's bytes, the scene's)."""
        d = Daemon()
        try:
            out = self.exchange(d, [
                {"type": "open", "stream": "s", "chain": ROBOT.request},
                {"type": "scene", "stream": "s", "scene": self.world(0)}])
            chain, big = out[0][1], out[1][1] - out[0][1]
        finally:
            d.stop()
        d = Daemon("--stream-chain-bytes", str(chain + big + 4096))
        try:
            raw = RawWS(d.port)
            raw.send_text(json.dumps({"type": "open", "stream": "s", "chain": ROBOT.request,
                                      "scene": self.world(1),
                                      "options": {"timeout_ms": 0, "max_iterations": 10000}}))
            self.assertEqual(raw.recv_json()["type"], "opened")
        except BaseException:
            d.stop()
            raise
        return d, raw, chain, big

    def test_a_tick_holds_its_scene(self):
        """A tick's target keeps its stream's scene counted until the tick
        is done: a scene message after the tick cannot free the room for
        another large scene while the tick still keeps the first one alive
        (before, "scene": {} then another 256 spheres were taken: twice
        the bound, and as often again per stream and tick)."""
        d, raw, chain, big = self.tight_stream()
        try:
            # one read: the tick starts after it, holding the first scene
            send_together(raw, (
                {"type": "tick", "seq": 1, "targets": [{"stream": "s", "target": self.target}]},
                {"type": "scene", "stream": "s", "scene": {}},
                {"type": "scene", "stream": "s", "scene": self.world(2)},
                {"type": "target", "stream": "s", "seq": 2, "target": self.target}))
            got = []
            while not got or got[-1]["type"] != "solution":
                got.append(raw.recv_json())
            errors = [m["error"] for m in got if m["type"] == "error"]
            self.assertEqual([(e["code"], e["path"]) for e in errors], [("overloaded", "/scene")],
                             got)
            raw.send_text(json.dumps({"type": "close", "stream": "s"}))
            self.assertEqual(raw.recv_json()["type"], "closed")
            self.assertEqual(held_streams(d), 0)
            raw.close()
        finally:
            d.stop()

    def test_a_waiting_target_holds_its_scene(self):
        """A target waiting to be solved keeps the scene it was decoded in
        counted: a scene message after it cannot free the room for another
        large scene while the target still keeps the first one alive (the
        target is solved after the whole read). Before, "scene": {} then
        another 256 spheres were taken, as many times over as a stream
        has jobs built in a replaced scene."""
        d, raw, chain, big = self.tight_stream()
        try:
            send_together(raw, (
                {"type": "target", "stream": "s", "seq": 1, "target": self.target},
                {"type": "scene", "stream": "s", "scene": {}},
                {"type": "scene", "stream": "s", "scene": self.world(2)}))
            m = raw.recv_json()
            self.assertEqual((m["type"], m["error"]["code"], m["error"]["path"]),
                             ("error", "overloaded", "/scene"), m)
            m = raw.recv_json()
            self.assertEqual((m["type"], m["seq"]), ("solution", 1), m)
            # solved: the first scene is given back, and the large one fits
            send_together(raw, (
                {"type": "scene", "stream": "s", "scene": self.world(2)},
                {"type": "target", "stream": "s", "seq": 2, "target": self.target}))
            m = raw.recv_json()
            self.assertEqual((m["type"], m["seq"]), ("solution", 2), m)
            self.assertEqual(held_streams(d), chain + big)
            raw.send_text(json.dumps({"type": "close", "stream": "s"}))
            self.assertEqual(raw.recv_json()["type"], "closed")
            self.assertEqual(held_streams(d), 0)
            raw.close()
        finally:
            d.stop()

    def test_a_registered_scene_sent_again_while_a_target_waits(self):
        """The same registered scene sent again and again by scene_id while
        a target built in it waits (one read): each message keeps the
        stream's scene, the target is replaced by the next one, and every
        byte is given back at close. Before, each repeat kept one more
        reference to the scene in the stream's four places for replaced
        scenes, and the fifth wrote past them: ikd died of SIGSEGV."""
        d = Daemon()
        try:
            st, text = d.http("POST", "/v1/scenes", self.world(0, 8))
            self.assertEqual(st, 201, text)
            sid = json.loads(text)["id"]
            raw = RawWS(d.port)
            raw.send_text(json.dumps({"type": "open", "stream": "s", "chain": ROBOT.request,
                                      "scene_id": sid}))
            self.assertEqual(raw.recv_json()["type"], "opened")
            again = {"type": "scene", "stream": "s", "scene_id": sid}
            send_together(raw, [{"type": "target", "stream": "s", "seq": 1,
                                 "target": self.target}] + [again] * 8 +
                          [{"type": "target", "stream": "s", "seq": 2, "target": self.target}])
            m = raw.recv_json()
            self.assertEqual((m["type"], m["seq"], m["skipped"]), ("solution", 2, 1), m)
            raw.send_text(json.dumps({"type": "close", "stream": "s"}))
            self.assertEqual(raw.recv_json()["type"], "closed")
            self.assertEqual(held_streams(d), 0)
            raw.close()
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()

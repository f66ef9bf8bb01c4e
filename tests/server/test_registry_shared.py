"""
test_registry_shared.py: the chain registry shared by replicas through
Redis (--redis), with Debian's redis-server started here on a loopback port
(--save '' --appendonly no) and two ikd, A and B, on it:

- a chain registered on A (201; 200 on B, which Redis tells it knows) is
  solved by id on B, in a batch of items naming several ids B never saw
  (one fetch), described by GET on B, and streamed by id on B (an open
  waits for the fetch); a UR5 URDF is checked by forward kinematics
  computed here (tests/server/robot_chain.py), not by ikd;
- again after A restarts: ids outlive the replica that registered them;
- a registration's answer is the description without the chain's own
  document, which ?include=source adds; another include is refused;
- a DELETE on A reaches B's local copy (announced through Redis);
- scenes (POST /v1/scenes) likewise: registered on A, found on B by
  scene_id in a GET, a solve, an item, a binary head, a stream's open and
  scene message (answers checked with test_collide.py's geometry), and a
  DELETE on A reaches B;
- a chain of more than 64 KiB (decoded on the pool) is fetched too;
- a DELETE that comes while such a chain is fetched (Redis answers the
  fetch first, its decode ends after the DELETE's answer): the fetch's
  request has it, but the replica does not keep it (before, it did, and
  served a deleted chain);
- Redis stopped: inline solves and ids B holds keep answering, a miss gets
  503 with Retry-After within --redis-timeout, a registration 503, a
  DELETE 503 and nothing deleted (B still answers with the chain and the
  scene), a stream opened by an unknown id an error message, /readyz
  stays 200 and says the registry is down, ikd_registry_shared_up is 0;
  Redis back (on the same port, empty): B reconnects by itself,
  registrations work again, and B drops the copies of what Redis lost;
- a replica cut off from Redis (through a proxy here) while another
  deletes a chain and a scene: once back, it checks what it holds and
  drops those two (before, it served them until evicted), and keeps the
  rest; when a DELETE announced while the check asks Redis (its EXISTS
  held by the proxy) removes a copy first, the check counts it neither
  dropped (before, it did) nor kept; a fetch answered before the cut
  whose decode (on the pool, behind a long solve) ends after that check
  answers its request but leaves no copy (before, the replica kept the
  chain deleted meanwhile, after the check had looked);
- a replica never up yet (its SUBSCRIBE held by the proxy) fetches a
  chain that is then deleted unheard: once up it checks what it holds, as
  after a cut, and drops it (before, it served it until evicted);
- Redis paused (SIGSTOP, a Redis that does not answer): a miss gets 503
  within --redis-timeout while other requests are answered at once;
- a DELETE while Redis is paused: 503, and once Redis resumes it runs
  the DEL it had been sent; the replica that answered (one loop, so its
  subscription was dropped with the command connection) does not keep
  serving the deleted chain (it forgot its copy), as B does not;
- Redis with a password: a wrong one is refused and /readyz says why,
  the right one works.

redis-server must be installed (docker/install-deps.sh does): without it
the test fails.
"""
import asyncio
import hashlib
import json
import math
import os
import shutil
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relay import pump  # noqa: E402
from robot_chain import Chain  # noqa: E402
from test_collide import MARGIN, ROBOT, TOL  # noqa: E402
from test_stream import (BONES, IKD_BIN, IKD_DATA, SLOW, TIMEOUT, bones_target,  # noqa: E402
                         iiwa_chain, run)

import websockets  # noqa: E402

REDIS_TIMEOUT_MS = 300
UR5 = Chain(os.path.join(IKD_DATA, "robots", "ur5.urdf"), "base_link", "tool0")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Redis:
    """redis-server on a fixed loopback port, no persistence."""

    def __init__(self, port=None, *extra):
        self.bin = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.path.exists(self.bin):
            raise RuntimeError("redis-server is not installed: run sh docker/install-deps.sh")
        self.port = port or free_port()
        self.extra = extra
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [self.bin, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10 * SLOW
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith((b"+PONG", b"-NOAUTH")):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start on port %d" % self.port)
            time.sleep(0.02)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            self.proc.wait(10)


class Proxy:
    """A TCP relay to 127.0.0.1:port that can cut every connection through
    it and refuse new ones (cut), then let them through again (mend), and
    hold what a client sends on one connection from the first bytes that
    contain hold (holding is set then) until released is set."""

    def __init__(self, port):
        self.port, self.cut_off, self.socks = port, False, []
        self.hold, self.holding, self.released = None, threading.Event(), threading.Event()
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = "redis://127.0.0.1:%d" % self.server.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                down, _ = self.server.accept()
            except OSError:
                return
            with self.lock:
                if self.cut_off:
                    down.close()
                    continue
                up = socket.create_connection(("127.0.0.1", self.port))
                self.socks += [down, up]
            for a, b, on_data in ((down, up, self.held), (up, down, None)):
                threading.Thread(target=pump, args=(a, b, on_data), daemon=True).start()

    def held(self, data):
        """What a client sends to Redis: held from the first bytes that
        contain hold until released."""
        if self.hold and self.hold in data:
            self.holding.set()
            self.released.wait(30 * SLOW)

    def cut(self):
        with self.lock:
            self.cut_off = True
            for x in self.socks:
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                x.close()
            self.socks = []

    def mend(self):
        with self.lock:
            self.cut_off = False

    def close(self):
        self.cut()
        self.server.close()


class Ikd:
    def __init__(self, redis_url, *extra):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [IKD_BIN, "--listen", "127.0.0.1:0", "--loops", "2", "--log-level", "info",
             "--redis", redis_url,
             "--redis-timeout", str(REDIS_TIMEOUT_MS), *extra],
            stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("ikd listening on "):
            self.proc.kill()
            raise RuntimeError("ikd did not start: %r %s" % (line, self.text()))
        self.port = int(line.strip().rsplit(":", 1)[1])

    def text(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def http(self, method, path, body=None):
        """(status, parsed body or text, headers)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=10 * SLOW) as r:
                status, text, headers = r.status, r.read().decode(), r.headers
        except urllib.error.HTTPError as e:
            status, text, headers = e.code, e.read().decode(), e.headers
        try:
            return status, json.loads(text) if text else None, headers
        except ValueError:
            return status, text, headers

    def wait_up(self, up=True):
        deadline = time.monotonic() + 10 * SLOW
        while True:
            status, body, _ = self.http("GET", "/readyz")
            if status == 200 and body["registry"]["up"] == up:
                return body
            if time.monotonic() > deadline:
                raise AssertionError("the shared registry is not %s: %r" % (
                    "up" if up else "down", body))
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20 * SLOW)
        self.proc.stdout.close()
        self.log.close()
        return self.proc.returncode


def metric(d, name):
    """The value of the sample name (with its labels) in d's /metrics, 0
    when it has none."""
    _, text, _ = d.http("GET", "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0


def bones(tilt):
    """A two-bone chain of its own id (the knee tilted by tilt)."""
    return {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, tilt], [0, 1.0, 0.001]]}


def assert_reaches(test, answer, target):
    """A two-bone answer's last position is the target (the limb's own
    positions, not a trusted status)."""
    test.assertEqual(answer["status"], "success", answer)
    tip = answer["positions"][-1]
    test.assertLess(math.dist(tip, target), 1e-6, answer)


class SharedRegistryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = Redis()
        cls.url = "redis://127.0.0.1:%d" % cls.redis.port
        cls.a = Ikd(cls.url)
        cls.b = Ikd(cls.url)
        cls.a.wait_up()
        cls.b.wait_up()

    @classmethod
    def tearDownClass(cls):
        for d in (cls.a, cls.b):
            d.stop()
        cls.redis.stop()

    def register(self, d, chain, expect=(200, 201), query=""):
        status, body, headers = d.http("POST", "/v1/chains" + query, chain)
        self.assertIn(status, expect, body)
        return body

    def test_a_chain_of_one_replica_works_on_the_other(self):
        desc = self.register(self.a, UR5.request(), (201,))
        cid = desc["id"]
        self.assertNotIn("chain", desc, "the registration echoes the URDF")
        self.assertEqual(desc["dof"], 6)
        # B has never seen it: Redis has
        self.assertEqual(self.register(self.b, UR5.request(), (200,))["id"], cid)
        # solved by id on A' s twin, checked by forward kinematics computed here
        q = [0.3, -1.2, 1.1, -0.9, -1.4, 0.4]
        pos, quat = UR5.fk(q)
        status, ans, _ = self.b.http("POST", "/v1/solve", {
            "chain_id": cid, "target": {"position": pos, "orientation": quat}})
        self.assertEqual(status, 200, ans)
        self.assertEqual(ans["status"], "success", ans)
        got, _ = UR5.fk(ans["joints"])
        self.assertLess(math.dist(got, pos), 1e-4)
        self.assertTrue(UR5.within_limits(ans["joints"]))
        status, d2, _ = self.b.http("GET", "/v1/chains/" + cid)
        self.assertEqual((status, d2["id"]), (200, cid))

    def test_b_batch_of_items_fetches_every_id_at_once(self):
        ids = [self.register(self.a, bones(0.1 + 0.01 * k), (201,))["id"] for k in range(1, 6)]
        before = self.fetches(self.b)
        items = [{"chain_id": cid, "target": bones_target(k)} for k, cid in enumerate(ids)]
        status, ans, _ = self.b.http("POST", "/v1/solve/batch", {"items": items})
        self.assertEqual(status, 200, ans)
        for k, r in enumerate(ans["results"]):
            assert_reaches(self, r, bones_target(k)["position"])
        self.assertEqual(self.fetches(self.b) - before, 1, "one fetch for the five ids")

    def test_b_large_batch_by_id(self):
        """A text batch over 256 KiB by an id B never saw: its targets are
        read in parts on the pool, after the fetch."""
        cid = self.register(self.a, bones(0.075), (201,))["id"]
        targets = [bones_target(k % 50) for k in range(6000)]
        body = {"chain_id": cid, "targets": targets}
        self.assertGreater(len(json.dumps(body)), 256 * 1024)
        status, ans, _ = self.b.http("POST", "/v1/solve/batch", body)
        self.assertEqual(status, 200, ans)
        self.assertEqual(len(ans["results"]), len(targets))
        for k in (0, 2999, 5999):
            assert_reaches(self, ans["results"][k], targets[k]["position"])

    def fetches(self, d):
        status, text, _ = d.http("GET", "/metrics")
        return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
                   if l.startswith("ikd_registry_shared_total{op=\"fetch\""))

    def test_c_stream_by_id_on_the_other_replica(self):
        cid = self.register(self.a, bones(0.02), (201,))["id"]

        async def main():
            url = "ws://127.0.0.1:%d/v1/stream" % self.b.port
            async with websockets.connect(url, ping_interval=None, open_timeout=TIMEOUT) as ws:
                await ws.send(json.dumps({"type": "open", "stream": "s", "chain_id": cid}))
                # sent right behind the open: answered after it, in order
                await ws.send(json.dumps({"type": "target", "stream": "s", "seq": 1,
                                          "target": bones_target(1)}))
                m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                self.assertEqual((m["type"], m["chain_id"]), ("opened", cid), m)
                m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                self.assertEqual((m["type"], m["seq"]), ("solution", 1), m)
                assert_reaches(self, m["result"], bones_target(1)["position"])
                await ws.send(json.dumps({"type": "open", "stream": "t",
                                          "chain_id": "f" * 32}))
                m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                self.assertEqual((m["type"], m["error"]["code"]), ("error", "unknown_chain"), m)
        run(main())

    def test_d_ids_outlive_the_replica_that_registered_them(self):
        cid = self.register(self.a, bones(0.03), (201,))["id"]
        self.assertEqual(self.a.stop(), 0)
        type(self).a = Ikd(self.url)
        self.a.wait_up()
        status, ans, _ = self.a.http("POST", "/v1/solve",
                                     {"chain_id": cid, "target": bones_target(3)})
        self.assertEqual(status, 200, ans)
        assert_reaches(self, ans, bones_target(3)["position"])

        async def main():
            url = "ws://127.0.0.1:%d/v1/stream" % self.a.port
            async with websockets.connect(url, ping_interval=None, open_timeout=TIMEOUT) as ws:
                await ws.send(json.dumps({"type": "open", "stream": "s", "chain_id": cid}))
                m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                self.assertEqual(m["type"], "opened", m)
        run(main())

    def test_e_source_on_request(self):
        chain = bones(0.04)
        desc = self.register(self.a, chain, query="?include=source")
        self.assertEqual(desc["chain"], chain)
        status, d2, _ = self.b.http("GET", "/v1/chains/%s?include=source" % desc["id"])
        self.assertEqual((status, d2["chain"]), (200, chain))
        status, d3, _ = self.b.http("GET", "/v1/chains/" + desc["id"])
        self.assertNotIn("chain", d3)
        status, err, _ = self.a.http("GET", "/v1/chains/%s?include=urdf" % desc["id"])
        self.assertEqual((status, err["error"]["code"]), (400, "invalid_request"), err)

    def test_f_delete_reaches_every_replica(self):
        cid = self.register(self.a, bones(0.05), (201,))["id"]
        self.assertEqual(self.b.http("GET", "/v1/chains/" + cid)[0], 200)  # B holds it now
        self.assertEqual(self.a.http("DELETE", "/v1/chains/" + cid)[0], 204)
        deadline = time.monotonic() + 5 * SLOW
        while self.b.http("GET", "/v1/chains/" + cid)[0] != 404:
            self.assertLess(time.monotonic(), deadline, "B still holds a deleted chain")
            time.sleep(0.02)
        self.assertEqual(self.a.http("DELETE", "/v1/chains/" + cid)[0], 404)

    def test_f_scenes_are_shared(self):
        """Scenes registered on A (POST /v1/scenes) are found on B by
        scene_id: GET, a solve (chain and scene both fetched in one go),
        an item of a batch, a binary head, a stream's open and its scene
        message; answers checked with test_collide.py's geometry; a DELETE
        on A reaches B."""
        cid = self.register(self.a, ROBOT.request)["id"]

        def scene(k):  # a world of its own id: the pillar moved by k mm
            sc = json.loads(json.dumps(ROBOT.scene))
            sc["boxes"][0]["position"][1] += k / 1000
            status, desc, headers = self.a.http("POST", "/v1/scenes", sc)
            self.assertEqual(status, 201, desc)
            return sc, desc["id"]

        def check(a, target, sc):
            (d, _, _), s = ROBOT.distances(a["joints"], sc)
            self.assertAlmostEqual(a["min_distance"], min(d, s), delta=TOL)
            self.assertEqual(a["status"], "success", a)
            self.assertGreaterEqual(min(d, s), MARGIN - TOL)
            p, _ = ROBOT.chain.fk(a["joints"])
            self.assertLess(math.dist(p, target["position"]), 1e-4)

        targets = [t for t, _ in ROBOT.targets(4, random.Random(7))]
        opts = {"timeout_ms": 0, "max_iterations": 10000, "avoid_collisions": True,
                "collision_margin": MARGIN}
        # B knows the scene from Redis: 200, the same id; GET fetches it
        sc1, id1 = scene(1)
        status, desc, _ = self.b.http("POST", "/v1/scenes", sc1)
        self.assertEqual((status, desc["id"]), (200, id1), desc)
        # written with empty lists and the default frame: the same world,
        # the same key in Redis, which B fetches, decodes and solves with
        sc8 = dict(json.loads(json.dumps(ROBOT.scene)), spheres=[], frame="ros")
        sc8["boxes"][0]["position"][1] += 0.008
        status, desc, _ = self.a.http("POST", "/v1/scenes", sc8)
        self.assertEqual(status, 201, desc)
        id8 = desc["id"]
        status, desc, _ = self.b.http("GET", "/v1/scenes/%s?include=source" % id8)
        self.assertEqual((status, desc["id"]), (200, id8), desc)
        self.assertEqual(sorted(desc["scene"]), ["boxes"], desc)
        del sc8["spheres"], sc8["frame"]
        status, desc, _ = self.b.http("POST", "/v1/scenes", sc8)
        self.assertEqual((status, desc["id"]), (200, id8), desc)
        status, ans, _ = self.b.http("POST", "/v1/solve", {
            "chain_id": cid, "scene_id": id8, "target": targets[0], "options": opts})
        self.assertEqual(status, 200, ans)
        check(ans, targets[0], sc8)
        sc2, id2 = scene(2)
        status, desc, _ = self.b.http("GET", "/v1/scenes/%s?include=source" % id2)
        self.assertEqual((status, desc["id"]), (200, id2), desc)
        self.assertEqual(desc["scene"]["boxes"][0]["position"], sc2["boxes"][0]["position"])
        # a solve on B by both ids (the chain too is fetched)
        sc3, id3 = scene(3)
        status, ans, _ = self.b.http("POST", "/v1/solve", {
            "chain_id": cid, "scene_id": id3, "target": targets[0], "options": opts})
        self.assertEqual(status, 200, ans)
        check(ans, targets[0], sc3)
        # an item, and a binary head
        sc4, id4 = scene(4)
        status, ans, _ = self.b.http("POST", "/v1/solve/batch", {"options": opts, "items": [
            {"chain_id": cid, "scene_id": id4, "target": targets[1]}]})
        self.assertEqual(status, 200, ans)
        check(ans["results"][0], targets[1], sc4)
        sc5, id5 = scene(5)
        head = json.dumps({"chain_id": cid, "scene_id": id5, "options": opts}).encode()
        body = b"IKDB" + struct.pack("<HHII", 1, 1, len(head), 1) + head
        body += b"\0" * (-len(body) % 8)
        body += struct.pack("<7d", *targets[2]["position"], *targets[2]["orientation"])
        req = urllib.request.Request("http://127.0.0.1:%d/v1/solve/batch" % self.b.port,
                                     data=body, method="POST",
                                     headers={"Content-Type": "application/vnd.ikd.batch"})
        with urllib.request.urlopen(req, timeout=10 * SLOW) as r:
            check(json.loads(r.read())["results"][0], targets[2], sc5)
        # a stream on B: open by a scene B never saw, then a scene message
        sc6, id6 = scene(6)
        sc7, id7 = scene(7)

        async def main():
            url = "ws://127.0.0.1:%d/v1/stream" % self.b.port
            async with websockets.connect(url, ping_interval=None, open_timeout=TIMEOUT) as ws:
                await ws.send(json.dumps({"type": "open", "stream": "s", "chain_id": cid,
                                          "scene_id": id6, "options": opts}))
                m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                self.assertEqual(m["type"], "opened", m)
                for seq, sid, sc in ((1, None, sc6), (2, id7, sc7)):
                    if sid:
                        await ws.send(json.dumps({"type": "scene", "stream": "s",
                                                  "scene_id": sid}))
                    await ws.send(json.dumps({"type": "target", "stream": "s", "seq": seq,
                                              "target": targets[3]}))
                    m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                    self.assertEqual((m["type"], m["seq"]), ("solution", seq), m)
                    check(m["result"], targets[3], sc)
                await ws.send(json.dumps({"type": "scene", "stream": "s", "scene_id": "e" * 32}))
                m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                self.assertEqual((m["type"], m["error"]["code"], m["error"]["path"]),
                                 ("error", "unknown_scene", "/scene_id"), m)
        run(main())
        # a DELETE on A reaches B, which held it
        self.assertEqual(self.a.http("DELETE", "/v1/scenes/" + id3)[0], 204)
        deadline = time.monotonic() + 5 * SLOW
        while self.b.http("GET", "/v1/scenes/" + id3)[0] != 404:
            self.assertLess(time.monotonic(), deadline, "B still holds a deleted scene")
            time.sleep(0.02)
        status, err, _ = self.b.http("POST", "/v1/solve", {
            "chain_id": cid, "scene_id": id3, "target": targets[0]})
        self.assertEqual((status, err["error"]["code"], err["error"]["path"]),
                         (404, "unknown_scene", "/scene_id"), err)
        self.assertEqual(self.b.http("DELETE", "/v1/scenes/" + id3)[0], 404)

    def test_g_large_chain(self):
        chain = UR5.request()
        chain["urdf"] = chain["urdf"].replace(
            "<robot", "<!-- %s -->\n<robot" % ("padding " * 12000), 1)
        self.assertGreater(len(json.dumps(chain)), 65536)
        cid = self.register(self.a, chain, (201,))["id"]
        pos, quat = UR5.fk([0.1, -1.0, 1.2, -0.5, 1.0, 0.2])
        status, ans, _ = self.b.http("POST", "/v1/solve", {
            "chain_id": cid, "target": {"position": pos, "orientation": quat}})
        self.assertEqual(status, 200, ans)
        got, _ = UR5.fk(ans["joints"])
        self.assertLess(math.dist(got, pos), 1e-4)

    def test_g_delete_during_a_fetch(self):
        chain = UR5.request()
        chain["urdf"] = chain["urdf"].replace(
            "<robot", "<!-- %s -->\n<robot" % ("padding " * 12001), 1)
        cid = self.register(self.a, chain, (201,))["id"]
        c = Ikd(self.url, "--loops", "1")
        try:
            c.wait_up()
            out = {}

            def fetch():
                out["get"] = c.http("GET", "/v1/chains/" + cid)[0]

            # Redis paused so that it gets the fetch's MGET, then the DEL,
            # and answers both at once when it resumes
            self.redis.proc.send_signal(signal.SIGSTOP)
            try:
                th = threading.Thread(target=fetch)
                th.start()
                time.sleep(0.05)
                th2 = threading.Thread(target=lambda: out.update(
                    delete=c.http("DELETE", "/v1/chains/" + cid)[0]))
                th2.start()
                time.sleep(0.05)
            finally:
                self.redis.proc.send_signal(signal.SIGCONT)
            th.join(10 * SLOW)
            th2.join(10 * SLOW)
            self.assertEqual(out, {"get": 200, "delete": 204})
            self.assertEqual(c.http("GET", "/v1/chains/" + cid)[0], 404)
        finally:
            c.stop()

    def test_h_redis_paused(self):
        cid = self.register(self.a, bones(0.06), (201,))["id"]
        self.assertEqual(self.b.http("POST", "/v1/solve", {"chain_id": cid,
                                                           "target": bones_target(6)})[0], 200)
        self.redis.proc.send_signal(signal.SIGSTOP)
        try:
            out = {}

            def miss():
                t0 = time.monotonic()
                out["status"], out["body"], out["headers"] = self.b.http(
                    "POST", "/v1/solve", {"chain_id": "e" * 32, "target": bones_target(1)})
                out["s"] = time.monotonic() - t0

            th = threading.Thread(target=miss)
            th.start()
            time.sleep(0.05)
            # while the miss waits for Redis, B answers the others at once
            t0 = time.monotonic()
            status, ans, _ = self.b.http("POST", "/v1/solve",
                                         {"chain_id": cid, "target": bones_target(6)})
            self.assertEqual(status, 200, ans)
            status, ans, _ = self.b.http("POST", "/v1/solve",
                                         {"chain": BONES, "target": bones_target(2)})
            self.assertEqual(status, 200, ans)
            self.assertLess(time.monotonic() - t0, 0.25 * SLOW)
            th.join(10 * SLOW)
            self.assertEqual(out["status"], 503, out)
            self.assertEqual(out["headers"]["Retry-After"], "1")
            self.assertIn("--redis-timeout", out["body"]["error"]["message"])
            self.assertLess(out["s"], REDIS_TIMEOUT_MS / 1000 + 0.5 * SLOW)
        finally:
            self.redis.proc.send_signal(signal.SIGCONT)
        self.b.wait_up()

    def test_h_delete_while_redis_paused(self):
        c = Ikd(self.url, "--loops", "1")
        try:
            c.wait_up()
            cid = self.register(c, bones(0.09), (201,))["id"]
            self.assertEqual(self.b.http("GET", "/v1/chains/" + cid)[0], 200)  # B holds it
            self.redis.proc.send_signal(signal.SIGSTOP)
            try:
                status, err, _ = c.http("DELETE", "/v1/chains/" + cid)
                self.assertEqual((status, err["error"]["code"]), (503, "overloaded"), err)
            finally:
                self.redis.proc.send_signal(signal.SIGCONT)
            c.wait_up()
            # Redis ran the DEL it was sent (and told B)
            deadline = time.monotonic() + 5 * SLOW
            while self.b.http("GET", "/v1/chains/" + cid)[0] != 404:
                self.assertLess(time.monotonic(), deadline, "the DEL never ran")
                time.sleep(0.02)
            # before, C kept its copy: 200 there, 404 everywhere else
            self.assertEqual(c.http("GET", "/v1/chains/" + cid)[0], 404)
            self.assertEqual(c.http("DELETE", "/v1/chains/" + cid)[0], 404)  # the retry
        finally:
            c.stop()

    def test_h_garbage_in_redis_is_not_the_clients_error(self):
        """What another program (or another version of ikd) wrote at a
        chain's or a scene's key does not decode: the id is unknown (404,
        logged), not a 400 blaming the request that named it."""
        cid, sid = "e" * 32, "f" * 32
        for key, value in (("ikd:chain:" + cid, b"not json"),
                           ("ikd:scene:" + sid, b'{"boxes": [{"size": [-1, 1, 1]}]}')):
            with socket.create_connection(("127.0.0.1", self.redis.port), timeout=5) as r:
                r.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                          % (len(key), key.encode(), len(value), value))
                self.assertTrue(r.recv(64).startswith(b"+OK"))
        status, err, _ = self.b.http("POST", "/v1/solve", {"chain_id": cid,
                                                           "target": bones_target(1)})
        self.assertEqual((status, err["error"]["code"]), (404, "unknown_chain"), err)
        status, err, _ = self.b.http("GET", "/v1/scenes/" + sid)
        self.assertEqual((status, err["error"]["code"]), (404, "unknown_scene"), err)
        self.assertIn("does not decode", self.b.text())

    def test_h_scene_stored_by_the_previous_ids(self):
        """A scene stored by a replica of the ikd that named scenes by their
        text as written (defaults in: an empty list, "frame": "ros") is
        found by that id: during a rolling upgrade both versions share
        Redis. Before, the replica computed the newer id, logged the value
        and answered unknown_scene."""
        def canonical(v):  # keys sorted, compact, every number a real
            if isinstance(v, dict):
                return {k: canonical(x) for k, x in v.items()}
            if isinstance(v, list):
                return [canonical(x) for x in v]
            return float(v) if isinstance(v, (int, float)) else v

        def text_id(v):
            t = json.dumps(canonical(v), sort_keys=True, separators=(",", ":"))
            return t, hashlib.sha256(t.encode()).hexdigest()[:32]

        # the id rule is the same where nothing is left out: checked here
        plain = {"boxes": [{"size": [0.25, 0.25, 0.5], "position": [0.5, 0.25, 1]}]}
        status, desc, _ = self.a.http("POST", "/v1/scenes", plain)
        self.assertIn(status, (200, 201), desc)
        self.assertEqual(desc["id"], text_id(plain)[1])
        written = dict(plain, frame="ros", spheres=[])
        text, old = text_id(written)
        key = "ikd:scene:" + old
        with socket.create_connection(("127.0.0.1", self.redis.port), timeout=5) as r:
            r.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                      % (len(key), key.encode(), len(text), text.encode()))
            self.assertTrue(r.recv(64).startswith(b"+OK"))
        status, got, _ = self.b.http("GET", "/v1/scenes/" + old)
        self.assertEqual(status, 200, got)
        self.assertEqual((got["id"], got["boxes"]), (old, 1))
        # and solved with, min_distance the geometry's in that world
        cid = self.register(self.a, ROBOT.request)["id"]
        target, _ = ROBOT.targets(1, random.Random(5))[0]
        status, a, _ = self.b.http("POST", "/v1/solve", {"chain_id": cid, "target": target,
                                                         "scene_id": old})
        self.assertEqual(status, 200, a)
        (d, _, _), sd = ROBOT.distances(a["joints"], written)
        self.assertAlmostEqual(a["min_distance"], min(d, sd), delta=TOL)

    def test_i_redis_down(self):
        cid = self.register(self.a, bones(0.07), (201,))["id"]
        self.assertEqual(self.b.http("POST", "/v1/solve", {"chain_id": cid,
                                                           "target": bones_target(7)})[0], 200)
        status, desc, _ = self.a.http("POST", "/v1/scenes", {"spheres": [
            {"radius": 0.07, "position": [7, 0, 0]}]})
        self.assertEqual(status, 201, desc)
        sid = desc["id"]
        self.assertEqual(self.b.http("GET", "/v1/scenes/" + sid)[0], 200)  # B holds it
        self.redis.stop()
        try:
            body = self.b.wait_up(False)
            self.assertIn("Redis", body["registry"]["state"])
            status, ans, _ = self.b.http("POST", "/v1/solve",
                                         {"chain": BONES, "target": bones_target(2)})
            assert_reaches(self, ans, bones_target(2)["position"])
            status, ans, _ = self.b.http("POST", "/v1/solve",
                                         {"chain_id": cid, "target": bones_target(7)})
            self.assertEqual(status, 200, ans)
            assert_reaches(self, ans, bones_target(7)["position"])
            t0 = time.monotonic()
            status, err, headers = self.b.http("POST", "/v1/solve",
                                               {"chain_id": "d" * 32, "target": bones_target(1)})
            self.assertLess(time.monotonic() - t0, REDIS_TIMEOUT_MS / 1000 + 0.5 * SLOW)
            self.assertEqual((status, err["error"]["code"]), (503, "overloaded"), err)
            self.assertEqual(headers["Retry-After"], "1")
            self.assertIn("shared chain registry", err["error"]["message"])
            status, err, _ = self.b.http("POST", "/v1/chains", bones(0.08))
            self.assertEqual(status, 503, err)
            # a DELETE that cannot reach every replica is 503 and does
            # nothing: B still holds both and answers with them
            for kind, oid in (("chains", cid), ("scenes", sid)):
                status, err, headers = self.b.http("DELETE", "/v1/%s/%s" % (kind, oid))
                self.assertEqual((status, err["error"]["code"]), (503, "overloaded"), err)
                self.assertEqual(headers["Retry-After"], "1")
                self.assertEqual(self.b.http("GET", "/v1/%s/%s" % (kind, oid))[0], 200, kind)
            status, ans, _ = self.b.http("POST", "/v1/solve",
                                         {"chain_id": cid, "target": bones_target(7)})
            assert_reaches(self, ans, bones_target(7)["position"])
            status, text, _ = self.b.http("GET", "/metrics")
            self.assertIn("ikd_registry_shared_up 0", text)

            async def main():
                url = "ws://127.0.0.1:%d/v1/stream" % self.b.port
                async with websockets.connect(url, ping_interval=None,
                                              open_timeout=TIMEOUT) as ws:
                    await ws.send(json.dumps({"type": "open", "stream": "s",
                                              "chain_id": "d" * 32}))
                    m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                    self.assertEqual((m["type"], m["error"]["code"]), ("error", "overloaded"), m)
                    # the connection goes on: an inline open works
                    await ws.send(json.dumps({"type": "open", "stream": "t", "chain": BONES}))
                    m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                    self.assertEqual(m["type"], "opened", m)
            run(main())
        finally:
            self.redis.start()
        self.b.wait_up()
        self.a.wait_up()
        self.register(self.b, bones(0.08), (201,))
        self.assertIn("unavailable", self.b.text())
        # Redis lost its keys when it stopped: B drops its copies once
        # back (before, it kept serving ids no other replica knew)
        deadline = time.monotonic() + 5 * SLOW
        for kind, oid in (("chains", cid), ("scenes", sid)):
            while self.b.http("GET", "/v1/%s/%s" % (kind, oid))[0] != 404:
                self.assertLess(time.monotonic(), deadline, "B still holds what Redis lost")
                time.sleep(0.02)

    def test_j_deletions_missed_while_cut_off(self):
        keep = self.register(self.a, bones(0.11), (201,))["id"]
        gone = self.register(self.a, bones(0.12), (201,))["id"]
        status, desc, _ = self.a.http("POST", "/v1/scenes", {"spheres": [
            {"radius": 0.05, "position": [9, 0, 0]}]})
        self.assertEqual(status, 201, desc)
        sid = desc["id"]
        proxy = Proxy(self.redis.port)
        c = Ikd(proxy.url)
        try:
            c.wait_up()
            for path in ("/v1/chains/" + keep, "/v1/chains/" + gone, "/v1/scenes/" + sid):
                self.assertEqual(c.http("GET", path)[0], 200, path)  # C holds them now
            proxy.cut()
            c.wait_up(False)
            for path in ("/v1/chains/" + gone, "/v1/scenes/" + sid):
                self.assertEqual(self.a.http("DELETE", path)[0], 204, path)
                self.assertEqual(c.http("GET", path)[0], 200, path)  # cut off: held, served
            proxy.mend()
            c.wait_up()
            deadline = time.monotonic() + 5 * SLOW
            for path in ("/v1/chains/" + gone, "/v1/scenes/" + sid):
                while c.http("GET", path)[0] != 404:
                    self.assertLess(time.monotonic(), deadline, "C still holds " + path)
                    time.sleep(0.02)
            status, ans, _ = c.http("POST", "/v1/solve", {"chain_id": keep,
                                                        "target": bones_target(3)})
            assert_reaches(self, ans, bones_target(3)["position"])
            _, text, _ = c.http("GET", "/metrics")
            self.assertIn('ikd_registry_shared_total{op="check",result="dropped"} 2', text)
            self.assertIn("were gone from Redis and are dropped", c.text())
        finally:
            rc = c.stop()
            proxy.close()
        self.assertEqual(rc, 0)  # a sanitizer's report at exit fails it

    def test_j_check_counts_only_the_copies_it_drops(self):
        """A copy the check would drop is removed meanwhile by an announced
        DELETE (the check's EXISTS held by the proxy until then): the check
        removes nothing, and counts nothing dropped (before, it counted
        dropped for a copy it never removed)."""
        gone = self.register(self.a, bones(0.14), (201,))["id"]
        proxy = Proxy(self.redis.port)
        c = Ikd(proxy.url, "--loops", "1")
        try:
            c.wait_up()
            self.assertEqual(c.http("GET", "/v1/chains/" + gone)[0], 200)  # C holds it
            self.assertEqual(metric(c, "ikd_registry_chains"), 1)
            proxy.cut()
            c.wait_up(False)
            proxy.hold = b"EXISTS"
            proxy.mend()
            self.assertTrue(proxy.holding.wait(10 * SLOW), "no check after the cut")
            self.assertEqual(self.a.http("DELETE", "/v1/chains/" + gone)[0], 204)
            deadline = time.monotonic() + 5 * SLOW
            while metric(c, "ikd_registry_chains") != 0:  # the announcement reached C
                self.assertLess(time.monotonic(), deadline, "C still holds " + gone)
                time.sleep(0.02)
            proxy.released.set()
            deadline = time.monotonic() + 5 * SLOW
            while "were gone from Redis" not in c.text():
                self.assertLess(time.monotonic(), deadline, "the check did not end")
                time.sleep(0.02)
            self.assertIn("0 of the 1 ids held here were gone", c.text())
            self.assertEqual(metric(c, 'ikd_registry_shared_total{op="check",result="dropped"}'),
                             0)
        finally:
            proxy.released.set()
            rc = c.stop()
            proxy.close()
        self.assertEqual(rc, 0)

    def test_j_fetch_decoded_across_a_cut_is_not_kept(self):
        """A fetch answered before the replica was cut off, whose decode
        (on the pool, waiting behind a long solve there) ends after the
        check that followed the cut: the chain was deleted while the replica
        was cut off, so the replica does not keep the copy (before, it did,
        after the check had looked, and served the deleted chain until its
        LRU evicted it); the request that fetched it is answered with it,
        as it asked before the deletion."""
        chain = UR5.request()
        chain["urdf"] = chain["urdf"].replace(
            "<robot", "<!-- %s -->\n<robot" % ("padding " * 12002), 1)
        cid = self.register(self.a, chain, (201,))["id"]
        held = self.register(self.a, bones(0.15), (201,))["id"]
        proxy = Proxy(self.redis.port)
        c = Ikd(proxy.url, "--loops", "1", "--threads", "1", "--max-iterations", "100000000",
                "--max-time-ms", "10000")
        out = {}
        threads = []
        try:
            c.wait_up()
            self.assertEqual(c.http("GET", "/v1/chains/" + held)[0], 200)  # the check has an id
            # the one pool thread solves for a while (the iiwa blocked by its
            # limits runs its budget: test_stream.py), the decode waits behind
            slow = {"chain": iiwa_chain(), "target": {"position": [0.0, 0.0, 0.36]},
                    "options": {"timeout_ms": 2000, "max_iterations": 100000000}}
            for name, method, path, body in (("solve", "POST", "/v1/solve", slow),
                                             ("get", "GET", "/v1/chains/" + cid, None)):
                depth = len(threads) + 1
                threads.append(threading.Thread(target=lambda n=name, m=method, p=path, b=body:
                                                out.update({n: c.http(m, p, b)[0]})))
                threads[-1].start()
                deadline = time.monotonic() + 5 * SLOW
                while metric(c, "ikd_pool_queue_depth") < depth:
                    self.assertLess(time.monotonic(), deadline, name + " is not on the pool")
                    time.sleep(0.01)
            proxy.cut()
            c.wait_up(False)
            self.assertEqual(self.a.http("DELETE", "/v1/chains/" + cid)[0], 204)
            proxy.mend()
            c.wait_up()
            deadline = time.monotonic() + 5 * SLOW
            while "were gone from Redis" not in c.text():
                self.assertLess(time.monotonic(), deadline, "the check did not end")
                time.sleep(0.02)
            self.assertNotIn("get", out, "the decode ended before the check: try a longer solve")
            for th in threads:
                th.join(30 * SLOW)
            self.assertEqual(out, {"solve": 200, "get": 200})
            self.assertEqual(c.http("GET", "/v1/chains/" + cid)[0], 404)
        finally:
            rc = c.stop()
            proxy.close()
        self.assertEqual(rc, 0)

    def test_j_fetched_before_first_up_is_checked(self):
        """A replica that has never been up (its subscription held by the
        proxy) fetches a chain on its other connection, which already
        answers; the chain is deleted before the subscription goes
        through, so the replica never hears of it. Once up, it checks what
        it holds, as after a cut, and drops the copy (before, nothing was
        checked after a start: it served the deleted chain until its LRU
        evicted it)."""
        gone = self.register(self.a, bones(0.16), (201,))["id"]
        proxy = Proxy(self.redis.port)
        proxy.hold = b"SUBSCRIBE"
        c = Ikd(proxy.url, "--loops", "1", "--redis-timeout", "20000")
        try:
            self.assertTrue(proxy.holding.wait(10 * SLOW), "no SUBSCRIBE")
            self.assertEqual(c.http("GET", "/v1/chains/" + gone)[0], 200)  # C holds it
            self.assertEqual(self.a.http("DELETE", "/v1/chains/" + gone)[0], 204)
            proxy.released.set()
            c.wait_up()
            deadline = time.monotonic() + 5 * SLOW
            while c.http("GET", "/v1/chains/" + gone)[0] != 404:
                self.assertLess(time.monotonic(), deadline, "C still holds " + gone)
                time.sleep(0.02)
            self.assertIn("1 of the 1 ids held here were gone", c.text())
        finally:
            proxy.released.set()
            rc = c.stop()
            proxy.close()
        self.assertEqual(rc, 0)

    def test_k_refused_registration_leaves_no_copy(self):
        # a replica that has not reached Redis since it started: its 503
        # registrations must not be served by it alone (before, it kept
        # them, GET 200 there and 404 on every other replica, and the check
        # after a cut never ran for a connection that was never up)
        chain = bones(0.13)
        scene = {"spheres": [{"radius": 0.05, "position": [11, 0, 0]}]}
        cid = self.register(self.a, chain)["id"]  # the content ids
        status, desc, _ = self.a.http("POST", "/v1/scenes", scene)
        self.assertIn(status, (200, 201), desc)
        sid = desc["id"]
        c = Ikd("redis://127.0.0.1:%d" % free_port())  # nothing listens there
        try:
            self.assertEqual(c.http("POST", "/v1/chains", chain)[0], 503)
            self.assertEqual(c.http("POST", "/v1/scenes", scene)[0], 503)
            for path in ("/v1/chains/" + cid, "/v1/scenes/" + sid):
                status, err, _ = c.http("GET", path)
                self.assertEqual(status, 503, (path, err))  # not held: Redis is asked
        finally:
            rc = c.stop()
        self.assertEqual(rc, 0)


class PasswordTest(unittest.TestCase):
    def test_auth(self):
        redis = Redis(None, "--requirepass", "s3cret")
        try:
            wrong = Ikd("redis://:nope@127.0.0.1:%d" % redis.port)
            right = Ikd("redis://:s3cret@127.0.0.1:%d/2" % redis.port)
            try:
                body = right.wait_up()
                self.assertEqual(right.http("POST", "/v1/chains", bones(0.09))[0], 201)
                # wait for wrong's answer from Redis, not a fixed time: on a
                # loaded machine it may still be connecting (a state that
                # names no cause) when a fixed sleep is over
                deadline = time.monotonic() + 10 * SLOW
                while True:
                    status, body, _ = wrong.http("GET", "/readyz")
                    if (body["registry"]["state"] not in ("connecting", "resolving the Redis host")
                            or time.monotonic() > deadline):
                        break
                    time.sleep(0.05)
                self.assertFalse(body["registry"]["up"], body)
                self.assertNotIn("nope", wrong.text() + json.dumps(body), "the password shows")
                self.assertIn("Redis", body["registry"]["state"])
                self.assertEqual(wrong.http("POST", "/v1/chains", bones(0.09))[0], 503)
            finally:
                self.assertEqual(wrong.stop(), 0)
                self.assertEqual(right.stop(), 0)
        finally:
            redis.stop()


if __name__ == "__main__":
    unittest.main()

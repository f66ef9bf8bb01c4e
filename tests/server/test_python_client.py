"""
test_python_client.py: the Python client (clients/python) as a user
installs it, against the real daemon (run with a token, so that the
client's HTTP and WebSocket auth are exercised).

The suite first installs the package into a fresh venv, offline:
/usr/bin/python3 -m venv --system-site-packages (so that Debian's
websockets is seen), pip install --no-index --no-build-isolation of a copy
of clients/python; it then runs itself again with that venv's python, so
every test below uses the installed package, not the repository's folder.

Covered: the package installed (and `import ikd` without websockets fails
at once, naming the package); solve and batch checked by forward
kinematics of the two-bone leg (bone lengths kept, the foot on the
target); chains registered, described and deleted, and registered again
when ikd forgot them (HTTP, a stream's open, a stream reopened after a
reconnection to a new daemon); errors raised as IkdError with the code,
the JSON path and the HTTP status, a wrong token refused on both sides;
streams on asyncio and blocking (answers in order, many in flight where
conflated targets resolve with the newer solution, a refused target and
a refused open, a path); ticks (one item per target in order, per-stream
errors, many ticks in flight, a tick refused whole); ikd's unknown_type
error and messages the client does not know reaching the caller; answers
of a hostile server refused as bad_answer (seqs it cannot read, tick
answers past max_streams or of entries not objects, HTTP answers of
another count of results, an answer or its headers trickled, an answer
too large, an upgrade answer that never ends, binary tick answers of
lying counts or NaN seqs, answers of seqs never sent, tick answers of
other targets than the tick's, path answers after the path's end) with
the reader going on; a server dropping each connection redialled with a growing
backoff; a silent peer pinged and dropped at idle_timeout; a stream
solved 10,000 times without reading keeping memory bounded; HTTP retries
on 503; TLS (https and wss through a TLS front with a private CA, refused
with another); tree streams (TreeStreamTest: ticks of a two-armed tree and
a leg, JSON and binary, every tip checked by the test's own forward
kinematics; a path of tree waypoints; 3,000 ticks sent faster than ikd
answers, each accounted for exactly once); and the example and the
README's snippets run as written (on a free port instead of 8080).
"""
import asyncio
import base64
import gc
import hashlib
import logging
import math
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def _install_and_rerun():
    """Installs clients/python into a fresh venv and runs this file again
    with the venv's python (the marker IKD_PY_VENV says it is done)."""
    venv = tempfile.mkdtemp(prefix="ikd-py-venv-")
    try:
        src = os.path.join(venv, "src")
        shutil.copytree(os.path.join(ROOT, "clients", "python"), src,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages",
                        os.path.join(venv, "env")], check=True)
        py = os.path.join(venv, "env", "bin", "python")
        r = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                            "--disable-pip-version-check", "--quiet", src],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write("pip install ./clients/python failed:\n%s%s" % (r.stdout, r.stderr))
            return 1
        env = dict(os.environ, IKD_PY_VENV=os.path.join(venv, "env"))
        return subprocess.run([py, os.path.abspath(__file__), *sys.argv[1:]], env=env,
                              cwd=ROOT).returncode
    finally:
        shutil.rmtree(venv, ignore_errors=True)


if __name__ == "__main__" and not os.environ.get("IKD_PY_VENV"):
    sys.exit(_install_and_rerun())

sys.path.insert(0, HERE)
from test_stream import Daemon, IKD_BIN, TIMEOUT, TEST_LIMIT  # noqa: E402
import ikd  # noqa: E402  (the installed package)
import robot_chain  # noqa: E402
from relay import pump  # noqa: E402

TOKEN = "py-t0ken/+"
LEG = {"kind": "bones", "positions": [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]]}
PLANAR = {"kind": "planar", "lengths": [1.0, 0.8]}
IIWA = os.path.join(os.environ.get("IKD_DATA", "tests/data"), "robots",
                    "kuka_iiwa14_r820.urdf")


def dist(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def check_leg(test, positions, target):
    """Forward kinematics of the leg: the root kept, both bone lengths kept,
    the foot on the target."""
    p0, p1, p2 = LEG["positions"]
    test.assertLess(dist(positions[0], p0), 1e-9)
    test.assertAlmostEqual(dist(positions[0], positions[1]), dist(p0, p1), delta=1e-9)
    test.assertAlmostEqual(dist(positions[1], positions[2]), dist(p1, p2), delta=1e-9)
    test.assertLess(dist(positions[2], target), 1e-6)


def planar_tip(q, lengths=(1.0, 0.8)):
    a = x = y = 0.0
    for qi, li in zip(q, lengths):
        a += qi
        x += li * math.cos(a)
        y += li * math.sin(a)
    return [x, y]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TEST_LIMIT))


async def accept_upgrade(r, w):
    """Plays ikd's side of a stream's upgrade on an asyncio server's
    connection: reads the request's head and answers 101 with its accept."""
    head = b""
    while b"\r\n\r\n" not in head:
        head += await r.read(4096)
    key = re.search(rb"(?i)sec-websocket-key:\s*(\S+)", head).group(1)
    accept = base64.b64encode(hashlib.sha1(
        key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    w.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
            b"Sec-WebSocket-Protocol: ikd.v1\r\n\r\n" % accept)


async def until(cond, what, limit=TIMEOUT):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > limit:
            raise AssertionError("%s: not within %s s" % (what, limit))
        await asyncio.sleep(0.005)


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--token", TOKEN)
        cls.url = "http://127.0.0.1:%d" % cls.d.port
        cls.c = ikd.Client(cls.url, token=TOKEN, timeout=TIMEOUT)
        cls.a = ikd.AsyncClient(cls.url, token=TOKEN, timeout=TIMEOUT)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    # ---- the package ---------------------------------------------------------

    def test_installed_package(self):
        venv = os.environ.get("IKD_PY_VENV")
        self.assertTrue(venv, "run this file directly: it installs the package first")
        self.assertTrue(os.path.realpath(ikd.__file__).startswith(os.path.realpath(venv)),
                        ikd.__file__)
        with open(os.path.join(ROOT, "clients", "python", "pyproject.toml")) as f:
            version = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
        self.assertEqual(ikd.__version__, version)

    def test_websockets_missing_fails_at_import(self):
        """Without websockets (python3 -S: no site packages), `import ikd`
        fails at once and names what to install."""
        r = subprocess.run(["/usr/bin/python3", "-S", "-c",
                            "import sys; sys.path.insert(0, 'clients/python'); import ikd"],
                           cwd=ROOT, capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError: ikd needs the 'websockets' package", r.stderr)
        self.assertIn("pip install websockets", r.stderr)
        self.assertIn("python3-websockets", r.stderr)

    # ---- HTTP -------------------------------------------------------------------

    def test_solve_and_batch(self):
        target = [0.2, 0.1, 0.25]
        a = self.c.solve(LEG, {"position": target})
        self.assertEqual(a["status"], "success")
        check_leg(self, a["positions"], target)
        targets = [[0.2, 0.1, 0.25], [0.1, 0.1, 0.3], [0.0, 0.0, -2.0]]
        b = self.c.batch(LEG, [{"position": t} for t in targets])
        self.assertEqual(b["counts"]["success"], 2)
        self.assertEqual(b["counts"]["no_ik_solution"], 1)
        self.assertEqual(len(b["results"]), 3)
        for r, t in zip(b["results"][:2], targets):
            check_leg(self, r["positions"], t)
        self.assertIn("numeric", [s["name"] for s in self.c.solvers()["solvers"]])

        async def body():
            a = await self.a.solve(LEG, {"position": target})
            check_leg(self, a["positions"], target)
            b = await self.a.batch(chain=LEG, targets=[{"position": target}])
            check_leg(self, b["results"][0]["positions"], target)
        run(body())

    def test_chains_and_reregistration(self):
        with open(IIWA) as f:
            chain = {"kind": "urdf", "urdf": f.read(), "base": "base_link", "tip": "tool0"}
        reg = self.c.register_chain(chain)
        self.assertRegex(reg["id"], r"^[0-9a-f]{32}$")
        self.assertEqual(self.c.get_chain(reg["id"])["id"], reg["id"])
        pose = {"position": [0.5, 0.1, 0.6], "orientation": [0.0, 1.0, 0.0, 0.0]}
        a = self.c.solve(chain_id=reg["id"], target=pose)
        self.assertEqual(a["status"], "success", a)
        self.assertEqual(len(a["joints"]), 7)
        self.assertLess(dist(a["tip"]["position"], pose["position"]), 1e-5)
        # ikd forgets it (another client deletes it): this client registers
        # it again and the solve goes through
        other = ikd.Client(self.url, token=TOKEN, timeout=TIMEOUT)
        other.delete_chain(reg["id"])
        a = self.c.solve(chain_id=reg["id"], target=pose)
        self.assertLess(dist(a["tip"]["position"], pose["position"]), 1e-5)
        self.assertEqual(self.c.http.reregistered, 1)
        # deleting through this client forgets it here too: no guessing
        self.c.delete_chain(reg["id"])
        with self.assertRaises(ikd.IkdError) as cm:
            self.c.get_chain(reg["id"])
        self.assertEqual((cm.exception.code, cm.exception.status), ("unknown_chain", 404))
        with self.assertRaises(ikd.IkdError) as cm:
            self.c.solve(chain_id=reg["id"], target=pose)
        self.assertEqual((cm.exception.code, cm.exception.path), ("unknown_chain", "/chain_id"))

        # a stream opened by chain_id on a chain ikd forgot
        planar = self.c.register_chain(PLANAR)
        other.delete_chain(planar["id"])

        async def body():
            async with self.a.connect() as conn:
                # the AsyncClient does not hold it: refused
                with self.assertRaises(ikd.IkdError) as cm:
                    await conn.open("arm", chain_id=planar["id"])
                self.assertEqual(cm.exception.code, "unknown_chain")
            async with self._holding().connect() as conn:
                s = await conn.open("arm", chain_id=planar["id"])
                sol = await s.solve({"position": [1.2, 0.6]})
                self.assertLess(dist(planar_tip(sol.result["joints"]), [1.2, 0.6]), 1e-9)
        run(body())

    def _holding(self):
        """An AsyncClient sharing the sync client's HTTP side (it holds the
        chains the sync client registered)."""
        a = ikd.AsyncClient(self.url, token=TOKEN, timeout=TIMEOUT)
        a.http = self.c.http
        return a

    def test_errors(self):
        with self.assertRaises(ikd.IkdError) as cm:
            self.c.solve(LEG, {"position": [0.2, 0.1, "high"]})
        e = cm.exception
        self.assertEqual((e.code, e.path, e.status), ("invalid_request", "/target/position/2",
                                                      400))
        self.assertIn("/target/position/2", str(e))
        bad = ikd.Client(self.url, token="wrong", timeout=TIMEOUT)
        with self.assertRaises(ikd.IkdError) as cm:
            bad.solve(LEG, {"position": [0.2, 0.1, 0.25]})
        self.assertEqual((cm.exception.code, cm.exception.status), ("unauthorized", 401))
        with self.assertRaises(ikd.IkdError) as cm:
            bad.connect().start()
        self.assertEqual(cm.exception.status, 401)

        async def body():
            async with ikd.AsyncClient(self.url, token="wrong").connect():
                pass
        with self.assertRaises(ikd.IkdError) as cm:
            run(body())
        self.assertEqual(cm.exception.status, 401)
        with self.assertRaises(ikd.IkdError) as cm:
            ikd.Client("http://127.0.0.1:9", retries=1, backoff=0.001).solvers()
        self.assertEqual(cm.exception.code, "network")
        with self.assertRaises(ValueError):
            ikd.Client("127.0.0.1:8080")

    def test_retries(self):
        hits = []

        class Busy(BaseHTTPRequestHandler):
            def do_GET(self):
                hits.append(self.path)
                if len(hits) % 3:
                    body = b'{"error":{"code":"overloaded","message":"busy","path":""}}'
                    self.send_response(503)
                    self.send_header("Retry-After", "0")
                else:
                    body = b'{"status":"ready"}'
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        srv = ThreadingHTTPServer(("127.0.0.1", 0), Busy)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        try:
            base = "http://127.0.0.1:%d" % srv.server_address[1]
            self.assertEqual(ikd.Client(base, backoff=0.001).ready(), {"status": "ready"})
            self.assertEqual(len(hits), 3)
            with self.assertRaises(ikd.IkdError) as cm:
                ikd.Client(base, retries=1, backoff=0.001).ready()
            self.assertEqual((cm.exception.code, cm.exception.status, cm.exception.retry_after),
                             ("overloaded", 503, 0.0))
            self.assertEqual(len(hits), 5)
        finally:
            srv.shutdown()
            srv.server_close()

    # ---- streams ----------------------------------------------------------------

    def test_stream_in_order(self):
        async def body():
            async with self.a.connect() as conn:
                self.assertEqual(conn.ws.subprotocol, "ikd.v1")
                leg = await conn.open("leg", chain=LEG)
                self.assertRegex(leg.chain_id, r"^[0-9a-f]{32}$")
                for i in range(10):
                    t = 2 * math.pi * i / 10
                    target = [0.2 * math.cos(t), 0.2 * math.sin(t), 0.3]
                    sol = await leg.solve({"position": target}, timeout=TIMEOUT)
                    self.assertIsInstance(sol, ikd.Solution)
                    self.assertEqual((sol.stream, sol.seq, sol.requested, sol.skipped),
                                     ("leg", i + 1, i + 1, 0))
                    self.assertTrue(sol.ok)
                    check_leg(self, sol.result["positions"], target)
                    self.assertIs(leg.latest, sol)
                # many in flight: every future resolves, in order, each with
                # its own solution or the newer one that replaced it
                futs = [await leg.submit({"position": [0.2, 0.05 * k / 40, 0.3]})
                        for k in range(40)]
                sols = [await asyncio.wait_for(f, TIMEOUT) for f in futs]
                seqs = [s.seq for s in sols]
                self.assertEqual(seqs, sorted(seqs))
                for k, s in enumerate(sols):
                    self.assertEqual(s.requested, 11 + k)
                    self.assertGreaterEqual(s.seq, s.requested)
                    check_leg(self, s.result["positions"], [0.2, 0.05 * (s.seq - 11) / 40, 0.3])
                self.assertEqual(seqs[-1], 50)
                answered = len(set(seqs))
                skipped = sum(s.skipped for s in {s.seq: s for s in sols}.values())
                self.assertEqual(answered + skipped, 40)
                # a refused target raises with its path; the stream goes on
                with self.assertRaises(ikd.IkdError) as cm:
                    await leg.solve({"position": [0.2, 0.1, 2.5e9]}, timeout=TIMEOUT)
                self.assertEqual((cm.exception.code, cm.exception.path, cm.exception.stream,
                                  cm.exception.seq), ("invalid_request", "/target/position/2",
                                                      "leg", 51))
                sol = await leg.solve({"position": [0.2, 0.1, 0.25]}, timeout=TIMEOUT)
                self.assertEqual(sol.result["status"], "success")
                p = await leg.path([{"position": [0.2, 0.1, 0.25]},
                                    {"position": [0.1, 0.1, 0.3]}], rate_hz=50, duration_s=0.2)
                self.assertEqual([s.index for s in p.samples][-1], 10)
                self.assertEqual((p.end.count, p.end.sent + p.end.skipped, p.end.completed),
                                 (11, 11, True))
                check_leg(self, p.samples[-1].result["positions"], [0.1, 0.1, 0.3])
                # the bounded queue holds the newest unread messages, in order
                got = []
                async for m in leg.solutions():
                    got.append(m)
                    if isinstance(m, ikd.PathEnd):
                        break
                self.assertEqual(len(got), 8)
                self.assertGreater(leg.dropped, 0)
                await leg.close()
                self.assertNotIn("leg", conn.streams)
                # a chain ikd refuses: open raises with the path into it
                with self.assertRaises(ikd.IkdError) as cm:
                    await conn.open("bad", chain={"kind": "bones", "positions": [[0, 0, 0]]})
                self.assertEqual(cm.exception.path[:17], "/chain/positions")
        run(body())

    def test_sync_stream_and_tick(self):
        with self.c.connect() as conn:
            leg = conn.open("leg", chain=LEG)
            sol = leg.solve({"position": [0.2, 0.1, 0.25]}, timeout=TIMEOUT)
            check_leg(self, sol.result["positions"], [0.2, 0.1, 0.25])
            conn.open("arm", chain=LEG)
            ts = conn.tick({"leg": {"position": [0.15, 0.05, 0.3]},
                            "arm": {"position": [0.1, 0.1, 0.35]}}, timeout=TIMEOUT)
            self.assertEqual([(it.stream, it.seq) for it in ts], [("leg", 2), ("arm", 1)])
            check_leg(self, ts[0].result["positions"], [0.15, 0.05, 0.3])
            check_leg(self, ts[1].result["positions"], [0.1, 0.1, 0.35])
            self.assertEqual(leg.latest.seq, 2)
            seq = leg.send({"position": [0.2, 0.1, 0.3]})
            self.assertEqual(seq, 3)
            t0 = time.monotonic()
            while (leg.latest.seq < 3) and time.monotonic() - t0 < TIMEOUT:
                time.sleep(0.005)
            check_leg(self, leg.latest.result["positions"], [0.2, 0.1, 0.3])
            leg.close()
        self.assertEqual(conn.state, "closed")
        # used after its close: a clear IkdError (before: AttributeError
        # "'NoneType' object has no attribute 'run'"); closing again is a no-op
        for call in (lambda: conn.open("late", chain=LEG),
                     lambda: conn.tick({"leg": {"position": [0.2, 0.1, 0.3]}}),
                     lambda: leg.solve({"position": [0.2, 0.1, 0.3]})):
            with self.assertRaises(ikd.IkdError) as cm:
                call()
            self.assertEqual((cm.exception.code, cm.exception.message),
                             ("not_connected", "the connection is closed"))
        conn.close()
        leg.close()

    def test_tick(self):
        async def body():
            async with self.a.connect() as conn:
                c1 = await conn.open("c1", chain=LEG)
                await conn.open("c2", chain=LEG, options={"solver": "two_bone"})
                seen = []
                conn.on_tick(lambda t: seen.append(t.seq))
                a, b = [0.2, 0.1, 0.25], [0.15, -0.05, 0.3]
                t1 = await conn.tick({"c1": {"position": a}, "c2": {"position": b}})
                self.assertIsInstance(t1, ikd.TickSolution)
                self.assertEqual((t1.seq, t1.requested, t1.skipped), (1, 1, 0))
                self.assertEqual([it.stream for it in t1], ["c1", "c2"])
                check_leg(self, t1[0].result["positions"], a)
                check_leg(self, t1[1].result["positions"], b)
                self.assertEqual(c1.latest.seq, 1)
                # errors in their places
                t2 = await conn.tick([("c2", {"position": a}),
                                      ("c1", {"position": b, "orientation": [0, 0, 0, 2]}),
                                      {"stream": "c3", "target": {"position": b}}])
                self.assertTrue(t2[0].ok)
                self.assertFalse(t2[1].ok)
                e1, e2 = t2[1].error, t2[2].error
                self.assertEqual((e1.code, e1.path, e1.stream),
                                 ("invalid_request", "/targets/1/target/orientation", "c1"))
                self.assertEqual((e2.code, e2.path), ("unknown_stream", "/targets/2/stream"))
                # a target after ticks takes its stream's next seq; a stream
                # that joins late has seqs of its own in the tick
                nxt = await c1.solve({"position": b})
                self.assertEqual(nxt.seq, 3)
                await conn.open("c3", chain=LEG)
                t3 = await conn.tick({"c1": {"position": a}, "c3": {"position": b}})
                self.assertEqual([(it.stream, it.seq) for it in t3], [("c1", 4), ("c3", 1)])
                check_leg(self, t3.by_stream()["c3"].result["positions"], b)
                # many in flight
                many = [asyncio.ensure_future(conn.tick(
                    {"c1": {"position": [0.2, 0.1, 0.25 + 0.002 * i]}, "c2": {"position": b}}))
                    for i in range(20)]
                done = await asyncio.wait_for(asyncio.gather(*many), TIMEOUT)
                for i, t in enumerate(done):
                    self.assertEqual(t.requested, 4 + i)
                    self.assertGreaterEqual(t.seq, t.requested)
                self.assertEqual(done[-1].seq, 23)
                check_leg(self, done[-1][0].result["positions"], [0.2, 0.1, 0.25 + 0.002 * 19])
                await until(lambda: seen and seen[-1] == 23, "the last tick's event")
                # a tick refused whole raises
                with self.assertRaises(ikd.IkdError) as cm:
                    await conn.tick([], timeout=TIMEOUT)
                self.assertEqual((cm.exception.code, cm.exception.path, cm.exception.seq),
                                 ("invalid_request", "/targets", 24))
        run(body())

    def test_tick_binary(self):
        """BinaryCodec: a tick of positions goes as one binary message and
        its binary answer reads as the JSON form's (the same numbers, the
        same errors with code, path and message); other ticks go as JSON."""
        codec = ikd.BinaryCodec()
        self.assertIsInstance(codec.encode_tick(1, [("c1", None, {"position": [1, 2, 3]}, None)]),
                              bytes)
        self.assertIsInstance(codec.encode_tick(1, [("c1", None, {"position": [1, 2, 3]}, [0])]),
                              str)
        self.assertIsInstance(codec.encode_tick(1, [("c1", None, {"position": [1, 2, 3],
                                                                  "up": [0, 0, 1]}, None)]), str)

        async def body():
            async with self.a.connect(codec=ikd.BinaryCodec()) as cb, \
                    self.a.connect() as cj:
                for c in (cb, cj):
                    await c.open("c1", chain=LEG)
                    await c.open("c2", chain=LEG, options={"solver": "two_bone"})
                    await c.open("c3", chain=LEG)
                a, b = [0.2, 0.1, 0.25], [0.15, -0.05, 0.3]
                targets = [("c1", {"position": a}), ("nope", {"position": a}),
                           ("c3", {"position": [0.2, 2.5e9, 0.3]}), ("c2", {"position": b}),
                           ("c1", {"position": b})]
                tb = await cb.tick(targets)
                tj = await cj.tick(targets)
                self.assertEqual((tb.seq, tb.skipped), (tj.seq, tj.skipped))
                self.assertEqual(len(tb.items), 5)
                check_leg(self, tb[0].result["positions"], a)
                check_leg(self, tb[3].result["positions"], b)
                for x, y in zip(tb.items, tj.items):
                    self.assertEqual((x.stream, x.seq, x.skipped), (y.stream, y.seq, y.skipped))
                    if y.error is not None:
                        self.assertIsNotNone(x.error)
                        self.assertEqual((x.error.code, x.error.path, x.error.message,
                                          x.error.stream, x.error.seq),
                                         (y.error.code, y.error.path, y.error.message,
                                          y.error.stream, y.error.seq))
                        continue
                    for k in ("status", "code", "iterations", "positions", "rotations",
                              "local_rotations", "position_error"):
                        self.assertEqual(x.result.get(k), y.result.get(k), k)
                self.assertEqual([it.error.path for it in tb.items if it.error],
                                 ["/targets/1/stream", "/targets/2/target/position/1",
                                  "/targets/4/stream"])
                # a stream's latest is the binary item
                self.assertEqual(cb.streams["c2"].latest.seq, tb[3].seq)
                # an orientation on some targets only: sent as JSON, answered
                t2 = await cb.tick([("c1", {"position": a}),
                                    ("c2", {"position": b, "orientation": [0, 0, 0, 1]})])
                check_leg(self, t2[0].result["positions"], a)
        run(body())

    def test_unknown_type_and_unknown_messages_reach_the_caller(self):
        async def body():
            async with self.a.connect() as conn:
                errors = []
                conn.on_error(errors.append)
                await conn.send_raw({"type": "bogus"})
                leg = await conn.open("leg", chain=LEG)
                await leg.send({"position": [0.2, 0.1, 2.5e9]})  # its error: no future
                await until(lambda: len(errors) >= 2, "two errors")
                self.assertEqual(errors[0].code, "unknown_type")
                self.assertEqual((errors[1].code, errors[1].path, errors[1].stream,
                                  errors[1].seq), ("invalid_request", "/target/position/2",
                                                   "leg", 1))
            # without a handler: a warning of the "ikd" logger
            async with self.a.connect() as conn:
                with self.assertLogs("ikd", logging.WARNING) as logs:
                    await conn.send_raw('{"type":"bogus"}')
                    await until(lambda: conn.dropped_errors == 1, "the warning")
                self.assertIn("unknown_type", logs.output[0])
        run(body())

        # a scripted server sends a type this client does not know and a
        # binary frame: on_message when handled, on_error otherwise
        import websockets

        async def scripted():
            async def handler(ws, path=None):
                async for _ in ws:
                    await ws.send('{"type":"novelty","stream":"x"}')
                    await ws.send(b"\x01\x02")
            async with websockets.serve(handler, "127.0.0.1", 0,
                                        subprotocols=["ikd.v1"]) as srv:
                port = srv.sockets[0].getsockname()[1]
                c = ikd.AsyncClient("http://127.0.0.1:%d" % port)
                async with c.connect(reconnect=False, max_streams=2) as conn:
                    errors, messages = [], []
                    off = conn.on_error(errors.append)
                    await conn.send_raw({"type": "hello"})
                    await until(lambda: len(errors) == 2, "two unexpected messages")
                    self.assertEqual([e.code for e in errors], ["unexpected_message"] * 2)
                    off()
                    conn.on_message(messages.append)
                    await conn.send_raw({"type": "hello"})
                    await until(lambda: len(messages) == 2, "two messages")
                    self.assertEqual(messages[0]["type"], "novelty")
                    self.assertEqual(messages[1], b"\x01\x02")
        run(scripted())

    def test_hostile_answers_refused_reader_goes_on(self):
        """A server that is not ikd answers with seqs that cannot be read
        (none, true, "1", 1.5, [1]), a tick answer of entries that are not
        objects or of more entries than max_streams: each is refused as
        bad_answer (failing the tick it names when its seq can be read) and
        the reader goes on. Before, a seq of true answered tick 1, a missing
        one was taken as 0, and a string or a list killed the reader (every
        call in flight failed with connection_lost)."""
        import websockets
        import json as js
        sol = '{"status":"success","joints":[0.25,-0.5]}'
        bogus = ['', '"seq":true,', '"seq":"1",', '"seq":1.5,']
        replies = {
            ("tick", 1): ['{"type":"tick_solution",%s"solutions":[]}' % b for b in bogus] +
                         ['{"type":"tick_solution","seq":1,"solutions":[{"stream":"s","seq":1,'
                          '"result":%s}]}' % sol],
            ("tick", 2): ['{"type":"tick_solution","seq":2,"solutions":[5]}'],
            ("tick", 3): ['{"type":"tick_solution","seq":3,"solutions":[{"stream":"s",'
                          '"seq":"3","result":%s}]}' % sol],
            ("tick", 4): ['{"type":"tick_solution","seq":4,"solutions":[%s]}' % ",".join(
                ['{"stream":"s","seq":4,"result":%s}' % sol] * 3)],
            ("tick", 5): ['{"type":"tick_solution","seq":5,"solutions":[{"stream":"s",'
                          '"seq":5,"result":%s}]}' % sol],
            ("open", None): ['{"type":"opened","stream":"s"}'],
            ("target", 1): ['{"type":"solution","stream":"s",%s"result":%s}' % (b, sol)
                            for b in bogus] +
                           ['{"type":"error","stream":"s","seq":[1],"error":{"code":"x"}}',
                            '{"type":"solution","stream":"s","seq":1,"result":%s}' % sol]}

        async def handler(ws, path=None):
            async for text in ws:
                m = js.loads(text)
                for r in replies.get((m["type"], m.get("seq")), ()):
                    await ws.send(r)

        async def body():
            async with websockets.serve(handler, "127.0.0.1", 0, subprotocols=["ikd.v1"]) as srv:
                c = ikd.AsyncClient("http://127.0.0.1:%d" % srv.sockets[0].getsockname()[1])
                async with c.connect(reconnect=False, max_streams=2) as conn:
                    errors = []
                    conn.on_error(errors.append)
                    ts = await conn.tick({"s": {"position": [0, 0.3, 0.5]}}, timeout=TIMEOUT)
                    self.assertEqual((type(ts.seq), ts.seq, len(ts.items)), (int, 1, 1))
                    self.assertEqual([(e.code, e.seq) for e in errors], [("bad_answer", None)] * 4)
                    # an entry not an object, one whose seq is a string, 3 entries past
                    # max_streams 2
                    for seq in (2, 3, 4):
                        with self.assertRaises(ikd.IkdError) as cm:
                            await conn.tick({"s": {"position": [0, 0.3, 0.5]}}, timeout=TIMEOUT)
                        self.assertEqual((cm.exception.code, cm.exception.seq), ("bad_answer", seq))
                    self.assertIn("max_streams", cm.exception.message)
                    self.assertEqual((await conn.tick({"s": {"position": [0, 0.3, 0.5]}},
                                                      timeout=TIMEOUT)).seq, 5)
                    del errors[:]
                    s = await conn.open("s", chain=LEG)
                    got = await s.solve({"position": [0, 0.3, 0.5]}, timeout=TIMEOUT)
                    self.assertEqual((got.seq, got.result["joints"]), (1, [0.25, -0.5]))
                    self.assertEqual([e.code for e in errors], ["bad_answer"] * 5)
                    self.assertEqual(conn.state, "open")
        run(body())

    def test_http_answer_of_other_result_count_refused(self):
        """A solve answered without a result, a batch answered with another
        count of results than its targets (none, fewer, more): IkdError
        bad_answer (before, returned as they came, and results[i] no longer
        answered targets[i])."""
        sol = b'{"status":"success","joints":[0.25,-0.5]}'
        answers = []

        class Server(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                body = answers.pop(0)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        srv = ThreadingHTTPServer(("127.0.0.1", 0), Server)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            c = ikd.Client("http://127.0.0.1:%d" % srv.server_address[1], retries=0)
            targets = [{"position": [0, 0.3, 0.5]}] * 2
            answers[:] = [sol, b'{"results":[%s,%s]}' % (sol, sol)]
            self.assertEqual(c.solve(LEG, targets[0])["status"], "success")
            self.assertEqual(len(c.batch(LEG, iter(targets))["results"]), 2)
            for answer, batch in ((b'{"results":[]}', False), (b'[]', False),
                                  (b'{"results":[]}', True), (b'{"results":[%s]}' % sol, True),
                                  (b'{"results":[%s,%s,%s]}' % (sol, sol, sol), True)):
                answers[:] = [answer]
                with self.assertRaises(ikd.IkdError, msg=answer) as cm:
                    c.batch(LEG, targets) if batch else c.solve(LEG, targets[0])
                self.assertEqual(cm.exception.code, "bad_answer")
            answers[:] = [b'{"results":[%s]}' % sol]
            with self.assertRaises(ikd.IkdError):
                run(ikd.AsyncClient(c.base_url, retries=0).batch(LEG, targets))
        finally:
            srv.shutdown()
            srv.server_close()

    def test_http_answer_bounded_in_time_and_size(self):
        """A server that trickles an answer's body (a byte every 50 ms, never
        ending it) or sends one past max_answer: IkdError "timeout" within
        the client's timeout, "bad_answer" naming max_answer. Before, the
        first waited as long as the bytes came (each read had the timeout,
        not the answer), the second was read whole."""
        srv = socket.create_server(("127.0.0.1", 0))
        port = srv.getsockname()[1]
        stop = threading.Event()

        def serve():
            while not stop.is_set():
                try:
                    c, _ = srv.accept()
                except OSError:
                    return
                with c:
                    head = b""
                    while b"\r\n\r\n" not in head:
                        head += c.recv(65536)
                    big = b"/big" in head.split(b"\r\n")[0]
                    body = b'{"status":"success","pad":"%s"}' % (b"x" * (2 << 20)) if big \
                        else None
                    try:
                        if big:
                            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                            continue
                        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                  b"Transfer-Encoding: chunked\r\n\r\n")
                        while not stop.wait(0.05):
                            c.sendall(b"1\r\n \r\n")
                    except OSError:
                        pass
        threading.Thread(target=serve, daemon=True).start()
        got = []

        def call(fn):
            try:
                got.append(fn())
            except ikd.IkdError as e:
                got.append(e)
        try:
            c = ikd.Client("http://127.0.0.1:%d" % port, timeout=0.5, retries=0)
            t0 = time.monotonic()
            t = threading.Thread(target=call, args=(lambda: c.request("GET", "/slow"),),
                                 daemon=True)
            t.start()
            t.join(5)
            self.assertFalse(t.is_alive(), "a trickled answer still read after 5 s")
            self.assertEqual(getattr(got[0], "code", got[0]), "timeout")
            self.assertLess(time.monotonic() - t0, 1.5)
            c = ikd.Client("http://127.0.0.1:%d" % port, retries=0, max_answer=1 << 20)
            call(lambda: c.request("GET", "/big"))
            self.assertEqual(getattr(got[1], "code", got[1]), "bad_answer")
            self.assertIn("max_answer", got[1].message)
        finally:
            stop.set()
            srv.close()

    def test_headers_and_upgrade_trickled_bounded_in_time(self):
        """A server that trickles the header bytes of its answer (a byte
        every 50 ms, never the blank line), to an HTTP request and to the
        stream upgrade: IkdError "timeout" and "network" within the
        client's timeout. Before, the HTTP request waited as long as the
        bytes came (urllib's timeout bounds each receive)."""
        srv = socket.create_server(("127.0.0.1", 0))
        stop = threading.Event()

        def trickle(c):
            with c:
                try:
                    c.recv(65536)
                    c.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                    while not stop.wait(0.05):
                        c.sendall(b"x")
                except OSError:
                    pass

        def serve():
            while True:
                try:
                    c, _ = srv.accept()
                except OSError:
                    return
                threading.Thread(target=trickle, args=(c,), daemon=True).start()
        threading.Thread(target=serve, daemon=True).start()
        url = "http://127.0.0.1:%d" % srv.getsockname()[1]
        got = []

        def call():
            try:
                got.append(ikd.Client(url, timeout=0.5, retries=0).ready())
            except ikd.IkdError as e:
                got.append(e)

        async def upgrade():
            try:
                async with ikd.AsyncClient(url, timeout=0.5).connect(reconnect=False):
                    return "open"
            except ikd.IkdError as e:
                return e.code
        try:
            t0 = time.monotonic()
            t = threading.Thread(target=call, daemon=True)
            t.start()
            t.join(5)
            self.assertFalse(t.is_alive(), "trickled headers still read after 5 s")
            self.assertEqual(getattr(got[0], "code", got[0]), "timeout")
            self.assertLess(time.monotonic() - t0, 1.5)
            t0 = time.monotonic()
            self.assertEqual(asyncio.run(asyncio.wait_for(upgrade(), 5)), "network")
            self.assertLess(time.monotonic() - t0, 1.5)
        finally:
            stop.set()
            srv.close()

    def test_binary_tick_answer_count_checked_from_its_head(self):
        """A binary tick answer whose head announces more entries than
        max_streams fails the tick it names (bad_answer naming max_streams)
        before anything is decoded; one of seq NaN is an error event, one
        whose entry's seq is NaN fails its tick; the reader goes on. Before,
        its entries were decoded first: a head of 3 entries with none behind
        it was an "ends early" error event and the tick waited on to its
        timeout; a NaN seq killed the reader (every call in flight failed
        with connection_lost). An entry larger than its size fails its tick
        too (before: read on past it, or a struct.error event while the
        tick waited)."""
        import websockets
        import struct as st
        import json as js

        class JsonTicks(ikd.BinaryCodec):
            encode_tick = ikd.JsonCodec.encode_tick

        def head(n, seq):
            return st.pack("<4sHHIId", b"IKDS", 1, 0, n, 0, seq)
        # an error entry of stream "s", code "x", its seq NaN
        entry = st.pack("<IBBBBdII", 32, 2, 1, 1, 0, math.nan, 1, 0) + b"sx" + bytes(6)
        # a solution entry of 64 bytes whose joints (1000 doubles) pass it
        big = st.pack("<IBBBBdIIIHHHHI", 64, 1, 0, 1, 0, 4.0, 0, 16, 1, 1000, 0, 0, 0, 0) + \
            bytes(24)
        # the answer to tick 2: one error entry of stream "s", its seq 2
        entry2 = st.pack("<IBBBBdII", 32, 2, 1, 1, 0, 2.0, 1, 0) + b"sx" + bytes(6)
        replies = {1: [head(3, 1.0)], 2: [head(0, math.nan), head(1, 2.0) + entry2],
                   3: [head(1, 3.0) + entry], 4: [head(1, 4.0) + big]}

        async def handler(ws, path=None):
            async for text in ws:
                for r in replies[js.loads(text)["seq"]]:
                    await ws.send(r)

        async def body():
            async with websockets.serve(handler, "127.0.0.1", 0, subprotocols=["ikd.v1"]) as srv:
                c = ikd.AsyncClient("http://127.0.0.1:%d" % srv.sockets[0].getsockname()[1])
                async with c.connect(reconnect=False, max_streams=2, codec=JsonTicks()) as conn:
                    with self.assertRaises(ikd.IkdError) as cm:
                        await conn.tick({"s": {"position": [0, 0.3, 0.5]}}, timeout=2)
                    self.assertEqual((cm.exception.code, cm.exception.seq), ("bad_answer", 1))
                    self.assertIn("max_streams", cm.exception.message)
                    errors = []
                    conn.on_error(errors.append)
                    ts = await conn.tick({"s": {"position": [0, 0.3, 0.5]}}, timeout=2)
                    self.assertEqual((ts.seq, [e.code for e in errors]), (2, ["bad_answer"]))
                    with self.assertRaises(ikd.IkdError) as cm:
                        await conn.tick({"s": {"position": [0, 0.3, 0.5]}}, timeout=2)
                    self.assertEqual((cm.exception.code, cm.exception.seq), ("bad_answer", 3))
                    with self.assertRaises(ikd.IkdError) as cm:
                        await conn.tick({"s": {"position": [0, 0.3, 0.5]}}, timeout=2)
                    self.assertEqual((cm.exception.code, cm.exception.seq), ("bad_answer", 4))
                    self.assertEqual(conn.state, "open")
        run(body())

    def test_stream_closing_when_lost_is_closed_not_reopened(self):
        """A stream whose close was sent when the connection dropped is
        closed (its close() returns) and not opened again on the next
        connection. Before, close() waited for ever and the reconnection
        opened the stream again. And solves timed out against a server
        that never answers hold nothing (before, each was held until an
        answer came: without one, memory grew by one per call). A stream
        closed twice at once returns from both calls."""
        import websockets
        import json as js
        seen = []

        async def handler(ws, path=None):
            seen.append([])
            async for text in ws:
                kind = js.loads(text)["type"]
                seen[-1].append(kind)
                if kind == "open":
                    await ws.send('{"type":"opened","stream":"s%d"}' % len(seen))
                elif kind == "close" and len(seen) == 1:
                    ws.transport.abort()  # never answered
                elif kind == "close":
                    await asyncio.sleep(0.05)
                    await ws.send('{"type":"closed","stream":"s2"}')

        async def body():
            async with websockets.serve(handler, "127.0.0.1", 0, subprotocols=["ikd.v1"]) as srv:
                c = ikd.AsyncClient("http://127.0.0.1:%d" % srv.sockets[0].getsockname()[1])
                async with c.connect(min_delay=0.02, max_delay=0.04) as conn:
                    s = await conn.open("s1", chain=LEG)
                    # targets never answered: each solve times out, and none
                    # is held after (before: each held until an answer)
                    for _ in range(50):
                        with self.assertRaises(ikd.IkdError) as cm:
                            await s.solve({"position": [0, 0.3, 0.5]}, timeout=0.001)
                        self.assertEqual(cm.exception.code, "timeout")
                    self.assertEqual(len(s._waiting), 0)
                    # so does a tick (before: asyncio's TimeoutError)
                    with self.assertRaises(ikd.IkdError) as cm:
                        await conn.tick({"s1": {"position": [0, 0.3, 0.5]}}, timeout=0.001)
                    self.assertEqual((cm.exception.code, cm.exception.seq), ("timeout", 1))
                    await asyncio.wait_for(s.close(), 3)
                    await until(lambda: len(seen) >= 2, "a second connection")
                    await asyncio.sleep(0.2)
                    self.assertEqual(seen, [["open"] + ["target"] * 50 + ["tick", "close"], []])
                    self.assertEqual(conn.streams, {})
                    # closed twice at once: both return, one close is sent
                    # (before: the second took the first's place, which
                    # waited for ever)
                    s = await conn.open("s2", chain=LEG)
                    await asyncio.wait_for(asyncio.gather(s.close(), s.close()), 3)
                    self.assertEqual(seen[1], ["open", "close"])
        run(body())

    def test_silent_peer_pinged_then_dropped_at_idle_timeout(self):
        """A server that upgrades and then goes silent (no pong, nothing: a
        balancer that lost the connection without a FIN) is pinged at half
        of idle_timeout and dropped at all of it, with an on_error
        "timeout". Before, websockets' keepalive (a ping every 20 s, 20 s
        for its pong, then up to twice close_timeout) held such a
        connection for up to a minute (20.5 s even with ping_timeout 0.3)."""
        frames = []

        async def silent(r, w):
            await accept_upgrade(r, w)
            while True:
                data = await r.read(4096)
                if not data:
                    return
                frames.append(data[0])

        async def body():
            srv = await asyncio.start_server(silent, "127.0.0.1", 0)
            try:
                c = ikd.AsyncClient("http://127.0.0.1:%d" % srv.sockets[0].getsockname()[1])
                conn = c.connect(reconnect=False, idle_timeout=0.4)
                errors = []
                conn.on_error(errors.append)
                await conn.start()
                t0 = time.monotonic()
                await until(lambda: conn.state == "closed", "the drop", 3)
                self.assertGreaterEqual(time.monotonic() - t0, 0.3)
                self.assertEqual([e.code for e in errors], ["timeout"])
                self.assertIn(0x89, frames)  # a ping (FIN, opcode 9)
            finally:
                srv.close()
        run(body())

    def test_peer_that_stopped_reading_is_dropped_at_idle_timeout(self):
        """A peer gone silent while this client's writes are blocked (it
        stopped reading: the socket is full) is dropped at idle_timeout
        too. Before, the idle watch's ping waited behind the blocked
        writes (websockets drains before it returns) and nothing dropped
        the connection."""
        async def deaf(r, w):
            await accept_upgrade(r, w)
            await gone.wait()  # reads nothing more

        gone = None

        async def flood(conn):
            try:
                while True:
                    await conn.send_raw("x" * (1 << 20))
            except ikd.IkdError:
                pass

        async def body():
            nonlocal gone
            gone = asyncio.Event()
            srv = await asyncio.start_server(deaf, "127.0.0.1", 0)
            try:
                c = ikd.AsyncClient("http://127.0.0.1:%d" % srv.sockets[0].getsockname()[1])
                conn = c.connect(reconnect=False, idle_timeout=0.4)
                errors = []
                conn.on_error(errors.append)
                await conn.start()
                writer = asyncio.ensure_future(flood(conn))
                await until(lambda: conn.state == "closed", "the drop", 3)
                self.assertEqual([e.code for e in errors], ["timeout"])
                await asyncio.wait_for(writer, 3)
            finally:
                gone.set()
                srv.close()
        run(body())

    def test_answer_of_seq_never_sent_answers_nothing(self):
        """A solution or a tick answer of a seq this client never sent (9)
        answers nothing: an on_error bad_answer each, and the true answers
        after them answer. Before, seq 9 answered the target and the tick
        waiting (an answer also answers every older seq waiting)."""
        import websockets
        import json as js
        sol = '{"status":"success","joints":[0.25,-0.5]}'

        async def handler(ws, path=None):
            async for text in ws:
                m = js.loads(text)
                if m["type"] == "open":
                    await ws.send('{"type":"opened","stream":"s"}')
                elif m["type"] == "target":
                    await ws.send('{"type":"solution","stream":"s","seq":9,"result":%s}' % sol)
                elif m["type"] == "tick":
                    for seq, sseq in ((9, 9), (m["seq"], 2)):
                        await ws.send('{"type":"tick_solution","seq":%d,"solutions":[{"stream":'
                                      '"s","seq":%d,"result":%s}]}' % (seq, sseq, sol))

        async def body():
            async with websockets.serve(handler, "127.0.0.1", 0, subprotocols=["ikd.v1"]) as srv:
                c = ikd.AsyncClient("http://127.0.0.1:%d" % srv.sockets[0].getsockname()[1])
                async with c.connect(reconnect=False) as conn:
                    errors = []
                    conn.on_error(errors.append)
                    s = await conn.open("s", chain=LEG)
                    fut = await s.submit({"position": [0, 0.3, 0.5]})
                    ts = await conn.tick({"s": {"position": [0, 0.3, 0.5]}}, timeout=TIMEOUT)
                    self.assertEqual((ts.seq, ts.items[0].seq), (1, 2))
                    self.assertEqual((await fut).seq, 2)
                    self.assertEqual([e.code for e in errors], ["bad_answer"] * 2)
        run(body())

    def test_tree_path_answers_that_lie(self):
        """On a tree stream, a path sample after its path_end, a path_end
        of a seq never sent and a solution older than one already answered
        answer nothing: an on_error bad_answer each, reaching no listener
        nor latest. Before, the sample after the end and the older solution
        reached on_solution and latest (a controller would act on a pose of
        a path already over, or go back to an older answer)."""
        import websockets
        import json as js

        def tree(x):
            return ('{"status":"success","joints":[%d,0.4,0.9,-0.2,1.2],"tips":[{"status":'
                    '"success","position":[0.2,0.3,0.3]},{"status":"success","position":'
                    '[0.4,-0.1,0.5]}]}' % x)

        async def handler(ws, path=None):
            async for text in ws:
                m = js.loads(text)
                if m["type"] == "open":
                    await ws.send('{"type":"opened","stream":"arms"}')
                elif m["type"] == "path":
                    for i in (0, 1):
                        await ws.send('{"type":"solution","stream":"arms","seq":%d,"skipped":0,'
                                      '"index":%d,"count":2,"result":%s}' % (m["seq"], i, tree(i)))
                    await ws.send('{"type":"path_end","stream":"arms","seq":%d,"sent":2,'
                                  '"skipped":0,"count":2,"completed":true}' % m["seq"])
                    # the lies: a sample of the path ended, a path_end never sent
                    await ws.send('{"type":"solution","stream":"arms","seq":%d,"skipped":0,'
                                  '"index":1,"count":2,"result":%s}' % (m["seq"], tree(7)))
                    await ws.send('{"type":"path_end","stream":"arms","seq":9,"sent":2,'
                                  '"skipped":0,"count":2,"completed":true}')
                elif m["type"] == "target":
                    await ws.send('{"type":"solution","stream":"arms","seq":%d,"skipped":0,'
                                  '"result":%s}' % (m["seq"], tree(m["seq"])))
                    if m["seq"] == 3:  # and an older one again
                        await ws.send('{"type":"solution","stream":"arms","seq":2,"skipped":0,'
                                      '"result":%s}' % tree(8))

        async def body():
            async with websockets.serve(handler, "127.0.0.1", 0, subprotocols=["ikd.v1"]) as srv:
                c = ikd.AsyncClient("http://127.0.0.1:%d" % srv.sockets[0].getsockname()[1])
                async with c.connect(reconnect=False) as conn:
                    errors = []
                    conn.on_error(errors.append)
                    s = await conn.open("arms", chain=LEG)
                    seen = []
                    s.on_solution(lambda sol: seen.append((sol.seq, sol.index,
                                                           sol.result["joints"][0])))
                    p = await s.path([{"position": [0, 0.3, 0.5]}, {"position": [0, 0.2, 0.5]}])
                    self.assertEqual([x.index for x in p.samples], [0, 1])
                    self.assertEqual((await s.solve({"position": [0, 0.3, 0.5]})).seq, 2)
                    self.assertEqual((await s.solve({"position": [0, 0.3, 0.5]})).seq, 3)
                    await until(lambda: len(errors) >= 3, "the errors")
                    self.assertEqual(seen, [(1, 0, 0), (1, 1, 1), (2, None, 2), (3, None, 3)])
                    self.assertEqual([e.code for e in errors], ["bad_answer"] * 3)
                    self.assertEqual((s.latest.seq, s.latest.result["joints"][0]), (3, 3))
        run(body())

    def test_tick_answer_of_other_targets_fails_it(self):
        """A tick answer of another count of items than the tick's targets,
        or naming other streams at their places, fails that tick with
        bad_answer (an item without a stream matches any). Before, each
        was the tick's answer: items[i] was not target i's."""
        import websockets
        import json as js
        sol = '{"status":"success","joints":[0.25,-0.5]}'

        def entry(name, seq):
            return '{"stream":"%s","seq":%d,"skipped":0,"result":%s}' % (name, seq, sol)

        answers = {1: ["a"], 2: ["a", "b", "c"], 3: ["b", "a"], 4: ["a", "other"],
                   5: ["a", None], 6: ["a", "b"]}

        async def handler(ws, path=None):
            async for text in ws:
                m = js.loads(text)
                if m["type"] == "tick":
                    seq = m["seq"]
                    items = [entry(n, seq) if n else '{"seq":%d,"error":{"code":'
                             '"invalid_request","message":"x"}}' % seq for n in answers[seq]]
                    await ws.send('{"type":"tick_solution","seq":%d,"skipped":0,"solutions":[%s]}'
                                  % (seq, ",".join(items)))

        async def body():
            async with websockets.serve(handler, "127.0.0.1", 0, subprotocols=["ikd.v1"]) as srv:
                c = ikd.AsyncClient("http://127.0.0.1:%d" % srv.sockets[0].getsockname()[1])
                async with c.connect(reconnect=False) as conn:
                    seen = []
                    conn.on_tick(lambda ts: seen.append(ts.seq))
                    target = {"a": {"position": [0, 0.3, 0.5]}, "b": {"position": [0, 0.2, 0.5]}}
                    for k in range(1, 5):
                        with self.assertRaises(ikd.IkdError) as cm:
                            await conn.tick(target, timeout=TIMEOUT)
                        self.assertEqual((cm.exception.code, cm.exception.seq), ("bad_answer", k))
                    self.assertEqual(len((await conn.tick(target, timeout=TIMEOUT)).items), 2)
                    t6 = await conn.tick(target, timeout=TIMEOUT)
                    self.assertEqual([it.stream for it in t6.items], ["a", "b"])
                    self.assertEqual(seen, [5, 6])
                    self.assertEqual(len(conn._sent_ticks), 0)
        run(body())

    def test_flapping_server_backoff_grows(self):
        """A server that upgrades each connection and closes it at once is
        redialled with a growing backoff (the third wait 400 ms, jitter 50%
        to 100%). Before, each upgrade started the backoff again: a redial
        every 100 ms at most, for as long as the server did so."""
        import websockets
        at = []

        async def handler(ws, path=None):
            at.append(time.monotonic())
            await ws.close()

        async def body():
            async with websockets.serve(handler, "127.0.0.1", 0, subprotocols=["ikd.v1"]) as srv:
                c = ikd.AsyncClient("http://127.0.0.1:%d" % srv.sockets[0].getsockname()[1])
                async with c.connect(min_delay=0.1, max_delay=5):
                    await until(lambda: len(at) >= 4, "four connections")
            self.assertGreaterEqual(at[3] - at[2], 0.19, "redialled after %.3f s" % (at[3] - at[2]))
        run(body())

    def test_memory_bounded_without_reading(self):
        """A stream solved 10,000 times whose solutions are never read: the
        Python heap stays flat (allocated blocks, objects the collector
        tracks) and what the bounded queue lost is counted."""
        async def body():
            async with self.a.connect() as conn:
                leg = await conn.open("mem", chain=LEG)

                async def solve(n0, n1):
                    for i in range(n0, n1):
                        await leg.solve({"position": [0.2, 0.1, 0.25 + 0.0001 * (i % 500)]})
                    gc.collect()
                    return sys.getallocatedblocks(), len(gc.get_objects())

                b1, o1 = await solve(0, 1000)
                b2, o2 = await solve(1000, 10000)
                self.assertEqual(leg.latest.seq, 10000)
                self.assertEqual(leg.dropped, 10000 - 8)
                # the old client kept every message: +35 blocks each
                self.assertLess(b2 - b1, 3000, "allocated blocks grew %d" % (b2 - b1))
                self.assertLess(o2 - o1, 1000, "tracked objects grew %d" % (o2 - o1))
        run(body())

    def test_reconnect_reopens_and_reregisters(self):
        first = Daemon("--token", TOKEN)
        second = None
        try:
            c = ikd.Client("http://127.0.0.1:%d" % first.port, token=TOKEN, timeout=TIMEOUT)
            planar = c.register_chain(PLANAR)
            with c.connect(min_delay=0.05, max_delay=0.4) as conn:
                states = []
                conn.on_state(states.append)
                leg = conn.open("leg", chain=LEG)
                arm = conn.open("arm", chain_id=planar["id"])
                check_leg(self, leg.solve({"position": [0.2, 0.1, 0.25]}).result["positions"],
                          [0.2, 0.1, 0.25])
                first.stop()
                t0 = time.monotonic()
                while conn.state == "open" and time.monotonic() - t0 < TIMEOUT:
                    time.sleep(0.01)
                with self.assertRaises(ikd.IkdError) as cm:
                    leg.solve({"position": [0.2, 0.1, 0.3]})
                self.assertEqual(cm.exception.code, "not_connected")
                second = Daemon("--token", TOKEN, "--listen", "127.0.0.1:%d" % first.port)
                t0 = time.monotonic()
                while not (leg.is_open and arm.is_open) and time.monotonic() - t0 < TIMEOUT:
                    time.sleep(0.01)
                self.assertIn("reconnecting", states)
                self.assertTrue(leg.is_open and arm.is_open, "both streams opened again")
                self.assertEqual(c.http.reregistered, 1)
                sol = leg.solve({"position": [0.15, 0.05, 0.3]})
                self.assertEqual(sol.seq, 2, "seqs go on after a reconnection")
                check_leg(self, sol.result["positions"], [0.15, 0.05, 0.3])
                sol = arm.solve({"position": [1.2, 0.6]})
                self.assertLess(dist(planar_tip(sol.result["joints"]), [1.2, 0.6]), 1e-9)
        finally:
            if second is not None:
                second.stop()
            if first.proc.poll() is None:
                first.stop()

    def test_close_while_reconnecting(self):
        """close() while the connection waits out a backoff returns at
        once; what waited fails with "closed"."""
        d = Daemon()

        async def body():
            c = ikd.AsyncClient("http://127.0.0.1:%d" % d.port, timeout=TIMEOUT)
            conn = await c.connect(min_delay=30, max_delay=30).start()
            await conn.open("leg", chain=LEG)
            await asyncio.to_thread(d.stop)
            await until(lambda: conn.state == "reconnecting", "reconnecting")
            t0 = time.monotonic()
            await conn.close()
            self.assertLess(time.monotonic() - t0, 5)
            self.assertEqual(conn.state, "closed")
            self.assertEqual(conn.streams, {})
        try:
            run(body())
        finally:
            if d.proc.poll() is None:
                d.stop()

    def test_tls(self):
        """https and wss through a TLS front (ikd speaks plain HTTP) whose
        certificate a private CA signed: trusted with ca_file, refused with
        another CA."""
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(["sh", "tests/clients/tls_certs.sh", d], cwd=ROOT, check=True)
            with TlsFront(self.d.port, os.path.join(d, "cert.pem"),
                          os.path.join(d, "key.pem")) as front:
                base = "https://127.0.0.1:%d" % front.port
                c = ikd.Client(base, token=TOKEN, timeout=TIMEOUT,
                               ca_file=os.path.join(d, "ca.pem"))
                self.assertTrue(c.stream_url().startswith("wss://127.0.0.1:"))
                a = c.solve(LEG, {"position": [0.2, 0.1, 0.25]})
                check_leg(self, a["positions"], [0.2, 0.1, 0.25])
                with c.connect(reconnect=False, max_streams=2) as conn:
                    s = conn.open("tls", chain=LEG)
                    check_leg(self, s.solve({"position": [0.15, 0.05, 0.3]}).result["positions"],
                              [0.15, 0.05, 0.3])
                    t = conn.tick({"tls": {"position": [0.1, 0.1, 0.35]}})
                    check_leg(self, t[0].result["positions"], [0.1, 0.1, 0.35])
                bad = ikd.Client(base, token=TOKEN, timeout=TIMEOUT,
                                 ca_file=os.path.join(d, "other-ca.pem"))
                with self.assertRaises(ikd.IkdError) as cm:
                    bad.solvers()
                self.assertEqual(cm.exception.code, "network")
                self.assertIn("CERTIFICATE_VERIFY_FAILED", str(cm.exception))
                with self.assertRaises(ikd.IkdError) as cm:
                    bad.connect().start()
                self.assertEqual(cm.exception.code, "network")

    def test_example_runs(self):
        """clients/python/example.py as its docstring says to run it."""
        r = subprocess.run([sys.executable, "clients/python/example.py", self.url, TOKEN],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("two-bone: success", r.stdout)
        self.assertIn("iiwa: success", r.stdout)
        self.assertIn("refused: invalid_request /target/position/2", r.stdout)
        self.assertIn("stream seq 8: success", r.stdout)
        self.assertRegex(r.stdout, r"tick 1: c1 success, c2 success")


class TlsFront:
    """A TLS server on a free loopback port whose connections are piped to
    ikd's plain port (threads; closed with the with-block)."""

    def __init__(self, port, cert, key):
        self.target = port
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw):
        try:
            tls = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        up = socket.create_connection(("127.0.0.1", self.target))
        self.conns += [tls, up]
        threading.Thread(target=pump, args=(up, tls), daemon=True).start()
        pump(tls, up)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()
        for s in self.conns:
            try:
                s.close()
            except OSError:
                pass


def readme_blocks(lang):
    with open(os.path.join(ROOT, "clients", "python", "README.md")) as f:
        return re.findall(r"^```%s\n(.*?)^```\n" % lang, f.read(), re.S | re.M)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def local(text, port):
    """A README snippet on another port, and with the tests' build of ikd."""
    text = text.replace("127.0.0.1:8080", "127.0.0.1:%d" % port)
    if os.path.abspath(IKD_BIN) != os.path.join(ROOT, "build", "ikd"):
        text = text.replace("./build/ikd", os.path.abspath(IKD_BIN))
    return text


class ReadmeSnippetsTest(unittest.TestCase):
    def test_python_snippets(self):
        blocks = readme_blocks("python")
        self.assertEqual(len(blocks), 2)
        d = Daemon()
        try:
            outs = []
            for block in blocks:
                with tempfile.NamedTemporaryFile("w", suffix=".py") as f:
                    f.write(local(block, d.port))
                    f.flush()
                    r = subprocess.run([sys.executable, f.name], cwd=ROOT,
                                       capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                outs.append(r.stdout.splitlines())
        finally:
            d.stop()
        lines = outs[0]
        self.assertEqual(len(lines), 6, outs[0])
        self.assertTrue(lines[0].startswith("success [[0.0, 0.0, 1.0], "), lines[0])
        self.assertIn("'success': 2", lines[1])
        status, joints = lines[2].split(" ", 1)
        self.assertEqual(status, "success")
        # the UR5's answer by forward kinematics from the URDF
        ur5 = robot_chain.Chain(os.path.join(ROOT, "tests", "data", "robots", "ur5.urdf"),
                                "base_link", "tool0")
        p, q = ur5.fk([float(x) for x in joints.strip("[]").split(",")])
        self.assertLess(dist(p, [0.4, 0.2, 0.3]), 1e-5)
        self.assertLess(robot_chain.quat_angle(q, [0, 1, 0, 0]), 1e-5)
        self.assertEqual(lines[3:5], ["1 success", "2 success"])
        self.assertEqual(lines[5], "tick 1: left success, right success")
        self.assertEqual(outs[1], ["1 success", "2 success", "latest 3"])

    def test_sh_snippet(self):
        """The example with a daemon the snippet starts and stops itself:
        IKD_LISTEN puts both that daemon and "ikd probe" on a free port."""
        block, = [b for b in readme_blocks("sh") if "example.py" in b]
        port = free_port()
        with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
            f.write(local(block, port))
            f.flush()
            p = subprocess.Popen(["sh", "-e", f.name], cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True,
                                 env=dict(os.environ, IKD_LISTEN="127.0.0.1:%d" % port))
            left = True
            try:
                out, err = p.communicate(timeout=60)
                # its "kill $!" stops the daemon it started (which drains first)
                for _ in range(100):
                    try:
                        os.killpg(p.pid, 0)
                    except ProcessLookupError:
                        left = False
                        break
                    time.sleep(0.1)
            finally:
                try:  # whatever the snippet left running: its process group
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
        self.assertEqual(p.returncode, 0, out + err)
        self.assertFalse(left, "the snippet left its daemon running")
        self.assertIn("two-bone: success", out)
        self.assertIn("iiwa: success", out)
        self.assertIn("stream seq 8: success", out)


# ---- tree streams, tree paths, ticks faster than ikd answers -------------------

def _joint(name, parent, xyz, axis, lower, upper):
    j = {"name": name, "type": "revolute", "origin": {"xyz": xyz}, "axis": axis,
         "limits": {"lower": lower, "upper": upper}}
    if parent:
        j["parent"] = parent
    return j


# the two-armed robot of proto/STREAM.md, "Trees"
ARMS = {"kind": "tree", "tips": ["l_tool", "r_tool"], "joints": [
    _joint("waist", None, [0, 0, 0.4], [0, 0, 1], -1.5, 1.5),
    _joint("l_shoulder", "waist", [0, 0.2, 0.3], [0, 1, 0], -2, 2),
    _joint("l_elbow", "l_shoulder", [0.3, 0, 0], [0, 1, 0], 0, 2.5),
    {"name": "l_tool", "parent": "l_elbow", "type": "fixed", "origin": {"xyz": [0.25, 0, 0]}},
    _joint("r_shoulder", "waist", [0, -0.2, 0.3], [0, 1, 0], -2, 2),
    _joint("r_elbow", "r_shoulder", [0.3, 0, 0], [0, 1, 0], 0, 2.5),
    {"name": "r_tool", "parent": "r_elbow", "type": "fixed", "origin": {"xyz": [0.25, 0, 0]}}]}
ARMS_SEED = [0.3, 0.4, 0.9, -0.2, 1.2]


def _rot(a, q):
    x, y, z = a
    c, s = math.cos(q), math.sin(q)
    t = 1 - c
    return [[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
            [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
            [t * x * z - s * y, t * y * z + s * x, t * z * z + c]]


def _mul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def arms_tips(q):
    """The test's own forward kinematics of ARMS: each tip's position for
    joints q (the movable joints in the order of the description)."""
    frames, k = {}, 0
    for j in ARMS["joints"]:
        r, p = frames[j["parent"]] if "parent" in j else ([[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                                                           [0, 0, 0])
        o = j["origin"]["xyz"]
        pos = [p[i] + sum(r[i][m] * o[m] for m in range(3)) for i in range(3)]
        if j["type"] != "fixed":
            r = _mul(r, _rot(j["axis"], q[k]))
            k += 1
        frames[j["name"]] = (r, pos)
    assert k == len(q), "one value per movable joint"
    return [frames[n][1] for n in ARMS["tips"]]


def _arms_joints(i):
    return [v + 0.02 * math.sin(0.1 * i + k) for k, v in enumerate(ARMS_SEED)]


def tree_target(i, left_only=False):
    """Reachable tips: the FK of joints moving with i; with the left tip
    alone only the left arm moves from step i - 1 (a tip not targeted
    holds its pose)."""
    q = _arms_joints(i)
    if left_only:
        q = [q[k] if k in (1, 2) else v for k, v in enumerate(_arms_joints(i - 1))]
    fk = arms_tips(q)
    names = ["l_tool"] if left_only else ["l_tool", "r_tool"]
    return {n: {"position": fk[ARMS["tips"].index(n)]} for n in names}


def check_tree(test, result, tips, what):
    """A tree answer: one tip per tip of the chain, each the FK of the
    joints answered; a success on its targets, a failure's error the FK's
    distance. True on success."""
    test.assertEqual(len(result["joints"]), 5, what)
    test.assertEqual(len(result["tips"]), 2, what)
    fk = arms_tips(result["joints"])
    for i, t in enumerate(result["tips"]):
        test.assertLess(dist(t["position"], fk[i]), 1e-6, "%s: tip %d not the FK" % (what, i))
    for i, n in enumerate(ARMS["tips"]):
        if n not in tips:
            continue
        d = dist(fk[i], tips[n]["position"])
        if result["status"] == "success":
            test.assertLess(d, 1e-3, "%s: %s off its target" % (what, n))
        else:
            test.assertAlmostEqual(result["tips"][i]["position_error"], d, delta=1e-6)
    return result["status"] == "success"


def leg_target(i):
    return [0.2, 0.1 + 0.001 * (i % 50), 0.25]


class TreeStreamTest(unittest.TestCase):
    """The client as a robot controller or game server drives it on tree
    streams (several tips over shared joints), tree paths, and ticks sent
    faster than ikd answers them (conflation)."""

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.a = ikd.AsyncClient("http://127.0.0.1:%d" % cls.d.port, timeout=TIMEOUT)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_tree_ticks_json_and_binary(self):
        """Ticks of the tree and a leg (JSON: a tree target does not fit the
        binary form) alternating with ticks of the leg alone (binary): one
        item per target in order, each its stream's next seq, the tips by
        FK on their targets."""
        async def body():
            async with self.a.connect(codec=ikd.BinaryCodec()) as conn:
                await conn.open("arms", ARMS, seed=ARMS_SEED)
                await conn.open("leg", LEG, options={"solver": "two_bone"})
                failed = []
                for i in range(40):
                    tips = tree_target(i, left_only=i % 3 == 2)
                    t = await conn.tick([("arms", {"tips": tips}),
                                         ("leg", {"position": leg_target(i)})], timeout=TIMEOUT)
                    self.assertEqual(t.requested, t.seq)
                    self.assertEqual([it.stream for it in t.items], ["arms", "leg"])
                    self.assertEqual([it.seq for it in t.items], [i + 1, 2 * i + 1])
                    if not check_tree(self, t.items[0].result, tips, "tick %d" % t.seq):
                        failed.append(t.seq)
                    check_leg(self, t.items[1].result["positions"], leg_target(i))
                    lt = await conn.tick([("leg", {"position": leg_target(i + 1)})],
                                         timeout=TIMEOUT)
                    self.assertEqual(lt.items[0].seq, 2 * i + 2)
                    check_leg(self, lt.items[0].result["positions"], leg_target(i + 1))
                self.assertEqual(failed, [])
                self.assertEqual(conn._ticks, {})
        run(body())

    def test_tree_path(self):
        """A path of tree waypoints: every sample in order, each the FK of
        its joints, the last on the last waypoint; path_end counts them."""
        async def body():
            async with self.a.connect() as conn:
                s = await conn.open("arms", ARMS, seed=ARMS_SEED)
                wps = [{"tips": tree_target(i)} for i in (0, 10, 20)]
                p = await s.path(wps, rate_hz=100, duration_s=0.3)
                self.assertTrue(p.end.completed)
                self.assertEqual(p.end.sent, len(p.samples))
                self.assertEqual(p.end.sent + p.end.skipped, p.end.count)
                last = -1
                for sol in p.samples:
                    self.assertEqual((sol.seq, sol.count), (p.end.seq, p.end.count))
                    self.assertGreater(sol.index, last)
                    last = sol.index
                    fk = arms_tips(sol.result["joints"])
                    for i, t in enumerate(sol.result["tips"]):
                        self.assertLess(dist(t["position"], fk[i]), 1e-6)
                self.assertEqual(last, p.end.count - 1)
                self.assertTrue(check_tree(self, p.samples[-1].result, wps[-1]["tips"], "last"))
                self.assertEqual(s._paths, {})
        run(body())

    def test_ticks_faster_than_answers(self):
        """3,000 ticks sent without waiting (a numeric tree: ikd solves
        slower than they come): answers in increasing seq, each one sent,
        every tick and every stream's target accounted for exactly once
        (1 + skipped), nothing held; the connection goes on."""
        async def body():
            async with self.a.connect() as conn:
                await conn.open("arms", ARMS, seed=ARMS_SEED, options={"solver": "numeric"})
                await conn.open("leg", LEG, options={"solver": "two_bone"})
                answers = []
                conn.on_tick(lambda ts: answers.append(ts))
                n, last = 3000, 0
                for i in range(n):
                    seq = await conn.send_tick([("arms", {"tips": tree_target(i)}),
                                                ("leg", {"position": leg_target(i)})])
                    self.assertGreater(seq, last)
                    last = seq
                await until(lambda: answers and answers[-1].seq == last, "the last tick")
                prev, accounted = 0, 0
                per = {"arms": [0, 0], "leg": [0, 0]}  # accounted, last seq
                for ts in answers:
                    self.assertTrue(prev < ts.seq <= last, (prev, ts.seq, last))
                    prev = ts.seq
                    accounted += 1 + ts.skipped
                    self.assertEqual([it.stream for it in ts.items], ["arms", "leg"])
                    for it in ts.items:
                        acc = per[it.stream]
                        self.assertEqual(it.seq - acc[1], 1 + it.skipped, it.stream)
                        acc[0] += 1 + it.skipped
                        acc[1] = it.seq
                self.assertEqual(accounted, n)
                self.assertEqual(per["arms"][0], n)
                self.assertEqual(per["leg"][0], n)
                self.assertLess(len(answers), n, "ikd conflated")
                self.assertEqual(conn._ticks, {})
                tips = tree_target(7)
                t = await conn.tick([("arms", {"tips": tips})], timeout=TIMEOUT)
                self.assertTrue(check_tree(self, t.items[0].result, tips, "after the flood"))
        run(body())

if __name__ == "__main__":
    unittest.main(verbosity=2)

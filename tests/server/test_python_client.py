"""
test_python_client.py: clients/python/ikd.py against the real daemon (run
with a token, so that the client's HTTP and WebSocket auth are exercised):
solve and batch checked by what the answers say and by forward kinematics
of the two-bone leg (bone lengths kept, the foot on the target), chains
registered, described and deleted, errors raised as IkdError with the
code, the JSON path and the HTTP status, a wrong token refused on both
sides, streams answering in order (one by one, and many targets in flight
at once, where conflated targets resolve with the newer solution), a
refused stream target and a refused open, and the runnable example run as
written in its docstring; and the snippets of clients/python/README.md run
as written from the repository's root (the ```python block against a
daemon without a token, the ```sh block starting its own daemon), on a
free port instead of 8080, their outputs checked.
"""
import asyncio
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
from test_stream import Daemon, IKD_BIN, TIMEOUT, TEST_LIMIT  # noqa: E402
import ikd  # noqa: E402
import robot_chain  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

LEG = {"kind": "bones", "positions": [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]]}
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


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TEST_LIMIT))


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--token", "py-t0ken/+")
        cls.url = "http://127.0.0.1:%d" % cls.d.port
        cls.c = ikd.Client(cls.url, token="py-t0ken/+", timeout=TIMEOUT)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

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

    def test_chains(self):
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
        self.c.delete_chain(reg["id"])
        with self.assertRaises(ikd.IkdError) as cm:
            self.c.get_chain(reg["id"])
        self.assertEqual((cm.exception.code, cm.exception.status), ("unknown_chain", 404))
        with self.assertRaises(ikd.IkdError) as cm:
            self.c.solve(chain_id=reg["id"], target=pose)
        self.assertEqual((cm.exception.code, cm.exception.path), ("unknown_chain", "/chain_id"))

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

        async def body():
            async with bad.connect():
                pass
        with self.assertRaises(ikd.IkdError) as cm:
            run(body())
        self.assertEqual(cm.exception.status, 401)

    def test_stream_in_order(self):
        async def body():
            async with self.c.connect() as conn:
                self.assertEqual(conn.ws.subprotocol, "ikd.v1")
                leg = await conn.open("leg", chain=LEG)
                self.assertRegex(leg.chain_id, r"^[0-9a-f]{32}$")
                for i in range(10):
                    t = 2 * math.pi * i / 10
                    target = [0.2 * math.cos(t), 0.2 * math.sin(t), 0.3]
                    sol = await leg.solve({"position": target}, timeout=TIMEOUT)
                    self.assertEqual((sol["type"], sol["seq"], sol["skipped"]),
                                     ("solution", i + 1, 0))
                    check_leg(self, sol["result"]["positions"], target)
                # many in flight: every future resolves, in order, each with
                # its own solution or the newer one that replaced it
                sent = [await leg.send({"position": [0.2, 0.05 * k / 40, 0.3]})
                        for k in range(40)]
                sols = [await asyncio.wait_for(f, TIMEOUT) for _, f in sent]
                seqs = [s["seq"] for s in sols]
                self.assertEqual(seqs, sorted(seqs))
                for (seq, _), s in zip(sent, sols):
                    self.assertGreaterEqual(s["seq"], seq)
                self.assertEqual(seqs[-1], sent[-1][0])
                answered = len(set(seqs))
                skipped = sum(s["skipped"] for s in {s["seq"]: s for s in sols}.values())
                self.assertEqual(answered + skipped, 40)
                # a refused target raises with its path; the stream goes on
                with self.assertRaises(ikd.IkdError) as cm:
                    await leg.solve({"position": [0.2, 0.1, 2.5e9]}, timeout=TIMEOUT)
                self.assertEqual((cm.exception.code, cm.exception.path, cm.exception.stream),
                                 ("invalid_request", "/target/position/2", "leg"))
                sol = await leg.solve({"position": [0.2, 0.1, 0.25]}, timeout=TIMEOUT)
                self.assertEqual(sol["result"]["status"], "success")
                samples = await leg.path([{"position": [0.2, 0.1, 0.25]},
                                          {"position": [0.1, 0.1, 0.3]}],
                                         rate_hz=50, duration_s=0.2)
                self.assertEqual([s["index"] for s in samples][-1], 10)
                check_leg(self, samples[-1]["result"]["positions"], [0.1, 0.1, 0.3])
                await leg.close()
                # a chain ikd refuses: open raises with the path into it
                with self.assertRaises(ikd.IkdError) as cm:
                    await conn.open("bad", chain={"kind": "bones", "positions": [[0, 0, 0]]})
                self.assertEqual(cm.exception.path[:17], "/chain/positions")
        run(body())

    def test_example_runs(self):
        """clients/python/example.py as its docstring says to run it."""
        r = subprocess.run(["/usr/bin/python3", "clients/python/example.py", self.url,
                            "py-t0ken/+"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("two-bone: success", r.stdout)
        self.assertIn("iiwa: success", r.stdout)
        self.assertIn("refused: invalid_request /target/position/2", r.stdout)
        self.assertIn("stream seq 8: success", r.stdout)


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
    def test_python_snippet(self):
        block, = readme_blocks("python")
        d = Daemon()
        try:
            with tempfile.NamedTemporaryFile("w", suffix=".py") as f:
                f.write(local(block, d.port))
                f.flush()
                r = subprocess.run(["/usr/bin/python3", f.name], cwd=ROOT, capture_output=True,
                                   text=True, timeout=60,
                                   env=dict(os.environ, PYTHONPATH="clients/python"))
        finally:
            d.stop()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 5, r.stdout)
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
        self.assertEqual(lines[3:], ["1 success", "2 success"])

    def test_sh_snippet(self):
        """The example with a daemon the snippet starts and stops itself:
        IKD_LISTEN puts both that daemon and "ikd probe" on a free port."""
        block, = readme_blocks("sh")
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


if __name__ == "__main__":
    unittest.main(verbosity=2)

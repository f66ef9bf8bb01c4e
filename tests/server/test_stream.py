"""
test_stream.py: the WebSocket side of the real daemon (GET /v1/stream).

Every test class starts $IKD_BIN on 127.0.0.1 port 0, reads the bound port
from its one stdout line "ikd listening on HOST:PORT" and stops it with
SIGTERM at teardown, requiring exit status 0. Two independent clients talk
to it: python3-websockets (Debian's, hence /usr/bin/python3) for ordinary
streaming, and a deliberately small client on a raw socket (RawWS below) for
what a well-behaved library refuses to do: invalid UTF-8 in a text frame,
oversized messages, and a client that never reads.

Covered: opening streams (inline chain and registered chain_id), several
streams on one connection with solutions in seq order, conflation (every
sent seq is either answered or counted in a later "skipped"), warm start on
the KUKA iiwa 14 (no joint flips along a smooth full-pose motion, by targets
and by a path), a path streamed at its rate and cancelled by a newer target
or path, the round-trip time of one target at a time, per-message errors
that keep the connection open (bad JSON, unknown type, unknown stream,
invalid target with its JSON path, a stream opened twice, binary messages),
close codes 1002 (unmasked or stray frames), 1007
(invalid UTF-8) and 1009 (message above --max-message), clients that vanish
while solves run on the pool, a client that never reads cut off with 1008
while another client is served promptly, ping/pong, the bearer token and
the Origin allow-list on the upgrade, the open-streams gauge of /metrics,
SIGTERM closing streams with 1001 and the daemon exiting 0, and what
streams hold: messages still arriving against --body-budget (1013),
running paths against --stream-chain-bytes, one answer above
--max-send-queue sent whole, empty messages behind one decoded off the
loop answered, and a path whose next sample is ages away.

Every wait is bounded (TIMEOUT per message, a limit per test), so a hang is
a quick failure rather than a stuck suite. Time bounds are multiplied by
SLOW for daemons built with a sanitizer (see slowness()). Robots and targets come from
$IKD_DATA (tests/run.sh sets it, default tests/data).
"""
import asyncio
import base64
import hashlib
import json
import math
import os
import select
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import websockets

IKD_BIN = os.environ.get("IKD_BIN", "build/ikd")
IKD_DATA = os.environ.get("IKD_DATA", "tests/data")


def slowness():
    """How much slower than a plain optimised build the daemon under test
    may be: IKD_TEST_SLOW if set, else guessed from the sanitizer runtime
    linked into $IKD_BIN (ThreadSanitizer 10, AddressSanitizer 4,
    UndefinedBehaviorSanitizer 2), else 1. Time bounds are multiplied by it."""
    if os.environ.get("IKD_TEST_SLOW"):
        return float(os.environ["IKD_TEST_SLOW"])
    try:
        with open(IKD_BIN, "rb") as f:
            image = f.read()
    except OSError:
        return 1.0
    for marker, factor in ((b"__tsan_init", 10.0), (b"__asan_init", 4.0), (b"__ubsan_", 2.0)):
        if marker in image:
            return factor
    return 1.0


SLOW = slowness()
TIMEOUT = 5.0 * SLOW      # seconds for any one expected message
TEST_LIMIT = 30.0 * SLOW  # seconds for any one test body

BONES = {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}
IIWA_URDF_PATH = os.path.join(IKD_DATA, "robots", "kuka_iiwa14_r820.urdf")
IIWA_TARGETS_PATH = os.path.join(IKD_DATA, "targets", "kuka_iiwa14_r820.txt")
IIWA_LIMITS = [2.9668, 2.0942, 2.9668, 2.0942, 2.9668, 2.0942, 3.0541]


def iiwa_chain():
    with open(IIWA_URDF_PATH) as f:
        return {"kind": "urdf", "urdf": f.read(), "base": "base_link", "tip": "tool0"}


def iiwa_poses(count, skip=0):
    """Target poses of the shared iiwa file whose joint values keep well
    inside the limits and away from the arm's singular configurations (joints
    2 or 6 at zero align two axes; joint 4 at zero stretches the arm to the
    edge of its workspace, which is kept a few centimetres away), so that a
    small motion around them is reachable by a small joint motion: the first `count` after `skip` such
    poses, as [(position, quaternion xyzw)]."""
    out = []
    with open(IIWA_TARGETS_PATH) as f:
        for line in f:
            joints, pose = line.split("|")
            q = [float(x) for x in joints.split()]
            v = [float(x) for x in pose.split()]
            if (all(abs(a) < 0.7 * lim for a, lim in zip(q, IIWA_LIMITS)) and
                    min(abs(q[1]), abs(q[5])) > 0.35 and abs(q[3]) > 0.8):
                if skip > 0:
                    skip -= 1
                    continue
                out.append((v[:3], v[3:]))
                if len(out) == count:
                    break
    return out


def quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz]


def quat_axis_angle(axis, angle):
    s = math.sin(angle / 2)
    return [axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2)]


def circle_pose(p0, q0, t, radius=0.03, twist=0.2):
    """A smooth closed motion around (p0, q0) for t in [0, 1]: the position
    runs a circle of `radius` that starts and ends on p0, the orientation
    turns about the tool's own z by up to `twist` radians and back."""
    a = 2 * math.pi * t
    p = [p0[0] + radius * (math.cos(a) - 1), p0[1] + radius * math.sin(a), p0[2]]
    q = quat_mul(q0, quat_axis_angle([0, 0, 1], twist * math.sin(a)))
    return {"position": p, "orientation": q}


def bones_target(i, stream_index=0):
    """Reachable two-bone targets (the limb is 1 long) that differ per i and
    per stream, so that a solution can be matched to the target it solved."""
    a = 0.05 * i + stream_index
    return {"position": [0.3 + 0.1 * math.cos(a), 0.6, 0.2 + 0.1 * math.sin(a) + 0.05 * stream_index]}


def max_joint_step(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


# ---- the daemon under test ---------------------------------------------------

class Daemon:
    def __init__(self, *extra):
        # stderr goes to a file: a pipe nobody reads could fill and block ikd
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [IKD_BIN, "--listen", "127.0.0.1:0", "--log-level", "warn", *extra],
            stdout=subprocess.PIPE, stderr=self.log)
        ready, _, _ = select.select([self.proc.stdout], [], [], 10)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("ikd listening on "):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("the daemon did not start: %r %r" % (line, self.stderr()))
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.url = "ws://127.0.0.1:%d/v1/stream" % self.port

    def http(self, method, path, body=None, headers=None):
        """(status, text) of one HTTP request."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path),
                                     data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def streams_open(self, headers=None):
        status, text = self.http("GET", "/metrics", headers=headers)
        assert status == 200, (status, text)
        for line in text.splitlines():
            if line.startswith("ikd_ws_streams_open "):
                return int(float(line.split()[1]))
        raise AssertionError("no ikd_ws_streams_open in /metrics")

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self, timeout=10):
        """SIGTERM and wait; the exit status (negative: killed by a signal).
        Anything else than 0 raises, with what ikd wrote on stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        log = self.stderr()
        self.proc.stdout.close()
        self.log.close()
        if rc != 0:
            raise AssertionError("ikd exited with %s after SIGTERM; its log:\n%s" % (rc, log[-4000:]))
        return rc


def run(coro, limit=TEST_LIMIT):
    return asyncio.run(asyncio.wait_for(coro, limit))


def connect(daemon, **kw):
    """websockets' connect: `async with connect(d) as ws` or `await connect(d)`."""
    kw.setdefault("ping_interval", None)
    kw.setdefault("max_size", None)
    kw.setdefault("open_timeout", TIMEOUT)
    kw.setdefault("close_timeout", 2)
    return websockets.connect(daemon.url, **kw)


async def recv(ws, timeout=TIMEOUT):
    text = await asyncio.wait_for(ws.recv(), timeout)
    assert isinstance(text, str), "ikd sent a binary message: %r" % (text,)
    return json.loads(text)


async def send(ws, msg):
    await ws.send(json.dumps(msg))


async def open_stream(ws, name, chain=None, chain_id=None, options=None):
    msg = {"type": "open", "stream": name}
    if chain is not None:
        msg["chain"] = chain
    if chain_id is not None:
        msg["chain_id"] = chain_id
    if options is not None:
        msg["options"] = options
    await send(ws, msg)
    m = await recv(ws)
    assert m.get("type") == "opened" and m.get("stream") == name, m
    return m


def close_code(exc):
    rcvd = getattr(exc, "rcvd", None)
    return rcvd.code if rcvd is not None else None


# ---- a raw client, for what websockets will not send ---------------------------

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def mask(payload, key):
    n = len(payload)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")


def frame(opcode, payload, fin=True):
    """One masked client frame."""
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    key = os.urandom(4)
    return head + key + mask(payload, key)


class RawWS:
    def __init__(self, port, rcvbuf=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(TIMEOUT)
        self.sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((
            "GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
            % (port, key)).encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise AssertionError("connection closed during the handshake: %r" % buf)
            buf += chunk
        head, self.buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        assert lines[0].split()[1] == "101", lines[0]
        want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        hdr = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
        assert hdr.get("sec-websocket-accept") == want, hdr

    def send_text(self, text):
        self.sock.sendall(frame(0x1, text.encode() if isinstance(text, str) else text))

    def _fill(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no frame in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk

    def recv_frame(self, timeout=TIMEOUT):
        """(opcode, payload) of the next frame from ikd (never masked)."""
        deadline = time.monotonic() + timeout
        self._fill(2, deadline)
        b0, b1 = self.buf[0], self.buf[1]
        assert not b1 & 0x80, "a server frame was masked"
        n, off = b1 & 0x7F, 2
        if n == 126:
            self._fill(4, deadline)
            n, off = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            self._fill(10, deadline)
            n, off = struct.unpack("!Q", self.buf[2:10])[0], 10
        self._fill(off + n, deadline)
        payload = self.buf[off:off + n]
        self.buf = self.buf[off + n:]
        return b0 & 0x0F, payload

    def recv_json(self, timeout=TIMEOUT):
        op, payload = self.recv_frame(timeout)
        assert op == 0x1, (op, payload)
        return json.loads(payload)

    def wait_close(self, timeout=TIMEOUT):
        """Reads until ikd's close frame or the end of the connection; the
        close code, or None when the connection ended without one."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                op, payload = self.recv_frame(max(0.01, deadline - time.monotonic()))
            except (EOFError, ConnectionResetError):
                return None
            if op == 0x8:
                return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005

    def close(self):
        self.sock.close()


# ---- streaming on the ordinary daemon -------------------------------------------

class StreamTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_open_solve_close(self):
        async def body():
            async with connect(self.d) as ws:
                m = await open_stream(ws, "s1", chain=BONES)
                self.assertIsInstance(m.get("chain_id"), str)
                self.assertTrue(m["chain_id"])
                t = {"position": [0.3, 0.6, 0.2]}
                await send(ws, {"type": "target", "stream": "s1", "seq": 17, "target": t})
                m = await recv(ws)
                self.assertEqual(m["type"], "solution", m)
                self.assertEqual((m["stream"], m["seq"], m["skipped"]), ("s1", 17, 0))
                self.assertNotIn("index", m)
                r = m["result"]
                self.assertEqual(r["status"], "success")
                for a, b in zip(r["positions"][-1], t["position"]):
                    self.assertAlmostEqual(a, b, delta=1e-9)
                await send(ws, {"type": "close", "stream": "s1"})
                self.assertEqual(await recv(ws), {"type": "closed", "stream": "s1"})
                # the name is free again, and a closed stream is unknown
                await send(ws, {"type": "target", "stream": "s1", "seq": 18, "target": t})
                m = await recv(ws)
                self.assertEqual((m["type"], m.get("stream"), m.get("seq")), ("error", "s1", 18))
                await open_stream(ws, "s1", chain=BONES)
        run(body())

    def test_open_by_chain_id(self):
        status, text = self.d.http("POST", "/v1/chains", BONES)
        self.assertIn(status, (200, 201), text)
        cid = json.loads(text)["id"]

        async def body():
            async with connect(self.d) as ws:
                m = await open_stream(ws, "by-id", chain_id=cid)
                self.assertEqual(m["chain_id"], cid)
                await send(ws, {"type": "target", "stream": "by-id", "seq": 1,
                                "target": {"position": [0.3, 0.6, 0.2]}})
                m = await recv(ws)
                self.assertEqual((m["type"], m["seq"]), ("solution", 1))
                await send(ws, {"type": "open", "stream": "nope", "chain_id": "0" * 32})
                m = await recv(ws)
                self.assertEqual((m["type"], m["stream"]), ("error", "nope"))
                self.assertEqual(m["error"]["code"], "unknown_chain")
        run(body())

    def check_conflated(self, answers, first, last):
        """answers: the solution messages of one stream for targets with
        consecutive seqs first..last. Each answered seq comes after the
        previous one, its "skipped" counts exactly the seqs in between, and
        the newest target is always solved."""
        prev = first - 1
        total = 0
        for m in answers:
            self.assertGreater(m["seq"], prev, "out of order")
            self.assertEqual(m["skipped"], m["seq"] - prev - 1, m)
            total += 1 + m["skipped"]
            prev = m["seq"]
        self.assertEqual(prev, last, "the newest target was not solved")
        self.assertEqual(total, last - first + 1)

    def test_streams_in_order(self):
        """Three streams on one connection, 300 targets each sent round-robin
        without waiting: per stream the answers come in seq order and each
        one solved the target sent with its seq."""
        names, n = ["a", "b", "c"], 300

        async def body():
            async with connect(self.d) as ws:
                for s in names:
                    await open_stream(ws, s, chain=BONES)
                for i in range(n):
                    for k, s in enumerate(names):
                        await send(ws, {"type": "target", "stream": s, "seq": 1000 + i,
                                        "target": bones_target(i, k)})
                answers = {s: [] for s in names}
                while any(not a or a[-1]["seq"] != 1000 + n - 1 for a in answers.values()):
                    m = await recv(ws)
                    self.assertEqual(m["type"], "solution", m)
                    answers[m["stream"]].append(m)
                for k, s in enumerate(names):
                    self.check_conflated(answers[s], 1000, 1000 + n - 1)
                    for m in answers[s]:
                        want = bones_target(m["seq"] - 1000, k)["position"]
                        got = m["result"]["positions"][-1]
                        self.assertLess(max(abs(a - b) for a, b in zip(got, want)), 1e-9,
                                        (s, m["seq"]))
        run(body())

    def test_conflation(self):
        """2000 seven-joint targets sent at once: ikd solves far fewer than
        that, the newest target wins, and answered + skipped == sent."""
        (p0, q0), = iiwa_poses(1)
        n = 2000

        async def body():
            async with connect(self.d) as ws:
                await open_stream(ws, "arm", chain=iiwa_chain())
                frames = [json.dumps({"type": "target", "stream": "arm", "seq": i,
                                      "target": circle_pose(p0, q0, i / n)}) for i in range(n)]
                for f in frames:
                    await ws.send(f)
                answers = []
                while not answers or answers[-1]["seq"] != n - 1:
                    m = await recv(ws)
                    self.assertEqual(m["type"], "solution", m)
                    answers.append(m)
                self.check_conflated(answers, 0, n - 1)
                self.assertGreater(sum(m["skipped"] for m in answers), 0,
                                   "no target was ever conflated")
                self.assertEqual(answers[-1]["result"]["status"], "success")
        run(body())

    def check_smooth(self, solutions, what):
        """Every solution succeeded at the tolerance and no joint moved more
        than a small step between consecutive ones (a branch flip moves
        several joints by radians)."""
        prev = None
        for i, r in enumerate(solutions):
            self.assertEqual(r["status"], "success", (what, i, r))
            self.assertLess(r["position_error"], 1e-5 * math.sqrt(3), (what, i))
            self.assertLess(r["orientation_error"], 1e-5 * math.sqrt(3), (what, i))
            q = r["joints"]
            self.assertEqual(len(q), 7)
            if prev is not None:
                self.assertLess(max_joint_step(prev, q), 0.1,
                                "%s: joints jumped at step %d: %s -> %s" % (what, i, prev, q))
            prev = q

    def test_warm_start_targets(self):
        """The iiwa follows a smooth 100-step full-pose motion, one target at
        a time, around two different poses: no joint flips."""
        async def body():
            async with connect(self.d) as ws:
                for k, (p0, q0) in enumerate(iiwa_poses(2)):
                    name = "arm%d" % k
                    await open_stream(ws, name, chain=iiwa_chain())
                    results = []
                    for i in range(101):
                        await send(ws, {"type": "target", "stream": name, "seq": i,
                                        "target": circle_pose(p0, q0, i / 100)})
                        m = await recv(ws)
                        self.assertEqual((m["type"], m["seq"], m["skipped"]),
                                         ("solution", i, 0), m)
                        results.append(m["result"])
                    self.check_smooth(results, name)
        run(body())

    def check_path(self, samples, end, seq, count, completed=True):
        """samples: the solution messages of one path, in arrival order; end:
        its path_end. A sample that came due while the previous one was
        still being solved may be skipped, and the next one counts it."""
        prev = -1
        for m in samples:
            self.assertEqual((m["type"], m["seq"], m["count"]), ("solution", seq, count), m)
            self.assertGreater(m["index"], prev, "samples out of order")
            self.assertEqual(m["skipped"], m["index"] - prev - 1, m)
            prev = m["index"]
        self.assertEqual((end["type"], end["seq"], end["count"], end["completed"]),
                         ("path_end", seq, count, completed), end)
        self.assertEqual(end["sent"], len(samples), end)
        if completed:
            self.assertEqual(prev, count - 1, "the last sample was not solved")

    async def read_path(self, ws, stream, seq):
        """Reads one path's samples up to its path_end."""
        samples = []
        while True:
            m = await recv(ws)
            self.assertEqual(m.get("stream"), stream, m)
            if m["type"] == "path_end":
                return samples, m
            samples.append(m)

    def test_warm_start_path(self):
        """The same motion as a path of 13 waypoints at 400 Hz: samples in
        order (a slow one may be skipped), the last one on the last waypoint,
        no joint flips."""
        (p0, q0), = iiwa_poses(1)
        waypoints = [circle_pose(p0, q0, i / 12) for i in range(13)]

        async def body():
            async with connect(self.d) as ws:
                await open_stream(ws, "arm", chain=iiwa_chain())
                await send(ws, {"type": "path", "stream": "arm", "seq": 5,
                                "waypoints": waypoints, "rate_hz": 400, "duration_s": 0.5})
                samples, end = await self.read_path(ws, "arm", 5)
                self.check_path(samples, end, 5, 201)
                # generous: on a shared, loaded machine (load 12 on 2 cores
                # here) a quarter of the samples may be skipped and more
                self.assertGreater(len(samples), 100 if SLOW == 1 else 20,
                                   "most samples should be solved")
                results = [m["result"] for m in samples]
                self.check_smooth(results, "path")
                tip = results[-1]["tip"]["position"]
                for a, b in zip(tip, waypoints[-1]["position"]):
                    self.assertAlmostEqual(a, b, delta=2e-5)
        run(body())

    def test_path_rate(self):
        """A 1 s path at 50 Hz: 51 samples spread over about a second."""
        async def body():
            async with connect(self.d) as ws:
                await open_stream(ws, "p", chain=BONES)
                t0 = time.monotonic()
                await send(ws, {"type": "path", "stream": "p", "seq": 3, "rate_hz": 50,
                                "duration_s": 1,
                                "waypoints": [{"position": [0.3, 0.6, 0.2]},
                                              {"position": [0.2, 0.7, -0.1]},
                                              {"position": [-0.3, 0.5, 0.2]}]})
                stamps, samples = [], []
                while True:
                    m = await recv(ws)
                    if m["type"] == "path_end":
                        break
                    stamps.append(time.monotonic() - t0)
                    self.assertEqual(m["result"]["status"], "success")
                    samples.append(m)
                self.check_path(samples, m, 3, 51)
                # two-bone solves take microseconds: at most a late timer tick
                # may skip a sample now and then
                self.assertGreaterEqual(len(samples), 45 if SLOW == 1 else 25)
                self.assertLess(stamps[0], 0.2 * SLOW, "the first sample is due at once")
                spread = stamps[-1] - stamps[0]
                self.assertGreater(spread, 0.8, "samples came too fast")
                self.assertLess(spread, 1.5 + 0.1 * SLOW, "samples came too slowly")
                # sample 25 is due at 0.5 s: exactly the middle waypoint
                mid = [m for m in samples if m["index"] == 25]
                if mid:
                    got = mid[0]["result"]["positions"][-1]
                    for a, b in zip(got, [0.2, 0.7, -0.1]):
                        self.assertAlmostEqual(a, b, delta=1e-9)
        run(body())

    def test_path_cancelled(self):
        """A newer target, then a newer path, cancel the running path."""
        wps = [{"position": [0.3, 0.6, 0.2]}, {"position": [-0.3, 0.5, 0.2]}]

        async def body():
            async with connect(self.d) as ws:
                await open_stream(ws, "p", chain=BONES)
                await send(ws, {"type": "path", "stream": "p", "seq": 1, "rate_hz": 20,
                                "duration_s": 3, "waypoints": wps})
                samples = [await recv(ws) for _ in range(3)]
                await send(ws, {"type": "target", "stream": "p", "seq": 2,
                                "target": {"position": [0.1, 0.7, 0.1]}})
                while True:  # samples already on their way, then path_end
                    m = await recv(ws)
                    if m["type"] == "path_end":
                        break
                    samples.append(m)
                self.check_path(samples, m, 1, 61, completed=False)
                self.assertLess(m["sent"], 61)
                m = await recv(ws)
                self.assertEqual((m["type"], m["seq"], m["skipped"]), ("solution", 2, 0), m)
                self.assertNotIn("index", m)
                # a path, then a newer path
                await send(ws, {"type": "path", "stream": "p", "seq": 3, "rate_hz": 20,
                                "duration_s": 3, "waypoints": wps})
                samples = [await recv(ws)]
                await send(ws, {"type": "path", "stream": "p", "seq": 4, "rate_hz": 100,
                                "duration_s": 0.2, "waypoints": wps})
                while True:
                    m = await recv(ws)
                    if m["type"] == "path_end":
                        break
                    samples.append(m)
                self.check_path(samples, m, 3, 61, completed=False)
                samples, end = await self.read_path(ws, "p", 4)
                self.check_path(samples, end, 4, 21)
                # nothing more comes: the cancelled path is really stopped
                with self.assertRaises(asyncio.TimeoutError):
                    await recv(ws, timeout=0.3)
        run(body())

    def test_round_trip_latency(self):
        """One target at a time: each answer comes back in well under a
        frame (two-bone solves take microseconds)."""
        async def body():
            async with connect(self.d) as ws:
                await open_stream(ws, "rt", chain=BONES)
                lat = []
                for i in range(40):
                    t0 = time.monotonic()
                    await send(ws, {"type": "target", "stream": "rt", "seq": i,
                                    "target": bones_target(i)})
                    m = await recv(ws)
                    lat.append(time.monotonic() - t0)
                    self.assertEqual((m["type"], m["seq"]), ("solution", i))
                lat.sort()
                self.assertLess(lat[len(lat) // 2], 0.010 * SLOW,
                                "median round trip %.1f ms" % (1e3 * lat[len(lat) // 2]))
        run(body())

    def test_errors_keep_connection(self):
        async def body():
            async with connect(self.d) as ws:
                await open_stream(ws, "s", chain=BONES)

                async def expect_error(text, stream=None, seq=None, code=None, path=None):
                    await ws.send(text)
                    m = await recv(ws)
                    self.assertEqual(m["type"], "error", (text, m))
                    e = m["error"]
                    self.assertIsInstance(e["code"], str)
                    self.assertIsInstance(e["message"], str)
                    self.assertTrue(e["message"])
                    if stream is not None:
                        self.assertEqual(m.get("stream"), stream, m)
                    if seq is not None:
                        self.assertEqual(m.get("seq"), seq, m)
                    if code is not None:
                        self.assertEqual(e["code"], code, m)
                    if path is not None:
                        self.assertEqual(e.get("path"), path, m)
                    return m

                await expect_error('{"type":"target", "stream":', code="invalid_json")
                await expect_error('[1,2,3]')
                await expect_error('{"type":"jump","stream":"s","seq":4}', stream="s", seq=4,
                                   code="unknown_type", path="/type")
                await expect_error('{"type":"target","stream":"ghost","seq":5,'
                                   '"target":{"position":[0.3,0.6,0.2]}}', stream="ghost", seq=5)
                await expect_error('{"type":"target","stream":"s","seq":6,'
                                   '"target":{"position":[0.3,0.6]}}', stream="s", seq=6,
                                   path="/target/position")
                await expect_error('{"type":"target","stream":"s","seq":7,'
                                   '"target":{"position":[0.3,0.6,0.2],"colour":1}}',
                                   stream="s", seq=7, path="/target/colour")
                await expect_error('{"type":"target","stream":"s","target":{"position":[0,1,0]}}',
                                   stream="s", path="/seq")
                await expect_error(json.dumps({"type": "open", "stream": "s", "chain": BONES}),
                                   stream="s")
                await expect_error(json.dumps({"type": "open", "stream": "bad",
                                               "chain": {"kind": "bones", "positions": [[0, 0, 0]]}}),
                                   stream="bad")
                await expect_error('{"type":"path","stream":"s","seq":8,"waypoints":[]}',
                                   stream="s", seq=8, path="/waypoints")
                # a binary message is answered with an error too
                await ws.send(b'{"type":"target","stream":"s","seq":9,"target":{}}')
                m = await recv(ws)
                self.assertEqual(m["type"], "error", m)
                # the connection and the stream still work
                await send(ws, {"type": "target", "stream": "s", "seq": 10,
                                "target": {"position": [0.3, 0.6, 0.2]}})
                m = await recv(ws)
                self.assertEqual((m["type"], m["seq"], m["skipped"]), ("solution", 10, 0), m)
        run(body())

    def test_ping_pong(self):
        async def body():
            async with connect(self.d) as ws:
                for _ in range(3):
                    pong = await ws.ping(os.urandom(8))
                    await asyncio.wait_for(pong, TIMEOUT)
        run(body())

    def test_invalid_utf8_closes_1007(self):
        raw = RawWS(self.d.port)
        try:
            raw.send_text(b'{"type":"open","stream":"\xff\xfe"}')
            self.assertEqual(raw.wait_close(), 1007)
        finally:
            raw.close()
        # one more, with a truncated sequence inside a valid message otherwise
        raw = RawWS(self.d.port)
        try:
            raw.send_text(b'{"type":"close","stream":"s\xe2\x82"}')
            self.assertEqual(raw.wait_close(), 1007)
        finally:
            raw.close()

    def test_protocol_details(self):
        """Frames a library would not send: a ping's payload comes back in
        the pong, an unmasked or stray continuation frame closes with 1002,
        a fragmented message with a ping in between is reassembled, the
        client's close is echoed. (The stream past --max-streams is
        refused in test_tick.py.)"""
        raw = RawWS(self.d.port)
        try:
            raw.sock.sendall(frame(0x9, b"hello"))
            self.assertEqual(raw.recv_frame(), (0xA, b"hello"))
            text = json.dumps({"type": "open", "stream": "f", "chain": BONES}).encode()
            raw.sock.sendall(frame(0x1, text[:10], fin=False) + frame(0x9, b"p") +
                             frame(0x0, text[10:], fin=True))
            self.assertEqual(raw.recv_frame(), (0xA, b"p"))
            self.assertEqual(raw.recv_json()["type"], "opened")
            raw.sock.sendall(frame(0x8, struct.pack("!H", 1000) + b"bye"))
            self.assertEqual(raw.wait_close(), 1000)
        finally:
            raw.close()
        for bad in (bytes([0x81, 2]) + b"{}", frame(0x0, b"abc")):
            raw = RawWS(self.d.port)
            try:
                raw.sock.sendall(bad)
                self.assertEqual(raw.wait_close(), 1002)
            finally:
                raw.close()

    def test_empty_messages_behind_a_large_one_are_answered(self):
        """Empty messages (text and binary) read together with a message
        large enough to be decoded off the loop wait behind it and get
        their errors, in order. Before, the two were dropped unanswered
        (an empty message has no buffer of its own to wait in)."""
        raw = RawWS(self.d.port)
        try:
            big = json.dumps({"type": "open", "stream": "big", "chain": BONES})
            big = big[:-1] + " " * (70 * 1024) + "}"
            raw.sock.sendall(frame(0x1, big.encode()) + frame(0x1, b"") + frame(0x2, b"") +
                             frame(0x1, b'{"type":"close","stream":"big"}'))
            got = [raw.recv_json() for _ in range(4)]
            self.assertEqual([m["type"] for m in got], ["opened", "error", "error", "closed"], got)
            self.assertEqual(got[1]["error"]["code"], "invalid_json", got)
            self.assertEqual(got[2]["error"]["code"], "invalid_request", got)
        finally:
            raw.close()

    def test_a_path_whose_next_sample_is_ages_away(self):
        """A path at rate_hz 1e-300 (valid: in (0, 1000]): its first sample
        is answered, the next is due in 1e300 s, and ikd serves on; a
        target then ends the path. Before, the wait converted to an
        integer overflowed to 0: the timer fired again at once, for ever,
        and the loop served nobody (livez timed out)."""
        d = Daemon("--loops", "1")
        raw = RawWS(d.port)
        try:
            raw.send_text(json.dumps({"type": "open", "stream": "s", "chain": BONES}))
            self.assertEqual(raw.recv_json()["type"], "opened")
            for rate in (1e-300, 5e-324):
                raw.send_text(json.dumps({"type": "path", "stream": "s", "seq": 1, "rate_hz": rate,
                                          "waypoints": [{"position": [0.2, 0.1, 0.3]},
                                                        {"position": [0.2, 0.1, 0.25]}]}))
                m = raw.recv_json()
                self.assertEqual((m["type"], m["index"], m["count"]), ("solution", 0, 2), m)
                self.assertEqual(d.http("GET", "/livez")[0], 200)
                raw.send_text(json.dumps({"type": "target", "stream": "s", "seq": 2,
                                          "target": {"position": [0.3, 0.6, 0.2]}}))
                self.assertEqual([raw.recv_json()["type"] for _ in range(2)],
                                 ["path_end", "solution"])
        finally:
            raw.close()
            d.proc.kill()
            d.proc.wait()

    def test_vanishing_client(self):
        """Clients that reset their connection while seven-joint solves run
        on the pool and targets wait: nothing is left open, ikd is healthy."""
        (p0, q0), = iiwa_poses(1)
        for k in range(4):
            raw = RawWS(self.d.port)
            raw.send_text(json.dumps({"type": "open", "stream": "a", "chain": iiwa_chain()}))
            raw.send_text(json.dumps({"type": "open", "stream": "b", "chain": iiwa_chain()}))
            for i in range(100):
                raw.send_text(json.dumps({"type": "target", "stream": "ab"[i % 2], "seq": i,
                                          "target": circle_pose(p0, q0, i / 100)}))
                if i == 50 and k % 2:
                    raw.send_text('{"type":"close","stream":"a"}')
            raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            raw.close()
        deadline = time.monotonic() + TIMEOUT
        while self.d.streams_open() != 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(self.d.streams_open(), 0)
        self.assertEqual(self.d.http("GET", "/livez")[0], 200)

    def test_metrics_gauge(self):
        async def body():
            self.assertEqual(self.d.streams_open(), 0)
            async with connect(self.d) as ws:
                for s in ("g1", "g2", "g3"):
                    await open_stream(ws, s, chain=BONES)
                self.assertEqual(self.d.streams_open(), 3)
                await send(ws, {"type": "close", "stream": "g2"})
                self.assertEqual((await recv(ws))["type"], "closed")
                self.assertEqual(self.d.streams_open(), 2)
            deadline = time.monotonic() + TIMEOUT
            while self.d.streams_open() != 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            self.assertEqual(self.d.streams_open(), 0)
        run(body())


# ---- limits: message size, a client that never reads ----------------------------

class LimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--max-message", "4096", "--max-send-queue", "65536")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_oversized_message_closes_1009(self):
        raw = RawWS(self.d.port)
        try:
            raw.send_text(json.dumps({"type": "open", "stream": "s", "chain": BONES}))
            self.assertEqual(raw.recv_json()["type"], "opened")
            small = json.dumps({"type": "target", "stream": "s", "seq": 1,
                                "target": {"position": [0.3, 0.6, 0.2]}})
            raw.send_text(small + " " * (4096 - len(small)))  # exactly the limit: fine
            self.assertEqual(raw.recv_json()["type"], "solution")
            raw.send_text(small + " " * 10000)
            self.assertEqual(raw.wait_close(), 1009)
        finally:
            raw.close()
        # the same, with the message split into fragments
        raw = RawWS(self.d.port)
        try:
            raw.sock.sendall(frame(0x1, b'{"type":"close",' + b" " * 3000, fin=False))
            raw.sock.sendall(frame(0x0, b" " * 3000, fin=False))
            raw.sock.sendall(frame(0x0, b'"stream":"s"}', fin=True))
            self.assertEqual(raw.wait_close(), 1009)
        finally:
            raw.close()

    def test_never_reading_client_cut_off(self):
        """One client streams long fast paths and floods targets and never
        reads; it is cut off (1008, or 1009) while a second client keeps
        getting answers promptly, and the daemon stays healthy."""
        flood = RawWS(self.d.port, rcvbuf=4096)
        # 16 streams each stream a path at 1000 Hz (several MB/s of answers),
        # and 4 more get a flood of targets (conflated, so fewer answers)
        paths = ["p%d" % i for i in range(16)]
        streams = ["f%d" % i for i in range(4)]
        for s in paths + streams:
            flood.send_text(json.dumps({"type": "open", "stream": s, "chain": BONES}))
        for s in paths:
            flood.send_text(json.dumps({"type": "path", "stream": s, "seq": 0, "rate_hz": 1000,
                                        "duration_s": 60,
                                        "waypoints": [{"position": [0.3, 0.6, 0.2]},
                                                      {"position": [-0.3, 0.5, 0.2]}]}))
        blob = b"".join(frame(0x1, json.dumps({
            "type": "target", "stream": streams[i % 4], "seq": 1 + i,
            "target": bones_target(i)}).encode()) for i in range(2000))
        stop = threading.Event()
        flood_stats = {"bytes": 0, "error": None}

        def flooder():
            flood.sock.settimeout(0.2)
            try:
                while not stop.is_set():
                    try:
                        flood.sock.sendall(blob)
                        flood_stats["bytes"] += len(blob)
                    except socket.timeout:
                        pass  # ikd is not reading us (any more): keep trying
            except OSError as e:  # cut off
                flood_stats["error"] = e

        latencies = []

        async def other():
            async with connect(self.d) as ws:
                await open_stream(ws, "other", chain=BONES)
                end = time.monotonic() + 3.0
                i = 0
                while time.monotonic() < end:
                    t0 = time.monotonic()
                    await send(ws, {"type": "target", "stream": "other", "seq": i,
                                    "target": bones_target(i)})
                    m = await recv(ws, timeout=1.0 * SLOW)
                    latencies.append(time.monotonic() - t0)
                    self.assertEqual((m["type"], m["seq"], m["skipped"]), ("solution", i, 0))
                    i += 1
                # by now the flooder is gone: only this stream is open
                deadline = time.monotonic() + TIMEOUT
                while self.d.streams_open() != 1 and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                self.assertEqual(self.d.streams_open(), 1, "the flooder was not cut off")

        t = threading.Thread(target=flooder, daemon=True)
        t.start()
        try:
            run(other())
        finally:
            stop.set()
            t.join(2)
            # now read what the flooder was sent: it ends in a close frame
            # with 1008 (or 1009), or the connection was simply dropped
            try:
                code = flood.wait_close(timeout=10)
            finally:
                flood.close()
        self.assertIn(code, (1008, 1009, None))
        self.assertEqual(self.d.http("GET", "/livez")[0], 200)
        self.assertEqual(self.d.http("GET", "/readyz")[0], 200)
        # Until the cut the loop also reads and decodes the flood, so the
        # bounds are loose enough for sanitizer builds: what must not happen
        # is the other client waiting for the flooder's queue.
        latencies.sort()
        self.assertGreater(len(latencies), 30 / SLOW)
        self.assertLess(latencies[len(latencies) // 2], 0.05 * SLOW,
                        "median answer time %.1f ms" % (1e3 * latencies[len(latencies) // 2]))
        self.assertLess(latencies[-1], 0.5 * SLOW, "slowest answer time")


def held_bytes(d, what):
    """ikd_held_bytes{what=...} of /metrics."""
    key = 'ikd_held_bytes{what="%s"}' % what
    line = [l for l in d.http("GET", "/metrics")[1].splitlines() if l.startswith(key)][0]
    return int(float(line.split()[1]))


class HeldBytesTest(unittest.TestCase):
    def test_messages_being_received_count_against_the_body_budget(self):
        """Messages still arriving (most of a message sent, not its end)
        hold their bytes against --body-budget, as HTTP bodies do: past
        it the connection is closed with 1013 (try again later), and the
        bytes come back when a message is whole. Before, nothing bounded
        them but --max-message per connection: 200 clients each holding
        most of a 1 MB message took ikd from 7 MB to 218 MB RSS."""
        d = Daemon("--body-budget", "1M")
        a, b, c = RawWS(d.port), RawWS(d.port), None
        try:
            text = json.dumps({"type": "open", "stream": "big", "chain": BONES})
            text = (text[:-1] + " " * (700 * 1024) + "}").encode()
            a.sock.sendall(frame(0x1, text[:400 * 1024], fin=False))
            deadline = time.monotonic() + TIMEOUT
            while held_bytes(d, "request_bodies") < 400 * 1024:
                self.assertLess(time.monotonic(), deadline, "a's bytes are not held")
                time.sleep(0.01)
            b.sock.sendall(frame(0x1, text, fin=True))
            self.assertEqual(b.wait_close(3), 1013)
            a.sock.sendall(frame(0x0, text[400 * 1024:], fin=True))
            self.assertEqual(a.recv_json()["type"], "opened")
            self.assertEqual(held_bytes(d, "request_bodies"), 0)
            c = RawWS(d.port)  # room again
            c.sock.sendall(frame(0x1, text))
            self.assertEqual(c.recv_json()["type"], "opened")
        finally:
            for w in (a, b, c):
                if w:
                    w.close()
            d.stop()

    def test_an_answer_larger_than_the_send_queue_cap_is_sent(self):
        """A tick whose one answer is larger than --max-send-queue (200
        legs' full answers, about 150 kB, under a 64 kB cap) to a client
        that reads: the answer arrives whole, and the connection stays. The
        queue may pass the cap only with its newest message: a client that
        does not read is still cut (test_never_reading_client_cut_off).
        Before, the answer itself closed the connection with 1008, "the
        client does not read"."""
        d = Daemon("--max-send-queue", "65536")
        raw = RawWS(d.port)
        try:
            n = 200
            raw.sock.sendall(b"".join(frame(0x1, json.dumps(
                {"type": "open", "stream": "c%d" % k, "chain": BONES}).encode()) for k in range(n)))
            for k in range(n):
                self.assertEqual(raw.recv_json()["type"], "opened")
            for seq in (1, 2):
                raw.send_text(json.dumps({"type": "tick", "seq": seq, "targets": [
                    {"stream": "c%d" % k, "target": {"position": [0.3, 0.6, 0.2]}}
                    for k in range(n)]}))
                op, payload = raw.recv_frame()
                self.assertEqual(op, 0x1, payload[:80])
                self.assertGreater(len(payload), 65536)
                m = json.loads(payload)
                self.assertEqual((m["type"], m["seq"], len(m["solutions"])),
                                 ("tick_solution", seq, n))
        finally:
            raw.close()
            d.proc.kill()
            d.proc.wait()

    def test_answers_of_one_read_slow_a_reading_client_down(self):
        """300 opens, then 300 targets, each batch sent in one write, under
        a 16 kB --max-send-queue: the answers of one read pass the cap
        together, and a client that reads gets every one of them (ikd stops
        reading it while its queue is over the cap, then reads on). Before,
        the answers to the opens alone closed it with 1008, "the client
        does not read"."""
        d = Daemon("--max-send-queue", "16384")
        raw = RawWS(d.port)
        try:
            n = 300
            opens = [{"type": "open", "stream": "c%d" % k, "chain": BONES} for k in range(n)]
            targets = [{"type": "target", "stream": "c%d" % k, "seq": 1,
                        "target": {"position": [0.3, 0.6, 0.2]}} for k in range(n)]
            for kind, msgs in (("open", opens), ("target", targets)):
                raw.sock.sendall(b"".join(frame(0x1, json.dumps(m).encode()) for m in msgs))
                got = [raw.recv_json() for _ in range(n)]
                want = "opened" if kind == "open" else "solution"
                self.assertEqual(sorted(m["stream"] for m in got if m["type"] == want),
                                 sorted("c%d" % k for k in range(n)), got[-1])
        finally:
            raw.close()
            d.stop()

    def test_running_paths_are_bounded(self):
        """Paths of 1024 waypoints (about 200 kB each once decoded) that
        run for minutes, one per stream: they count against
        --stream-chain-bytes with the streams' chains, past it a path is
        refused (overloaded at /waypoints, the flag named), and a path's
        bytes come back when it ends. Before, nothing bounded them: two
        connections of 512 such paths held 200 MB more."""
        d = Daemon("--stream-chain-bytes", "2M")
        raw = RawWS(d.port)
        try:
            def held():
                return held_bytes(d, "stream_chains")
            n = 24
            for k in range(n):
                raw.send_text(json.dumps({"type": "open", "stream": "p%d" % k, "chain": BONES}))
            for k in range(n):
                self.assertEqual(raw.recv_json()["type"], "opened")
            chains = held()
            waypoints = [{"position": [0.2, 0.1, 0.2 + 1e-4 * i]} for i in range(1024)]
            raw.sock.sendall(b"".join(frame(0x1, json.dumps({
                "type": "path", "stream": "p%d" % k, "seq": k, "waypoints": waypoints,
                "rate_hz": 0.01, "duration_s": 1000}).encode()) for k in range(n)))
            got = [raw.recv_json() for _ in range(n)]
            refused = [m for m in got if m["type"] == "error"]
            running = [m["stream"] for m in got if m["type"] == "solution"]
            self.assertEqual(len(refused) + len(running), n, got)
            self.assertTrue(running and refused, (len(running), len(refused)))
            for m in refused:
                self.assertEqual((m["error"]["code"], m["error"]["path"]),
                                 ("overloaded", "/waypoints"), m)
                self.assertIn("--stream-chain-bytes", m["error"]["message"])
            self.assertLessEqual(held(), 2 << 20)
            self.assertGreater(held(), chains + len(running) * 1024 * 100)
            # a target ends each running path: its bytes come back
            for k, name in enumerate(running):
                raw.send_text(json.dumps({"type": "target", "stream": name, "seq": 100 + k,
                                          "target": {"position": [0.2, 0.1, 0.25]}}))
            kinds = sorted(raw.recv_json()["type"] for _ in range(2 * len(running)))
            self.assertEqual(kinds, ["path_end"] * len(running) + ["solution"] * len(running))
            self.assertEqual(held(), chains)
        finally:
            raw.close()
            d.stop()

    def test_open_streams_are_bounded_by_the_stream_budget(self):
        """Each open stream's own state (its struct and session, about 1
        KiB) counts against --stream-bytes and in ikd_held_bytes{what=
        "streams"}: past it an open is refused (overloaded at /stream, the
        flag named), and a closed stream's bytes come back. Before, nothing
        but --max-streams per connection bounded them (about 850 MB from
        one address at the defaults), and the flag did not exist."""
        d = Daemon("--stream-bytes", "64K")
        raw = RawWS(d.port)
        try:
            n = 200
            raw.sock.sendall(b"".join(frame(0x1, json.dumps(
                {"type": "open", "stream": "s%d" % k, "chain": BONES}).encode()) for k in range(n)))
            got = [raw.recv_json() for _ in range(n)]
            opened = [m["stream"] for m in got if m["type"] == "opened"]
            refused = [m for m in got if m["type"] == "error"]
            self.assertTrue(opened and refused, (len(opened), len(refused)))
            for m in refused:
                self.assertEqual((m["error"]["code"], m["error"]["path"]),
                                 ("overloaded", "/stream"), m)
                self.assertIn("--stream-bytes", m["error"]["message"])
            held = held_bytes(d, "streams")
            self.assertLessEqual(held, 64 << 10)
            self.assertGreaterEqual(held, len(opened) * 600)
            raw.send_text(json.dumps({"type": "close", "stream": opened[0]}))
            self.assertEqual(raw.recv_json()["type"], "closed")
            self.assertEqual(held_bytes(d, "streams"), held - held // len(opened))
            raw.send_text(json.dumps({"type": "open", "stream": "again", "chain": BONES}))
            self.assertEqual(raw.recv_json()["type"], "opened")
        finally:
            raw.close()
            d.stop()

    def test_close_then_open_of_one_name(self):
        """close, open of the same name and a target, in one write, while
        the stream's solve runs on the pool (--inline-cost-us 0): the open
        is answered after "closed", as sent, and the target goes to the new
        stream. Before, the open got stream_exists (the old stream still
        ran) and the target unknown_stream."""
        d = Daemon("--inline-cost-us", "0")
        raw = RawWS(d.port)
        try:
            raw.send_text(json.dumps({"type": "open", "stream": "a", "chain": BONES}))
            self.assertEqual(raw.recv_json()["type"], "opened")
            got = []
            for round_ in range(5):
                raw.sock.sendall(b"".join(frame(0x1, json.dumps(m).encode()) for m in (
                    {"type": "target", "stream": "a", "seq": 1,
                     "target": {"position": [0.3, 0.6, 0.2]}},
                    {"type": "close", "stream": "a"},
                    {"type": "open", "stream": "a", "chain": BONES},
                    {"type": "target", "stream": "a", "seq": 2,
                     "target": {"position": [0.2, 0.5, 0.3]}})))
                got = [raw.recv_json() for _ in range(4)]
                self.assertEqual([(m["type"], m.get("seq")) for m in got],
                                 [("solution", 1), ("closed", None), ("opened", None),
                                  ("solution", 2)], got)
        finally:
            raw.close()
            d.stop()


class HandshakeTest(unittest.TestCase):
    def test_a_second_key_header_is_refused(self):
        """An upgrade with two Sec-WebSocket-Key headers is refused with 400
        naming the header, before any upgrade; one key is accepted (101).
        Before, the first key was taken and the upgrade went through."""
        d = Daemon()
        try:
            for keys, status in ((2, b"400"), (1, b"101")):
                s = socket.create_connection(("127.0.0.1", d.port), timeout=TIMEOUT)
                s.sendall(b"GET /v1/stream HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
                          b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
                          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" * keys + b"\r\n")
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    head += chunk
                self.assertEqual(head.split(b" ")[1], status, head[:200])
                if status == b"400":
                    while b"Sec-WebSocket-Key" not in head:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        head += chunk
                    self.assertIn(b"Sec-WebSocket-Key", head)
                s.close()
        finally:
            d.stop()

    def test_close_frames_wslay_got_wrong(self):
        """A close frame of 1 byte is a protocol error (RFC 6455 5.5.1):
        answered 1002; the close codes 1012 to 1014 (IANA's registry) are
        valid: echoed, as 1000 is; 1015 and 2999 are not: 1002. Before,
        wslay answered the first with an empty close (1005 here) and
        1012 to 1014 with 1002. (A control frame over 125 bytes still gets
        an empty close: wslay's frame layer answers it before ikd sees it.)"""
        d = Daemon()
        try:
            for payload, want in ((b"\x03", 1002), (struct.pack("!H", 1012), 1012),
                                  (struct.pack("!H", 1014), 1014),
                                  (struct.pack("!H", 1000), 1000),
                                  (struct.pack("!H", 1015), 1002),
                                  (struct.pack("!H", 2999), 1002)):
                w = RawWS(d.port)
                w.sock.sendall(frame(0x8, payload))
                self.assertEqual(w.wait_close(TIMEOUT), want, payload)
                w.close()
        finally:
            d.stop()

    def test_a_close_reason_split_across_reads_is_checked(self):
        """A close frame whose code comes in one read and its reason (not
        UTF-8) in the next is answered 1007, as when it comes whole.
        Before, wslay skipped the first 2 bytes of every read of a close
        frame's payload, as if each began with the code: 1000 was echoed,
        and 1012 (which ikd echoed as soon as the code came) too."""
        d = Daemon()
        try:
            for code in (1000, 1012):
                w = RawWS(d.port)
                w.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                f = frame(0x8, struct.pack("!H", code) + b"\xff\xfe")
                w.sock.sendall(f[:8])  # head, mask and the code
                time.sleep(0.2)
                w.sock.sendall(f[8:])
                self.assertEqual(w.wait_close(TIMEOUT), 1007, code)
                w.close()
        finally:
            d.stop()


# ---- token and Origin on the upgrade --------------------------------------------

class IdleTest(unittest.TestCase):
    def test_silent_client_dropped_live_one_kept(self):
        """With --timeout 1: a client that sends nothing, not even the pong
        to ikd's ping, is dropped after about two periods; a client whose
        library answers pings stays open through the same silence and is
        still served."""
        d = Daemon("--timeout", "1")
        try:
            silent = RawWS(d.port)
            # ikd's clock for the silent client starts at the latest here;
            # the live client's setup below may take long on a loaded machine
            connected = time.monotonic()

            async def body():
                async with connect(d) as ws:
                    await open_stream(ws, "s", chain=BONES)
                    t0 = time.monotonic()
                    op, payload = await asyncio.get_running_loop().run_in_executor(
                        None, silent.recv_frame, 5 * slowness())
                    self.assertEqual(op, 0x9, "expected a ping from ikd")
                    ended = await asyncio.get_running_loop().run_in_executor(
                        None, silent.wait_close, 5 * slowness())
                    self.assertIsNone(ended, "the silent client got a close frame instead of "
                                             "being dropped")
                    # not at the ping (one period after it connected) but a
                    # period later
                    self.assertGreater(time.monotonic() - connected, 1.5)
                    await asyncio.sleep(max(0.0, 3.0 - (time.monotonic() - t0)))
                    await send(ws, {"type": "target", "stream": "s", "seq": 1,
                                    "target": bones_target(1)})
                    m = await recv(ws)
                    self.assertEqual((m["type"], m["seq"]), ("solution", 1), m)
            run(body())
            silent.close()
            status, text = d.http("GET", "/metrics")
            self.assertIn('ikd_rejected_total{reason="timeout"} 1\n', text)
        finally:
            d.stop()


class AccessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--token", "s3cret", "--allow-origin", "https://ok.example")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def status_of(self, daemon=None, url=None, **kw):
        """The upgrade's status (101 when the stream opened and answered);
        kw go to websockets' connect. After a 101, self.subprotocol holds the
        protocol ikd selected."""
        d = daemon or self.d
        async def body():
            try:
                ws = await websockets.connect(url or d.url, ping_interval=None,
                                              open_timeout=TIMEOUT, close_timeout=2, **kw)
            except websockets.exceptions.InvalidStatusCode as e:
                return e.status_code
            self.subprotocol = ws.subprotocol
            await open_stream(ws, "t", chain=BONES)
            await ws.close()
            return 101
        return run(body())

    def test_token(self):
        self.assertEqual(self.status_of(), 401)
        self.assertEqual(self.status_of(extra_headers={"Authorization": "Bearer wrong"}), 401)
        self.assertEqual(self.status_of(extra_headers={"Authorization": "Bearer s3cret"}), 101)

    def test_token_in_subprotocol(self):
        """Browsers cannot set Authorization on a WebSocket: the token comes
        as the subprotocol base64url.bearer.ikd.<unpadded base64url token>
        next to ikd.v1, which ikd selects (never the bearer one). A wrong
        token is 401, a token in the URL is not read, a bearer element
        without ikd.v1 is 400, and no log line at debug level holds the
        token in either form."""
        token = "s3cret/+~ with spaces"
        enc = base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")
        d = Daemon("--token", token, "--log-level", "debug")
        try:
            ok = ["ikd.v1", "base64url.bearer.ikd." + enc]
            self.assertEqual(self.status_of(d, subprotocols=ok), 101)
            self.assertEqual(self.subprotocol, "ikd.v1")
            self.assertEqual(self.status_of(d, subprotocols=list(reversed(ok))), 101)
            self.assertEqual(self.subprotocol, "ikd.v1")
            wrong = base64.urlsafe_b64encode(b"s3cret").decode().rstrip("=")
            self.assertEqual(self.status_of(d, subprotocols=["ikd.v1",
                                                             "base64url.bearer.ikd." + wrong]), 401)
            self.assertEqual(self.status_of(d, subprotocols=["ikd.v1"]), 401)
            self.assertEqual(self.status_of(d, url=d.url + "?token=" + enc,
                                            subprotocols=["ikd.v1"]), 401)
            self.assertEqual(self.status_of(d, subprotocols=["base64url.bearer.ikd." + enc]), 400)
            # the subprotocol is for the upgrade only; HTTP endpoints want Authorization
            status, text = d.http("GET", "/v1/solvers",
                                  headers={"Sec-WebSocket-Protocol": ", ".join(ok)})
            self.assertEqual(status, 401, text)
            # with Authorization and ikd.v1 offered, ikd.v1 is still selected
            self.assertEqual(self.status_of(d, subprotocols=["ikd.v1"],
                                            extra_headers={"Authorization": "Bearer " + token}),
                             101)
            self.assertEqual(self.subprotocol, "ikd.v1")
            status, text = d.http("GET", "/metrics", headers={"Authorization": "Bearer " + token})
            self.assertIn('ikd_rejected_total{reason="unauthorized"} 4\n', text)
        finally:
            log = d.stderr()
            d.stop()
        self.assertIn("WebSocket connection open", log)  # debug lines were written
        self.assertNotIn(enc, log)
        self.assertNotIn(wrong, log)
        self.assertNotIn("s3cret", log)

    def test_subprotocol_without_token(self):
        """Without --token, a client offering ikd.v1 gets it selected; one
        offering nothing gets no Sec-WebSocket-Protocol answer."""
        self.assertEqual(self.status_of(self.d, subprotocols=["ikd.v1"],
                                        extra_headers={"Authorization": "Bearer s3cret"}), 101)
        self.assertEqual(self.subprotocol, "ikd.v1")
        self.assertEqual(self.status_of(self.d, extra_headers={"Authorization": "Bearer s3cret"}),
                         101)
        self.assertIsNone(self.subprotocol)

    def test_origin(self):
        auth = {"Authorization": "Bearer s3cret"}
        self.assertEqual(self.status_of(extra_headers=auth, origin="https://evil.example"), 403)
        self.assertEqual(self.status_of(extra_headers=auth, origin="https://ok.example"), 101)
        self.assertEqual(self.status_of(extra_headers=auth), 101)  # not a browser


# ---- SIGTERM ----------------------------------------------------------------------

class ShutdownTest(unittest.TestCase):
    def test_sigterm_closes_streams_1001(self):
        d = Daemon()
        try:
            async def body():
                conns = [await connect(d) for _ in range(3)]
                for k, ws in enumerate(conns):
                    await open_stream(ws, "s", chain=BONES)
                    await send(ws, {"type": "path", "stream": "s", "seq": 1, "rate_hz": 50,
                                    "duration_s": 10, "waypoints": [{"position": [0.3, 0.6, 0.2]},
                                                                    {"position": [-0.3, 0.5, 0.2]}]})
                    m = await recv(ws)
                    self.assertEqual(m["type"], "solution")
                d.proc.send_signal(signal.SIGTERM)
                for ws in conns:
                    with self.assertRaises(websockets.exceptions.ConnectionClosed) as cm:
                        while True:
                            await recv(ws)
                    self.assertEqual(close_code(cm.exception), 1001)
            run(body())
            d.proc.wait(10)
            self.assertEqual(d.proc.returncode, 0)
        finally:
            d.stop()

    def test_sigterm_answers_in_flight_targets(self):
        """A solve running on the pool when SIGTERM arrives, and a target
        waiting behind it, are both answered before the 1001 close frame:
        the iiwa gets a target within its reach that its joint limits keep
        it from (its own shoulder: the elbow cannot fold that far) with a
        300 ms budget, so the first is still being solved when the signal
        comes (a target beyond the reach would be answered at once)."""
        d = Daemon("--max-iterations", "100000000")
        try:
            async def body():
                ws = await connect(d)
                await open_stream(ws, "arm", chain=iiwa_chain(),
                                  options={"timeout_ms": 300, "max_iterations": 100000000})
                far = {"position": [0.0, 0.0, 0.36]}  # blocked by the limits: runs its budget
                await send(ws, {"type": "target", "stream": "arm", "seq": 0, "target": far})
                await asyncio.sleep(0.02)
                await send(ws, {"type": "target", "stream": "arm", "seq": 1, "target": far})
                await asyncio.sleep(0.05)
                d.proc.send_signal(signal.SIGTERM)
                seqs = []
                with self.assertRaises(websockets.exceptions.ConnectionClosed) as cm:
                    while True:
                        m = await recv(ws)
                        self.assertEqual((m["type"], m["skipped"]), ("solution", 0), m)
                        self.assertEqual(m["result"]["status"], "timed_out", m)
                        seqs.append(m["seq"])
                self.assertEqual(close_code(cm.exception), 1001)
                self.assertEqual(seqs, [0, 1], "targets accepted before SIGTERM went unanswered")
            run(body())
            d.proc.wait(10)
            self.assertEqual(d.proc.returncode, 0)
        finally:
            d.stop()
    def test_a_stalled_message_does_not_hold_the_drain(self):
        """A message begun before SIGTERM whose bytes then stop: ikd waits
        for its end about 2 s, then gives it up and closes with 1001, not
        at --drain-timeout (8 s here). Before, the 1001 came after the
        whole --drain-timeout."""
        d = Daemon("--drain-timeout", "8")
        w = RawWS(d.port)
        stopped = False
        try:
            w.send_text(json.dumps({"type": "open", "stream": "a", "chain": BONES}))
            self.assertEqual(w.recv_json()["type"], "opened")
            w.sock.sendall(frame(0x1, b'{"type":"target",', fin=False))
            time.sleep(0.2)
            t0 = time.monotonic()
            d.proc.send_signal(signal.SIGTERM)
            self.assertEqual(w.wait_close(10), 1001)
            waited = time.monotonic() - t0
            self.assertLess(waited, 5.0 * SLOW, "the 1001 waited %.1f s" % waited)
            w.close()
            self.assertEqual(d.proc.wait(10), 0)
            stopped = True
        finally:
            if not stopped:
                w.close()
                d.proc.kill()
                d.proc.wait()


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""
test_limits.py: the real daemon against hostile and careless clients: every
byte a client can make ikd hold has a bound, a drain loses nothing and ends,
and nobody can stall the loop for others.

Each test starts $IKD_BIN on 127.0.0.1 port 0 with the flags it needs and
talks to it over raw sockets (so that the client can do what a polite
library would not: never read, trickle bytes, stop mid-body). Covered:
- drain: 50 keep-alive clients under load, then SIGTERM: every request
  written completely is answered, answers sent while draining carry
  "Connection: close", and ikd exits 0 well within --drain-timeout; with
  pool work that outlasts the deadline, ikd still exits by the deadline;
  SIGHUP drains like SIGTERM.
- a client that floods pings and never reads is closed with 1008 once its
  queued pongs pass --max-send-queue, and ikd's resident memory stays near
  that cap (it grew without bound before).
- a slowloris crowd (many connections from one address trickling header
  bytes) does not stop a well-behaved client from another address: it is
  answered within a second (--max-connections-per-address), and a client
  that trickles a request is cut off at --request-timeout even though it
  is never idle for --timeout.
- an answer the kernel took whole (Connection: close) for a client that
  never reads keeps its connection's slot and is reset after --timeout
  without the client's progress (the kernel held it for minutes and more
  once ikd had closed the socket, counted by no limit), while a slow but
  steady reader gets all of it.
- uploads held unfinished are bounded by --body-budget: ikd's memory stays
  near the budget and uploads beyond it get 503 before their body is read.
- the chain registry holds what --registry-bytes says: filling it with
  64-joint chains grows ikd's memory by at most 1.5 times the bound.
- large bodies are decoded off the loop: /livez stays fast (p50 under
  5 ms, p99 under 100 ms on a loaded machine) while another client posts
  8 MB solve and chain bodies back to back (p50 142 ms before).
- a 100,000-target batch does not starve single solves (each answered
  within 50 ms while it runs, never 503 with --max-queue 4), and a batch
  whose client left is cancelled (the pool empties within seconds).
Bounds are generous (a loaded 2-core machine, sanitizer builds multiply
them by SLOW, and memory bounds by MEM, with AddressSanitizer's quarantine
off: see ASAN_MEMORY) but each fails on the code before its fix; memory is
also checked against ikd's own accounting (ikd_held_bytes), whatever the
allocator.
"""
import json
import os
import select
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import RawWS, frame  # noqa: E402  (the raw WebSocket client)

IKD_BIN = os.environ.get("IKD_BIN", "build/ikd")
IKD_DATA = os.environ.get("IKD_DATA", "tests/data")


def slowness():
    """IKD_TEST_SLOW if set, else guessed from the sanitizer runtime linked
    into $IKD_BIN (as tests/server/test_stream.py does)."""
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
TIMEOUT = 5.0 * SLOW


def sanitizer():
    """"address", "undefined", "thread" or None: the sanitizer runtime
    linked into $IKD_BIN."""
    try:
        with open(IKD_BIN, "rb") as f:
            image = f.read()
    except OSError:
        return None
    for marker, name in ((b"__tsan_init", "thread"), (b"__asan_init", "address"),
                         (b"__ubsan_", "undefined")):
        if marker in image:
            return name
    return None


SANITIZER = sanitizer()
# Memory bounds. AddressSanitizer keeps freed memory in its quarantine and
# never gives it back unless told (the registry test grew by 460 MB for a
# 16 MB bound): its daemons run with the quarantine off and freed memory
# released to the system (ASAN_MEMORY), which leaves ASan's own redzones and
# chunk headers on every allocation (1.4 times on the registry's many small
# ones), hence MEM. Every build is also held to ikd's own accounting
# (ikd_held_bytes in /metrics), which does not depend on the allocator.
ASAN_MEMORY = ("quarantine_size_mb=0:thread_local_quarantine_size_kb=0:"
               "allocator_release_to_os_interval_ms=100")
MEM = {"address": 2.0, "thread": 3.0}.get(SANITIZER, 1.0)

TWO_BONE = json.dumps({
    "chain": {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]},
    "target": {"position": [0.3, 0.6, 0.2]}}).encode()


class Daemon:
    def __init__(self, *extra):
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ)
        if SANITIZER == "address":
            env["ASAN_OPTIONS"] = ":".join(
                o for o in (env.get("ASAN_OPTIONS", ""), ASAN_MEMORY) if o)
        self.proc = subprocess.Popen(
            [IKD_BIN, "--listen", "127.0.0.1:0", "--log-level", "warn", *extra],
            stdout=subprocess.PIPE, stderr=self.log, env=env)
        ready, _, _ = select.select([self.proc.stdout], [], [], 10 * SLOW)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("ikd listening on "):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("the daemon did not start: %r %r" % (line, self.stderr()))
        self.port = int(line.strip().rsplit(":", 1)[1])

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def connect(self, src="127.0.0.1"):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT,
                                     source_address=(src, 0))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.log.close()


def post(path, body, extra=b""):
    return (b"POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n%s\r\n" % (path.encode(), len(body), extra)) + body


def read_response(sock, buf=b""):
    """(status, headers dict with lower-case names, body, rest of buf), or
    None when the connection ends before a whole answer."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding") == "chunked":  # a batch answered as it is solved
        body = bytearray()
        buf = bytearray(buf)
        while True:
            while b"\r\n" not in buf:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    return None
                buf += chunk
            line, rest = bytes(buf).split(b"\r\n", 1)
            size = int(line.split(b";")[0], 16)
            while len(rest) < size + 2:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    return None
                rest += chunk
            body += rest[:size]
            buf = bytearray(rest[size + 2:])
            if size == 0:
                return status, headers, bytes(body), bytes(buf)
    n = int(headers.get("content-length", "0"))
    if len(buf) < n:
        body = bytearray(buf)  # answers of tens of MB: no quadratic copying
        while len(body) < n:
            chunk = sock.recv(1 << 20)
            if not chunk:
                return None
            body += chunk
        buf = bytes(body)
    return status, headers, buf[:n], buf[n:]


def exchange(d, path, body, src="127.0.0.1", timeout=None):
    s = d.connect(src)
    if timeout:
        s.settimeout(timeout)
    try:
        s.sendall(post(path, body))
        r = read_response(s)
        return r[0] if r else None
    finally:
        s.close()


class KeepAliveClient(threading.Thread):
    """Sends one request after another on one keep-alive connection until
    the daemon says Connection: close or the connection ends. Counts
    requests written completely, answers, and requests written completely
    whose connection then ended without an answer (lost)."""

    def __init__(self, d, body, path="/v1/solve"):
        super().__init__(daemon=True)
        self.d, self.body, self.path = d, body, path
        self.sent = self.answered = self.lost = 0
        self.last_close = False
        self.error = None

    def run(self):
        try:
            s = self.d.connect()
        except OSError as e:
            self.error = e
            return
        buf = b""
        try:
            while True:
                try:
                    s.sendall(post(self.path, self.body))
                except OSError:
                    return  # not written completely: not the daemon's to answer
                self.sent += 1
                try:
                    r = read_response(s, buf)
                except OSError:
                    r = None
                if r is None:
                    self.lost += 1
                    return
                status, headers, _, buf = r
                self.answered += 1
                self.last_close = headers.get("connection", "").lower() == "close"
                if self.last_close:
                    return
        finally:
            s.close()


class DrainTest(unittest.TestCase):
    def drain_under_load(self, sig):
        deadline = 8
        d = Daemon("--drain-timeout", str(deadline))
        try:
            clients = [KeepAliveClient(d, TWO_BONE) for _ in range(50)]
            for c in clients:
                c.start()
            time.sleep(1.0 * SLOW)
            self.assertTrue(all(c.answered > 0 for c in clients), "every client served first")
            t0 = time.monotonic()
            d.proc.send_signal(sig)
            try:
                rc = d.proc.wait(deadline + 5 * SLOW)
            except subprocess.TimeoutExpired:
                rc = None
            took = time.monotonic() - t0
            for c in clients:
                c.join(TIMEOUT)
            lost = sum(c.lost for c in clients)
            sent = sum(c.sent for c in clients)
            print("drain: %d requests sent by 50 clients, %d lost, exit %s after %.2f s"
                  % (sent, lost, rc, took))
            self.assertEqual(lost, 0, "requests written completely but never answered")
            self.assertTrue(all(c.last_close for c in clients),
                            "the last answer of every connection says Connection: close")
            self.assertEqual(rc, 0, d.stderr())
            self.assertLess(took, deadline, "the drain ends on its own, before the deadline")
        finally:
            d.kill()

    def test_sigterm_under_load_loses_nothing(self):
        self.drain_under_load(signal.SIGTERM)

    def test_sighup_drains_too(self):
        self.drain_under_load(signal.SIGHUP)

    def test_pipelined_requests_are_all_answered(self):
        """Ten requests pipelined on one connection, SIGTERM while the first
        is being solved: every request ikd had received is answered, the
        last answer says Connection: close, the earlier ones do not (only
        the first was answered before, with close, and the nine behind it
        were dropped)."""
        d = Daemon("--drain-timeout", "10")
        try:
            slow = json.dumps({
                "chain": hard_chain(),
                "targets": [{"position": [0.1, 0.2, 0.3 + i * 1e-6]} for i in range(40)],
                "options": {"timeout_ms": 1000, "tolerance": 1e-12}}).encode()
            s = d.connect()
            s.sendall(post("/v1/solve/batch", slow) + post("/v1/solve", TWO_BONE) * 9)
            time.sleep(0.2)
            d.proc.send_signal(signal.SIGTERM)
            s.settimeout(TIMEOUT * 2)
            answers, buf = [], b""
            while True:
                try:
                    r = read_response(s, buf)
                except OSError:
                    r = None
                if r is None:
                    break
                status, headers, _, buf = r
                answers.append((status, headers.get("connection", "").lower()))
            rc = d.proc.wait(15 * SLOW)
            print("pipelined during a drain: %d of 10 answered %s, exit %s"
                  % (len(answers), answers, rc))
            self.assertEqual([a[0] for a in answers], [200] * 10)
            self.assertEqual([a[1] for a in answers], [""] * 9 + ["close"])
            self.assertEqual(rc, 0)
        finally:
            d.kill()

    def test_deadline_ends_a_drain_held_by_clients(self):
        """A body that never completes and a batch that outlasts the
        deadline: ikd exits at --drain-timeout anyway."""
        d = Daemon("--drain-timeout", "2")
        try:
            held = d.connect()
            held.sendall(b"POST /v1/solve HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{")
            urdf = open(os.path.join(IKD_DATA, "robots", "kuka_iiwa14_r820.urdf")).read()
            batch = json.dumps({
                "chain": {"kind": "urdf", "urdf": urdf, "base": "base_link", "tip": "tool0"},
                "targets": [{"position": [2.0 + i * 1e-6, 2.0, 2.0]} for i in range(100000)],
                "options": {"timeout_ms": 5}}).encode()
            b = d.connect()
            b.sendall(post("/v1/solve/batch", batch))
            time.sleep(1.0 * SLOW)
            t0 = time.monotonic()
            d.proc.send_signal(signal.SIGTERM)
            try:
                rc = d.proc.wait(2 + 5 * SLOW)
            except subprocess.TimeoutExpired:
                rc = None
            took = time.monotonic() - t0
            print("drain deadline 2 s: exit %s after %.2f s" % (rc, took))
            self.assertIsNotNone(rc, "ikd still running %.1f s after SIGTERM" % took)
            self.assertGreater(took, 1.5, "the held requests were given the deadline")
            held.close()
            b.close()
        finally:
            d.kill()


class PingFloodTest(unittest.TestCase):
    def test_ping_flood_is_bounded_and_closed_1008(self):
        """One connection sends 125-byte pings and never reads: ikd stops
        reading it while its writes are blocked, counts the queued pongs
        against --max-send-queue, and closes it with 1008; its memory stays
        near the cap meanwhile."""
        d = Daemon("--max-send-queue", "16K")
        try:
            ws = RawWS(d.port, rcvbuf=4096)
            base = d.rss_kb()
            ping = frame(0x9, b"p" * 125)
            burst = ping * 512
            ws.sock.setblocking(False)
            sent, peak = 0, base
            t_end = time.monotonic() + 8.0 * SLOW
            next_sample = 0.0
            progress = time.monotonic()
            cut = lambda: metric(d, 'ikd_rejected_total{reason="send_queue"}') > 0
            # until 64 MB are sent, 8 s pass, or ikd stops taking pings for
            # 0.3 s and has cut the connection (then the close frame must
            # still be readable). A stall alone is not enough: on a loaded
            # machine ikd (or this client) may not run for 0.3 s, and a
            # client that reads before ikd is over its cap is a reader
            off = 0  # whole frames only: a partial send goes on where it stopped
            while time.monotonic() < t_end and sent < (64 << 20):
                if time.monotonic() - progress >= 0.3:
                    if cut():
                        break
                    progress = time.monotonic()
                try:
                    n = ws.sock.send(burst[off:])
                    off = (off + n) % len(burst)
                    sent += n
                    progress = time.monotonic()
                except BlockingIOError:
                    select.select([], [ws.sock], [], 0.05)
                except OSError:
                    break  # ikd cut the connection
                if time.monotonic() >= next_sample:
                    peak = max(peak, d.rss_kb())
                    next_sample = time.monotonic() + 0.1
            peak = max(peak, d.rss_kb())
            print("ping flood: %.1f MB of pings accepted, RSS %d -> %d kB"
                  % (sent / 1e6, base, peak))
            # now read: pongs, then the close frame with 1008
            ws.sock.setblocking(True)
            code = None
            try:
                deadline = time.monotonic() + TIMEOUT
                while time.monotonic() < deadline:
                    op, payload = ws.recv_frame(TIMEOUT)
                    if op == 0x8:
                        code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 0
                        break
            except (EOFError, OSError):
                pass
            self.assertLess(peak - base, 16 * 1024 * MEM, "RSS grew by %d kB" % (peak - base))
            self.assertEqual(code, 1008)
            ws.sock.close()
        finally:
            d.kill()


class FragmentTest(unittest.TestCase):
    def test_one_byte_fragments_cost_no_more_than_their_bytes(self):
        """4 connections each send 1,000,000 one-byte continuation frames of
        one text message (under --max-message 1M): ikd holds about the
        message's bytes per connection, not wslay's bookkeeping per
        fragment (+366 MB before, not returned); a message fragmented the
        usual way still works, and one past --max-message is closed 1009."""
        d = Daemon()
        conns = []
        try:
            base = d.rss_kb()
            first = bytes([0x01, 0x81]) + bytes(4) + b"["  # text, not fin, mask 0
            cont = bytes([0x00, 0x81]) + bytes(4) + b"1"   # continuation, not fin
            for _ in range(4):
                ws = RawWS(d.port)
                ws.sock.sendall(first + cont * 1000000)
                conns.append(ws)
            time.sleep(0.3 * SLOW)
            grown = d.rss_kb() - base
            print("one-byte fragments: 4 x 1,000,000 held, RSS +%d kB" % grown)
            self.assertLess(grown, 16 * 1024 * MEM)
            # the same connection goes on past --max-message: 1009
            ws = conns[0]
            ws.sock.sendall(cont * 100000)
            code = None
            try:
                while True:
                    op, payload = ws.recv_frame(TIMEOUT)
                    if op == 0x8:
                        code = struct.unpack("!H", payload[:2])[0]
                        break
            except (EOFError, OSError):
                pass
            self.assertEqual(code, 1009)
            # a message in three fragments, with a ping between two of them
            ok = RawWS(d.port)
            text = json.dumps({"type": "open", "stream": "f", "chain": {
                "kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}}).encode()
            ok.sock.sendall(frame(0x1, text[:10], fin=False) + frame(0x9, b"hi") +
                            frame(0x0, text[10:20], fin=False) + frame(0x0, text[20:]))
            got = []
            while len(got) < 2:
                op, payload = ok.recv_frame(TIMEOUT)
                got.append((op, payload))
            self.assertEqual(got[0], (0xA, b"hi"))
            self.assertEqual(json.loads(got[1][1])["type"], "opened")
            ok.sock.close()
        finally:
            for ws in conns:
                ws.sock.close()
            d.kill()


def close_code_after_flood(ws, timeout=TIMEOUT):
    """Reads megabytes of pongs quickly (frame headers only) up to ikd's
    close frame: its code, or None when the connection ends without one."""
    ws.sock.setblocking(True)
    ws.sock.settimeout(timeout)
    buf, off = ws.buf, 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            while len(buf) - off >= 2:
                op, n = buf[off] & 0x0F, buf[off + 1] & 0x7F
                head = 2
                if n == 126:
                    if len(buf) - off < 4:
                        break
                    n, head = struct.unpack("!H", buf[off + 2:off + 4])[0], 4
                elif n == 127:
                    if len(buf) - off < 10:
                        break
                    n, head = struct.unpack("!Q", buf[off + 2:off + 10])[0], 10
                if len(buf) - off < head + n:
                    break
                if op == 0x8:
                    payload = buf[off + head:off + head + n]
                    return struct.unpack("!H", payload[:2])[0] if n >= 2 else 0
                off += head + n
            buf = buf[off:]
            off = 0
            chunk = ws.sock.recv(1 << 20)
            if not chunk:
                return None
            buf += chunk
    except OSError:
        return None
    return None


class BlockedWritesTest(unittest.TestCase):
    def test_a_flood_under_the_send_queue_cap_is_closed_1008(self):
        """With the default --max-send-queue (4 MiB) a ping flood never
        reaches the cap: ikd stops reading the connection once its writes
        are blocked. Writes blocked for --timeout close it with 1008, and
        the client may still read what was queued and the close frame for
        another --timeout (it was dropped without a close frame after
        2 x --timeout before)."""
        d = Daemon("--timeout", "3")
        try:
            ws = RawWS(d.port, rcvbuf=4096)
            ping = frame(0x9, b"p" * 125) * 512
            ws.sock.setblocking(False)
            progress = time.monotonic()
            off = 0  # whole frames only: a partial send goes on where it stopped
            while time.monotonic() - progress < 0.3:
                try:
                    off = (off + ws.sock.send(ping[off:])) % len(ping)
                    progress = time.monotonic()
                except BlockingIOError:
                    select.select([], [ws.sock], [], 0.05)
            blocked_at = progress
            # past --timeout ikd cuts it (a stall alone may be ikd not
            # running on a loaded machine: wait for the cut itself, without
            # reading), then the client reads 1.5 s later, within the
            # second --timeout (ikd's clock, not SLOW)
            deadline = time.monotonic() + 3 + 10 * SLOW
            while (metric(d, 'ikd_rejected_total{reason="send_queue"}') <= 0 and
                   time.monotonic() < deadline):
                time.sleep(0.1)
            time.sleep(1.5)
            code = close_code_after_flood(ws)
            print("blocked writes: close code %s, read from %.1f s after ikd stopped reading"
                  % (code, time.monotonic() - blocked_at))
            self.assertEqual(code, 1008)
            ws.sock.close()
        finally:
            d.kill()


def kernel_held(port):
    """The TCP sockets of ikd's port, ikd's or left to the kernel once ikd
    closed them, with bytes their client has not taken: the state of each
    (01 established, 04 FIN-WAIT-1, ...) by the client's port, from
    /proc/net/tcp (IPv4: the daemons here listen on 127.0.0.1)."""
    states = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            p = line.split()
            if (int(p[1].split(":")[1], 16) == port and p[3] != "0A" and  # not LISTEN
                    int(p[4].split(":")[0], 16) > 0):
                states[int(p[2].split(":")[1], 16)] = p[3]
    return states


class KernelHeldAnswerTest(unittest.TestCase):
    """An answer that fits whole in the kernel's buffers (GET /openapi.yaml,
    136 KB) asked with Connection: close: libmicrohttpd closes the socket
    at once with the bytes unsent, and the kernel keeps them in FIN-WAIT-1
    for as long as the client acknowledges its window probes (minutes and
    more), counted by no connection limit. An ikd of its own with
    --timeout 2 and 4 connections from an address."""

    ONCE = b"GET /openapi.yaml HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--timeout", "2", "--max-connections-per-address", "4")

    @classmethod
    def tearDownClass(cls):
        cls.d.kill()

    def test_answers_left_to_the_kernel_for_clients_that_never_read_go(self):
        """12 clients from one address, one after the other, each asks and
        never reads (4 KB of receive buffer): an answer left in the kernel
        keeps its connection's slot (at most 4 at a time; 12 before), and
        after --timeout without the client's progress the kernel holds
        none of them (12 still there after 5 s and more before)."""
        port = self.d.port
        held, seen, went = [], [], []
        try:
            for _ in range(12):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.settimeout(TIMEOUT)
                s.connect(("127.0.0.1", port))  # (the kernel's, even over the limit)
                held.append(s)
                try:
                    s.sendall(self.ONCE)
                except OSError:
                    pass  # refused (over the limit) before its request
                # its answer goes to the kernel, or ikd refuses it (closed:
                # readable) before the next one comes
                me = s.getsockname()[1]
                deadline = time.monotonic() + TIMEOUT
                while True:
                    q = kernel_held(port)
                    if q.get(me) == "04":
                        went.append(time.monotonic())
                        break
                    if select.select([s], [], [], 0.01)[0]:
                        break  # refused
                    self.assertLess(time.monotonic(), deadline,
                                    "neither answered nor refused: %r" % q)
                seen.append(kernel_held(port))
            most = max(len(q) for q in seen)
            print("answers left in the kernel at most %d, after the 12th %r" %
                  (most, sorted(seen[-1].values())))
            self.assertTrue(went, "no answer was left to the kernel")
            self.assertLessEqual(most, 4, "answers to %d connections from one address wait "
                                 "in the kernel (at most 4 connections): %r" % (most, seen[-1]))
            # --timeout (2 s) after the last one went to the kernel, and a
            # margin for the kernel's probe timer and ikd's tick: none left
            deadline = went[-1] + 2 + 3 * SLOW
            while kernel_held(port):
                self.assertLess(time.monotonic(), deadline,
                                "the kernel still holds %d answers to clients that do not "
                                "read, %.1f s after the last one: %r" %
                                (len(kernel_held(port)), time.monotonic() - went[-1],
                                 kernel_held(port)))
                time.sleep(0.05)
            print("the kernel held the last answer %.1f s" % (time.monotonic() - went[-1]))
            self.assertEqual(exchange(self.d, "/v1/solve", TWO_BONE), 200)
        finally:
            for s in held:
                s.close()

    def test_a_slow_but_steady_reader_gets_the_whole_answer(self):
        """4 KB every 0.1 s: 3 s and more for 136 KB, --timeout is 2; each
        read is progress, so the client gets all of it."""
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(TIMEOUT)
        s.connect(("127.0.0.1", self.d.port))
        got, t0 = b"", time.monotonic()
        try:
            s.sendall(self.ONCE)
            while True:
                data = s.recv(4096)
                if not data:
                    break
                got += data
                time.sleep(0.1)  # (a slow client's pace, not a wait)
        except OSError as e:
            self.fail("cut after %d bytes: %r" % (len(got), e))
        finally:
            s.close()
        head, _, body = got.partition(b"\r\n\r\n")
        length = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:")]
        print("slow reader: %d bytes in %.1f s" % (len(got), time.monotonic() - t0))
        self.assertTrue(head.startswith(b"HTTP/1.1 200 "), head[:100])
        self.assertEqual(length, [len(body)])
        self.assertGreater(len(body), 100000)
        self.assertGreater(time.monotonic() - t0, 2.5)  # (slower than --timeout)


class SlowClientTest(unittest.TestCase):
    def test_slowloris_crowd_does_not_stop_a_good_client(self):
        d = Daemon("--max-connections", "60", "--max-connections-per-address", "40")
        crowd = []
        try:
            for _ in range(100):
                try:
                    s = socket.create_connection(("127.0.0.1", d.port), timeout=1,
                                                 source_address=("127.0.0.2", 0))
                    s.sendall(b"POST /v1/solve HTTP/1.1\r\nHost: t\r\nX-Slow: ")
                    crowd.append(s)
                except OSError:
                    pass
            time.sleep(0.5)
            worst, answered = 0.0, 0
            for _ in range(5):
                t0 = time.monotonic()
                try:
                    if exchange(d, "/v1/solve", TWO_BONE) == 200:
                        answered += 1
                except OSError:
                    pass
                worst = max(worst, time.monotonic() - t0)
                for s in crowd:  # one more byte each: never idle
                    try:
                        s.send(b"a")
                    except OSError:
                        pass
            print("slowloris: %d of 5 probes answered, slowest %.3f s" % (answered, worst))
            self.assertEqual(answered, 5)
            self.assertLess(worst, 1.0 * SLOW)
        finally:
            for s in crowd:
                s.close()
            d.kill()

    def test_a_crowd_from_several_addresses_is_cut_under_pressure(self):
        """Three addresses trickle requests on every connection slot (the
        per-address limit does not help): once connections are scarce
        (90% of --max-connections in use) an unfinished request is cut
        after 5 s instead of --request-timeout, so that a good client from a
        fourth address is answered within seconds (it waited for
        --request-timeout, 60 s, before)."""
        d = Daemon("--max-connections", "60", "--max-connections-per-address", "25")
        crowd, stop = [], threading.Event()
        try:
            for src in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
                for _ in range(25):
                    try:
                        s = socket.create_connection(("127.0.0.1", d.port), timeout=1,
                                                     source_address=(src, 0))
                        s.sendall(b"POST /v1/solve HTTP/1.1\r\nHost: t\r\nX-Slow: ")
                        crowd.append(s)
                    except OSError:
                        pass

            def trickle():
                while not stop.wait(0.5):
                    for s in crowd:
                        try:
                            s.send(b"a")
                        except OSError:
                            pass

            threading.Thread(target=trickle, daemon=True).start()
            time.sleep(0.5)
            t0 = time.monotonic()
            status = None
            try:
                s = socket.create_connection(("127.0.0.1", d.port), timeout=20,
                                             source_address=("127.0.0.5", 0))
                s.settimeout(20)
                s.sendall(post("/v1/solve", TWO_BONE))
                r = read_response(s)
                status = r[0] if r else None
                s.close()
            except OSError:
                pass
            took = time.monotonic() - t0
            try:
                cut = metric(d, 'ikd_rejected_total{reason="request_timeout"}')
            except OSError:
                cut = -1  # no slot for /metrics either
            print("crowd of %d from 3 addresses: good client answered %s after %.1f s; %d cut"
                  % (len(crowd), status, took, cut))
            self.assertEqual(status, 200)
            self.assertLess(took, 10 * SLOW)
            self.assertGreater(cut, 0)
        finally:
            stop.set()
            for s in crowd:
                s.close()
            d.kill()

    def test_a_trickled_request_is_cut_at_the_request_timeout(self):
        d = Daemon("--request-timeout", "2", "--timeout", "30")
        try:
            s = d.connect()
            s.sendall(b"POST /v1/solve HTTP/1.1\r\nHost: t\r\n")
            t0 = time.monotonic()
            closed_after = None
            while time.monotonic() - t0 < 6 * SLOW:
                try:
                    s.send(b"X-Trickle: 1\r\n")
                    r, _, _ = select.select([s], [], [], 0.3)
                    if r and not s.recv(4096):
                        closed_after = time.monotonic() - t0
                        break
                except OSError:
                    closed_after = time.monotonic() - t0
                    break
            s.close()
            print("trickled request: closed after %s s" % closed_after)
            self.assertIsNotNone(closed_after, "still open after 6 s of trickling")
            self.assertGreater(closed_after, 1.5)
            # the daemon still serves
            self.assertEqual(exchange(d, "/v1/solve", TWO_BONE), 200)
        finally:
            d.kill()


class BodyBudgetTest(unittest.TestCase):
    def test_held_uploads_are_bounded_by_the_body_budget(self):
        """24 connections each send 4 MB of a 4 MB + 1 byte body and stop:
        with --body-budget 32M ikd holds about 32 MB, not 96 MB, and the
        uploads past the budget are refused with 503."""
        d = Daemon("--body-budget", "32M")
        conns, refused = [], 0
        try:
            base = d.rss_kb()
            size = 4 << 20
            chunk = b"1" * (1 << 20)
            for _ in range(24):
                s = d.connect()
                s.sendall(b"POST /v1/solve HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n"
                          % (size + 1))
                s.settimeout(0.5)
                try:
                    for _ in range(size // len(chunk)):
                        s.sendall(chunk)
                except OSError:
                    pass  # refused early: ikd closed it
                conns.append(s)
            time.sleep(0.5 * SLOW)
            grown = d.rss_kb() - base
            for s in conns:
                s.settimeout(0.2)
                try:
                    data = s.recv(4096)
                    if data.startswith(b"HTTP/1.1 503"):
                        refused += 1
                except OSError:
                    pass
            print("held uploads: RSS +%d kB, %d of 24 uploads refused with 503"
                  % (grown, refused))
            self.assertLess(grown, 48 * 1024)
            self.assertGreater(refused, 0)
        finally:
            for s in conns:
                s.close()
            d.kill()


    def test_announced_bodies_cost_nothing_until_they_arrive(self):
        """32 connections announce 8 MB bodies and send nothing: the budget
        counts the bytes ikd holds, not what is announced, so everyone
        else's POSTs are still served (every POST got 503 for 35 s before,
        for 380 kB of real memory); bytes that arrive are counted."""
        d = Daemon("--body-budget", "32M")
        idle = []
        try:
            for _ in range(32):
                s = d.connect()
                # 8 MB less one byte: four of them announce the budget exactly
                s.sendall(b"POST /v1/solve HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n"
                          % ((8 << 20) - 1))
                idle.append(s)
            time.sleep(0.3 * SLOW)
            statuses = [exchange(d, "/v1/solve", TWO_BONE) for _ in range(5)]
            held_idle = metric(d, 'ikd_held_bytes{what="request_bodies"}')
            idle[0].sendall(b"[" + b"1," * (1 << 19))  # 1 MB of it arrives
            time.sleep(0.3 * SLOW)
            held_part = metric(d, 'ikd_held_bytes{what="request_bodies"}')
            print("announced bodies: POSTs %s, %d bytes held for 32 idle 8 MB announcements, "
                  "%d once 1 MB arrived" % (statuses, held_idle, held_part))
            self.assertEqual(statuses, [200] * 5)
            self.assertLess(held_idle, 64 * 1024)
            self.assertGreaterEqual(held_part, 1 << 20)
            self.assertLess(held_part, 2 << 20)
        finally:
            for s in idle:
                s.close()
            d.kill()

    def test_uploads_abandoned_mid_body_are_let_go(self):
        """Clients that send part of a body (200 kB, with Content-Length or
        chunked) and close: ikd lets go of the request within a second, its
        bytes and its slot in the drain. libmicrohttpd (edge-triggered epoll)
        missed the end that came with the last bytes it read: each held its
        bytes until --timeout, and a drain waited --drain-timeout for it."""
        d = Daemon()
        try:
            heads = (b"Content-Length: 4000000\r\n\r\n" + b" " * 200000,
                     b"Transfer-Encoding: chunked\r\n\r\n"
                     + (b"1000\r\n" + b" " * 4096 + b"\r\n") * 50)
            for head in heads * 3:
                s = d.connect()
                s.sendall(b"POST /v1/solve/batch HTTP/1.1\r\nHost: t\r\n" + head)
                s.close()
            deadline = time.time() + 2 * SLOW
            while True:
                held = metric(d, 'ikd_held_bytes{what="request_bodies"}')
                active = metric(d, "ikd_http_requests_active")  # this request's own
                if (held, active) == (0, 1) or time.time() > deadline:
                    break
                time.sleep(0.1)
            print("abandoned uploads: %d bytes held, %d requests active" % (held, active - 1))
            self.assertEqual((held, active), (0, 1))
            start = time.time()
            d.proc.send_signal(signal.SIGTERM)
            self.assertEqual(d.proc.wait(timeout=10 * SLOW), 0)
            self.assertLess(time.time() - start, 3 * SLOW)
        finally:
            d.kill()


def joints_chain(n, salt):
    """n joints, every other one fixed, made distinct by salt."""
    joints = []
    for i in range(n):
        j = {"name": "j%d" % i, "type": "fixed" if i % 2 else "revolute",
             "origin": {"xyz": [0.0, 0.0, 0.01 + salt * 1e-9]}}
        if not i % 2:
            j["axis"] = [0.0, 1.0 if i % 4 else 0.0, 0.0 if i % 4 else 1.0]
            j["limits"] = {"lower": -3.0, "upper": 3.0}
        joints.append(j)
    return {"kind": "joints", "joints": joints}


class RegistryTest(unittest.TestCase):
    def test_registry_memory_within_its_bound(self):
        bound = 16 << 20
        d = Daemon("--registry-bytes", "16M")
        try:
            s = d.connect()
            buf = b""
            # one request first, so that the baseline counts what any
            # request costs (pool threads, arenas)
            s.sendall(post("/v1/chains", json.dumps(joints_chain(64, 0)).encode()))
            status, _, _, buf = read_response(s, buf)
            self.assertIn(status, (200, 201))
            base = d.rss_kb()
            n = 0
            t0 = time.monotonic()
            while n < 4000 and time.monotonic() - t0 < 60 * SLOW:
                n += 1
                s.sendall(post("/v1/chains", json.dumps(joints_chain(64, n)).encode()))
                status, _, body, buf = read_response(s, buf)
                self.assertIn(status, (200, 201), body[:300])
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
            _, _, metrics, buf = read_response(s, buf)
            grown = (d.rss_kb() - base) * 1024
            chains = [l for l in metrics.decode().splitlines()
                      if l.startswith("ikd_registry_chains ")]
            held = sample(metrics, 'ikd_held_bytes{what="registry"}')
            print("registry: %d chains registered, %s, %.1f MB held by its own count, RSS "
                  "+%.1f MB for a %.0f MB bound" % (n, chains[0] if chains else "?",
                                                    held / 1e6, grown / 1e6, bound / 1e6))
            self.assertLessEqual(held, bound)
            self.assertGreater(held, bound / 2, "the registry was filled")
            self.assertLess(grown, 1.5 * bound * MEM)
            s.close()
        finally:
            d.kill()


    def test_memory_goes_back_after_large_urdf_chains(self):
        """16 clients register 3.9 MB URDF chains at once (--threads 8)
        into a 16M registry, which keeps two of them: once the burst is
        over, ikd's resident memory is back near what the registry holds
        (it stayed 520-580 MB up: glibc keeps the decode trees freed by
        each pool thread in that thread's arena)."""
        d = Daemon("--registry-bytes", "16M", "--threads", "8", "--max-urdf", "8M",
                   "--max-body", "16M")
        try:
            urdf = open(os.path.join(IKD_DATA, "robots", "kuka_iiwa14_r820.urdf")).read()
            pad = "".join('<link name="pad%d"><visual><geometry><box size="1 1 1"/></geometry>'
                          '</visual></link>\n' % i for i in range(48000))
            urdf = urdf.replace("</robot>", pad + "</robot>")
            bodies = [json.dumps({"kind": "urdf", "base": "base_link", "tip": "tool0",
                                  "urdf": urdf.replace("<robot ", '<robot salt="%d" ' % k, 1)})
                      .encode() for k in range(16)]
            time.sleep(0.3)
            base = d.rss_kb()
            statuses = []

            def register(body):
                # 16 decodes of 4.4 MB, 8 at a time, on 2 loaded cores
                statuses.append(exchange(d, "/v1/chains", body, timeout=60 * SLOW))

            threads = [threading.Thread(target=register, args=(b,)) for b in bodies]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60 * SLOW)
            time.sleep(1.5 * SLOW)  # the trim follows a burst within a second
            grown = d.rss_kb() - base
            held = metric(d, 'ikd_held_bytes{what="registry"}')
            print("large URDF chains: %d of 16 registered (%.1f MB body each), registry %.1f "
                  "MB by its own count, RSS +%.1f MB after the burst"
                  % (statuses.count(201), len(bodies[0]) / 1e6, held / 1e6, grown / 1e3))
            self.assertEqual(statuses, [201] * 16)
            self.assertLessEqual(held, 16 << 20)
            # the registry, pool threads' stacks and what every arena keeps
            # (+53-60 MB; 396-582 MB before; +10-32 MB since). Under
            # AddressSanitizer no glibc arena is involved: its allocator
            # gives back only whole free pages of its size classes, and the
            # shadow of the burst's peak heap (written when freed memory is
            # poisoned) stays resident (79 of +211 MB in one run); both
            # follow how many of the 8 decodes overlap: +115-206 MB in six
            # runs on 2 cores, hence its own factor here
            self.assertLess(grown, 96 * 1024 * (3.0 if SANITIZER == "address" else MEM))
        finally:
            d.kill()


class SolversLimitsTest(unittest.TestCase):
    def test_headers_are_bounded_by_the_connection_memory(self):
        """Request headers live in libmicrohttpd's memory of the connection
        (--connection-memory, 16K by default): 14 KB of them pass, 20 KB get
        431, and a larger --connection-memory takes more."""
        def status_of(d, pad):
            s = d.connect()
            s.sendall(b"GET /livez HTTP/1.1\r\nHost: t\r\nX-Pad: " + b"a" * pad + b"\r\n\r\n")
            status, _, _, _ = read_response(s)
            s.close()
            return status

        d = Daemon()
        try:
            self.assertEqual(status_of(d, 14000), 200)
            self.assertEqual(status_of(d, 20000), 431)
            self.assertEqual(status_of(d, 100), 200)  # and it keeps serving
        finally:
            d.kill()
        d = Daemon("--connection-memory", "64K")
        try:
            self.assertEqual(status_of(d, 40000), 200)
            self.assertEqual(status_of(d, 70000), 431)
        finally:
            d.kill()

    def test_every_bound_is_in_v1_solvers(self):
        d = Daemon("--body-budget", "32M", "--answer-budget", "48M", "--request-timeout", "7",
                   "--max-connections-per-address", "9", "--max-send-queue", "128K",
                   "--drain-timeout", "3", "--registry-bytes", "2M", "--max-queue", "11",
                   "--stream-chain-bytes", "5M", "--max-streams", "12",
                   "--connection-memory", "24K")
        try:
            s = d.connect()
            s.sendall(b"GET /v1/solvers HTTP/1.1\r\nHost: t\r\n\r\n")
            status, _, body, _ = read_response(s)
            s.close()
            self.assertEqual(status, 200)
            server = json.loads(body)["limits"]["server"]
            self.assertEqual(server, {
                "max_connections": 10000, "max_connections_per_address": 9,
                "idle_timeout_s": 30, "request_timeout_s": 7, "drain_timeout_s": 3,
                "body_budget_bytes": 32 << 20, "answer_budget_bytes": 48 << 20,
                "connection_memory_bytes": 24 << 10, "max_message_bytes": 1 << 20,
                "max_send_queue_bytes": 128 << 10, "stream_chain_bytes": 5 << 20,
                "stream_bytes": 64 << 20,
                "max_streams": 12, "registry_bytes": 2 << 20,
                "max_queue": 11})
        finally:
            d.kill()


class LoopStallTest(unittest.TestCase):
    def test_livez_stays_fast_while_8mb_bodies_arrive(self):
        d = Daemon()
        stop = threading.Event()
        pad = json.dumps([i * 0.123456789 for i in range(380000)])  # ~8 MB of numbers
        chain = {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}
        bodies = [
            ("/v1/solve", ('{"chain":%s,"target":{"position":[0.3,0.6,0.2]},"pad":%s}'
                           % (json.dumps(chain), pad)).encode()),
            ("/v1/chains", ('{"kind":"bones","positions":[[0,0,0],[0,0.5,0],[0,1.0,0]],'
                            '"pad":%s}' % pad).encode()),
        ]
        requests = [post(path, body) for path, body in bodies]  # built once
        posted = [0]

        def poster():
            s = d.connect()
            buf = b""
            try:
                while not stop.is_set():
                    s.sendall(requests[posted[0] % 2])
                    r = read_response(s, buf)
                    if r is None:
                        return
                    buf = r[3]
                    posted[0] += 1
            except OSError:
                pass
            finally:
                s.close()

        t = threading.Thread(target=poster, daemon=True)
        switch = sys.getswitchinterval()
        sys.setswitchinterval(0.0002)  # the prober is not kept waiting for the GIL
        try:
            t.start()
            while posted[0] < 2 and t.is_alive():
                time.sleep(0.05)
            s = d.connect()
            buf = b""
            lat = []
            t_end = time.monotonic() + 6 * SLOW
            while len(lat) < 300 and time.monotonic() < t_end:
                t0 = time.perf_counter()
                s.sendall(b"GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
                status, _, _, buf = read_response(s, buf)
                lat.append(time.perf_counter() - t0)
                self.assertEqual(status, 200)
                time.sleep(0.005)
            s.close()
            stop.set()
            t.join(TIMEOUT)
            lat.sort()
            p50, p99 = lat[len(lat) // 2], lat[int(len(lat) * 0.99)]
            print("livez during 8 MB bodies: %d probes, %d bodies, p50 %.2f ms, p99 %.2f ms"
                  % (len(lat), posted[0], p50 * 1e3, p99 * 1e3))
            self.assertGreater(posted[0], 3, "the large bodies kept coming")
            # p50 142 ms and p99 484 ms before; the p99 bound leaves room for
            # a loaded 2-core machine, where the pool's decodes compete with
            # the loop thread for a core
            self.assertLess(p50, 0.005 * SLOW)
            self.assertLess(p99, 0.1 * SLOW)
        finally:
            sys.setswitchinterval(switch)
            stop.set()
            d.kill()


def padded_urdf(mb):
    """The KUKA iiwa's URDF padded with links off its chain to about mb MB."""
    with open(os.path.join(IKD_DATA, "robots", "kuka_iiwa14_r820.urdf")) as f:
        urdf = f.read()
    n = int(mb * 1e6 / 85)
    pad = "".join('<link name="pad%d"><visual><geometry><box size="1 1 1"/></geometry>'
                  '</visual></link>\n' % i for i in range(n))
    return urdf.replace("</robot>", pad + "</robot>")


def livez_while(d, busy, seconds=4.0):
    """Runs busy(stop) in a thread and probes GET /livez every 5 ms
    meanwhile: (p50, p99, probes) in seconds."""
    stop = threading.Event()
    t = threading.Thread(target=busy, args=(stop,), daemon=True)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)  # the prober is not kept waiting for the GIL
    lat = []
    try:
        t.start()
        time.sleep(0.3)
        s = d.connect()
        buf = b""
        t_end = time.monotonic() + seconds * SLOW
        while len(lat) < 400 and time.monotonic() < t_end:
            t0 = time.perf_counter()
            s.sendall(b"GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
            status, _, _, buf = read_response(s, buf)
            lat.append(time.perf_counter() - t0)
            time.sleep(0.005)
        s.close()
    finally:
        stop.set()
        t.join(TIMEOUT)
        sys.setswitchinterval(switch)
    lat.sort()
    return lat[len(lat) // 2], lat[int(len(lat) * 0.99)], len(lat)


class LargeWorkOffLoopTest(unittest.TestCase):
    """Large chains described and large stream messages decoded off the
    loop, and the inline work of all streams bounded per loop turn."""

    def test_large_chains_described_off_the_loop(self):
        d = Daemon("--max-urdf", "8M", "--max-body", "16M")
        try:
            body = json.dumps({"kind": "urdf", "urdf": padded_urdf(3.9), "base": "base_link",
                               "tip": "tool0"}).encode()
            s = d.connect()
            s.sendall(post("/v1/chains", body))
            status, _, answer, _ = read_response(s)
            s.close()
            self.assertEqual(status, 201)
            cid = json.loads(answer)["id"]
            got = [0]

            def describe(stop):
                c = d.connect()
                buf = b""
                while not stop.is_set():
                    c.sendall(b"GET /v1/chains/%s HTTP/1.1\r\nHost: t\r\n\r\n" % cid.encode())
                    r = read_response(c, buf)
                    if r is None:
                        return
                    buf = r[3]
                    got[0] += 1
                c.close()

            p50, p99, n = livez_while(d, describe)
            print("livez while 4 MB chains are described: %d probes, %d descriptions, p50 %.2f "
                  "ms, p99 %.2f ms" % (n, got[0], p50 * 1e3, p99 * 1e3))
            self.assertGreater(got[0], 3)
            self.assertLess(p50, 0.002 * SLOW)
            self.assertLess(p99, 0.06 * SLOW)
        finally:
            d.kill()

    def test_large_stream_messages_decoded_off_the_loop(self):
        d = Daemon("--max-urdf", "8M")
        try:
            text = json.dumps({"type": "open", "stream": "big", "chain": {
                "kind": "urdf", "urdf": padded_urdf(0.95), "base": "base_link", "tip": "tool0"}})
            got = [0]

            def opener(stop):
                ws = RawWS(d.port)
                k = 0
                while not stop.is_set():
                    k += 1
                    ws.send_text(text.replace('"big"', '"b%d"' % k))
                    ws.send_text(json.dumps({"type": "close", "stream": "b%d" % k}))
                    kinds = []
                    while "closed" not in kinds:
                        op, payload = ws.recv_frame(TIMEOUT)
                        kinds.append(json.loads(payload)["type"])
                    self.assertEqual(kinds, ["opened", "closed"])  # in order
                    got[0] += 1
                ws.sock.close()

            p50, p99, n = livez_while(d, opener)
            print("livez while 0.95 MB stream opens arrive: %d probes, %d opens, p50 %.2f ms, "
                  "p99 %.2f ms" % (n, got[0], p50 * 1e3, p99 * 1e3))
            self.assertGreater(got[0], 3)
            self.assertLess(p50, 0.002 * SLOW)
            self.assertLess(p99, 0.06 * SLOW)
        finally:
            d.kill()


class StreamChainTest(unittest.TestCase):
    def test_chains_held_by_streams_are_bounded(self):
        """Streams opened with 0.9 MB inline URDF chains: the chains that
        open streams hold count against --stream-chain-bytes (each chain
        once, however many streams share it), opens past it are refused
        with an error naming the flag, and memory stays near the bound (8
        connections x 64 such streams held +451 MB before); closing
        streams makes room again."""
        d = Daemon("--stream-chain-bytes", "24M")
        conns = []
        try:
            chain = {"kind": "urdf", "urdf": padded_urdf(0.9), "base": "base_link",
                     "tip": "tool0"}
            base = d.rss_kb()
            opened, refused, errors = 0, 0, set()
            for k in range(4):
                ws = RawWS(d.port)
                conns.append(ws)
                for j in range(8):
                    name = "s%d_%d" % (k, j)
                    c = dict(chain, urdf=chain["urdf"].replace("<robot ", '<robot s="%s" ' % name))
                    ws.send_text(json.dumps({"type": "open", "stream": name, "chain": c}))
                    op, payload = ws.recv_frame(TIMEOUT * 4)
                    m = json.loads(payload)
                    if m["type"] == "opened":
                        opened += 1
                    else:
                        refused += 1
                        errors.add((m["error"]["code"], "--stream-chain-bytes" in
                                    m["error"]["message"]))
            held = metric(d, 'ikd_held_bytes{what="stream_chains"}')
            grown = d.rss_kb() - base
            print("stream chains: %d opened, %d refused %s, %.1f MB held by its own count, RSS "
                  "+%.1f MB" % (opened, refused, sorted(errors), held / 1e6, grown / 1e3))
            self.assertGreater(opened, 0)
            self.assertGreater(refused, 0)
            self.assertEqual(errors, {("overloaded", True)})
            self.assertLessEqual(held, 24 << 20)
            self.assertLess(grown, 3 * 24 * 1024 * MEM)
            # one stream's chain shared by another stream costs nothing more
            ws = conns[0]
            ws.send_text(json.dumps({"type": "close", "stream": "s0_0"}))
            self.assertEqual(json.loads(ws.recv_frame(TIMEOUT)[1])["type"], "closed")
            after_close = metric(d, 'ikd_held_bytes{what="stream_chains"}')
            self.assertLess(after_close, held)
            # streams on one registered chain hold it once
            status_body = post("/v1/chains", json.dumps(joints_chain(8, 1)).encode())
            r = d.connect()
            r.sendall(status_body)
            cid = json.loads(read_response(r)[2])["id"]
            r.close()
            levels = []
            for name in ("shared1", "shared2"):
                ws.send_text(json.dumps({"type": "open", "stream": name, "chain_id": cid}))
                self.assertEqual(json.loads(ws.recv_frame(TIMEOUT)[1])["type"], "opened")
                levels.append(metric(d, 'ikd_held_bytes{what="stream_chains"}'))
            self.assertGreater(levels[0], after_close)
            self.assertEqual(levels[1], levels[0])
        finally:
            for ws in conns:
                ws.sock.close()
            d.kill()


class InlineTurnTest(unittest.TestCase):
    def test_many_fast_paths_do_not_hold_the_loop(self):
        """8 connections x 64 two-bone paths at 1000 Hz ask for 512,000
        inline solves a second, more than the loop can do: the inline work
        of all streams together is bounded per turn of the loop (paths then
        skip samples, as they do when solving cannot keep up), so /livez
        stays fast (a probe waited more than 5 s before). One loop: the
        bound is a loop's (with a loop per core, every core would solve
        paths and the client's probes, on this machine, wait for one). The
        bounds are over the probes' own time without the paths, measured
        first on the same machine (about 0.2 ms idle, more when the machine
        is loaded, as is every probe then)."""
        d = Daemon("--loops", "1")
        conns = []
        NCONN = 8
        try:
            base50, base99, _ = livez_while(d, lambda stop: stop.wait(), seconds=1.0)
            chain = {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}
            path = {"waypoints": [{"position": [0.3, 0.6, 0.2]}, {"position": [0.2, 0.6, 0.3]},
                                  {"position": [0.3, 0.5, 0.2]}],
                    "rate_hz": 1000, "duration_s": 20}
            for _ in range(NCONN):
                ws = RawWS(d.port)
                msgs = []
                for k in range(64):
                    msgs.append(frame(0x1, json.dumps(
                        {"type": "open", "stream": "p%d" % k, "chain": chain}).encode()))
                    msgs.append(frame(0x1, json.dumps(
                        dict(path, type="path", stream="p%d" % k, seq=1)).encode()))
                ws.sock.sendall(b"".join(msgs))
                conns.append(ws)
            read = [0]

            def drain(stop):
                # read everything the paths send, as fast as the client can
                socks = [ws.sock for ws in conns]
                for sk in socks:
                    sk.setblocking(False)
                while not stop.is_set():
                    ready, _, _ = select.select(socks, [], [], 0.05)
                    for sk in ready:
                        try:
                            read[0] += len(sk.recv(1 << 20))
                        except OSError:
                            pass

            p50, p99, n = livez_while(d, drain, seconds=5.0)
            solved = metric(d, 'ikd_solve_duration_seconds_count{solver="two_bone"}')
            print("livez while 512 paths at 1000 Hz: %d probes, p50 %.2f ms, p99 %.2f ms "
                  "(without them %.2f and %.2f ms); %d samples solved, %.1f MB read"
                  % (n, p50 * 1e3, p99 * 1e3, base50 * 1e3, base99 * 1e3, solved, read[0] / 1e6))
            self.assertGreater(solved, 10000, "the paths ran")
            self.assertEqual(metric(d, "ikd_ws_streams_open"), 64 * NCONN, "no stream was cut")
            self.assertLess(p50, base50 + 0.005 * SLOW)
            self.assertLess(p99, base99 + 0.06 * SLOW)
        finally:
            for ws in conns:
                ws.sock.close()
            d.kill()


def iiwa_batch_and_single(n):
    urdf = open(os.path.join(IKD_DATA, "robots", "kuka_iiwa14_r820.urdf")).read()
    chain = {"kind": "urdf", "urdf": urdf, "base": "base_link", "tip": "tool0"}
    poses = []
    with open(os.path.join(IKD_DATA, "targets", "kuka_iiwa14_r820.txt")) as f:
        for line in f:
            if "|" in line:
                p = [float(x) for x in line.split("|")[1].split()]
                poses.append({"position": p[:3], "orientation": p[3:7]})
    targets = [poses[i % len(poses)] for i in range(n)]
    batch = json.dumps({"chain": chain, "targets": targets}).encode()
    single = json.dumps({"chain": chain, "target": poses[7]}).encode()
    return batch, single


def sample(text, name):
    """The value of series name in a /metrics text, or -1."""
    for line in (text.decode() if isinstance(text, bytes) else text).splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1


def metric(d, name):
    s = d.connect()
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
    _, _, body, _ = read_response(s)
    s.close()
    return sample(body, name)


def pool_depth(d):
    return int(metric(d, "ikd_pool_queue_depth"))


def pool_busy(d):
    """The pool's depth once it is above 0, or 0 after 10 s (times SLOW). A
    batch whose client has not read for a moment (on a loaded machine: not
    scheduled) is held, and the pool is empty, until the client reads
    again; one look at an instant would take that for the batch's end."""
    deadline = time.monotonic() + 10 * SLOW
    while True:
        depth = pool_depth(d)
        if depth > 0 or time.monotonic() > deadline:
            return depth
        time.sleep(0.02)


class BatchFairnessTest(unittest.TestCase):
    def test_single_solves_are_not_starved_and_a_left_batch_is_cancelled(self):
        d = Daemon("--max-body", "64M", "--max-queue", "4")
        try:
            batch, single = iiwa_batch_and_single(100000)
            b = d.connect()
            b.sendall(post("/v1/solve/batch", batch))
            # the batch's client reads its answer while the single solves
            # are measured: one that does not read holds the batch after a
            # few chunks (its answer's window is full; about 4,300 of the
            # targets, 0.15 s), and the pool was then found empty at times
            stop, read = threading.Event(), [0]

            def drain():
                while not stop.is_set():
                    ready, _, _ = select.select([b], [], [], 0.05)
                    if ready:
                        try:
                            data = b.recv(1 << 20)
                        except OSError:
                            return
                        if not data:
                            return
                        read[0] += len(data)

            reader = threading.Thread(target=drain, daemon=True)
            reader.start()
            t0 = time.monotonic()  # wait until its chunks are being solved
            while (metric(d, 'ikd_solve_duration_seconds_count{solver="numeric"}') < 1 and
                   time.monotonic() - t0 < 20 * SLOW):
                time.sleep(0.05)
            self.assertGreater(pool_busy(d), 0, "the batch runs")
            lat, statuses = [], []
            for _ in range(10):
                t0 = time.perf_counter()
                statuses.append(exchange(d, "/v1/solve", single))
                lat.append(time.perf_counter() - t0)
            worst, median = max(lat), sorted(lat)[len(lat) // 2]
            self.assertGreater(pool_busy(d), 0, "the batch still runs")
            stop.set()
            reader.join()
            b.close()  # the batch's client leaves
            t0 = time.monotonic()
            while pool_depth(d) > 0 and time.monotonic() - t0 < 30:
                time.sleep(0.1)
            drained = time.monotonic() - t0
            print("batch fairness: single solves %s, median %.1f ms, slowest %.1f ms; pool "
                  "empty %.1f s after the batch's client left"
                  % (sorted(set(statuses)), median * 1e3, worst * 1e3, drained))
            self.assertEqual(statuses, [200] * 10)
            # the median as the issue asks (under 50 ms); the slowest gets
            # room for a loaded 2-core machine
            self.assertLess(median, 0.05 * SLOW)
            self.assertLess(worst, 0.25 * SLOW)
            self.assertLess(drained, 3.0 * SLOW, "the batch was cancelled")
        finally:
            d.kill()


def hard_chain():
    """32 movable joints held within +-0.01 rad: a target out of its reach
    costs the numeric solver about 15 ms (with tolerance 1e-12 it never
    converges, and gives up long before timeout_ms 1000)."""
    c = joints_chain(64, 0)
    for j in c["joints"]:
        if "limits" in j:
            j["limits"] = {"lower": -0.01, "upper": 0.01}
    return c


class HardBatchTest(unittest.TestCase):
    def test_expensive_targets_do_not_starve_single_solves(self):
        """Two batches of targets that each cost about 15 ms (the cost
        model guesses 1.6 ms): chunks sized from the estimate (16 targets
        at least) held the pool for 250 ms each, and single solves waited
        264 ms median; chunks sized from measured time keep them waiting
        for about one target, and the pool empties soon after the clients
        leave. The bounds are in the batch targets' own time as ikd
        measures it (about 15 ms on an idle machine, longer on a loaded
        one, as is every solve then) over the single solves' time without
        the batches: half the median wait of the old chunks (17 targets'
        time) and their slowest wait."""
        d = Daemon()
        try:
            _, single = iiwa_batch_and_single(1)
            alone = []
            for _ in range(10):
                t1 = time.perf_counter()
                self.assertEqual(exchange(d, "/v1/solve", single), 200)
                alone.append(time.perf_counter() - t1)
            alone.sort()
            batch = json.dumps({
                "chain": hard_chain(),
                "targets": [{"position": [0.1, 0.2, 0.3 + i * 1e-6]} for i in range(4000)],
                "options": {"timeout_ms": 1000, "tolerance": 1e-12}}).encode()
            clients = []
            for _ in range(2):
                b = d.connect()
                b.sendall(post("/v1/solve/batch", batch))
                clients.append(b)
            t0 = time.monotonic()
            while (metric(d, 'ikd_solve_duration_seconds_count{solver="numeric"}') < 1 and
                   time.monotonic() - t0 < 20 * SLOW):
                time.sleep(0.05)
            time.sleep(0.5)
            # one batch target's time, as ikd measured the ones solved so far
            per_target = (metric(d, 'ikd_solve_duration_seconds_sum{solver="numeric"}') /
                          metric(d, 'ikd_solve_duration_seconds_count{solver="numeric"}'))
            lat, statuses = [], []
            for _ in range(10):
                t1 = time.perf_counter()
                statuses.append(exchange(d, "/v1/solve", single))
                lat.append(time.perf_counter() - t1)
            for b in clients:
                b.close()
            t2 = time.monotonic()
            while pool_depth(d) > 0 and time.monotonic() - t2 < 30:
                time.sleep(0.05)
            drained = time.monotonic() - t2
            lat.sort()
            print("hard batches: a batch target %.1f ms; single solves %s, median %.1f ms, "
                  "slowest %.1f ms (alone %.1f and %.1f ms); pool empty %.2f s after the "
                  "clients left" % (per_target * 1e3, sorted(set(statuses)), lat[5] * 1e3,
                                    lat[-1] * 1e3, alone[5] * 1e3, alone[-1] * 1e3, drained))
            self.assertEqual(statuses, [200] * 10)
            self.assertLess(lat[5], alone[5] + 8 * per_target)
            self.assertLess(lat[-1], alone[-1] + 17 * per_target)
            self.assertLess(drained, 2.0 * SLOW)
        finally:
            d.kill()


class AnswerBudgetTest(unittest.TestCase):
    def test_chain_answers_reserve_the_budget(self):
        """Eight clients register a 1 MB URDF chain at once (its
        description, about 1 MB, is written on the pool): each request
        reserves its answer's bytes when it is taken, until the answer is
        sent, so the answers written or being written stay within
        --answer-budget (3 MB: two of them) for every loop together, and
        those past it get 503. They were only checked against the budget
        before, and taken once written: all eight passed the check while
        the first ones were being written (8 MB against 3)."""
        d = Daemon("--answer-budget", "3M", "--max-body", "4M")
        clients = []
        try:
            body = json.dumps({"kind": "urdf", "urdf": padded_urdf(1.0), "base": "base_link",
                               "tip": "tool0"}).encode()
            for _ in range(8):
                c = d.connect()
                clients.append(c)
            for c in clients:  # the answer echoes the chain on request only
                c.sendall(post("/v1/chains?include=source", body))
            time.sleep(1.5 * SLOW)
            held = metric(d, 'ikd_held_bytes{what="answers"}')
            statuses = []
            for c in clients:
                c.settimeout(30 * SLOW)
                r = read_response(c)
                statuses.append(r[0] if r else None)
            time.sleep(0.3)
            after = metric(d, 'ikd_held_bytes{what="answers"}')
            print("chain answers: statuses %s, %.2f MB held while nobody read, %.2f MB after"
                  % (statuses, held / 1e6, after / 1e6))
            self.assertLessEqual(held, 3 << 20)
            self.assertIn(503, statuses)
            self.assertTrue(set(statuses) <= {200, 201, 503} and statuses.count(201) == 1,
                            statuses)
            self.assertEqual(after, 0)
        finally:
            for c in clients:
                c.close()
            d.kill()

    def test_answers_held_for_clients_are_bounded(self):
        """Six clients post 100,000-target batches (about 45 MB of answer
        each, written out in chunks as they are solved: each reserves its
        chunks in flight, about 1 MB each for the two pool threads plus two,
        until its answer ends) and do not read: the answers ikd holds stay
        within --answer-budget (it held every one before, 979 MB for six 91
        MB answers), the batches past it get 503, and once the clients read,
        the budget is free again."""
        d = Daemon("--answer-budget", "10M", "--max-body", "16M", "--threads", "2")
        clients = []
        try:
            base = d.rss_kb()
            batch = json.dumps({
                "chain": {"kind": "bones",
                          "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]},
                "targets": [{"position": [0.3, 0.6, 0.2 + i * 1e-7]} for i in range(100000)]
            }).encode()
            for _ in range(6):
                c = d.connect()
                c.sendall(post("/v1/solve/batch", batch))
                clients.append(c)
                time.sleep(0.3 * SLOW)
            time.sleep(1.0 * SLOW)
            held = metric(d, 'ikd_held_bytes{what="answers"}')
            grown = d.rss_kb() - base
            statuses = []
            for c in clients:
                c.settimeout(30 * SLOW)
                r = read_response(c)
                statuses.append(r[0] if r else None)
                if r and r[0] == 200:
                    self.assertEqual(json.loads(r[2])["count"], 100000)
                elif r:
                    self.assertIn("--answer-budget", r[2].decode())
            time.sleep(0.3)
            after = metric(d, 'ikd_held_bytes{what="answers"}')
            print("answers: statuses %s, %.1f MB held while nobody read (RSS +%.1f MB), %.1f MB "
                  "after" % (statuses, held / 1e6, grown / 1e3, after / 1e6))
            self.assertLessEqual(held, 10 << 20)
            # the answers (126 MB) and what decoding the next batches takes
            # (979 MB before, with every job kept)
            self.assertLess(grown, 300 * 1024 * MEM)
            self.assertIn(200, statuses)
            self.assertIn(503, statuses)
            self.assertEqual(after, 0)
            self.assertEqual(exchange(d, "/v1/solve/batch", batch[:200].rsplit(b"},", 1)[0] +
                                      b"}]}"), 200)
        finally:
            for c in clients:
                c.close()
            d.kill()


if __name__ == "__main__":
    unittest.main(verbosity=2)

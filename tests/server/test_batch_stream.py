"""
test_batch_stream.py: large batch answers written out as their chunks are
solved (server/http_batch.c, over the streamed answers of
server/http_mhd.c), on the real daemon with raw sockets, so that a client
can read as slowly as it likes or leave in the middle.

- A fast client gets a batch of 20,000 two-bone targets as a chunked answer
  whose results are in order and each on its target (checked by the
  geometry of the leg, never against ikd's own output), with "counts" after
  the results; a batch of items too; an HTTP/1.0 client gets the same
  answer to the end of the connection. Such a batch's targets are read in
  parts on the pool: a wrong target or stray bytes in a late part are
  answered as the whole body's error.
- A client that reads slowly gets the whole answer of a 30-bone FABRIK
  batch (about 40 MB of JSON from a body of 0.3 MB), and ikd's resident
  memory grows by less than half of it meanwhile (the whole answer was held
  before).
- While a chunk takes long to solve, ikd waits for it without spinning: its
  CPU time stays below one core's worth of the time the answer takes, with
  one pool thread solving (a content reader that returned "nothing yet"
  without suspending the connection made libmicrohttpd run it again at
  once, a busy loop on the other core).
- A client that leaves in the middle of the answer, while ikd writes or
  while it waits for a chunk: the batch is cancelled (the pool empties),
  ikd keeps answering others, and exits 0 at the end (AddressSanitizer
  builds fail on a leak).
Bounds are generous for a loaded 2-core machine and sanitizer builds.
"""
import json
import math
import os
import random
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import IKD_BIN, SLOW, TIMEOUT, Daemon  # noqa: E402


def asan_build():
    try:
        with open(IKD_BIN, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


# AddressSanitizer keeps freed memory in its quarantine: the memory bound
# is measured with the quarantine off and freed memory given back (the
# daemons inherit this environment), and doubled for ASan's own redzones.
ASAN_MEMORY = ("quarantine_size_mb=0:thread_local_quarantine_size_kb=0:"
               "allocator_release_to_os_interval_ms=100")
MEM = 1.0
if asan_build():
    os.environ["ASAN_OPTIONS"] = ":".join(
        o for o in (os.environ.get("ASAN_OPTIONS", ""), ASAN_MEMORY) if o)
    MEM = 2.0

LEG = {"kind": "bones", "positions": [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]]}


def leg_targets(n, seed=14):
    """n reachable foot targets of LEG (0.2 to 0.9 from the hip)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r, a, e = rng.uniform(0.2, 0.9), rng.uniform(0, 2 * math.pi), rng.uniform(-1.2, -0.2)
        out.append([round(r * math.cos(e) * math.cos(a), 6), round(r * math.cos(e) * math.sin(a), 6),
                    round(1 + r * math.sin(e), 6)])
    return out


def dist(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def post(body, version="1.1"):
    return (b"POST /v1/solve/batch HTTP/%s\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (version.encode(), len(body))) + body


def read_head(sock, buf=b""):
    """(status, headers with lower-case names, bytes after the head)."""
    while b"\r\n\r\n" not in buf:
        d = sock.recv(65536)
        if not d:
            raise AssertionError("the connection ended before the answer's head")
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), headers, rest


class ChunkedReader:
    """Reads a chunked body from sock, recv_size bytes at a time, sleeping
    pause seconds after each read (a slow client) and calling tick() after
    each; body() returns the decoded bytes (None when the connection ended
    before the last chunk)."""

    def __init__(self, sock, rest, recv_size=65536, pause=0.0, tick=None):
        self.sock, self.buf = sock, rest
        self.recv_size, self.pause, self.tick = recv_size, pause, tick
        self.received = len(rest)

    def more(self):
        d = self.sock.recv(self.recv_size)
        if not d:
            return False
        self.buf += d
        self.received += len(d)
        if self.tick:
            self.tick()
        if self.pause:
            time.sleep(self.pause)
        return True

    def body(self):
        out, pos = [], 0
        while True:
            while self.buf.find(b"\r\n", pos) < 0:
                if not self.more():
                    return None
            eol = self.buf.index(b"\r\n", pos)
            size = int(self.buf[pos:eol].split(b";")[0], 16)
            while len(self.buf) < eol + 2 + size + 2:
                if not self.more():
                    return None
            out.append(self.buf[eol + 2:eol + 2 + size])
            pos = eol + 2 + size + 2
            if size == 0:
                return b"".join(out)
            if pos > 1 << 20:  # keep the buffer short
                self.buf, pos = self.buf[pos:], 0


def proc_cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def metric(d, name):
    status, text = d.http("GET", "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1


def fabrik_batch(n, bones=30):
    """A FABRIK batch whose answer is large against its body: a straight
    chain of `bones` joints 5 cm apart, n targets inside its reach."""
    rng = random.Random(3)
    reach = 0.05 * (bones - 1)
    targets = []
    for _ in range(n):
        a, r = rng.uniform(0, 2 * math.pi), rng.uniform(0.3, 0.9) * reach
        targets.append({"position": [round(r * math.cos(a), 6), round(r * math.sin(a), 6),
                                     round(0.3 * reach, 6)]})
    return json.dumps({
        "chain": {"kind": "bones", "positions": [[0, 0, 0.05 * i] for i in range(bones)]},
        "options": {"solver": "fabrik", "max_iterations": 10}, "targets": targets}).encode()


def slow_batch(n, timeout_ms=20):
    """A numeric batch whose every target takes its whole time budget: two
    joints kept within 0.1 rad of zero cannot turn the tip a quarter turn
    (the target is well within the chain's reach)."""
    joint = {"type": "revolute", "axis": [0, 0, 1], "limits": {"lower": -0.1, "upper": 0.1}}
    chain = {"kind": "joints", "joints": [
        dict(joint, name="a"), dict(joint, name="b", origin={"xyz": [0.5, 0, 0]}),
        {"name": "tip", "type": "fixed", "origin": {"xyz": [0.5, 0, 0]}}]}
    return json.dumps({"chain": chain, "targets": [{"position": [0, 0.9, 0]}] * n,
                       "options": {"timeout_ms": timeout_ms, "max_iterations": 10000000,
                                   "fields": ["joints"]}}).encode()


class FastClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--max-body", "64M")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def exchange(self, body, version="1.1"):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=TIMEOUT * 4)
        try:
            s.sendall(post(body, version))
            status, headers, rest = read_head(s)
            if headers.get("transfer-encoding") == "chunked":
                text = ChunkedReader(s, rest).body()
            else:
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    rest += d
                text = rest
            return status, headers, text
        finally:
            s.close()

    def test_two_bone_batch_is_streamed_in_order(self):
        """20,000 targets: a chunked answer, every result on its own target
        in order, counts after the results."""
        targets = leg_targets(20000)
        body = json.dumps({"chain": LEG, "options": {"fields": ["positions"]},
                           "targets": [{"position": t} for t in targets]}).encode()
        status, headers, text = self.exchange(body)
        self.assertEqual(status, 200, text[:300])
        self.assertEqual(headers.get("transfer-encoding"), "chunked", headers)
        self.assertEqual(headers.get("content-type"), "application/json")
        self.assertIsNotNone(text, "the answer ended before its last chunk")
        a = json.loads(text)
        self.assertEqual(list(a)[-3:], ["count", "results", "counts"])
        self.assertEqual(a["count"], len(targets))
        self.assertEqual(len(a["results"]), len(targets))
        self.assertEqual(a["counts"], {"success": len(targets), "no_ik_solution": 0,
                                       "timed_out": 0, "other": 0})
        p = LEG["positions"]
        for t, r in zip(targets, a["results"]):
            q = r["positions"]
            self.assertLess(dist(q[2], t), 1e-9)
            self.assertAlmostEqual(dist(q[0], q[1]), dist(p[0], p[1]), delta=1e-9)
            self.assertAlmostEqual(dist(q[1], q[2]), dist(p[1], p[2]), delta=1e-9)

    def test_large_batch_errors_name_their_target(self):
        """A batch this large is read in parts side by side (issue 22): a
        wrong target or stray bytes in a late part get the error the whole
        body gets, naming the target, and the next batch is answered."""
        targets = [{"position": t} for t in leg_targets(20000)]
        targets[17001] = {"position": [0.1, "x", 0.5]}
        body = json.dumps({"chain": LEG, "targets": targets}).encode()
        status, _, text = self.exchange(body, "1.0")  # (the answer ends with the connection)
        self.assertEqual(status, 400, text[:300])
        err = json.loads(text)["error"]
        self.assertEqual(err["path"], "/targets/17001/position/1", err)
        # a byte between two targets of the third part: not JSON
        targets[17001] = {"position": [0.1, 0.2, 0.5]}
        body = json.dumps({"chain": LEG, "targets": targets}).encode()
        at = body.index(b"}, {", body.index(b'"targets"') + len(body) * 3 // 4)
        status, _, text = self.exchange(body[:at + 1] + b"5" + body[at + 1:], "1.0")
        self.assertEqual(status, 400, text[:300])
        self.assertEqual(json.loads(text)["error"]["code"], "invalid_json", text[:300])
        status, _, text = self.exchange(body)
        self.assertEqual(status, 200, text[:300])
        self.assertEqual(json.loads(text)["count"], 20000)

    def test_items_are_streamed_with_their_errors(self):
        """3,000 items, each its own leg, every 500th bad: in order, the bad
        ones answered with their error at their own path."""
        n = 3000
        targets = leg_targets(n, seed=5)
        items = []
        for i, t in enumerate(targets):
            s = 1.0 + 0.01 * (i % 7)
            chain = {"kind": "bones", "positions": [[x * s for x in q] for q in LEG["positions"]]}
            item = {"chain": chain, "target": {"position": [x * s for x in t]}}
            if i % 500 == 7:
                item["target"] = {"position": [0, "x", 0]}
            items.append(item)
        body = json.dumps({"options": {"fields": ["positions"]}, "items": items}).encode()
        status, headers, text = self.exchange(body)
        self.assertEqual(status, 200, text[:300])
        self.assertEqual(headers.get("transfer-encoding"), "chunked", headers)
        a = json.loads(text)
        self.assertEqual(a["count"], n)
        self.assertEqual(a["counts"]["error"], 6)
        self.assertEqual(a["counts"]["success"], n - 6)
        for i, r in enumerate(a["results"]):
            if i % 500 == 7:
                self.assertEqual(r["error"]["path"], "/items/%d/target/position/1" % i)
                continue
            s = 1.0 + 0.01 * (i % 7)
            self.assertLess(dist(r["positions"][2], [x * s for x in targets[i]]), 1e-9)

    def test_http10_client_reads_to_the_end(self):
        """An HTTP/1.0 client cannot take chunks: the same answer comes to
        the end of the connection."""
        targets = leg_targets(10000, seed=9)
        body = json.dumps({"chain": LEG, "options": {"fields": ["positions"], "digits": 9},
                           "targets": [{"position": t} for t in targets]}).encode()
        status, headers, text = self.exchange(body, version="1.0")
        self.assertEqual(status, 200, text[:300])
        self.assertNotIn("transfer-encoding", headers)
        a = json.loads(text)
        self.assertEqual(len(a["results"]), len(targets))
        for t, r in zip(targets, a["results"]):
            self.assertLess(dist(r["positions"][2], t), 1e-8)


class SlowClients(unittest.TestCase):
    def test_slow_reader_gets_everything_in_bounded_memory(self):
        """A client reading a 40 MB answer at about 8 MB/s: all of it comes,
        and ikd's memory grows by less than half of it meanwhile."""
        d = Daemon()
        try:
            body = fabrik_batch(6000)
            base = rss_kb(d.proc.pid)
            s = socket.create_connection(("127.0.0.1", d.port), timeout=TIMEOUT * 4)
            # 64 KiB, not less: loopback's segments are up to 64 KiB, and a
            # receive buffer that cannot take one whole never announces a
            # window opening; the sender then waits for its zero-window
            # probes (about 5 segments a second, whatever the server does)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            s.sendall(post(body))
            status, headers, rest = read_head(s)
            self.assertEqual(status, 200)
            peak = [base]
            reader = ChunkedReader(s, rest, recv_size=16384, pause=0.002,
                                   tick=lambda: peak.append(rss_kb(d.proc.pid)))
            t0 = time.monotonic()
            text = reader.body()
            took = time.monotonic() - t0
            s.close()
            self.assertIsNotNone(text, "the answer ended before its last chunk")
            a = json.loads(text)
            grown = (max(peak) - base) / 1024.0
            print("slow reader: %.1f MB in %.1f s, ikd grew by %.1f MB"
                  % (len(text) / 1e6, took, grown))
            self.assertEqual(len(a["results"]), 6000)
            self.assertEqual(sum(a["counts"].values()), 6000)
            for r in a["results"][::97]:
                self.assertEqual(len(r["positions"]), 30)
            self.assertLess(grown * 1024 * 1024, 0.5 * len(text) * MEM)
        finally:
            d.stop()

    def test_waiting_for_a_chunk_does_not_spin(self):
        """One pool thread solving chunks of 20 ms solves: while the answer
        waits for the next chunk, ikd takes no more than that thread's
        CPU."""
        d = Daemon("--threads", "1", "--max-iterations", "10000000")
        try:
            body = slow_batch(150)
            s = socket.create_connection(("127.0.0.1", d.port), timeout=TIMEOUT * 20)
            c0, t0 = proc_cpu_s(d.proc.pid), time.monotonic()
            s.sendall(post(body))
            status, headers, rest = read_head(s)
            self.assertEqual(status, 200)
            self.assertEqual(headers.get("transfer-encoding"), "chunked", headers)
            text = ChunkedReader(s, rest).body()
            wall, cpu = time.monotonic() - t0, proc_cpu_s(d.proc.pid) - c0
            s.close()
            print("waiting for chunks: %.2f s of CPU in %.2f s" % (cpu, wall))
            self.assertEqual(json.loads(text)["counts"]["timed_out"], 150)
            self.assertLess(cpu, 1.5 * wall)
        finally:
            d.stop()


class LeavingClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--max-body", "64M", "--max-iterations", "10000000")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()  # exit 0: on an AddressSanitizer build, no leak either

    def wait_pool_empty(self):
        t0 = time.monotonic()
        while metric(self.d, "ikd_pool_queue_depth") > 0 and time.monotonic() - t0 < 10 * SLOW:
            time.sleep(0.05)
        return time.monotonic() - t0

    def still_serving(self):
        targets = leg_targets(5000, seed=1)
        status, text = self.d.http("POST", "/v1/solve/batch", {
            "chain": LEG, "options": {"fields": ["positions"]},
            "targets": [{"position": t} for t in targets]})
        self.assertEqual(status, 200)
        a = json.loads(text)
        for t, r in zip(targets, a["results"]):
            self.assertLess(dist(r["positions"][2], t), 1e-9)

    def test_client_leaves_while_ikd_writes(self):
        """Leaves after 2 MB of a 40 MB answer."""
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=TIMEOUT * 4)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        s.sendall(post(fabrik_batch(6000)))
        status, headers, rest = read_head(s)
        self.assertEqual(status, 200)
        got = len(rest)
        while got < 2000000:
            d = s.recv(16384)
            self.assertTrue(d, "the answer ended early")
            got += len(d)
        s.close()
        took = self.wait_pool_empty()
        print("left while written: the pool was empty %.2f s later" % took)
        self.assertLess(took, 10 * SLOW)
        self.still_serving()

    def test_client_leaves_while_ikd_waits_for_a_chunk(self):
        """Leaves after the head of an answer whose chunks take seconds."""
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=TIMEOUT * 4)
        s.sendall(post(slow_batch(600)))
        status, headers, rest = read_head(s)
        self.assertEqual(status, 200)
        s.close()
        took = self.wait_pool_empty()
        print("left while waiting: the pool was empty %.2f s later" % took)
        self.assertLess(took, 10 * SLOW)
        # the pool may read empty before the batch's next chunk is queued
        # (the loop notices the leaving client then): the cancel is counted
        # within the same bound, once
        cancelled = 'ikd_rejected_total{reason="batch_cancelled"}'
        t0 = time.monotonic()
        while metric(self.d, cancelled) < 1 and time.monotonic() - t0 < 10 * SLOW:
            time.sleep(0.05)
        self.assertEqual(metric(self.d, cancelled), 1)
        self.still_serving()


if __name__ == "__main__":
    unittest.main(verbosity=2)

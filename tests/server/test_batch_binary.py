"""
test_batch_binary.py: the binary form of batches over the real daemon
(Content-Type and Accept application/vnd.ikd.batch; the layout of
proto/README.md, "Binary batches", written and read here by the test's own
code with struct).

- A batch of two-bone targets sent as binary and answered as binary: every
  record's foot is on its target and the bones keep their lengths (checked
  by the geometry, not against ikd), and every number equals the number of
  the JSON answer to the same batch sent as JSON (two-bone answers are
  deterministic; time_ms is left out).
- The forms mix: a binary request answered as JSON (no Accept) is the JSON
  request's answer byte for byte; a JSON request with Accept binary gets
  the binary answer; a batch of items asked for binary is answered as JSON
  (its Content-Type says so).
- A large binary batch is written out in chunks like a JSON one.
- Errors are JSON with their paths: a NaN target, a body cut short, a
  binary body sent as JSON.
"""
import json
import math
import os
import random
import socket
import struct
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import TIMEOUT, Daemon  # noqa: E402

BINARY = "application/vnd.ikd.batch"
LEG = {"kind": "bones", "positions": [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]]}
FIELDS = ["positions", "rotations", "local_rotations", "position_error", "iterations",
          "restarts"]


def leg_targets(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r, a, e = rng.uniform(0.2, 1.1), rng.uniform(0, 2 * math.pi), rng.uniform(-1.2, -0.2)
        out.append([r * math.cos(e) * math.cos(a), r * math.cos(e) * math.sin(a),
                    1 + r * math.sin(e)])
    return out


def binary_request(head, positions, orientations=None):
    """IKDB, version, flags, head length, count, the JSON head, padding to
    8, then each target's position (and orientation) as doubles."""
    h = json.dumps(head).encode()
    b = b"IKDB" + struct.pack("<HHII", 1, 1 if orientations else 0, len(h), len(positions)) + h
    b += b"\0" * (-len(b) % 8)
    for i, p in enumerate(positions):
        b += struct.pack("<3d", *p)
        if orientations:
            b += struct.pack("<4d", *orientations[i])
    return b


MEMBERS = [("joints", 1), ("positions", 2), ("rotations", 4), ("local_rotations", 8),
           ("tip", 16), ("position_error", 32), ("orientation_error", 64),
           ("max_joint_step", 128), ("time_ms", 256)]


def read_binary(data):
    """The answer as a dict: count, fields, results (code, flags,
    iterations, restarts, and each member's doubles), counts."""
    magic, version, dims, count, rec, fields, dof, npos, nrot = struct.unpack_from(
        "<4sHHIIIHHH", data, 0)
    assert magic == b"IKDA" and version == 1, data[:8]
    assert len(data) == 32 + count * rec + 20, (len(data), count, rec)
    sizes = {"joints": dof, "positions": dims * npos, "rotations": 4 * nrot,
             "local_rotations": 4 * nrot, "tip": 7, "position_error": 1,
             "orientation_error": 1, "max_joint_step": 1, "time_ms": 1}
    results = []
    for i in range(count):
        off = 32 + i * rec
        code, flags, iterations, restarts = struct.unpack_from("<iIII", data, off)
        r = {"code": code, "flags": flags, "iterations": iterations, "restarts": restarts}
        off += 16
        for name, bit in MEMBERS:
            if fields & bit:
                k = sizes[name]
                r[name] = list(struct.unpack_from("<%dd" % k, data, off))
                off += 8 * k
        assert off == 32 + (i + 1) * rec
        results.append(r)
    tail = 32 + count * rec
    assert data[tail:tail + 4] == b"IKDC"
    counts = struct.unpack_from("<4I", data, tail + 4)
    return {"dims": dims, "fields": fields, "results": results,
            "counts": dict(zip(["success", "no_ik_solution", "timed_out", "other"], counts))}


def flat(v):
    out = []
    for x in v if isinstance(v, list) else [v]:
        out.extend(flat(x) if isinstance(x, list) else [x])
    return out


class BinaryBatches(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--max-body", "64M")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def post(self, body, content_type="application/json", accept=None):
        headers = {"Content-Type": content_type}
        if accept:
            headers["Accept"] = accept
        req = urllib.request.Request("http://127.0.0.1:%d/v1/solve/batch" % self.d.port,
                                     data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT * 4) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def test_binary_answers_are_the_json_answers(self):
        targets = leg_targets(3000, 1)  # some out of reach
        head = {"chain": LEG, "options": {"fields": FIELDS}}
        st, h, data = self.post(binary_request(head, targets), BINARY, BINARY)
        self.assertEqual(st, 200, data[:300])
        self.assertEqual(h["Content-Type"], BINARY)
        b = read_binary(data)
        st, h, text = self.post(json.dumps(dict(head, targets=[{"position": t}
                                                               for t in targets])).encode())
        self.assertEqual(st, 200)
        j = json.loads(text)
        self.assertEqual(b["counts"], j["counts"])
        self.assertGreater(b["counts"]["no_ik_solution"], 0)
        p = LEG["positions"]
        for t, rb, rj in zip(targets, b["results"], j["results"]):
            pos = [rb["positions"][3 * k:3 * k + 3] for k in range(3)]
            if rj["status"] == "success":
                self.assertEqual(rb["code"], 1)
                self.assertLess(math.dist(pos[2], t), 1e-9)
            self.assertAlmostEqual(math.dist(pos[0], pos[1]), math.dist(p[0], p[1]), delta=1e-9)
            self.assertAlmostEqual(math.dist(pos[1], pos[2]), math.dist(p[1], p[2]), delta=1e-9)
            for name in ("positions", "rotations", "local_rotations", "position_error"):
                self.assertEqual(rb[name], flat(rj[name]), name)
            self.assertEqual((rb["iterations"], rb["restarts"]),
                             (rj["iterations"], rj["restarts"]))
            self.assertNotIn("time_ms", rb)
            self.assertNotIn("orientation_error", rb)

    def test_the_forms_mix(self):
        targets = leg_targets(50, 2)
        head = {"chain": LEG, "options": {"fields": FIELDS}}
        as_json = json.dumps(dict(head, targets=[{"position": t} for t in targets])).encode()
        st, h, a = self.post(binary_request(head, targets), BINARY)
        st2, h2, b = self.post(as_json)
        self.assertEqual((st, st2), (200, 200))
        self.assertEqual(h["Content-Type"], "application/json")
        self.assertEqual(a, b)
        st, h, c = self.post(as_json, "application/json", "application/json, %s" % BINARY)
        self.assertEqual(h["Content-Type"], BINARY)
        self.assertEqual(len(read_binary(c)["results"]), 50)
        st, h, c = self.post(as_json, "application/json", "%s;q=0" % BINARY)
        self.assertEqual(h["Content-Type"], "application/json")
        items = {"items": [{"chain": LEG, "target": {"position": t}} for t in targets[:3]]}
        st, h, c = self.post(json.dumps(items).encode(), "application/json", BINARY)
        self.assertEqual(st, 200)
        self.assertEqual(h["Content-Type"], "application/json")
        self.assertEqual(json.loads(c)["count"], 3)

    def test_a_large_binary_batch_is_streamed(self):
        targets = leg_targets(30000, 3)
        body = binary_request({"chain": LEG, "options": {"fields": ["local_rotations"]}},
                              targets)
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=TIMEOUT * 4)
        s.sendall(b"POST /v1/solve/batch HTTP/1.1\r\nHost: t\r\nContent-Type: %s\r\nAccept: %s"
                  b"\r\nContent-Length: %d\r\n\r\n" % (BINARY.encode(), BINARY.encode(),
                                                        len(body)) + body)
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += s.recv(65536)
        head, rest = buf.split(b"\r\n\r\n", 1)
        self.assertIn(b"Transfer-Encoding: chunked", head)
        # the chunked body
        out, pos = [], 0
        while True:
            while rest.find(b"\r\n", pos) < 0:
                rest += s.recv(1 << 20)
            eol = rest.index(b"\r\n", pos)
            size = int(rest[pos:eol], 16)
            while len(rest) < eol + 2 + size + 2:
                rest += s.recv(1 << 20)
            out.append(rest[eol + 2:eol + 2 + size])
            pos = eol + 4 + size
            if size == 0:
                break
        s.close()
        b = read_binary(b"".join(out))
        self.assertEqual(len(b["results"]), 30000)
        self.assertEqual(sum(b["counts"].values()), 30000)

    def test_errors_are_json_with_paths(self):
        targets = leg_targets(5, 4)
        targets[3] = [0.1, float("nan"), 0.2]
        st, h, e = self.post(binary_request({"chain": LEG}, targets), BINARY, BINARY)
        self.assertEqual(st, 400)
        self.assertEqual(h["Content-Type"], "application/json")
        err = json.loads(e)["error"]
        self.assertEqual((err["code"], err["path"]), ("invalid_request", "/targets/3/position/1"))
        good = binary_request({"chain": LEG}, leg_targets(5, 4))
        st, h, e = self.post(good[:-8], BINARY)
        self.assertEqual(st, 400)
        self.assertIn("bytes", json.loads(e)["error"]["message"])
        st, h, e = self.post(good, "application/json")
        self.assertEqual(st, 400)
        self.assertEqual(json.loads(e)["error"]["code"], "invalid_json")


if __name__ == "__main__":
    unittest.main(verbosity=2)

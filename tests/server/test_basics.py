"""
test_basics.py: what a newcomer or an operator reaches first, over the real
daemon: `ikd --version`, GET /openapi.yaml (the document in the repository,
byte for byte, without a token), and /metrics: solve outcomes counted by
solver and status, ikd_build_info, the standard process metrics, and the
whole exposition checked against the Prometheus text format (by the checker
below, and by promtool too when it is installed).

The daemon is started as test_stream.py starts it (its Daemon class).
"""
import http.client
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import Daemon, IKD_BIN  # noqa: E402

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*"'
SAMPLE = re.compile(r"^(%s)(\{(?:%s(?:,%s)*)?\})? (\S+)$" % (NAME, LABEL, LABEL))


def exposition_problems(text):
    """Problems of a Prometheus text exposition (format 0.0.4), as promtool
    and the Prometheus parser see them: every line a comment or a sample;
    one HELP and one TYPE per family, before its samples; samples of a
    family together; counters named *_total; no series twice; histogram
    buckets cumulative with le="+Inf" equal to _count; values numbers."""
    problems = []
    types, helps, seen, done = {}, set(), set(), set()
    current = None
    buckets = {}
    counts = {}
    if not text.endswith("\n"):
        problems.append("the exposition does not end with a newline")
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            if name in helps:
                problems.append("line %d: second HELP for %s" % (n, name))
            helps.add(name)
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or parts[3] not in ("counter", "gauge", "histogram", "summary",
                                                    "untyped"):
                problems.append("line %d: bad TYPE line %r" % (n, line))
                continue
            name = parts[2]
            if name in types:
                problems.append("line %d: second TYPE for %s" % (n, name))
            if parts[3] == "counter" and not name.endswith("_total"):
                problems.append("line %d: counter %s does not end in _total" % (n, name))
            types[name] = parts[3]
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append("line %d: not a sample: %r" % (n, line))
            continue
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and types.get(name[:-len(suffix)]) == "histogram":
                family = name[:-len(suffix)]
        if family not in types:
            problems.append("line %d: %s has no TYPE before it" % (n, name))
        if family not in helps:
            problems.append("line %d: %s has no HELP before it" % (n, name))
        if family != current:
            if family in done:
                problems.append("line %d: samples of %s are not together" % (n, family))
            if current:
                done.add(current)
            current = family
        if (name, labels) in seen:
            problems.append("line %d: series %s%s twice" % (n, name, labels))
        seen.add((name, labels))
        try:
            v = float(value)
        except ValueError:
            problems.append("line %d: value %r is not a number" % (n, value))
            continue
        if types.get(family) == "counter" and not v >= 0:
            problems.append("line %d: counter %s is %s" % (n, name, value))
        if name.endswith("_bucket") and family != name:
            le = re.search(r'le="([^"]*)"', labels)
            rest = re.sub(r',?le="[^"]*"', "", labels)
            if not le:
                problems.append("line %d: bucket without le" % n)
                continue
            buckets.setdefault((family, rest), []).append((float(le.group(1)), v))
        if name.endswith("_count") and family != name:
            counts[(family, labels.replace("{}", ""))] = v
    for (family, rest), bs in buckets.items():
        les = [b[0] for b in bs]
        vals = [b[1] for b in bs]
        if les != sorted(les) or les[-1] != math.inf:
            problems.append("%s%s: le not increasing up to +Inf" % (family, rest))
        if vals != sorted(vals):
            problems.append("%s%s: buckets not cumulative" % (family, rest))
        if counts.get((family, rest)) != vals[-1]:
            problems.append("%s%s: +Inf bucket %s differs from _count %s"
                            % (family, rest, vals[-1], counts.get((family, rest))))
    return problems


def samples(text):
    """{series: value} of an exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


TWO_BONE = {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}


class VersionTest(unittest.TestCase):
    def test_version(self):
        r = subprocess.run([IKD_BIN, "--version"], capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^ikd \d+\.\d+\.\d+ \(commit [0-9a-z-]+\)\n$")
        r2 = subprocess.run([IKD_BIN, "--listen", "127.0.0.1:0", "--version"],
                            capture_output=True, text=True, timeout=10)
        self.assertEqual((r2.returncode, r2.stdout), (0, r.stdout))
        h = subprocess.run([IKD_BIN, "--help"], capture_output=True, text=True, timeout=10)
        self.assertIn("--version", h.stdout)


class SolveCliTest(unittest.TestCase):
    def error(self, args, stdin=b""):
        r = subprocess.run([IKD_BIN, "solve"] + args, input=stdin, capture_output=True,
                           timeout=10)
        self.assertEqual(r.returncode, 2, r)
        return json.loads(r.stdout)["error"]["message"]

    def test_file_errors_say_why(self):
        """ikd solve names why a file cannot be read (as ikd chain does) and
        a byte order mark on stdin as it does over HTTP."""
        self.assertEqual(self.error(["tests"]), "cannot read tests: Is a directory")
        self.assertIn("No such file", self.error(["tests/no-such.json"]))
        self.assertIn("byte order mark", self.error(
            [], b"\xef\xbb\xbf" + json.dumps({"chain": TWO_BONE, "target": {
                "position": [0.3, 0.6, 0.2]}}).encode()))


class BasicsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.t0 = time.time()
        cls.d = Daemon("--token", "t0k")
        cls.auth = {"Authorization": "Bearer t0k"}

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_openapi_served(self):
        """The contract as built in, equal to the repository's file, with no
        token needed; HEAD too; other methods 405."""
        with open("proto/openapi.yaml", "rb") as f:
            want = f.read().decode()
        status, text = self.d.http("GET", "/openapi.yaml")
        self.assertEqual(status, 200)
        self.assertEqual(text, want)
        status, _ = self.d.http("HEAD", "/openapi.yaml")
        self.assertEqual(status, 200)
        status, text = self.d.http("POST", "/openapi.yaml", body={})
        self.assertEqual(status, 405, text)

    def test_unknown_query_parameters_refused(self):
        """A query parameter a route does not read is refused (400, named),
        as an unknown JSON member is; so are a repeated or valueless
        ?include, and ?include on a DELETE. ?include=source still works."""
        body = {"chain": TWO_BONE, "target": {"position": [0.3, 0.6, 0.2]}}
        for method, path, data, words in [
                ("POST", "/v1/solve?digits=6", body,
                 'unknown query parameter "digits": /v1/solve takes none'),
                ("GET", "/v1/solvers?x", None, '"x"'),
                ("POST", "/v1/chains?include=source&include=source", TWO_BONE,
                 '"include" is given more than once'),
                ("POST", "/v1/chains?include", TWO_BONE, '"include" has no value'),
                ("POST", "/v1/chains?source=1", TWO_BONE,
                 '"source": /v1/chains takes only ?include'),
                ("DELETE", "/v1/chains/abc?include=source", None, '"include"')]:
            status, text = self.d.http(method, path, data, self.auth)
            self.assertEqual(status, 400, (path, text))
            e = json.loads(text)["error"]
            self.assertEqual(e["code"], "invalid_request")
            self.assertIn(words, e["message"])
        status, text = self.d.http("POST", "/v1/chains?include=source", TWO_BONE, self.auth)
        self.assertIn(status, (200, 201), text)
        self.assertIn("chain", json.loads(text))

    def test_metrics(self):
        """Solve outcomes by solver and status, counted once per answered
        target (inline solves, a batch on the pool), the build info naming
        the version `ikd --version` prints, and process metrics that are
        this daemon's own."""
        reach = {"chain": TWO_BONE, "target": {"position": [0.3, 0.6, 0.2]}}
        far = {"chain": TWO_BONE, "target": {"position": [0, 5, 0]}}
        for body in (reach, reach, far):
            status, text = self.d.http("POST", "/v1/solve", body, self.auth)
            self.assertEqual(status, 200, text)
        batch = {"chain": TWO_BONE, "targets": [{"position": [0.3, 0.6, 0.2]}] * 5 +
                 [{"position": [3, 3, 3]}] * 2}
        status, text = self.d.http("POST", "/v1/solve/batch", batch, self.auth)
        self.assertEqual(status, 200, text)
        self.assertEqual(json.loads(text)["counts"]["no_ik_solution"], 2)
        status, text = self.d.http("GET", "/metrics", headers=self.auth)
        self.assertEqual(status, 200)
        self.assertEqual(exposition_problems(text), [])
        s = samples(text)
        self.assertEqual(s['ikd_solves_total{solver="two_bone",status="success"}'], 7)
        self.assertEqual(s['ikd_solves_total{solver="two_bone",status="no_ik_solution"}'], 3)
        self.assertEqual(s['ikd_solve_duration_seconds_count{solver="two_bone"}'], 10)

        version = subprocess.run([IKD_BIN, "--version"], capture_output=True, text=True,
                                 timeout=10).stdout
        v, commit = re.match(r"ikd (\S+) \(commit (\S+)\)", version).groups()
        info = [k for k in s if k.startswith("ikd_build_info{")]
        self.assertEqual(len(info), 1, info)
        self.assertIn('version="%s",commit="%s",' % (v, commit), info[0])
        self.assertRegex(info[0], r'libmicrohttpd="\d[^"]*",libuv="\d[^"]*",jansson="\d[^"]*"')
        self.assertEqual(s[info[0]], 1)

        pid = self.d.proc.pid
        with open("/proc/%d/status" % pid) as f:
            rss_kb = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
        self.assertLess(abs(s["process_resident_memory_bytes"] - rss_kb * 1024),
                        max(8 << 20, rss_kb * 1024 // 2))
        fds = len(os.listdir("/proc/%d/fd" % pid))
        self.assertLessEqual(abs(s["process_open_fds"] - fds), 4)
        self.assertGreaterEqual(s["process_max_fds"], s["process_open_fds"])
        self.assertGreaterEqual(s["process_cpu_seconds_total"], 0)
        self.assertLess(abs(s["process_start_time_seconds"] - self.t0), 5)
        self.assertGreater(s["process_virtual_memory_bytes"], s["process_resident_memory_bytes"])

    def test_promtool(self):
        """promtool's own check of the exposition, when promtool is installed
        (Debian's prometheus package has it; not a dependency of ikd)."""
        promtool = shutil.which("promtool")
        if not promtool:
            self.skipTest("promtool is not installed")
        status, text = self.d.http("GET", "/metrics", headers=self.auth)
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_checker_can_fail(self):
        """The exposition checker finds what it promises to find."""
        bad = ("# HELP a_total x\n# TYPE a_total counter\na_total 1\na_total 2\n"
               "# TYPE b counter\nb 1\n"
               "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\n"
               "h_count 2\nh_sum 1\nc{x=\"1\"} one\nc x y\n")
        p = "\n".join(exposition_problems(bad))
        for what in ("series a_total twice", "counter b does not end in _total",
                     "b has no HELP", "buckets not cumulative", "c has no TYPE",
                     "'one' is not a number", "not a sample: 'c x y'"):
            self.assertIn(what, p)


class MismatchTest(unittest.TestCase):
    """What the documents said and the code did not: each checked on the
    real daemon."""

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--allow-origin", "https://ok.example")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def raw(self, method, path, data, headers):
        import urllib.request
        import urllib.error
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.d.port, path), data=data,
                                     method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def chains(self):
        status, text = self.d.http("GET", "/metrics")
        return samples(text)["ikd_registry_chains"]

    def test_cross_origin_writes_refused(self):
        """A POST with Content-Type text/plain needs no preflight in a
        browser: from an Origin outside --allow-origin it gets 403 and
        registers nothing; DELETE too; without an Origin (not a browser) or
        from an allowed one it is done."""
        body = json.dumps({"kind": "planar", "lengths": [1.0, 0.7]}).encode()
        before = self.chains()
        status, text = self.raw("POST", "/v1/chains", body, {
            "Origin": "https://evil.example", "Content-Type": "text/plain"})
        self.assertEqual(status, 403, text)
        self.assertEqual(json.loads(text)["error"]["code"], "forbidden_origin")
        self.assertEqual(self.chains(), before)
        status, text = self.raw("POST", "/v1/solve", json.dumps(
            {"chain": TWO_BONE, "target": {"position": [0.3, 0.6, 0.2]}}).encode(),
            {"Origin": "https://evil.example", "Content-Type": "text/plain"})
        self.assertEqual(status, 403, text)
        status, text = self.raw("POST", "/v1/chains", body, {
            "Origin": "https://ok.example", "Content-Type": "text/plain"})
        self.assertEqual(status, 201, text)
        cid = json.loads(text)["id"]
        status, text = self.raw("DELETE", "/v1/chains/" + cid, None,
                                {"Origin": "https://evil.example"})
        self.assertEqual(status, 403, text)
        status, _ = self.d.http("GET", "/v1/chains/" + cid)
        self.assertEqual(status, 200)
        status, _ = self.raw("DELETE", "/v1/chains/" + cid, None, {})
        self.assertEqual(status, 204)
        # reads stay open to any Origin (the browser hides the answer)
        status, _ = self.raw("GET", "/v1/solvers", None, {"Origin": "https://evil.example"})
        self.assertEqual(status, 200)

    def test_reads_vary_by_origin(self):
        """A GET's answer depends on the Origin (Access-Control-Allow-Origin
        for an allowed one only), so every GET and HEAD answer says Vary:
        Origin, without an Origin or with one refused too: a cache that kept
        the answer to a request without Origin would give it to the allowed
        page, which would find no CORS header (before, only answers carrying
        Access-Control-Allow-Origin had Vary)."""
        for method in ("GET", "HEAD"):
            for origin in (None, "https://evil.example", "https://ok.example"):
                with self.subTest(method=method, origin=origin):
                    c = http.client.HTTPConnection("127.0.0.1", self.d.port, timeout=5)
                    c.request(method, "/v1/solvers", headers={"Origin": origin} if origin else {})
                    r = c.getresponse()
                    r.read()
                    c.close()
                    self.assertEqual(r.status, 200)
                    self.assertEqual(r.getheader("Vary"), "Origin")

    def test_expect_continue_refused_before_the_body(self):
        """A client that asks before sending its body (Expect: 100-continue,
        as curl does for large uploads) and will be refused whatever it
        sends (a bad Origin, no such endpoint, a method not allowed) gets
        the refusal at once, not "100 Continue" (before: it was told to
        send its megabyte, which ikd read and threw away); a request that
        may go on still gets 100 Continue."""
        import socket
        cases = ((b"POST /v1/chains", b"Origin: https://evil.example\r\n", b"403"),
                 (b"POST /v1/nope", b"", b"404"),
                 (b"POST /v1/solvers", b"", b"405"),
                 (b"POST /v1/chains", b"", b"100"))
        for line, extra, want in cases:
            with socket.create_connection(("127.0.0.1", self.d.port), timeout=5) as s:
                s.sendall(line + b" HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n"
                          b"Expect: 100-continue\r\n" + extra + b"\r\n")
                got = s.recv(4096)
            self.assertEqual(got[9:12], want, (line, got))

    def stream_errors(self, texts):
        import asyncio
        import websockets

        async def body():
            out = []
            async with websockets.connect(self.d.url, open_timeout=5) as ws:
                for t in texts:
                    await ws.send(t)
                    out.append(json.loads(await asyncio.wait_for(ws.recv(), 5)))
            return out
        return asyncio.run(body())

    def test_same_words_over_http_and_websocket(self):
        """The same bad JSON gets the same error object (code, message,
        path) from POST /v1/solve and from a stream; XML gets the same
        words too, up to the hint, which says what each place takes."""
        texts = ['{"type":"open",', '<robot name="arm"/>', '{"a":1,"a":2}', '[1, 2',
                 '\ufeff{"type":"close","stream":"a"}']
        ws = self.stream_errors(texts)
        for t, m in zip(texts, ws):
            status, text = self.raw("POST", "/v1/solve", t.encode(),
                                    {"Content-Type": "application/json"})
            self.assertEqual(status, 400, text)
            e = json.loads(text)["error"]
            if t.startswith("<"):
                cut = "; this looks like XML"
                self.assertIn(cut, e["message"])
                self.assertNotEqual(e["message"], m["error"]["message"])
                e["message"] = e["message"].split(cut)[0]
                m["error"]["message"] = m["error"]["message"].split(cut)[0]
            self.assertEqual(e, m["error"], t)
            if t.startswith("\ufeff"):
                self.assertIn("byte order mark (bytes EF BB BF)", e["message"])

    def test_stream_type_required(self):
        m, = self.stream_errors(['{"stream":"a","seq":1}'])
        self.assertEqual(m["error"]["path"], "/type")
        self.assertIn("is required", m["error"]["message"])
        m, = self.stream_errors(['{"type":5,"stream":"a"}'])
        self.assertIn("must be a string", m["error"]["message"])

    def test_raw_urdf_gets_a_hint(self):
        """A URDF sent as it is gets a hint with the JSON that this place
        takes around it: {"chain":...,"target":...} for a solve, the bare
        chain object for /v1/chains, an open message on a stream."""
        with open(os.path.join(os.environ.get("IKD_DATA", "tests/data"), "robots",
                               "ur5.urdf"), "rb") as f:
            urdf = f.read()
        chain = '{"kind":"urdf","urdf":"<robot ...>","base":...,"tip":...}'
        want = {
            "/v1/solve": '; this looks like XML: send {"chain":' + chain
                         + ',"target":...} (ikd chain FILE.urdf --base B --tip T prints the chain)',
            "/v1/solve/batch": '; this looks like XML: send {"chain":' + chain
                               + ',"targets":[...]} (ikd chain FILE.urdf --base B --tip T'
                               ' prints the chain)',
            "/v1/chains": '; this looks like XML: /v1/chains takes the chain object ' + chain
                          + ' (ikd chain FILE.urdf --base B --tip T prints it)',
        }
        for path, hint in want.items():
            status, text = self.raw("POST", path, urdf, {"Content-Type": "application/xml"})
            self.assertEqual(status, 400, text)
            e = json.loads(text)["error"]
            self.assertEqual(e["code"], "invalid_json")
            self.assertTrue(e["message"].endswith(hint), (path, e["message"]))
        m, = self.stream_errors([urdf.decode()])
        self.assertEqual(m["error"]["code"], "invalid_json")
        self.assertTrue(m["error"]["message"].endswith(
            '; this looks like XML: a URDF goes in the open message, as '
            '{"type":"open","stream":...,"chain":' + chain + '}'), m["error"]["message"])
        status, text = self.raw("POST", "/v1/solve", b"nonsense", {})
        self.assertNotIn("XML", json.loads(text)["error"]["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

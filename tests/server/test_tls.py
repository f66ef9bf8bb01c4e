"""
test_tls.py: ikd's own TLS (--tls-cert, --tls-key), with certificates made
here by openssl (no key is committed):

- curl --cacert solves over HTTPS, and the token is still asked for;
- a WSS stream (python3-websockets with an ssl context) opens, answers its
  targets in order, and carries a message of 200 KB each way through
  libmicrohttpd's TLS relay of the upgraded connection;
- plain HTTP on the TLS port gets no answer;
- a wrong key, a missing file, a key without its certificate and a file
  that is not PEM each stop ikd at startup with exit status 1 and a
  message naming the file, before it listens;
- SIGHUP reloads the certificate without dropping anyone: a stream opened
  before answers after, /readyz stays 200, new handshakes present the new
  certificate; a reload from a broken file keeps the one in use and says
  so in the log;
- a client that stalls mid-request gets the 408 of --request-timeout inside
  the TLS stream; one that stalls mid-handshake costs no CPU while it waits
  (libmicrohttpd 0.9.75's own TLS spun half a core on it) and is cut at
  the same deadline;
- ikd probe checks it over https; SIGTERM drains and ikd exits 0.
"""
import asyncio
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import BONES, IKD_BIN, SLOW, TIMEOUT, bones_target, run  # noqa: E402

import websockets  # noqa: E402

TOKEN = "tls-test-token"
SOLVE = {"chain": BONES, "target": {"position": [0.3, 0.6, 0.2]}}


def make_cert(d, name, cn):
    key, crt = os.path.join(d, name + ".key"), os.path.join(d, name + ".crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=" + cn,
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", crt], check=True, capture_output=True)
    return crt, key


def start(*args):
    """(process, port, log file) of an ikd on a free port, or raises."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([IKD_BIN, "--listen", "127.0.0.1:0", "--loops", "2", "--token", TOKEN,
                             *args],
                            stdout=subprocess.PIPE, stderr=log)
    line = proc.stdout.readline().decode()
    if not line.startswith("ikd listening on "):
        proc.kill()
        proc.wait()
        log.seek(0)
        raise RuntimeError("ikd did not start: %r %s" % (line, log.read().decode()))
    return proc, int(line.strip().rsplit(":", 1)[1]), log


def log_text(log):
    log.seek(0)
    return log.read().decode(errors="replace")


def curl(port, ca, path="/v1/solve", body=SOLVE, token=TOKEN):
    """(status, text) from curl over HTTPS, verifying with the CA file."""
    cmd = ["curl", "-s", "-S", "--max-time", str(int(10 * SLOW)), "--cacert", ca,
           "-w", "\n%{http_code}", "https://localhost:%d%s" % (port, path),
           "--resolve", "localhost:%d:127.0.0.1" % port]
    if token:
        cmd += ["-H", "Authorization: Bearer " + token]
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("curl failed (%d): %s" % (r.returncode, r.stderr))
    text, _, status = r.stdout.rpartition("\n")
    return int(status), text


def peer_cn(port):
    """The CN of the certificate a new handshake presents (not verified)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            der = t.getpeercert(binary_form=True)
    pem = ssl.DER_cert_to_PEM_cert(der)
    r = subprocess.run(["openssl", "x509", "-noout", "-subject"], input=pem, text=True,
                       capture_output=True, check=True)
    return r.stdout.strip().split("CN", 1)[1].lstrip(" =")


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ikd-tls-")
        cls.a_crt, cls.a_key = make_cert(cls.tmp, "a", "ikd-a")
        cls.b_crt, cls.b_key = make_cert(cls.tmp, "b", "ikd-b")
        # the files ikd is given, which the reload test overwrites
        cls.crt = os.path.join(cls.tmp, "live.crt")
        cls.key = os.path.join(cls.tmp, "live.key")
        shutil.copy(cls.a_crt, cls.crt)
        shutil.copy(cls.a_key, cls.key)
        cls.proc, cls.port, cls.log = start("--tls-cert", cls.crt, "--tls-key", cls.key,
                                            "--request-timeout", "2")
        cls.ca_a = ssl.create_default_context(cafile=cls.a_crt)

    @classmethod
    def tearDownClass(cls):
        if cls.proc.poll() is None:
            cls.proc.send_signal(signal.SIGTERM)
            cls.proc.wait(10 * SLOW)
        cls.proc.stdout.close()
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_a_https_solves(self):
        status, text = curl(self.port, self.a_crt)
        self.assertEqual(status, 200, text)
        self.assertEqual(json.loads(text)["status"], "success")
        status, text = curl(self.port, self.a_crt, token=None)
        self.assertEqual(status, 401, text)
        status, text = curl(self.port, self.a_crt, "/readyz", None, None)
        self.assertEqual(status, 200, text)

    async def stream(self, ctx, count, big=False):
        url = "wss://localhost:%d/v1/stream" % self.port
        async with websockets.connect(url, ssl=ctx, ping_interval=None, open_timeout=TIMEOUT,
                                      max_size=None,
                                      extra_headers={"Authorization": "Bearer " + TOKEN}) as ws:
            await ws.send(json.dumps({"type": "open", "stream": "s", "chain": BONES}))
            m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
            self.assertEqual(m["type"], "opened", m)
            for i in range(1, count + 1):
                await ws.send(json.dumps({"type": "target", "stream": "s", "seq": i,
                                          "target": bones_target(i)}))
                m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                self.assertEqual((m["type"], m["seq"]), ("solution", i), m)
                self.assertEqual(m["result"]["status"], "success", m)
            if big:
                # 200 KB in: an error naming the stream comes back; a batch of
                # answers larger than the relay's buffers comes out
                await ws.send(json.dumps({"type": "target", "stream": "s", "seq": 0,
                                          "pad": "x" * 200000}))
                m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                self.assertEqual(m["type"], "error", m)
                for i in range(count + 1, count + 400):
                    await ws.send(json.dumps({"type": "target", "stream": "s", "seq": i,
                                              "target": bones_target(i)}))
                last, n = 0, 0
                while last != count + 399:
                    m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                    self.assertEqual(m["type"], "solution", m)
                    self.assertGreater(m["seq"], last)
                    last = m["seq"]
                    n += 1 + m.get("skipped", 0)
                self.assertEqual(n, 399)
            return True

    def test_b_wss_stream(self):
        self.assertTrue(run(self.stream(self.ca_a, 50, big=True)))

    def test_c_probe(self):
        """ikd probe (the image's health check) over https: by URL, and
        without one where the environment says ikd serves TLS."""
        r = subprocess.run([IKD_BIN, "probe", "https://127.0.0.1:%d" % self.port],
                           capture_output=True, text=True, timeout=10 * SLOW)
        self.assertEqual(r.returncode, 0, r.stderr)
        env = dict(os.environ, IKD_LISTEN="0.0.0.0:%d" % self.port, IKD_TLS_CERT=self.crt)
        r = subprocess.run([IKD_BIN, "probe"], env=env, capture_output=True, text=True,
                           timeout=10 * SLOW)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([IKD_BIN, "probe", "http://127.0.0.1:%d" % self.port],
                           capture_output=True, text=True, timeout=10 * SLOW)
        self.assertEqual(r.returncode, 1, r.stderr)

    def test_c_plain_http_is_not_served(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT) as s:
            s.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                got = s.recv(4096)
            except (ConnectionResetError, socket.timeout):
                got = b""
        self.assertNotIn(b"HTTP/1.1 200", got)

    def test_d_stalled_request_is_cut(self):
        ctx = ssl.create_default_context(cafile=self.a_crt)
        with socket.create_connection(("127.0.0.1", self.port), timeout=10 * SLOW) as s:
            with ctx.wrap_socket(s, server_hostname="localhost") as t:
                t.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n")  # never ends
                start_t = time.monotonic()
                got = b""
                try:
                    while True:
                        chunk = t.recv(4096)
                        if not chunk:
                            break
                        got += chunk
                except (ConnectionResetError, ssl.SSLError, socket.timeout):
                    pass
                self.assertLess(time.monotonic() - start_t, 8 * SLOW)
        # the 408 of the request deadline, inside the TLS stream
        self.assertTrue(got.startswith(b"HTTP/1.1 408 "), got)
        self.assertIn(b"request_timeout", got)
        status, _ = curl(self.port, self.a_crt, "/livez", None, None)
        self.assertEqual(status, 200)

    def test_d_stalled_handshake_costs_nothing(self):
        """A client that connects and sends no handshake (or half of one)
        costs ikd no CPU while it waits, and is cut at the deadline
        (libmicrohttpd 0.9.75's own TLS ran such a connection in a busy
        loop: half a core)."""
        def cpu():
            with open("/proc/%d/stat" % self.proc.pid) as f:
                v = f.read().rsplit(")", 1)[1].split()
            return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
        with socket.create_connection(("127.0.0.1", self.port), timeout=10 * SLOW) as s:
            s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello's start
            c0, t0 = cpu(), time.monotonic()
            time.sleep(1.0)
            self.assertLess(cpu() - c0, 0.15, "ikd burns CPU while a handshake waits")
            # cut at --request-timeout (2 s here)
            s.settimeout(6 * SLOW)
            try:
                self.assertEqual(s.recv(4096), b"")
            except ConnectionResetError:
                pass
            self.assertLess(time.monotonic() - t0, 5 * SLOW)

    def test_e_sighup_reloads_without_dropping(self):
        self.assertEqual(peer_cn(self.port), "ikd-a")

        async def main():
            url = "wss://localhost:%d/v1/stream" % self.port
            async with websockets.connect(url, ssl=self.ca_a, ping_interval=None,
                                          open_timeout=TIMEOUT, extra_headers={
                                              "Authorization": "Bearer " + TOKEN}) as ws:
                await ws.send(json.dumps({"type": "open", "stream": "s", "chain": BONES}))
                self.assertEqual(json.loads(await ws.recv())["type"], "opened")
                # the new pair in place, then SIGHUP
                shutil.copy(self.b_crt, self.crt)
                shutil.copy(self.b_key, self.key)
                self.proc.send_signal(signal.SIGHUP)
                deadline = time.monotonic() + 5 * SLOW
                while "TLS certificate reloaded" not in log_text(self.log):
                    self.assertLess(time.monotonic(), deadline, log_text(self.log))
                    await asyncio.sleep(0.05)
                # the stream opened before goes on
                for i in range(1, 20):
                    await ws.send(json.dumps({"type": "target", "stream": "s", "seq": i,
                                              "target": bones_target(i)}))
                    m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                    self.assertEqual((m["type"], m["seq"]), ("solution", i), m)
        run(main())
        self.assertIsNone(self.proc.poll(), "SIGHUP stopped ikd")
        self.assertEqual(peer_cn(self.port), "ikd-b")
        # the reload reached both loops: connections held open spread over
        # them (a loop two above the other hands the next one over), and
        # each handshake presents the new certificate
        held = []
        try:
            for _ in range(4):
                s = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
                t = ssl.create_default_context(cafile=self.b_crt).wrap_socket(
                    s, server_hostname="localhost")
                held.append(t)
            status, text = curl(self.port, self.b_crt, "/metrics", None)
            self.assertEqual(status, 200, text)
            per_loop = [int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                        if line.startswith("ikd_loop_connections{")]
            self.assertEqual(len(per_loop), 2, text)
            self.assertTrue(all(n >= 1 for n in per_loop), per_loop)
        finally:
            for t in held:
                t.close()
        status, text = curl(self.port, self.b_crt, "/readyz", None, None)
        self.assertEqual(status, 200, text)
        status, text = curl(self.port, self.b_crt)
        self.assertEqual(status, 200, text)
        # a broken pair: the one in use stays, the log says why
        with open(self.key, "w") as f:
            f.write("not a key\n")
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5 * SLOW
        while "was not reloaded" not in log_text(self.log):
            self.assertLess(time.monotonic(), deadline, log_text(self.log))
            time.sleep(0.05)
        self.assertIn(self.key, log_text(self.log))
        self.assertEqual(peer_cn(self.port), "ikd-b")
        shutil.copy(self.b_key, self.key)


class StartupTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ikd-tls-start-")
        cls.a_crt, cls.a_key = make_cert(cls.tmp, "a", "ikd-a")
        cls.b_crt, cls.b_key = make_cert(cls.tmp, "b", "ikd-b")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def refused(self, args, *words):
        r = subprocess.run([IKD_BIN, "--listen", "127.0.0.1:0", *args], capture_output=True,
                           text=True, timeout=10 * SLOW)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("listening", r.stdout)
        for w in words:
            self.assertIn(w, r.stderr)

    def test_wrong_key(self):
        self.refused(["--tls-cert", self.a_crt, "--tls-key", self.b_key], self.a_crt, self.b_key,
                     "do not match")

    def test_missing_or_unreadable(self):
        missing = os.path.join(self.tmp, "missing.pem")
        self.refused(["--tls-cert", missing, "--tls-key", self.a_key], missing,
                     "No such file")
        self.refused(["--tls-cert", self.a_crt], "--tls-key")
        with open(os.path.join(self.tmp, "empty.pem"), "w"):
            pass
        self.refused(["--tls-cert", self.a_crt, "--tls-key", os.path.join(self.tmp, "empty.pem")],
                     "empty")
        self.refused(["--tls-cert", self.a_key, "--tls-key", self.a_key], self.a_key)

    def test_environment(self):
        env = dict(os.environ, IKD_TLS_CERT=self.a_crt, IKD_TLS_KEY=self.a_key)
        proc = subprocess.Popen([IKD_BIN, "--listen", "127.0.0.1:0"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            line = proc.stdout.readline().decode()
            self.assertTrue(line.startswith("ikd listening on "), line)
            port = int(line.strip().rsplit(":", 1)[1])
            status, _ = curl(port, self.a_crt, "/livez", None, None)
            self.assertEqual(status, 200)
        finally:
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(10 * SLOW), 0)
            proc.stdout.close()

    def test_handshakes_count_against_the_address_limit(self):
        """A TLS connection is admitted at its accept: connections that have
        not finished (or begun) their handshake hold their place under
        --max-connections-per-address, on whichever loop took them."""
        proc, port, log = start("--tls-cert", self.a_crt, "--tls-key", self.a_key,
                                "--max-connections-per-address", "2")
        held = []
        try:
            held = [socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
                    for _ in range(2)]
            time.sleep(0.2 * SLOW)  # both accepted
            third = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
            try:
                self.assertEqual(third.recv(1), b"", "a third connection was served")
            except ConnectionResetError:
                pass
            finally:
                third.close()
            held.pop().close()
            deadline = time.monotonic() + 5 * SLOW
            while True:  # its place is given back
                try:
                    status, _ = curl(port, self.a_crt, "/livez", None, None)
                    break
                except RuntimeError:
                    self.assertLess(time.monotonic(), deadline, log_text(log))
                    time.sleep(0.05)
            self.assertEqual(status, 200)
        finally:
            for h in held:
                h.close()
            proc.send_signal(signal.SIGTERM)
            proc.wait(10 * SLOW)
            proc.stdout.close()


if __name__ == "__main__":
    unittest.main()

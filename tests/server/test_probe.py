"""
test_probe.py: `ikd probe [URL]`, the image's health check, against the
real daemon: 0 for /livez and /readyz (no token needed, even when ikd has
one), a base URL (http://HOST:PORT, with or without a trailing "/") read
as its /livez, without a URL at IKD_LISTEN (a wildcard host read as
loopback), 1 with the reason on standard error for an answer other than 200, a
closed port, a daemon that accepts but never answers (within its 2-second
deadline), and a URL it does not take.
"""
import os
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import Daemon, IKD_BIN, SLOW  # noqa: E402


def probe(*args, env=None):
    e = dict(os.environ)
    e.pop("IKD_LISTEN", None)
    e.update(env or {})
    r = subprocess.run([IKD_BIN, "probe", *args], capture_output=True, text=True,
                       timeout=10 * SLOW, env=e)
    return r.returncode, r.stderr


class ProbeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--token", "probe-test-token")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_live_and_ready(self):
        for path in ("/livez", "/readyz"):
            rc, err = probe("http://127.0.0.1:%d%s" % (self.d.port, path))
            self.assertEqual((rc, err), (0, ""), path)
        rc, _ = probe("http://localhost:%d/livez" % self.d.port)
        self.assertEqual(rc, 0)

    def test_base_url_probes_livez(self):
        # this daemon serves no page: its "/" answers 404, so a 0 here is
        # the probe of /livez
        base = "http://127.0.0.1:%d" % self.d.port
        status, _ = self.d.http("GET", "/")
        self.assertEqual(status, 404)
        for url in (base, base + "/", "http://localhost:%d" % self.d.port):
            rc, err = probe(url)
            self.assertEqual((rc, err), (0, ""), url)
        # a path is probed as given, and a failure names the URL probed
        rc, err = probe(base + "/metrics")
        self.assertEqual(rc, 1)
        self.assertIn(base + "/metrics answered 401", err)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
        s.close()
        rc, err = probe("http://127.0.0.1:%d" % closed)
        self.assertEqual(rc, 1)
        self.assertIn("http://127.0.0.1:%d/livez" % closed, err)

    def test_without_url_follows_ikd_listen(self):
        for host in ("127.0.0.1", "0.0.0.0"):
            rc, err = probe(env={"IKD_LISTEN": "%s:%d" % (host, self.d.port)})
            self.assertEqual((rc, err), (0, ""), host)
        rc, err = probe(env={"IKD_LISTEN": "nonsense"})
        self.assertEqual(rc, 1)
        self.assertIn("IKD_LISTEN", err)

    def test_other_status_fails(self):
        rc, err = probe("http://127.0.0.1:%d/metrics" % self.d.port)
        self.assertEqual(rc, 1)
        self.assertIn("answered 401", err)

    def test_closed_port_fails(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        rc, err = probe("http://127.0.0.1:%d/livez" % port)
        self.assertEqual(rc, 1)
        self.assertIn("cannot connect", err)

    def test_silent_server_times_out(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        try:
            t0 = time.monotonic()
            rc, err = probe("http://127.0.0.1:%d/livez" % s.getsockname()[1])
            self.assertEqual(rc, 1)
            self.assertIn("timed out", err)
            self.assertLess(time.monotonic() - t0, 8 * SLOW)
        finally:
            s.close()

    def test_bad_urls_refused(self):
        for url in ("https://127.0.0.1/livez", "ftp://x", "http://example.com/livez",
                    "http://127.0.0.1:99999/", "http://127.0.0.1:80livez"):
            rc, err = probe(url)
            self.assertEqual(rc, 1, url)
            self.assertTrue(err.startswith("ikd probe: "), (url, err))


if __name__ == "__main__":
    unittest.main()

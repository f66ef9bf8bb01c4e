"""
test_fail_closed.py: what the real daemon refuses rather than lets through,
each one a case that used to pass (issue 24, "fail closed"):

- startup: an empty IKD_TOKEN (it counted as unset and opened every
  endpoint) and --connection-memory past its bound (1G started, and made
  an idle keep-alive client wait 27 s) stop ikd with exit status 2 and a
  message naming what was wrong, before it listens;
- NUL bytes: a header line holding a NUL with more after it
  ("Authorization: Bearer <token>\\0junk" authorised the request, as if
  the junk were not there) and a URL holding an encoded (%00) or raw NUL
  ("GET /index.html%00" served the page) are answered 400 with a message
  that says so, and ikd keeps serving the next request; a header folded
  onto a second line (obsolete, RFC 9112) is refused too;
- the bearer token offered in a second Sec-WebSocket-Protocol header line
  (RFC 6455 lets the list take several lines) opens the stream, where it
  was refused with 401;
- a number out of range is named in the error so that it reads back as
  sent (1000000.5 printed as 1e+06 next to a bound of 1e+06).

Raw sockets carry what a well-behaved HTTP library refuses to send.
"""
import base64
import json
import os
import socket
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import IKD_BIN, TIMEOUT, Daemon  # noqa: E402

TOKEN = "fail-closed-token"
WEB = os.path.join(os.environ.get("IKD_BUILD", "build"), "web")


def raw(port, data):
    """The status line and the body of the one answer to the bytes sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(data)
        got = b""
        while True:
            head, sep, body = got.partition(b"\r\n\r\n")
            if sep:
                n = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
                     if l.lower().startswith(b"content-length:")]
                if n and len(body) >= n[0]:
                    break
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(), body.decode(errors="replace")


def request(path, *headers, auth=True):
    lines = ["GET %s HTTP/1.1" % path, "Host: x"]
    if auth:
        lines.append("Authorization: Bearer " + TOKEN)
    lines += list(headers) + ["Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


class StartupTest(unittest.TestCase):
    def start(self, args, env):
        e = dict(os.environ)
        for k in [k for k in e if k.startswith("IKD_") and k not in ("IKD_BIN", "IKD_DATA")]:
            del e[k]
        e.update(env)
        return subprocess.run([IKD_BIN, "--listen", "127.0.0.1:0", *args], env=e,
                              capture_output=True, text=True, timeout=10)

    def test_empty_token_variable_is_refused(self):
        r = self.start([], {"IKD_TOKEN": ""})
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertNotIn("listening", r.stdout)
        self.assertIn("IKD_TOKEN", r.stderr)
        self.assertIn("empty", r.stderr)

    def test_connection_memory_is_bounded(self):
        for value in ("1G", "18446744073709551615"):
            r = self.start(["--connection-memory", value], {})
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertNotIn("listening", r.stdout)
            self.assertIn("--connection-memory", r.stderr)
            self.assertIn("8K to 1M", r.stderr)
        r = self.start([], {"IKD_CONNECTION_MEMORY": "2G"})
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("IKD_CONNECTION_MEMORY", r.stderr)


class RequestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        args = ["--token", TOKEN]
        if os.path.isdir(WEB):
            args += ["--web", WEB]
        cls.d = Daemon(*args)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def assert_refused(self, data, words):
        status, body = raw(self.d.port, data)
        self.assertTrue(status.startswith("HTTP/1.1 400"), (status, body))
        err = json.loads(body)["error"]
        self.assertEqual(err["code"], "invalid_request", err)
        for w in words:
            self.assertIn(w, err["message"])
        # and the daemon serves the next request
        status, _ = raw(self.d.port, request("/livez"))
        self.assertTrue(status.startswith("HTTP/1.1 200"), status)

    def test_nul_in_a_header(self):
        self.assertTrue(raw(self.d.port, request("/v1/solvers"))[0].endswith("200 OK"))
        self.assert_refused(request("/v1/solvers", auth=False).replace(
            b"Host: x", b"Host: x\r\nAuthorization: Bearer " + TOKEN.encode() + b"\0junk"),
            ["Authorization", "NUL"])
        self.assert_refused(request("/v1/solvers", "X-Note: a\0b"), ["X-Note", "NUL"])
        # the last header before the empty line
        self.assert_refused(request("/v1/solvers").replace(
            b"Connection: close\r\n", b"Connection: close\r\nX-Last: y\0z\r\n"), ["NUL"])
        # a line folded onto the next (obs-fold)
        self.assert_refused(request("/v1/solvers", "X-Note: a", " b"), ["X-Note"])

    def test_nul_in_the_url(self):
        for path in (b"/livez%00", b"/livez%00.json", b"/v1/solvers?x=%00",
                     b"/livez\0.x", b"/livez\0HTTP/1.1"):
            with self.subTest(path=path):
                data = request("/P").replace(b"/P", path)
                self.assert_refused(data, ["NUL"])
        if os.path.isdir(WEB):
            status, _ = raw(self.d.port, request("/index.html", auth=False))
            self.assertTrue(status.endswith("200 OK"), status)
            self.assert_refused(request("/index.html%00", auth=False), ["NUL"])

    def test_content_lengths_that_disagree(self):
        """Two Content-Length headers with different values (which a proxy
        in front may read the other way: request smuggling) are refused
        (before: the first was taken and the solve answered 200); the same
        value twice is one length."""
        body = json.dumps({"chain": {"kind": "planar", "lengths": [1.0, 1.0]},
                           "target": {"position": [1.2, 0.5]}}).encode()
        post = request("/v1/solve").replace(b"GET", b"POST")[:-2]
        twice = b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n"
        self.assert_refused(post + twice % (len(body), 3) + body, ["Content-Length"])
        status, _ = raw(self.d.port, post + twice % (len(body), len(body)) + body)
        self.assertTrue(status.endswith("200 OK"), status)

    def test_content_length_with_transfer_encoding(self):
        """Content-Length and Transfer-Encoding together (a proxy in front
        may frame the body by the length, ikd by the chunks: request
        smuggling; RFC 9112 6.1) are refused, in either order (before: the
        chunks were read and the solve answered 200)."""
        body = json.dumps({"chain": {"kind": "planar", "lengths": [1.0, 1.0]},
                           "target": {"position": [1.2, 0.5]}}).encode()
        post = request("/v1/solve").replace(b"GET", b"POST")[:-2]
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        for heads in (b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n",
                      b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n"):
            with self.subTest(heads=heads):
                self.assert_refused(post + heads + b"\r\n" + chunked,
                                    ["Content-Length", "Transfer-Encoding"])

    def test_bytes_that_are_not_utf8_in_the_url(self):
        """A URL holding bytes that are not UTF-8 (raw, percent-encoded, or
        a character cut where the message quotes 200 bytes of it) is told
        what it named, with those bytes as '?'; before, the answer read
        {"code":"internal","message":"out of memory"} whatever the status."""
        cases = ((b"/v1/chains/%ff%fe", 404, "unknown_chain", 'id "??"'),
                 (b"/v1/scenes/ab\xc3", 404, "unknown_scene", 'id "ab?"'),
                 (b"/nope/\xff", 404, "not_found", "/nope/?"),
                 (b"/" + b"a" * 198 + "é".encode(), 404, "not_found", "a?"))
        for path, status, code, words in cases:
            with self.subTest(path=path[:20]):
                line, body = raw(self.d.port, request("/P").replace(b"/P", path))
                self.assertTrue(line.startswith("HTTP/1.1 %d" % status), (line, body))
                err = json.loads(body)["error"]
                self.assertEqual(err["code"], code, err)
                self.assertIn(words, err["message"])

    def test_subprotocols_over_two_lines(self):
        bearer = "base64url.bearer.ikd." + base64.urlsafe_b64encode(
            TOKEN.encode()).decode().rstrip("=")
        key = base64.b64encode(os.urandom(16)).decode()
        up = ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
              "Sec-WebSocket-Version: 13"]
        lines = ["GET /v1/stream HTTP/1.1", "Host: x"] + up + [
            "Sec-WebSocket-Protocol: ikd.v1", "Sec-WebSocket-Protocol: " + bearer, "", ""]
        with socket.create_connection(("127.0.0.1", self.d.port), timeout=TIMEOUT) as s:
            s.sendall("\r\n".join(lines).encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                self.assertTrue(chunk, "closed: %r" % head)
                head += chunk
        status = head.split(b"\r\n")[0]
        self.assertIn(b" 101 ", status, head)
        self.assertIn(b"Sec-WebSocket-Protocol: ikd.v1", head)
        # a wrong token on the second line is still refused
        lines[-3] = "Sec-WebSocket-Protocol: base64url.bearer.ikd.d3Jvbmc"
        status, body = raw(self.d.port, "\r\n".join(lines).encode())
        self.assertIn("401", status, body)

    def test_range_error_numbers_round_trip(self):
        body = json.dumps({"chain": {"kind": "bones",
                                     "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1, 0]]},
                           "target": {"position": [0.3, 0.6, 1000000.5]}})
        data = ("POST /v1/solve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\n"
                "Connection: close\r\n\r\n%s" % (TOKEN, len(body), body)).encode()
        status, text = raw(self.d.port, data)
        self.assertIn("400", status, text)
        msg = json.loads(text)["error"]["message"]
        self.assertIn("(got 1000000.5)", msg)
        self.assertIn("[-1000000, 1000000]", msg)


if __name__ == "__main__":
    unittest.main()

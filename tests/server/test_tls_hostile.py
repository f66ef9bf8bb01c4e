"""
test_tls_hostile.py: ikd's own TLS (--tls-cert) against hostile clients,
with certificates made here by openssl as test_tls.py makes them:

- a handshake that never ends its ClientHello (a 3-byte length says up to
  16 MB) is cut once it has sent more than any real client sends, before
  ikd holds it: the memory of many such handshakes stays small, and a
  well-behaved client is served meanwhile.
"""
import os
import shutil
import signal
import socket
import ssl
import struct
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stream import SLOW, TIMEOUT  # noqa: E402
from test_tls import TOKEN, curl, log_text, make_cert, start  # noqa: E402


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def client_hello_records(declared, sent):
    """The first `sent` bytes of a ClientHello whose header declares
    `declared` bytes, as handshake records of at most 16 KiB."""
    msg = b"\x01" + struct.pack(">I", declared)[1:] + b"\x03\x03" + b"\x00" * (sent - 6)
    out = b""
    for i in range(0, len(msg), 16384):
        chunk = msg[i:i + 16384]
        out += b"\x16\x03\x01" + struct.pack(">H", len(chunk)) + chunk
    return out


def closed_by_peer(s, wait):
    """True when the peer closed or reset s within `wait` seconds."""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


class HostileTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ikd-tls-hostile-")
        cls.crt, cls.key = make_cert(cls.tmp, "a", "ikd-a")
        cls.proc, cls.port, cls.log = start("--tls-cert", cls.crt, "--tls-key", cls.key)

    @classmethod
    def tearDownClass(cls):
        if cls.proc.poll() is None:
            cls.proc.send_signal(signal.SIGTERM)
            cls.proc.wait(10 * SLOW)
        cls.proc.stdout.close()
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertIsNone(self.proc.poll(), log_text(self.log))

    def test_huge_client_hello_is_cut(self):
        """40 connections each send 400 KB of a ClientHello that says it is
        16 MB and never finish it: each is cut (within the handshake's 10 s
        it would otherwise hold all it got), and ikd's memory grows by far
        less than what they sent (it held every byte: 16 MB a connection)."""
        blob = client_hello_records(0xFFFFFF, 400 * 1024)
        before = rss_kb(self.proc.pid)
        held = []
        try:
            for _ in range(40):
                s = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
                held.append(s)
                try:
                    s.sendall(blob)
                except (ConnectionResetError, BrokenPipeError):
                    pass
            time.sleep(0.5 * SLOW)  # ikd has read what it reads
            grown = rss_kb(self.proc.pid) - before
            self.assertLess(grown, 8 * 1024, "ikd holds %d KB for 40 handshakes" % grown)
            for s in held:
                self.assertTrue(closed_by_peer(s, 3 * SLOW), "a 16 MB ClientHello is held")
            status, _ = curl(self.port, self.crt, "/livez", None, None)
            self.assertEqual(status, 200)
        finally:
            for s in held:
                s.close()


if __name__ == "__main__":
    unittest.main()

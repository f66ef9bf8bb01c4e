"""
test_tls_hostile.py: ikd's own TLS (--tls-cert) against hostile clients,
with certificates made here by openssl as test_tls.py makes them:

- a handshake that never ends its ClientHello (a 3-byte length says up to
  16 MB) is cut once it has sent more than any real client sends, before
  ikd holds it: the memory of many such handshakes stays small, and a
  well-behaved client is served meanwhile;
- after a TLS 1.3 handshake, a post-handshake message that never ends
  (records of the client's own making, encrypted with the keys Python's
  key log gives) is cut the same way;
- a client that sends two requests and then ends its TCP stream without
  a close_notify (shutdown(SHUT_WR), as plain HTTP clients do) gets both
  answers, as over plain HTTP (GnuTLS took the end for an error that
  ended the session, and both answers were dropped);
- HTTPS clients that pipeline requests for large answers and never read
  are let go: once libmicrohttpd has dropped them (--timeout), the front
  learns of it even while its writes wait (it did not: it held the
  connection's socket, its end of the socketpair and its buffers for ever,
  counted by no connection limit), and gives the last bytes --timeout more
  before it closes the connection.
"""
import ctypes
import ctypes.util
import hashlib
import hmac
import json
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
from test_stream import BONES, SLOW, TIMEOUT  # noqa: E402
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


_crypto = ctypes.CDLL(ctypes.util.find_library("crypto"))
for _f in ("EVP_CIPHER_CTX_new", "EVP_aes_128_gcm", "EVP_aes_256_gcm"):
    getattr(_crypto, _f).restype = ctypes.c_void_p
_crypto.EVP_CIPHER_CTX_free.argtypes = [ctypes.c_void_p]
_crypto.EVP_EncryptInit_ex.argtypes = [ctypes.c_void_p] * 5
_crypto.EVP_CIPHER_CTX_ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                        ctypes.c_void_p]
_crypto.EVP_EncryptUpdate.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int]
_crypto.EVP_EncryptFinal_ex.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_int)]


def aes_gcm(key, nonce, plain, aad):
    """AES-GCM with OpenSSL's libcrypto: ciphertext and its 16-byte tag."""
    ctx = _crypto.EVP_CIPHER_CTX_new()
    try:
        cipher = _crypto.EVP_aes_128_gcm() if len(key) == 16 else _crypto.EVP_aes_256_gcm()
        out = ctypes.create_string_buffer(len(plain) + 32)
        n = ctypes.c_int(0)
        ok = (_crypto.EVP_EncryptInit_ex(ctx, cipher, None, None, None) == 1 and
              _crypto.EVP_CIPHER_CTX_ctrl(ctx, 0x9, len(nonce), None) == 1 and  # IVLEN
              _crypto.EVP_EncryptInit_ex(ctx, None, None, key, nonce) == 1 and
              _crypto.EVP_EncryptUpdate(ctx, None, ctypes.byref(n), aad, len(aad)) == 1 and
              _crypto.EVP_EncryptUpdate(ctx, out, ctypes.byref(n), plain, len(plain)) == 1)
        got = out.raw[:n.value]
        tag = ctypes.create_string_buffer(16)
        ok = ok and (_crypto.EVP_EncryptFinal_ex(ctx, out, ctypes.byref(n)) == 1 and
                     _crypto.EVP_CIPHER_CTX_ctrl(ctx, 0x10, 16, tag) == 1)  # GET_TAG
        if not ok:
            raise RuntimeError("libcrypto's AES-GCM failed")
        return got + tag.raw
    finally:
        _crypto.EVP_CIPHER_CTX_free(ctx)


def expand_label(h, secret, label, n):
    """TLS 1.3's HKDF-Expand-Label with an empty context."""
    label = b"tls13 " + label
    info = struct.pack(">H", n) + bytes([len(label)]) + label + b"\x00"
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(secret, t + info + bytes([i]), h).digest()
        out += t
        i += 1
    return out[:n]


class Tls13Raw:
    """A TLS 1.3 client whose handshake is Python's (over memory BIOs, on a
    socket of its own) and whose records after it are its own making, any
    content type, encrypted with the key log's client traffic secret."""

    def __init__(self, port, cafile, tmp):
        keylog = os.path.join(tmp, "keylog")
        ctx = ssl.create_default_context(cafile=cafile)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.keylog_filename = keylog
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.sock.sendall(out.read())
                got = self.sock.recv(65536)
                if not got:
                    raise ConnectionError("closed during the handshake")
                inc.write(got)
        self.sock.sendall(out.read())  # the client's Finished
        cipher = obj.cipher()[0]
        if "GCM" not in cipher:
            raise RuntimeError("unexpected cipher " + cipher)
        h = hashlib.sha384 if cipher.endswith("SHA384") else hashlib.sha256
        with open(keylog) as f:
            secret = [bytes.fromhex(line.split()[2]) for line in f
                      if line.startswith("CLIENT_TRAFFIC_SECRET_0 ")][-1]
        os.unlink(keylog)
        self.key = expand_label(h, secret, b"key", 32 if "AES_256" in cipher else 16)
        self.iv = expand_label(h, secret, b"iv", 12)
        self.seq = 0

    def send(self, ctype, data):
        plain = data + bytes([ctype])
        nonce = bytes(a ^ b for a, b in zip(self.iv, bytes(4) + struct.pack(">Q", self.seq)))
        head = b"\x17\x03\x03" + struct.pack(">H", len(plain) + 16)
        self.seq += 1
        self.sock.sendall(head + aes_gcm(self.key, nonce, plain, head))


def solve_request():
    body = json.dumps({"chain": BONES, "target": {"position": [0.3, 0.6, 0.2]}}).encode()
    return (b"POST /v1/solve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
            b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) +
            body)


def closed_by_peer(s, wait):
    """True when the peer closed or reset s within `wait` seconds (after
    an alert, say)."""
    s.settimeout(wait)
    end = time.monotonic() + wait
    try:
        while time.monotonic() < end:
            if s.recv(65536) == b"":
                return True
        return False
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

    def test_huge_post_handshake_message_is_cut(self):
        """After a TLS 1.3 handshake, 20 connections each send a
        post-handshake message (a KeyUpdate) that says it is 16 MB, 400 KB
        of it: each is cut, ikd's memory grows by far less than what they
        sent (it held every byte), and a request on a connection that
        sends data goes on being answered."""
        before = rss_kb(self.proc.pid)
        held = []
        try:
            for _ in range(20):
                c = Tls13Raw(self.port, self.crt, self.tmp)
                held.append(c)
                try:
                    c.send(22, b"\x18\xff\xff\xff" + bytes(16380))
                    for _ in range(24):
                        c.send(22, bytes(16384))
                except (ConnectionResetError, BrokenPipeError):
                    pass
            time.sleep(0.5 * SLOW)
            grown = rss_kb(self.proc.pid) - before
            if SLOW == 1:  # (a sanitizer's quarantine keeps what 20 handshakes freed)
                self.assertLess(grown, 4 * 1024, "ikd holds %d KB for 20 connections" % grown)
            for c in held:
                self.assertTrue(closed_by_peer(c.sock, 3 * SLOW), "a 16 MB message is held")
            # data in records of 16 KiB, each with its overhead, passes
            c = Tls13Raw(self.port, self.crt, self.tmp)
            held.append(c)
            body = b'{"pad": "' + b"x" * 200000 + b'"}'
            req = (b"POST /v1/solve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                   TOKEN.encode() + b"\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(body)) + body
            for i in range(0, len(req), 16384):
                c.send(23, req[i:i + 16384])
            c.sock.settimeout(TIMEOUT)
            self.assertGreater(len(c.sock.recv(65536)), 0, "no answer to a request of 200 KB")
        finally:
            for c in held:
                c.sock.close()

    def test_end_of_tcp_stream_after_requests(self):
        ctx = ssl.create_default_context(cafile=self.crt)
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
        try:
            while True:
                try:
                    obj.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    sock.sendall(out.read())
                    inc.write(sock.recv(65536))
            sock.sendall(out.read())  # the client's Finished
            obj.write(solve_request() * 2)
            sock.sendall(out.read())
            sock.shutdown(socket.SHUT_WR)  # no close_notify
            got = b""
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                inc.write(data)
                try:
                    while True:
                        plain = obj.read(65536)
                        if not plain:  # the close_notify
                            break
                        got += plain
                except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                    pass
            self.assertEqual(got.count(b"HTTP/1.1 200 OK"), 2, got)
        finally:
            sock.close()


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class UnreadTest(unittest.TestCase):
    """An ikd of its own, with --timeout 1."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ikd-tls-unread-")
        cls.crt, cls.key = make_cert(cls.tmp, "a", "ikd-a")
        cls.proc, cls.port, cls.log = start("--tls-cert", cls.crt, "--tls-key", cls.key,
                                            "--timeout", "1")

    @classmethod
    def tearDownClass(cls):
        if cls.proc.poll() is None:
            cls.proc.send_signal(signal.SIGTERM)
            cls.proc.wait(10 * SLOW)
        cls.proc.stdout.close()
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_client_that_never_reads_is_let_go(self):
        time.sleep(0.2 * SLOW)
        base = open_fds(self.proc.pid)
        ctx = ssl.create_default_context(cafile=self.crt)
        held = []
        try:
            for _ in range(10):
                raw = socket.socket()
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                raw.settimeout(TIMEOUT)
                raw.connect(("127.0.0.1", self.port))
                t = ctx.wrap_socket(raw, server_hostname="localhost")
                held.append(t)
                # 60 answers of 136 KB: more than the sockets between take
                t.sendall(b"GET /openapi.yaml HTTP/1.1\r\nHost: x\r\n\r\n" * 60)
            self.assertGreater(open_fds(self.proc.pid), base)  # (--timeout 1 runs)
            deadline = time.monotonic() + 8 * SLOW
            while open_fds(self.proc.pid) > base:
                self.assertLess(time.monotonic(), deadline,
                                "ikd holds %d descriptors for clients that do not read" %
                                (open_fds(self.proc.pid) - base))
                time.sleep(0.1)
            status, _ = curl(self.port, self.crt, "/livez", None, None)
            self.assertEqual(status, 200)
        finally:
            for t in held:
                t.close()


if __name__ == "__main__":
    unittest.main()

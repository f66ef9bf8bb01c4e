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
  before it closes the connection;
- while it gives them that time, the connection still counts against
  --max-connections and --max-connections-per-address (it counted no more
  once libmicrohttpd had dropped it: clients that never read held twice
  the limits' connections and more, each with its socket, two buffers and
  a GnuTLS session), and a good client is served once slots are free;
- an answer the kernel took whole (Connection: close) for a client that
  never reads keeps its connection and slot until the kernel has sent it,
  and is reset after --timeout (ikd closed the socket at once, and the
  kernel held the bytes for minutes and more, counted by no limit), while
  a client that reads such an answer slowly but steadily gets all of it
  (--timeout counts from its last progress).
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

    def test_slow_reader_gets_the_whole_answer(self):
        """A client that reads an answer of 136 KB with Connection: close
        slowly but steadily (4 KB every 0.1 s: 3 s and more, --timeout is
        1) gets all of it: --timeout counts from the client's last
        progress, not from libmicrohttpd's close."""
        ctx = ssl.create_default_context(cafile=self.crt)
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.settimeout(TIMEOUT)
        raw.connect(("127.0.0.1", self.port))
        with ctx.wrap_socket(raw, server_hostname="localhost") as t:
            t.sendall(b"GET /openapi.yaml HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            got = b""
            try:
                while True:
                    data = t.recv(4096)
                    if not data:
                        break
                    got += data
                    time.sleep(0.1)  # (a slow client's pace, not a wait)
            except (ConnectionResetError, ssl.SSLError) as e:
                self.fail("cut after %d bytes: %r" % (len(got), e))
        head, _, body = got.partition(b"\r\n\r\n")
        length = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:")]
        self.assertTrue(head.startswith(b"HTTP/1.1 200 "), head[:100])
        self.assertEqual(length, [len(body)])
        self.assertGreater(len(body), 100000)


def kernel_queued(port):
    """The TCP sockets of ikd's port (ikd's or left to the kernel once ikd
    closed them) with bytes not yet taken by their client: the state of
    each (01 established, 04 FIN-WAIT-1, ...) by the client's port."""
    states = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            p = line.split()
            if (int(p[1].split(":")[1], 16) == port and p[3] != "0A" and  # not LISTEN
                    int(p[4].split(":")[0], 16) > 0):
                states[int(p[2].split(":")[1], 16)] = p[3]
    return states


def ikd_sockets(pid, port):
    """What ikd holds now, from /proc: its established TCP connections on
    its port by client address, its Unix sockets (both ends of a TLS
    connection's socketpair while libmicrohttpd has it, the front's end
    alone after) and its descriptors."""
    inodes = set()
    fds = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        fds += 1
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    by_addr = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            p = line.split()
            local, remote, state, inode = p[1], p[2], p[3], int(p[9])
            if inode in inodes and state == "01" and int(local.split(":")[1], 16) == port:
                addr = socket.inet_ntoa(bytes.fromhex(remote.split(":")[0])[::-1])
                by_addr[addr] = by_addr.get(addr, 0) + 1
    unix = 0
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            p = line.split()
            if len(p) >= 7 and int(p[6]) in inodes:
                unix += 1
    return by_addr, unix, fds


class Unread:
    """A client from address `src` that does its handshake and sends
    `request` without blocking (step): by default it pipelines requests
    for 8 MB of answers; then it never reads (4 KB of receive buffer,
    segments of `mss` bytes). dead: ikd closed it before that (a refused
    connection)."""

    REQUEST = b"GET /openapi.yaml HTTP/1.1\r\nHost: x\r\n\r\n" * 60

    def __init__(self, port, ctx, src, request=REQUEST, mss=536):
        self.request = request
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        if mss:
            # small segments keep ikd's TCP send buffer small (the kernel
            # sizes it by them), so the answers' last bytes wait in the front
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
        raw.bind((src, 0))
        raw.settimeout(TIMEOUT)
        raw.connect(("127.0.0.1", port))  # (the kernel's, even while ikd does not accept)
        raw.setblocking(False)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost",
                                    do_handshake_on_connect=False)
        self.sent = self.dead = False

    def step(self):
        if self.sent or self.dead:
            return
        try:
            self.sock.do_handshake()
            self.sock.send(self.request)  # 2.4 KB at most: in at once
            self.sent = True
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except (OSError, ssl.SSLError):
            self.dead = True


class LingeringTest(unittest.TestCase):
    """An ikd of its own: --timeout 3, at most 6 connections, 4 from an
    address."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ikd-tls-linger-")
        cls.crt, cls.key = make_cert(cls.tmp, "a", "ikd-a")
        cls.proc, cls.port, cls.log = start("--tls-cert", cls.crt, "--tls-key", cls.key,
                                            "--timeout", "3", "--max-connections", "6",
                                            "--max-connections-per-address", "4")

    @classmethod
    def tearDownClass(cls):
        if cls.proc.poll() is None:
            cls.proc.send_signal(signal.SIGTERM)
            cls.proc.wait(10 * SLOW)
        cls.proc.stdout.close()
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def drive(self, clients, done, wait, seen):
        """Steps the clients and records what ikd holds (in seen) until
        done() or `wait` seconds passed; done()'s last value."""
        deadline = time.monotonic() + wait
        while True:
            for c in clients:
                c.step()
            seen.append(ikd_sockets(self.proc.pid, self.port))
            if done():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def test_lingering_connections_count_against_the_limits(self):
        _, base_unix, base_fds = ikd_sockets(self.proc.pid, self.port)
        ctx = ssl.create_default_context(cafile=self.crt)
        held, seen = [], []
        try:
            first = [Unread(self.port, ctx, "127.0.0.1") for _ in range(4)]
            held += first
            self.assertTrue(self.drive(first, lambda: all(c.sent for c in first), TIMEOUT, []),
                            "4 clients from one address are not all served")
            # their answers fill every buffer between; libmicrohttpd drops
            # them after --timeout (its end of each socketpair closes) and
            # the front holds each client's socket with the last bytes
            lingering = lambda: (seen[-1][0].get("127.0.0.1") == 4 and
                                 seen[-1][1] == base_unix + 4)
            self.assertTrue(self.drive(first, lingering, 3 + 10 * SLOW, seen),
                            "libmicrohttpd did not drop the clients that do not read: %r" %
                            (seen[-1:],))
            # more of the same from that address, and from another
            more = ([Unread(self.port, ctx, "127.0.0.1") for _ in range(4)] +
                    [Unread(self.port, ctx, "127.0.0.3") for _ in range(4)])
            held += more
            seen = []
            # 6 of them are answered or refused at once (the others may wait
            # in the backlog for a free slot)
            self.drive(more, lambda: sum(c.sent or c.dead for c in more) >= 6, TIMEOUT, seen)
            most_one = max(s[0].get("127.0.0.1", 0) for s in seen)
            most_all = max(sum(s[0].values()) for s in seen)
            most_fds = max(s[2] for s in seen) - base_fds
            held_text = ("ikd held %d connections from one address (at most 4), %d in all (at "
                         "most 6)" % (most_one, most_all))
            self.assertLessEqual(most_one, 4, held_text)
            self.assertLessEqual(most_all, 6, held_text)
            self.assertLessEqual(most_fds, 3 * 6, "ikd held %d descriptors more for 6 "
                                 "connections" % most_fds)
            # a good client from a third address is served once slots are
            # free (the lingering ones are cut after --timeout)
            good = socket.socket()
            good.bind(("127.0.0.2", 0))
            good.settimeout(3 + 2 * TIMEOUT)
            good.connect(("127.0.0.1", self.port))
            with ctx.wrap_socket(good, server_hostname="localhost") as t:
                t.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                self.assertTrue(t.recv(65536).startswith(b"HTTP/1.1 200 "))
        finally:
            for c in held:
                c.sock.close()


class KernelQueueTest(unittest.TestCase):
    """An ikd of its own: --timeout 2, at most 4 connections from an
    address."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ikd-tls-queue-")
        cls.crt, cls.key = make_cert(cls.tmp, "a", "ikd-a")
        cls.proc, cls.port, cls.log = start("--tls-cert", cls.crt, "--tls-key", cls.key,
                                            "--timeout", "2", "--max-connections-per-address", "4")

    @classmethod
    def tearDownClass(cls):
        if cls.proc.poll() is None:
            cls.proc.send_signal(signal.SIGTERM)
            cls.proc.wait(10 * SLOW)
        cls.proc.stdout.close()
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_answers_left_in_the_kernel_count_and_are_reset(self):
        """Clients that ask for one answer of 136 KB with Connection: close
        and never read: the whole answer fits in the kernel's buffers, and
        ikd closed each connection at once, leaving the kernel the bytes
        for as long as the client acknowledged its probes (minutes and
        more, in FIN-WAIT-1), counted by no limit: 8 and more from one
        address. Now the front holds the connection (and its slot) until
        the kernel has sent them, and resets it after --timeout."""
        ctx = ssl.create_default_context(cafile=self.crt)
        once = b"GET /openapi.yaml HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        held, seen = [], []
        try:
            for _ in range(8):
                c = Unread(self.port, ctx, "127.0.0.1", once, mss=None)
                held.append(c)
                deadline = time.monotonic() + TIMEOUT
                while not (c.sent or c.dead) and time.monotonic() < deadline:
                    c.step()
                    time.sleep(0.01)
                # its answer waits in the kernel before the next one comes
                deadline = time.monotonic() + TIMEOUT
                while (c.sent and c.sock.getsockname()[1] not in kernel_queued(self.port) and
                       time.monotonic() < deadline):
                    time.sleep(0.01)
                seen.append(kernel_queued(self.port))
            queued = max(len(q) for q in seen)
            self.assertLessEqual(queued, 4, "answers to %d connections from one address wait "
                                 "in the kernel (at most 4 connections): %r" % (queued, seen[-1]))
            # after --timeout, the kernel holds none of them
            deadline = time.monotonic() + 2 + 10 * SLOW
            while kernel_queued(self.port):
                self.assertLess(time.monotonic(), deadline, "the kernel still holds answers to "
                                "clients that do not read: %r" % kernel_queued(self.port))
                time.sleep(0.05)
            status, _ = curl(self.port, self.crt, "/livez", None, None)
            self.assertEqual(status, 200)
        finally:
            for c in held:
                c.sock.close()


if __name__ == "__main__":
    unittest.main()

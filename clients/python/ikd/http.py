"""
ikd.http: the HTTP side of the client (the standard library's urllib),
shared by the synchronous Client and the AsyncClient.

- Token: "Authorization: Bearer <token>" on every request.
- TLS: an https:// base URL verifies ikd's certificate against the system's
  CAs, or against `ca_file` (a PEM file) or a caller's `ssl_context`.
- Retries: every ikd endpoint is safe to repeat (solving changes nothing;
  a chain's id is its content's hash), so a request that could not reach
  ikd (refused, reset, dropped before the answer) or was answered 502, 503
  or 504 (overloaded, shutting down, a balancer without a replica) is sent
  again, up to `retries` more times, after an exponential backoff with
  jitter (from `backoff` seconds, doubling, at most `max_backoff`), or
  after the answer's Retry-After when it says so (capped the same way). A
  refusal of the request itself (400, 401, 404, 413, 422, ...) is not
  retried. A request that timed out is not retried either (the answer may
  be on its way; the caller chose the time).
- Bounds: an answer, its status line and headers included, is read
  within `timeout` seconds of the request's start in all (a server that
  trickles it, or never ends it, gets IkdError "timeout") and its body
  up to `max_answer` bytes (default 256 MiB, as the C client; a longer one
  is IkdError "bad_answer").
- Re-registration: a chain registered through this client
  (register_chain) is remembered by id (the most recent `keep_chains`,
  default 256). When ikd answers `unknown_chain` for a request naming one
  of them (ikd restarted, or a replica that never saw it), the client
  registers it again and repeats the request once, transparently.
"""
import functools
import http.client
import io
import json
import random
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from http.client import HTTPException

from .errors import IkdError

__all__ = ["Http", "RETRY_STATUSES"]

#: statuses that say "not now" rather than "not this request"
RETRY_STATUSES = (502, 503, 504)


def _retry_after(value):
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None


class _DeadlineReader(io.RawIOBase):
    """A socket's receiving side (its makefile("rb", 0), which keeps the
    socket open while the answer is read) where no receive waits past
    `deadline` (time.monotonic()): an answer, headers and body, is bounded
    as a whole, however the server trickles it (urllib's timeout bounds
    each receive)."""

    def __init__(self, sock, deadline):
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", 0)
        self._deadline = deadline

    def readable(self):
        return True

    def readinto(self, b):
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the answer did not end in time")
        self._sock.settimeout(left)
        return self._raw.readinto(b)

    def close(self):
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """A connected socket whose makefile("rb") (what http.client reads
    the answer through) is a _DeadlineReader; everything else is the
    socket's."""

    def __init__(self, sock, deadline):
        self._sock = sock
        self._deadline = deadline

    def makefile(self, mode="r", *args, **kwargs):
        if mode != "rb":
            return self._sock.makefile(mode, *args, **kwargs)
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))

    def __getattr__(self, name):
        return getattr(self._sock, name)


class _DeadlineConnection(http.client.HTTPConnection):
    def __init__(self, *args, deadline, **kwargs):
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self):
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self._deadline)


class _DeadlineHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, deadline, **kwargs):
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self):
        super().connect()  # the TLS handshake included
        self.sock = _DeadlineSocket(self.sock, self._deadline)


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(functools.partial(_DeadlineConnection, deadline=req.deadline), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(functools.partial(_DeadlineHTTPSConnection, deadline=req.deadline),
                            req, context=self._context)


class Http:
    """One ikd's HTTP endpoints: request() with retries, and the chains to
    register again. Safe to share between threads."""

    def __init__(self, base_url="http://127.0.0.1:8080", token=None, timeout=30.0, *,
                 retries=3, backoff=0.05, max_backoff=2.0, ca_file=None, ssl_context=None,
                 keep_chains=256, max_answer=256 << 20):
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ValueError("ikd: the base URL must be http://HOST:PORT or https://HOST:PORT "
                             "(got %r)" % (base_url,))
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        if ssl_context is None and ca_file is not None:
            ssl_context = ssl.create_default_context(cafile=ca_file)
        self.ssl_context = ssl_context
        # urllib's own handlers, but for answers read within a deadline
        self._opener = urllib.request.build_opener(
            _DeadlineHTTPHandler(), _DeadlineHTTPSHandler(context=ssl_context))
        self.keep_chains = keep_chains
        self.max_answer = max_answer
        self._chains = OrderedDict()  # id -> the chain object registered
        self._lock = threading.Lock()
        self.reregistered = 0  # chains registered again after unknown_chain

    @property
    def tls(self):
        return self.base_url.startswith("https:")

    # ---- one exchange, then retries ------------------------------------------

    def _once(self, method, path, data):
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base_url + path, data=data, method=method,
                                     headers=headers)
        req.deadline = time.monotonic() + self.timeout
        try:
            with self._opener.open(req, timeout=self.timeout) as r:
                text = self._body(r, method, path).decode()
        except urllib.error.HTTPError as e:
            text = e.read(self.max_answer).decode(errors="replace")
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = text
            raise IkdError.from_body(parsed, e.code,
                                     retry_after=_retry_after(e.headers.get("Retry-After"))) \
                from None
        try:
            return json.loads(text) if text else None
        except ValueError:
            raise IkdError("bad_answer", "%s %s: the answer is not JSON" % (method, path)) \
                from None

    def _body(self, r, method, path):
        """The answer's body, read by at most one receive at a time so that
        max_answer holds however the server sends it (the deadline is the
        socket's: _DeadlineReader)."""
        chunks, size = [], 0
        while True:
            data = r.read1(65536)
            if not data:
                return b"".join(chunks)
            size += len(data)
            if size > self.max_answer:
                raise IkdError("bad_answer", "%s %s: the answer is larger than max_answer "
                               "(%d bytes)" % (method, path, self.max_answer))
            chunks.append(data)

    def _delay(self, attempt, retry_after):
        d = min(self.max_backoff, self.backoff * (2 ** attempt)) * (0.5 + random.random() / 2)
        if retry_after is not None:
            d = min(self.max_backoff, max(d, retry_after))
        return d

    def request(self, method, path, body=None):
        """One HTTP exchange with retries: the decoded JSON answer (None for
        204). Raises IkdError: ikd's refusal (status >= 400), or code
        "network" when ikd could not be reached after the retries."""
        data = None if body is None else json.dumps(body).encode()
        attempt = 0
        while True:
            try:
                return self._once(method, path, data)
            except IkdError as e:
                if e.status not in RETRY_STATUSES or attempt >= self.retries:
                    raise
                wait = self._delay(attempt, e.retry_after)
            except (socket.timeout, TimeoutError) as e:
                raise IkdError("timeout", "%s %s: no answer within %s s" %
                               (method, path, self.timeout)) from e
            except ssl.SSLError as e:  # a certificate refused: no point repeating
                raise IkdError("network", "%s %s: TLS: %s" % (method, path, e)) from e
            except (urllib.error.URLError, HTTPException, ConnectionError) as e:
                reason = getattr(e, "reason", e)
                if isinstance(reason, ssl.SSLError):
                    raise IkdError("network", "%s %s: TLS: %s" % (method, path, reason)) from e
                if isinstance(reason, (socket.timeout, TimeoutError)):
                    raise IkdError("timeout", "%s %s: no answer within %s s" %
                                   (method, path, self.timeout)) from e
                if attempt >= self.retries:
                    raise IkdError("network", "%s %s: %s (after %d attempts)" %
                                   (method, path, reason, attempt + 1)) from e
                wait = self._delay(attempt, None)
            time.sleep(wait)
            attempt += 1

    # ---- chains held for re-registration --------------------------------------

    def hold_chain(self, chain_id, chain):
        with self._lock:
            self._chains[chain_id] = chain
            self._chains.move_to_end(chain_id)
            while len(self._chains) > self.keep_chains:
                self._chains.popitem(last=False)

    def held_chain(self, chain_id):
        with self._lock:
            return self._chains.get(chain_id)

    def forget_chain(self, chain_id):
        with self._lock:
            self._chains.pop(chain_id, None)

    def register(self, chain):
        """POST /v1/chains; the chain is held for re-registration."""
        info = self.request("POST", "/v1/chains", chain)
        if isinstance(info, dict) and isinstance(info.get("id"), str):
            self.hold_chain(info["id"], chain)
        return info

    def reregister(self, chain_id):
        """Registers a held chain again; False when this client does not
        hold it (or ikd gave it another id: a different ikd version)."""
        chain = self.held_chain(chain_id)
        if chain is None:
            return False
        info = self.request("POST", "/v1/chains", chain)
        with self._lock:
            self.reregistered += 1
        return isinstance(info, dict) and info.get("id") == chain_id

    def call(self, method, path, body=None):
        """request(), and on `unknown_chain` for a body's chain_id that this
        client holds: register it again and repeat once."""
        try:
            return self.request(method, path, body)
        except IkdError as e:
            cid = body.get("chain_id") if isinstance(body, dict) else None
            if e.code != "unknown_chain" or not cid or not self.reregister(cid):
                raise
        return self.request(method, path, body)

    # ---- endpoints ------------------------------------------------------------

    def chain_path(self, chain_id):
        return "/v1/chains/" + urllib.parse.quote(chain_id, safe="")

    def stream_url(self):
        u = urllib.parse.urlsplit(self.base_url)
        scheme = "wss" if u.scheme == "https" else "ws"
        return urllib.parse.urlunsplit((scheme, u.netloc, u.path + "/v1/stream", "", ""))

"""
ikd.py: a small Python client for ikd, the inverse-kinematics service.

Standard library only for HTTP (urllib); streams use asyncio and the
`websockets` package (Debian: python3-websockets). One module, no build:
copy it next to your code or put clients/python on PYTHONPATH.

    import ikd
    c = ikd.Client("http://127.0.0.1:8080", token=None)
    bones = {"kind": "bones", "positions": [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]]}
    answer = c.solve(bones, {"position": [0.2, 0.1, 0.25]})
    answer["status"], answer["positions"]

    async with c.connect() as conn:                 # one WebSocket
        leg = await conn.open("leg", chain=bones)     # one named stream on it
        sol = await leg.solve({"position": [0.2, 0.1, 0.3]})

Errors: every refusal (HTTP status >= 400, or a stream "error" message)
raises IkdError carrying the wire error's code ("invalid_request",
"unknown_chain", ...), message, JSON path ("/target/position/2") and, over
HTTP, the status. Transport failures raise the standard library's own
exceptions (URLError, OSError, websockets' ConnectionClosed).

Streams: a stream answers its targets in the order they were sent. ikd
keeps at most one target waiting per stream and replaces it by a newer one
(conflation, proto/STREAM.md), so a target may never get a solution of its
own: its future then resolves with the solution of the newer target that
replaced it (solution["seq"] says which target was solved). Auth: the token
is sent as Authorization over HTTP, and as the subprotocols ikd.v1 and
base64url.bearer.ikd.<token> on the WebSocket, never in a URL.

Threads: a Client may be shared by threads for HTTP calls; a Connection
belongs to the asyncio loop that opened it.
"""
import asyncio
import base64
import json
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Client", "Connection", "Stream", "IkdError"]
__version__ = "0.2.0"


class IkdError(Exception):
    """An answer of ikd that refuses a request or a stream message."""

    def __init__(self, code, message, path="", status=None, stream=None, seq=None):
        super().__init__("%s: %s%s" % (code, message, " (at %s)" % path if path else ""))
        self.code = code
        self.message = message
        self.path = path
        self.status = status
        self.stream = stream
        self.seq = seq

    @classmethod
    def from_body(cls, body, status=None, stream=None, seq=None):
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict):
            return cls("http_%s" % status, "unexpected answer: %r" % (body,), "", status)
        return cls(err.get("code", "unknown"), err.get("message", ""), err.get("path", ""),
                   status, stream, seq)


def _drop_none(**kw):
    return {k: v for k, v in kw.items() if v is not None}


class Client:
    """HTTP calls to one ikd (synchronous) and WebSocket streams (asyncio)."""

    def __init__(self, base_url="http://127.0.0.1:8080", token=None, timeout=30.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # ---- HTTP ---------------------------------------------------------------

    def request(self, method, path, body=None):
        """One HTTP exchange: the decoded JSON answer (None for 204), or
        IkdError for a status of 400 and above."""
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base_url + path, data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                text = r.read().decode()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = text
            raise IkdError.from_body(parsed, e.code) from None

    def solve(self, chain=None, target=None, *, chain_id=None, options=None, seed=None):
        """POST /v1/solve: one target on a chain (an object, or chain_id of
        a registered one). Returns the answer; its "status" says whether the
        target was reached ("success", "no_ik_solution", "timed_out")."""
        return self.request("POST", "/v1/solve", _drop_none(
            chain=chain, chain_id=chain_id, target=target, options=options, seed=seed))

    def batch(self, chain=None, targets=(), *, chain_id=None, options=None, seeds=None):
        """POST /v1/solve/batch: many targets, answered in order
        (answer["results"][i] for targets[i], answer["counts"] by status)."""
        return self.request("POST", "/v1/solve/batch", _drop_none(
            chain=chain, chain_id=chain_id, targets=list(targets), options=options, seeds=seeds))

    def register_chain(self, chain):
        """POST /v1/chains: registers a chain; its description with "id"."""
        return self.request("POST", "/v1/chains", chain)

    def get_chain(self, chain_id):
        return self.request("GET", "/v1/chains/" + urllib.parse.quote(chain_id, safe=""))

    def delete_chain(self, chain_id):
        self.request("DELETE", "/v1/chains/" + urllib.parse.quote(chain_id, safe=""))

    def solvers(self):
        """GET /v1/solvers: solvers, options with defaults, and limits."""
        return self.request("GET", "/v1/solvers")

    # ---- streams ------------------------------------------------------------

    def stream_url(self):
        u = urllib.parse.urlsplit(self.base_url)
        scheme = "wss" if u.scheme == "https" else "ws"
        return urllib.parse.urlunsplit((scheme, u.netloc, u.path + "/v1/stream", "", ""))

    def subprotocols(self):
        """What the WebSocket offers: ikd.v1, and the token (if any) as
        base64url.bearer.ikd.<unpadded base64url of the token>."""
        protos = ["ikd.v1"]
        if self.token:
            enc = base64.urlsafe_b64encode(self.token.encode()).decode().rstrip("=")
            protos.append("base64url.bearer.ikd." + enc)
        return protos

    def connect(self, **websocket_options):
        """A Connection to use as `async with client.connect() as conn:`."""
        return Connection(self, **websocket_options)


class Connection:
    """One WebSocket to ikd carrying named streams. Messages are read by
    one task and handed to the stream they name."""

    def __init__(self, client, **websocket_options):
        self.client = client
        self.options = websocket_options
        self.ws = None
        self.streams = {}
        self.reader = None
        self.closed_error = None

    async def __aenter__(self):
        import websockets  # Debian: python3-websockets
        opts = {"max_size": None, "ping_interval": 20, "open_timeout": self.client.timeout}
        opts.update(self.options)
        try:
            self.ws = await websockets.connect(self.client.stream_url(),
                                               subprotocols=self.client.subprotocols(), **opts)
        except websockets.exceptions.InvalidStatusCode as e:
            raise IkdError("http_%d" % e.status_code,
                           "the stream upgrade was refused (HTTP %d)" % e.status_code,
                           "", e.status_code) from None
        self.reader = asyncio.get_running_loop().create_task(self._read())
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def close(self):
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            await asyncio.gather(self.reader, return_exceptions=True)

    async def open(self, name, chain=None, *, chain_id=None, options=None, seed=None):
        """Opens stream `name` on a chain; returns the Stream once ikd
        answered "opened" (IkdError if it refused the chain or options)."""
        s = Stream(self, name)
        self.streams[name] = s
        s.opened = asyncio.get_running_loop().create_future()
        await self._send(_drop_none(type="open", stream=name, chain=chain, chain_id=chain_id,
                                    options=options, seed=seed))
        try:
            s.chain_id = (await s.opened)["chain_id"]
        except BaseException:
            self.streams.pop(name, None)
            raise
        return s

    async def _send(self, msg):
        if self.closed_error is not None:
            raise self.closed_error
        await self.ws.send(json.dumps(msg))

    async def _read(self):
        import websockets
        try:
            async for text in self.ws:
                if not isinstance(text, str):
                    continue
                msg = json.loads(text)
                s = self.streams.get(msg.get("stream"))
                if s is not None:
                    s._deliver(msg)
        except websockets.exceptions.ConnectionClosed as e:
            self.closed_error = e
        except Exception as e:  # a bad message: fail what waits, not silently
            self.closed_error = e
        if self.closed_error is None:
            self.closed_error = websockets.exceptions.ConnectionClosedOK(None, None)
        for s in list(self.streams.values()):
            s._fail(self.closed_error)


class Stream:
    """One named stream. solve() sends a target and waits for its solution;
    send() only sends (solutions then arrive in order on solutions())."""

    def __init__(self, conn, name):
        self.conn = conn
        self.name = name
        self.chain_id = None
        self.opened = None
        self.closed = None
        self.seq = 0
        self.waiting = {}          # seq -> future, in the order sent
        self.queue = asyncio.Queue()

    async def send(self, target, *, seed=None):
        """Sends a target; returns its seq and a future of its solution."""
        self.seq += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[self.seq] = fut
        await self.conn._send(_drop_none(type="target", stream=self.name, seq=self.seq,
                                         target=target, seed=seed))
        return self.seq, fut

    async def solve(self, target, *, seed=None, timeout=None):
        """Sends a target and returns its solution message ("result" holds
        the answer). Raises IkdError when ikd refuses the target."""
        _, fut = await self.send(target, seed=seed)
        return await asyncio.wait_for(fut, timeout)

    async def path(self, waypoints, *, rate_hz=None, duration_s=None):
        """Sends a path; returns the list of its solutions up to path_end
        (also queued on solutions())."""
        self.seq += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[self.seq] = fut
        fut.samples = []
        await self.conn._send(_drop_none(type="path", stream=self.name, seq=self.seq,
                                         waypoints=waypoints, rate_hz=rate_hz,
                                         duration_s=duration_s))
        return await fut

    async def solutions(self):
        """Every solution and error of this stream, in the order ikd sent
        them (an async iterator; errors are yielded as IkdError values)."""
        while True:
            yield await self.queue.get()

    async def close(self):
        """Ends the stream; waits for ikd's "closed" (answers to targets
        still waiting arrive first)."""
        self.closed = asyncio.get_running_loop().create_future()
        await self.conn._send({"type": "close", "stream": self.name})
        await self.closed
        self.conn.streams.pop(self.name, None)

    # ---- from the reader ----------------------------------------------------

    def _deliver(self, msg):
        kind = msg.get("type")
        if kind == "opened" and self.opened and not self.opened.done():
            self.opened.set_result(msg)
        elif kind == "closed" and self.closed and not self.closed.done():
            self.closed.set_result(msg)
        elif kind == "solution":
            self.queue.put_nowait(msg)
            seq = msg.get("seq")
            fut = self.waiting.get(seq)
            if fut is not None and hasattr(fut, "samples"):
                fut.samples.append(msg)
                return
            # this target's answer, and the answer of every older target a
            # newer one replaced while it waited
            for s in [s for s in self.waiting if s <= seq]:
                f = self.waiting.pop(s)
                if not f.done():
                    f.set_result(msg)
        elif kind == "path_end":
            fut = self.waiting.pop(msg.get("seq"), None)
            if fut is not None and not fut.done():
                fut.set_result(fut.samples)
            self.queue.put_nowait(msg)
        elif kind == "error":
            err = IkdError.from_body(msg, None, msg.get("stream"), msg.get("seq"))
            self.queue.put_nowait(err)
            if self.opened and not self.opened.done():
                self.opened.set_exception(err)
                return
            fut = self.waiting.pop(msg.get("seq"), None)
            if fut is not None and not fut.done():
                fut.set_exception(err)

    def _fail(self, exc):
        for f in [self.opened, self.closed, *self.waiting.values()]:
            if f is not None and not f.done():
                f.set_exception(exc)
        self.waiting.clear()

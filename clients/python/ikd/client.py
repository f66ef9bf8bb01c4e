"""
ikd.client: the two front doors of the package.

- Client: synchronous. HTTP calls return when answered; client.connect()
  gives a SyncConnection whose streams and ticks block until answered. The
  WebSocket runs on an asyncio loop in a thread of its own that the
  connection starts and stops (callbacks run on that thread).
- AsyncClient: asyncio. The same HTTP calls as coroutines (urllib in a
  worker thread), and client.connect() gives the asyncio Connection of
  ikd.stream.

Both take the same settings: base_url (http:// or https://), token,
timeout (seconds, per HTTP exchange and per stream open), retries, backoff
and max_backoff (ikd.http), ca_file or ssl_context (TLS, https and wss), and
keep_chains (how many registered chains are remembered for re-registration).
"""
import asyncio
import threading

from .errors import IkdError
from .http import Http
from .stream import Connection, subprotocols

__all__ = ["Client", "AsyncClient", "SyncConnection", "SyncStream"]


def _drop_none(**kw):
    return {k: v for k, v in kw.items() if v is not None}


def _checked(answer, count):
    """A solve's answer (count None) or a batch's of count targets, as the
    protocol says it is, else IkdError "bad_answer": a solve is answered by
    one result (an object with a "status"), a batch by one result per
    target, in order (a caller pairs results[i] with targets[i])."""
    if count is None:
        if not isinstance(answer, dict) or not isinstance(answer.get("status"), str):
            raise IkdError("bad_answer", "a solve answer without a status")
        return answer
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list) or len(results) != count:
        raise IkdError("bad_answer", "a batch answer of %s results for %d targets" %
                       (len(results) if isinstance(results, list) else "no", count))
    return answer


class _Calls:
    """The HTTP endpoints, written once: each returns (method, path, body)."""

    @staticmethod
    def solve(chain, target, chain_id, options, seed):
        return "POST", "/v1/solve", _drop_none(chain=chain, chain_id=chain_id, target=target,
                                               options=options, seed=seed)

    @staticmethod
    def batch(chain, targets, chain_id, options, seeds):
        return "POST", "/v1/solve/batch", _drop_none(chain=chain, chain_id=chain_id,
                                                     targets=targets, options=options,
                                                     seeds=seeds)


class Client:
    """A synchronous client of one ikd. Safe to share between threads for
    HTTP calls; holds no socket until connect()."""

    def __init__(self, base_url="http://127.0.0.1:8080", token=None, timeout=30.0, **settings):
        self.http = Http(base_url, token, timeout, **settings)

    @property
    def base_url(self):
        return self.http.base_url

    @property
    def token(self):
        return self.http.token

    def request(self, method, path, body=None):
        """One HTTP exchange (with retries, and re-registration of a chain
        this client registered): the decoded JSON answer, None for 204."""
        return self.http.call(method, path, body)

    def solve(self, chain=None, target=None, *, chain_id=None, options=None, seed=None):
        """POST /v1/solve -> SolveAnswer: one target on a chain (an object,
        or the chain_id of a registered one). Its "status" says whether the
        target was reached ("success", "no_ik_solution", "timed_out")."""
        return _checked(self.http.call(*_Calls.solve(chain, target, chain_id, options, seed)),
                        None)

    def batch(self, chain=None, targets=(), *, chain_id=None, options=None, seeds=None):
        """POST /v1/solve/batch -> BatchAnswer: many targets, answered in
        order (answer["results"][i] for targets[i], answer["counts"])."""
        targets = list(targets)
        return _checked(self.http.call(*_Calls.batch(chain, targets, chain_id, options, seeds)),
                        len(targets))

    def register_chain(self, chain):
        """POST /v1/chains -> ChainInfo (with "id"). The chain is remembered
        so that it is registered again if ikd forgets it."""
        return self.http.register(chain)

    def get_chain(self, chain_id):
        """GET /v1/chains/{id} -> ChainInfo."""
        return self.http.request("GET", self.http.chain_path(chain_id))

    def delete_chain(self, chain_id):
        """DELETE /v1/chains/{id}; the client forgets it too."""
        self.http.forget_chain(chain_id)
        self.http.request("DELETE", self.http.chain_path(chain_id))

    def solvers(self):
        """GET /v1/solvers: solvers, options with defaults, and limits."""
        return self.http.request("GET", "/v1/solvers")

    def ready(self):
        """GET /readyz: {"status": "ready"}, or IkdError 503 while ikd shuts
        down (retried first, as every 503)."""
        return self.http.request("GET", "/readyz")

    def stream_url(self):
        return self.http.stream_url()

    def subprotocols(self):
        return subprotocols(self.http.token)

    def connect(self, **options):
        """A SyncConnection (WebSocket), to use as `with client.connect() as
        conn:`. Options: those of ikd.stream.Connection (queue_size,
        reconnect, min_delay, max_delay, max_attempts, idle_timeout, ...)
        and of websockets.connect."""
        return SyncConnection(self.http, **options)


class AsyncClient:
    """The asyncio client of one ikd: the HTTP calls of Client as
    coroutines, and connect() for streams on the running loop."""

    def __init__(self, base_url="http://127.0.0.1:8080", token=None, timeout=30.0, **settings):
        self.http = Http(base_url, token, timeout, **settings)

    @property
    def base_url(self):
        return self.http.base_url

    async def request(self, method, path, body=None):
        return await asyncio.to_thread(self.http.call, method, path, body)

    async def solve(self, chain=None, target=None, *, chain_id=None, options=None, seed=None):
        """POST /v1/solve -> SolveAnswer (see Client.solve)."""
        return _checked(await self.request(*_Calls.solve(chain, target, chain_id, options, seed)),
                        None)

    async def batch(self, chain=None, targets=(), *, chain_id=None, options=None, seeds=None):
        """POST /v1/solve/batch -> BatchAnswer (see Client.batch)."""
        targets = list(targets)
        return _checked(await self.request(*_Calls.batch(chain, targets, chain_id, options,
                                                         seeds)), len(targets))

    async def register_chain(self, chain):
        return await asyncio.to_thread(self.http.register, chain)

    async def get_chain(self, chain_id):
        return await asyncio.to_thread(self.http.request, "GET", self.http.chain_path(chain_id))

    async def delete_chain(self, chain_id):
        self.http.forget_chain(chain_id)
        await asyncio.to_thread(self.http.request, "DELETE", self.http.chain_path(chain_id))

    async def solvers(self):
        return await asyncio.to_thread(self.http.request, "GET", "/v1/solvers")

    async def ready(self):
        return await asyncio.to_thread(self.http.request, "GET", "/readyz")

    def stream_url(self):
        return self.http.stream_url()

    def subprotocols(self):
        return subprotocols(self.http.token)

    def connect(self, **options):
        """A Connection, to use as `async with client.connect() as conn:`."""
        return Connection(self.http, **options)


class _LoopThread:
    """An asyncio loop in a daemon thread; run() blocks on a coroutine."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="ikd-stream",
                                       daemon=True)
        self.thread.start()

    def run(self, coro, timeout=None):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class SyncConnection:
    """The blocking face of a Connection: the same methods, each returning
    when answered. Attributes and callbacks are those of the Connection in
    `.conn` (callbacks run on the connection's own thread)."""

    def __init__(self, http, **options):
        self._lt = None
        self._http = http
        self._options = options
        self.conn = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self):
        self._lt = _LoopThread()
        try:
            self.conn = self._lt.run(self._make())
        except BaseException:
            self._lt.stop()
            self._lt = None
            raise
        return self

    async def _make(self):
        return await Connection(self._http, **self._options).start()

    def _run(self, coro):
        if self._lt is None:  # closed (or never started): nothing runs it
            coro.close()
            raise IkdError("not_connected", "the connection is closed" if self.conn else
                           "the connection is not started (start() or a with block)")
        return self._lt.run(coro)

    def close(self):
        if self._lt is None:
            return
        try:
            self._run(self.conn.close())
        finally:
            self._lt.stop()
            self._lt = None

    @property
    def state(self):
        return self.conn.state

    @property
    def latest_tick(self):
        return self.conn.latest_tick

    def on_error(self, fn):
        return self.conn.on_error(fn)

    def on_message(self, fn):
        return self.conn.on_message(fn)

    def on_tick(self, fn):
        return self.conn.on_tick(fn)

    def on_state(self, fn):
        return self.conn.on_state(fn)

    def open(self, name, chain=None, **kw):
        """Opens a stream (see Connection.open); returns a SyncStream."""
        return SyncStream(self, self._run(self.conn.open(name, chain, **kw)))

    def tick(self, targets, *, timeout=None):
        """Sends a tick and returns its TickSolution (see Connection.tick)."""
        return self._run(self.conn.tick(targets, timeout=timeout))

    def send_tick(self, targets):
        return self._run(self.conn.send_tick(targets))

    def send_raw(self, msg):
        return self._run(self.conn.send_raw(msg))


class SyncStream:
    """The blocking face of a Stream (`.stream`)."""

    def __init__(self, sconn, stream):
        self._sconn = sconn
        self.stream = stream

    name = property(lambda self: self.stream.name)
    chain_id = property(lambda self: self.stream.chain_id)
    seq = property(lambda self: self.stream.seq)
    latest = property(lambda self: self.stream.latest)
    dropped = property(lambda self: self.stream.dropped)
    is_open = property(lambda self: self.stream.is_open)

    def solve(self, target, *, seed=None, timeout=None):
        return self._sconn._run(self.stream.solve(target, seed=seed, timeout=timeout))

    def send(self, target, *, seed=None):
        return self._sconn._run(self.stream.send(target, seed=seed))

    def path(self, waypoints, *, rate_hz=None, duration_s=None):
        return self._sconn._run(self.stream.path(waypoints, rate_hz=rate_hz,
                                                 duration_s=duration_s))

    def on_solution(self, fn):
        return self.stream.on_solution(fn)

    def close(self):
        if self._sconn._lt is None:  # the connection is closed: so is the stream
            return None
        return self._sconn._run(self.stream.close())

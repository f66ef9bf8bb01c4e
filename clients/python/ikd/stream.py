"""
ikd.stream: WebSocket streams and ticks on asyncio (proto/STREAM.md is the
contract), over the `websockets` package.

One Connection is one WebSocket to ikd carrying named Streams. One task
reads every message and hands it on: a stream's messages to that stream,
a tick_solution to the tick that waits for it, and everything else
(connection-level errors, messages of a type this client does not know,
answers for a stream it does not hold) to the connection's error and
message handlers: logged as warnings by the "ikd" logger when there is
no handler, never dropped silently.

MEMORY (bounded, whatever the caller reads)
  - Latest answer wins: `Stream.latest` is the newest solution; each
    stream keeps at most `queue_size` unread messages (default 8) for
    `Stream.solutions()`, and when it is full the oldest is dropped and
    counted in `Stream.dropped` (as ikd's own conflation counts what it
    skipped). A control loop that reads `latest`, or nothing at all, holds
    one solution per stream.
  - Futures exist only for answers someone waits for (`solve`, `submit`,
    `tick`) and are gone once answered; ikd answers every target (its own
    solution, a newer one's, or an error), and a connection that drops
    fails them all.
  - Per message: one json.loads, one small slotted Solution around the
    decoded result, nothing kept beyond the above, so the collector's work
    per pause stays small (no growing heap to walk).

LIVENESS
  A connection silent for half of `idle_timeout` (seconds, default 30, as
  the C client's) is pinged, and one silent for all of it (a peer or a
  balancer gone without a FIN) is dropped, an on_error IkdError "timeout",
  then dialled again like any loss.

RECONNECTION
  With `reconnect=True` (the default) a connection that drops is dialled
  again with exponential backoff and jitter (`min_delay` seconds doubling
  to `max_delay`, `max_attempts` in a row) and every stream is opened again
  on its chain, options and open seed; answers in flight fail with
  IkdError "connection_lost", calls made while it is away fail at once with
  "not_connected", and seqs go on from where they were.

RE-REGISTRATION
  A stream opened by `chain_id` on a chain this client registered
  (Client.register_chain) is opened again after registering the chain
  anew when ikd answers `unknown_chain` (a restarted ikd, another replica).

TICKS
  `Connection.tick()` sends one "tick" message with a target for many
  streams and returns its TickSolution: one TickItem per target, in order,
  each a solution or that target's error. Every item also reaches its
  stream (`latest`, `solutions()`, on_solution) like a target's answer.
  Encoding and decoding go through the connection's `codec`: JsonCodec (the
  default), or BinaryCodec (`client.connect(codec=ikd.BinaryCodec())`):
  a tick whose targets are all {"position", "orientation"?} (an
  orientation on every target or on none, no seed) goes as one binary
  message of doubles and ikd answers in binary (proto/STREAM.md, "Binary
  ticks"), decoded into the same TickSolution (numbers at full precision,
  "status" from the MoveIt "code", no "reason", "cause" or "solutions");
  any other tick goes as JSON.

THREADS
  A Connection belongs to the asyncio loop that opened it; callbacks run on
  that loop and must not block it.
"""
import asyncio
import base64
import json
import logging
import math
import random
import ssl
import struct
import sys
from array import array
from collections import deque

import websockets

from .errors import IkdError
from .types import Path, PathEnd, Solution, TickItem, TickSolution

__all__ = ["Connection", "Stream", "JsonCodec", "BinaryCodec"]

log = logging.getLogger("ikd")

_WS_MAJOR = int(websockets.__version__.split(".")[0])
try:  # websockets 13 and later: the new asyncio implementation
    if _WS_MAJOR < 13:
        raise ImportError
    from websockets.asyncio.client import connect as _ws_connect_new
except ImportError:
    _ws_connect_new = None


async def _ws_connect(url, subprotocols, ssl_context, open_timeout, options):
    # answers are bounded by ikd (a tick of 1024 full answers is about 1 MB);
    # pings are the Connection's (idle_timeout), unless the caller asks
    # websockets for its own (ping_interval)
    opts = {"max_size": 16 << 20, "ping_interval": None, "open_timeout": open_timeout}
    if url.startswith("wss:") and ssl_context is not None:
        opts["ssl"] = ssl_context
    opts.update(options)
    if _ws_connect_new is not None:
        dial = _ws_connect_new(url, subprotocols=subprotocols, **opts)
    else:
        dial = websockets.connect(url, subprotocols=subprotocols, **opts)
    # websockets bounds the handshake by open_timeout, but then waits up to
    # close_timeout more for the server to close (one that never ends its
    # upgrade answer never does): the dial is given up at open_timeout and
    # its socket closed behind
    task = asyncio.ensure_future(dial)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    try:
        done, _ = await asyncio.wait((task,), timeout=opts["open_timeout"])
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        raise IkdError("network", "the stream upgrade of %s did not end within %s s"
                       % (url, opts["open_timeout"]))
    try:
        return task.result()
    except websockets.exceptions.InvalidHandshake as e:
        status = getattr(e, "status_code", None)
        if status is None:
            status = getattr(getattr(e, "response", None), "status_code", None)
        if status is None:
            raise IkdError("network", "the stream upgrade failed: %s" % e) from None
        raise IkdError("http_%d" % status, "the stream upgrade was refused (HTTP %d)" % status,
                       "", status) from None
    except ssl.SSLError as e:
        raise IkdError("network", "TLS: %s" % e) from None
    except (OSError, asyncio.TimeoutError) as e:
        raise IkdError("network", "cannot reach %s: %s" % (url, e)) from None


def _binary_seq(x):
    """A binary answer's seq (a double) when it is an integer, else None
    (NaN, an infinity or 1.5 answers nothing)."""
    return int(x) if math.isfinite(x) and x == int(x) else None


def _drop_none(**kw):
    return {k: v for k, v in kw.items() if v is not None}


def _seq(v):
    """A message's seq when it is one (an integer), else None: a seq this
    client cannot read answers nothing (never 0, never a float or true
    compared with the seqs waiting)."""
    return v if type(v) is int else None


class JsonCodec:
    """The JSON text form of ticks (proto/STREAM.md "tick, tick_solution").
    A Connection encodes ticks and decodes tick_solutions through its
    codec only, so another form (binary) plugs in here."""

    def encode_tick(self, seq, items):
        """items: [(stream name, its seq or None, target, seed or None)]"""
        targets = []
        for name, s, target, seed in items:
            t = {"stream": name, "target": target}
            if s is not None:
                t["seq"] = s
            if seed is not None:
                t["seed"] = seed
            targets.append(t)
        return json.dumps({"type": "tick", "seq": seq, "targets": targets})

    def decode_tick(self, msg):
        items = []
        for it in msg.get("solutions") or ():
            name = it.get("stream", "")
            seq = it.get("seq", 0)
            if type(seq) is not int or not isinstance(name, str):
                raise TypeError("tick entry %d: its stream or seq cannot be read" % len(items))
            if "error" in it:
                items.append(TickItem(name, seq, 0, None,
                                      IkdError.from_body(it, None, name, seq)))
            else:
                items.append(TickItem(name, seq, it.get("skipped", 0), it.get("result")))
        return TickSolution(msg["seq"], msg.get("skipped", 0), items, msg["seq"])


_MEMBERS = ("joints", "positions", "rotations", "local_rotations", "tip", "position_error",
            "orientation_error", "max_joint_step", "time_ms")
_STATUS = {1: "success", -31: "no_ik_solution", -6: "timed_out", -16: "invalid_goal_constraints"}
_NAN = float("nan")
#: ticks in flight remembered to check their answers (the C client's bound)
TICKS_KEPT = 64


def _numbers(v, n):
    return isinstance(v, (list, tuple)) and len(v) == n and \
        all(type(x) in (int, float) for x in v)


def _binary_target(t, orient):
    """Whether target t fits a binary tick: {"position": [x, y(, z)]} and,
    when orient, "orientation": [x, y, z, w]; numbers only."""
    if not isinstance(t, dict) or len(t) != (2 if orient else 1):
        return False
    p = t.get("position")
    if not (_numbers(p, 3) or _numbers(p, 2)):
        return False
    return not orient or _numbers(t.get("orientation"), 4)


class BinaryCodec(JsonCodec):
    """The binary form of ticks (proto/STREAM.md, "Binary ticks"): ticks of
    positions (and orientations) as one binary message of doubles, the
    answer read from ikd's binary message; any other tick as JSON."""

    def encode_tick(self, seq, items):
        n = len(items)
        orient = n > 0 and isinstance(items[0][2], dict) and "orientation" in items[0][2]
        names = bytearray()
        recs = array("d")
        for name, s, target, seed in items:
            if seed is not None or not _binary_target(target, orient):
                return super().encode_tick(seq, items)
            try:
                b = name.encode("ascii")
            except (UnicodeEncodeError, AttributeError):
                return super().encode_tick(seq, items)
            if len(b) > 255:
                return super().encode_tick(seq, items)
            names.append(len(b))
            names += b
            p = target["position"]
            recs.append(_NAN if s is None else float(s))
            recs.extend((float(p[0]), float(p[1]), float(p[2]) if len(p) == 3 else 0.0))
            if orient:
                recs.extend(float(x) for x in target["orientation"])
        if n == 0:
            return super().encode_tick(seq, items)
        head = struct.pack("<4sHHIId", b"IKDT", 1, 1 if orient else 0, n, len(names), float(seq))
        body = bytearray(head)
        body += names
        body += bytes(-len(body) % 8)
        if sys.byteorder != "little":
            recs.byteswap()
        return bytes(body) + recs.tobytes()

    def decode_binary(self, data, max_entries=None):
        """A binary message: its TickSolution, or None when it is not a
        binary tick's answer. A head announcing more than max_entries
        entries is refused before any is decoded."""
        b = bytes(data)
        if len(b) < 24 or b[:4] != b"IKDS":
            return None
        _, version, _, n, skipped, seq = struct.unpack_from("<4sHHIId", b, 0)
        if version != 1:
            return None
        tseq = _binary_seq(seq)
        if tseq is None:
            raise IkdError("bad_answer", "a tick answer without a seq this client can read")
        if max_entries is not None and n > max_entries:
            raise IkdError("bad_answer", "a tick answer of more than %d entries (max_streams)"
                           % max_entries, seq=tseq)
        at, items = 24, []
        for _ in range(n):
            if at + 24 > len(b):
                raise IkdError("bad_answer", "a binary tick answer ends early", seq=tseq)
            size, kind, lname, flags, _, eseq, a, c = struct.unpack_from("<IBBBBdII", b, at)
            if size < 24 or at + size > len(b):
                raise IkdError("bad_answer", "a binary tick answer ends early", seq=tseq)
            iseq = _binary_seq(eseq) if flags & 1 else 0
            if iseq is None:
                raise IkdError("bad_answer", "tick answer entry %d cannot be read (its seq)"
                               % len(items), seq=tseq)
            # nothing is read past the entry's size (another entry's bytes)
            past = IkdError("bad_answer", "tick answer entry %d is larger than its size"
                            % len(items), seq=tseq)
            if kind == 2:
                lc, lp, lm = a & 0xFFFF, a >> 16, c
                if 24 + lname + lc + lp + lm > size:
                    raise past
                x = at + 24
                name = b[x:x + lname].decode("ascii")
                x += lname
                body = {"error": {"code": b[x:x + lc].decode("ascii"),
                                  "path": b[x + lc:x + lc + lp].decode("utf-8", "replace"),
                                  "message": b[x + lc + lp:x + lc + lp + lm].decode(
                                      "utf-8", "replace")}}
                items.append(TickItem(name, iseq, 0, None,
                                      IkdError.from_body(body, None, name, iseq)))
            else:
                if size < 56 or c < 16 or 40 + c + lname > size:
                    raise past
                fields, dof, npos, nrot, dims = struct.unpack_from("<IHHHH", b, at + 24)
                sizes = (dof, dims * npos, 4 * nrot, 4 * nrot, 7, 1, 1, 1, 1)
                if 16 + 8 * sum(k for m, k in enumerate(sizes) if fields & (1 << m)) > c:
                    raise past
                r = at + 40
                code, rflags, iters, restarts = struct.unpack_from("<iIII", b, r)
                r += 16
                result = {"status": _STATUS.get(code, "failure"), "code": code,
                          "iterations": iters, "restarts": restarts}
                pose = rflags & 1
                rows = (0, dims, 4, 4, 0, 0, 0, 0, 0)
                shown = (pose, pose, pose, pose, rflags & 2, pose, rflags & 4, rflags & 8, 1)
                for m in range(9):
                    if not fields & (1 << m):
                        continue
                    k = sizes[m]
                    if shown[m]:
                        v = list(struct.unpack_from("<%dd" % k, b, r))
                        if m == 4:
                            result["tip"] = {"position": v[:3], "orientation": v[3:]}
                        elif m >= 5:
                            result[_MEMBERS[m]] = v[0]
                        elif rows[m]:
                            w = rows[m]
                            result[_MEMBERS[m]] = [v[i:i + w] for i in range(0, k, w)]
                        else:
                            result[_MEMBERS[m]] = v
                    r += 8 * k
                name = b[r:r + lname].decode("ascii")
                items.append(TickItem(name, iseq, a, result))
            at += size
        return TickSolution(tseq, skipped, items, tseq)


class _Handlers:
    """A small list of callbacks; add() returns the function that removes."""

    __slots__ = ("fns",)

    def __init__(self):
        self.fns = []

    def add(self, fn):
        self.fns.append(fn)
        return lambda: self.fns.remove(fn) if fn in self.fns else None

    def __bool__(self):
        return bool(self.fns)

    def call(self, *args):
        for fn in list(self.fns):
            try:
                fn(*args)
            except Exception:  # a caller's bug must not stop the reader
                log.exception("ikd: a callback raised")


class Connection:
    """One WebSocket to ikd carrying named streams (use as
    `async with client.connect() as conn:` or `await conn.start()`)."""

    def __init__(self, http, *, queue_size=8, reconnect=True, min_delay=0.1, max_delay=5.0,
                 max_attempts=None, codec=None, max_streams=1024, idle_timeout=30.0,
                 **websocket_options):
        self.http = http
        #: silent this long (seconds): a ping at half of it, and at all of it
        #: the connection is dropped and dialled again (None or 0: never)
        self.idle_timeout = idle_timeout
        self._last_recv = 0.0
        self._pinged = False
        self._watcher = None
        self._ping = None  # the idle watch's ping being sent
        self.queue_size = queue_size
        self.reconnect = reconnect
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.max_attempts = max_attempts
        self.codec = codec or JsonCodec()
        #: targets in a tick at most (ikd's --max-streams): a tick answer of
        #: more entries is refused
        self.max_streams = max_streams
        self.options = websocket_options
        self.ws = None
        self.streams = {}
        self.state = "connecting"  # open, reconnecting, closed
        self.reconnects = 0
        # the backoff's step: back to 0 only after a connection that lasted
        # max_delay, so that a server that drops each connection as soon as
        # it is up is not redialled every min_delay
        self._backoff_step = 0
        self._opened_at = None
        self.latest_tick = None
        self.dropped_errors = 0
        self._reader = None
        self._user_closed = False
        self._tick_seq = 0
        self._ticks = {}  # tick seq -> future, in the order sent
        # the last TICKS_KEPT ticks sent and not yet answered, (seq, stream
        # names), oldest first: an answer is checked against its tick's targets
        self._sent_ticks = deque(maxlen=TICKS_KEPT)
        self._on_error = _Handlers()
        self._on_message = _Handlers()
        self._on_tick = _Handlers()
        self._on_state = _Handlers()

    # ---- lifetime -------------------------------------------------------------

    async def __aenter__(self):
        await self.start()
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def start(self):
        """Connects (no retry: a first connection that fails raises)."""
        self.ws = await self._dial()
        self._opened_at = asyncio.get_running_loop().time()
        self._watch()
        self._set_state("open")
        self._reader = asyncio.get_running_loop().create_task(self._run())
        return self

    # ---- liveness (as the C client's idle_timeout_ms) ---------------------------

    def _heard(self):
        self._last_recv = asyncio.get_running_loop().time()
        self._pinged = False

    def _pong(self, f):
        if not f.cancelled() and f.exception() is None:
            self._heard()

    def _watch(self):
        """Starts the idle watch of the socket just dialled."""
        self._heard()
        if self.idle_timeout:
            self._watcher = asyncio.get_running_loop().create_task(self._watching(self.ws))

    def _unwatch(self):
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    async def _watching(self, ws):
        """Silent for half of idle_timeout: a ping; for all of it (a peer
        gone without a FIN, a pong that never comes): the socket is
        aborted, an on_error "timeout", and the reader redials. websockets'
        own keepalive would wait close_timeout more, twice, for a peer
        that is gone."""
        loop = asyncio.get_running_loop()
        idle = self.idle_timeout
        while True:
            silent = loop.time() - self._last_recv
            if silent >= idle:
                self._error(IkdError("timeout", "ikd was silent for %s s" % idle))
                ws.transport.abort()
                return
            if not self._pinged and silent >= idle / 2:
                self._pinged = True
                # not awaited here: websockets sends it behind the writes
                # waiting, which a peer that stopped reading never lets out
                self._ping = loop.create_task(self._send_ping(ws))
            await asyncio.sleep(self._last_recv + (idle if self._pinged else idle / 2)
                                - loop.time())

    async def _send_ping(self, ws):
        try:
            (await ws.ping()).add_done_callback(self._pong)
        except Exception:  # closing: the reader sees it
            pass

    async def _dial(self):
        return await _ws_connect(self.http.stream_url(), self.subprotocols(),
                                 self.http.ssl_context, self.http.timeout, self.options)

    def subprotocols(self):
        """What the upgrade offers: ikd.v1, and the token (if any) as
        base64url.bearer.ikd.<unpadded base64url of its UTF-8 bytes>."""
        return subprotocols(self.http.token)

    async def close(self):
        """Closes the socket; no reconnection afterwards. Waiting futures
        fail with IkdError "closed"."""
        self._user_closed = True
        self._unwatch()
        if self._reader is not None and self.state == "reconnecting":
            self._reader.cancel()  # waiting out a backoff: nothing to close
        elif self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        self._fail_all(IkdError("closed", "the connection was closed"), final=True)
        self._set_state("closed")

    def _set_state(self, state):
        if self.state != state:
            self.state = state
            self._on_state.call(state)

    # ---- events -----------------------------------------------------------------

    def on_error(self, fn):
        """fn(IkdError) for errors tied to no waiting call: connection-level
        errors (unknown_type, invalid_json of a message, a tick refused
        whole), errors of targets sent with send(), a stream that could not
        be reopened. Without a handler they are logged as warnings. Returns
        a function that removes fn."""
        return self._on_error.add(fn)

    def on_message(self, fn):
        """fn(message) for messages this client does not understand (a type
        it does not know, a stream it does not hold, a binary frame).
        Without a handler they reach on_error as "unexpected_message"."""
        return self._on_message.add(fn)

    def on_tick(self, fn):
        """fn(TickSolution) for every tick answered (send_tick's too)."""
        return self._on_tick.add(fn)

    def on_state(self, fn):
        """fn(state): "open", "reconnecting", "closed"."""
        return self._on_state.add(fn)

    def _error(self, err):
        if self._on_error:
            self._on_error.call(err)
        else:
            self.dropped_errors += 1
            log.warning("ikd: %s", err)

    def _unexpected(self, msg):
        if self._on_message:
            self._on_message.call(msg)
        else:
            kind = msg.get("type") if isinstance(msg, dict) else type(msg).__name__
            self._error(IkdError("unexpected_message",
                                 "ikd sent a message this client does not handle: %.200r" %
                                 (kind,)))

    # ---- sending ----------------------------------------------------------------

    async def _send_text(self, text):
        if self.state != "open" or self.ws is None:
            raise IkdError("not_connected", "the connection is %s" % self.state)
        try:
            await self.ws.send(text)
        except websockets.exceptions.ConnectionClosed as e:
            raise IkdError("connection_lost", "the connection dropped: %s" % e) from None

    async def send_raw(self, msg):
        """Sends one message (an object, or its JSON text) as it is: for
        messages this client has no method for. Its answers reach the
        handlers."""
        await self._send_text(msg if isinstance(msg, str) else json.dumps(msg))

    # ---- streams ----------------------------------------------------------------

    async def open(self, name, chain=None, *, chain_id=None, options=None, seed=None,
                   queue_size=None, timeout=None):
        """Opens stream `name` on a chain (an object, or the chain_id of a
        registered one); returns the Stream once ikd answered "opened".
        Raises IkdError when ikd refuses the chain or the options (the path
        points into the open message, such as "/chain/positions/1")."""
        if name in self.streams:
            raise IkdError("stream_exists", "stream %r is already open on this connection" %
                           (name,), stream=name)
        s = Stream(self, name, _drop_none(type="open", stream=name, chain=chain,
                                          chain_id=chain_id, options=options, seed=seed),
                   self.queue_size if queue_size is None else queue_size)
        self.streams[name] = s
        try:
            await asyncio.wait_for(s._open(), timeout or self.http.timeout)
        except asyncio.TimeoutError:
            self.streams.pop(name, None)
            raise IkdError("timeout", "stream %r: no answer to open" % (name,),
                           stream=name) from None
        except BaseException:
            self.streams.pop(name, None)
            raise
        return s

    # ---- ticks ------------------------------------------------------------------

    def _tick_items(self, targets):
        """(tick seq, [(name, seq or None, target, seed)]): each target of a
        stream this connection holds takes its stream's next seq, sent only
        when it differs from the tick's (a stream ticked from its start has
        the tick's seq)."""
        self._tick_seq += 1
        tseq = self._tick_seq
        items = []
        if hasattr(targets, "items"):
            targets = targets.items()
        for t in targets:
            if isinstance(t, dict):
                name, target, seed = t["stream"], t["target"], t.get("seed")
            elif len(t) == 3:
                name, target, seed = t
            else:
                (name, target), seed = t, None
            s = self.streams.get(name)
            seq = None
            if s is not None:
                s.seq += 1
                if s.seq != tseq:
                    seq = s.seq
            items.append((name, seq, target, seed))
        return tseq, items

    async def tick(self, targets, *, timeout=None):
        """Sends one tick: `targets` maps stream names to targets, or is a
        list of (name, target), (name, target, seed) or {"stream", "target",
        "seed"}. Returns its TickSolution (one item per target, in order;
        a target's error is in its item, not raised). Raises IkdError when
        ikd refuses the tick whole (too many targets, ...), or "timeout"
        when no answer came within `timeout` seconds."""
        tseq, items = self._tick_items(targets)
        fut = asyncio.get_running_loop().create_future()
        self._ticks[tseq] = fut
        try:
            await self._send_text(self.codec.encode_tick(tseq, items))
            self._sent_ticks.append((tseq, [it[0] for it in items]))
            return await asyncio.wait_for(fut, timeout) if timeout else await fut
        except asyncio.TimeoutError:  # as solve() and open() say it
            raise IkdError("timeout", "tick %d: no answer within %s s" % (tseq, timeout),
                           seq=tseq) from None
        finally:
            self._ticks.pop(tseq, None)

    async def send_tick(self, targets):
        """Sends a tick without waiting: returns its seq; the answer goes to
        `latest_tick`, on_tick and the streams."""
        tseq, items = self._tick_items(targets)
        await self._send_text(self.codec.encode_tick(tseq, items))
        self._sent_ticks.append((tseq, [it[0] for it in items]))
        return tseq

    def _tick_lies(self, ts):
        """Why answer ts is not one item per target of its tick, in order
        (its count, its items' streams; an item without a stream matches
        any), or None. The ticks kept before it were replaced: they leave
        with it. An answer to a tick no longer kept is not checked."""
        kept = self._sent_ticks
        while kept and kept[0][0] < ts.seq:
            kept.popleft()
        if not kept or kept[0][0] != ts.seq:
            return None
        names = kept.popleft()[1]
        if len(ts.items) != len(names):
            return "a tick answer of %d entries to a tick of %d targets" % (len(ts.items),
                                                                             len(names))
        for i, (it, name) in enumerate(zip(ts.items, names)):
            if it.stream and it.stream != name:
                return "tick answer entry %d names stream %r, the tick's target %d is %r" % (
                    i, it.stream, i, name)
        return None

    def _tick_solution(self, msg):
        seq = _seq(msg.get("seq"))
        items = msg.get("solutions")
        why = None
        if seq is None:
            why = "a tick answer without a seq this client can read"
        elif not isinstance(items, list):
            why = "a tick answer without its list of solutions"
        elif len(items) > self.max_streams:
            # no tick holds more targets than that
            why = "a tick answer of more than %d entries (max_streams)" % self.max_streams
        elif not all(isinstance(it, dict) and isinstance(it.get("stream", ""), str) and
                     type(it.get("seq", 0)) is int for it in items):
            why = "a tick answer whose entries are not all objects of a stream and a seq"
        if why is None:
            self._tick_answer(self.codec.decode_tick(msg))
        else:
            self._tick_refused(IkdError("bad_answer", why, seq=seq))

    def _tick_refused(self, err):
        """A tick answer that cannot be read fails the tick it names (when
        its seq could be read), else reaches on_error."""
        f = self._ticks.pop(err.seq, None) if err.seq is not None else None
        if f is not None and not f.done():
            f.set_exception(err)
        else:
            self._error(err)

    def _tick_answer(self, ts):
        """A decoded TickSolution (either form) to the streams and waiters;
        one of a seq never sent answers nothing (it would answer every tick
        waiting): an on_error bad_answer."""
        if ts.seq > self._tick_seq:
            self._error(IkdError("bad_answer", "a tick answer of seq %d, never sent (the last "
                                 "sent is %d)" % (ts.seq, self._tick_seq)))
            return
        lie = self._tick_lies(ts)
        if lie is not None:
            self._tick_refused(IkdError("bad_answer", lie, seq=ts.seq))
            return
        self.latest_tick = ts
        for it in ts.items:
            s = self.streams.get(it.stream)
            if s is not None:
                s._tick_item(it)
        # this tick, and every older one still waiting (ikd replaced those
        # by newer ones: their targets were dropped unsolved)
        while self._ticks:
            k = next(iter(self._ticks))
            if k > ts.seq:
                break
            f = self._ticks.pop(k)
            if not f.done():
                if k == ts.seq:
                    f.set_result(ts)
                else:
                    f.set_result(TickSolution(ts.seq, ts.skipped, ts.items, k))
        self._on_tick.call(ts)

    # ---- reading ----------------------------------------------------------------

    async def _run(self):
        while True:
            err = await self._read()
            self._unwatch()
            for s in list(self.streams.values()):  # a closing one leaves
                s._dropped()
            self._fail_all(err, final=False)
            if self._user_closed or not self.reconnect:
                break
            if not await self._redial():
                break
        self._fail_all(IkdError("closed", "the connection closed"), final=True)
        self._set_state("closed")

    async def _read(self):
        """Reads until the socket closes; returns the error for what waits."""
        try:
            async for data in self.ws:
                self._last_recv = asyncio.get_running_loop().time()
                self._pinged = False
                if not isinstance(data, str):
                    decode = getattr(self.codec, "decode_binary", None)
                    try:
                        ts = decode(data, self.max_streams) if decode else None
                    except (IkdError, struct.error, UnicodeDecodeError) as e:
                        # without its traceback: it holds this reader's frame, which a
                        # caller's traceback.clear_frames() (unittest's assertRaises
                        # does) would close under the reader
                        self._tick_refused(e.with_traceback(None) if isinstance(e, IkdError)
                                           else IkdError("bad_answer",
                                                         "a binary tick answer: %s" % e))
                        continue
                    if ts is not None and len(ts.items) > self.max_streams:
                        # a codec of the caller's that does not check the head
                        self._tick_refused(IkdError(
                            "bad_answer", "a tick answer of more than %d entries (max_streams)"
                            % self.max_streams, seq=ts.seq))
                    elif ts is not None:
                        self._tick_answer(ts)
                    else:
                        self._unexpected(data)
                    continue
                try:
                    msg = json.loads(data)
                except ValueError:
                    self._error(IkdError("bad_answer", "ikd sent a message that is not JSON"))
                    continue
                if not isinstance(msg, dict):
                    self._unexpected(msg)
                    continue
                try:
                    self._dispatch(msg)
                except (TypeError, AttributeError, KeyError, ValueError) as e:
                    # members of the wrong kind: this message is refused, the
                    # reader goes on
                    self._error(IkdError("bad_answer", "ikd sent a %.40r message this client "
                                         "cannot read: %s" % (msg.get("type"), e)))
        except websockets.exceptions.ConnectionClosed as e:
            return IkdError("connection_lost", "the connection dropped: %s" % e)
        except Exception as e:  # a bug of ours: fail what waits, loudly
            log.exception("ikd: the stream reader failed")
            try:  # a redial must not leave this socket open
                await self.ws.close()
            except Exception:
                pass
            return IkdError("connection_lost", "the reader failed: %r" % e)
        return IkdError("connection_lost", "the connection closed")

    def _dispatch(self, msg):
        kind = msg.get("type")
        if kind == "tick_solution":
            self._tick_solution(msg)
            return
        name = msg.get("stream")
        s = self.streams.get(name) if isinstance(name, str) else None
        if s is not None and s._deliver(kind, msg):
            return
        if kind == "error":
            seq = _seq(msg.get("seq"))
            err = IkdError.from_body(msg, None, name, seq)
            f = self._ticks.pop(seq, None) if name is None and seq is not None else None
            if f is not None and not f.done():
                f.set_exception(err)
            else:
                self._error(err)
            return
        self._unexpected(msg)

    def _fail_all(self, err, final):
        for f in self._ticks.values():
            if not f.done():
                f.set_exception(err)
        self._ticks.clear()
        self._sent_ticks.clear()
        if final:
            for s in list(self.streams.values()):
                s._ended(err)
            self.streams.clear()

    async def _redial(self):
        attempts = 0
        loop = asyncio.get_running_loop()
        if self._opened_at is not None and loop.time() - self._opened_at >= self.max_delay:
            self._backoff_step = 0
        self._opened_at = None
        self._set_state("reconnecting")
        while not self._user_closed:
            if self.max_attempts is not None and attempts >= self.max_attempts:
                return False
            delay = min(self.max_delay, self.min_delay * 2 ** self._backoff_step)
            self._backoff_step = min(self._backoff_step + 1, 30)
            await asyncio.sleep(delay * (0.5 + random.random() / 2))
            attempts += 1
            try:
                self.ws = await self._dial()
            except IkdError as e:
                if e.status is not None and 400 <= e.status < 500:
                    self._error(e)  # refused (a token no longer valid): give up
                    return False
                continue
            if self._user_closed:
                await self.ws.close()
                return False
            self.reconnects += 1
            self._opened_at = loop.time()
            self._watch()
            self._set_state("open")
            # reading goes on in _run; the streams reopen as it reads
            for s in list(self.streams.values()):
                loop.create_task(s._reopen())
            return True
        return False


def subprotocols(token):
    """ikd.v1, and with a token base64url.bearer.ikd.<its unpadded base64url>
    (proto/STREAM.md, "Connecting")."""
    protos = ["ikd.v1"]
    if token:
        enc = base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")
        protos.append("base64url.bearer.ikd." + enc)
    return protos


class Stream:
    """One named stream of a Connection."""

    def __init__(self, conn, name, open_msg, queue_size):
        self.conn = conn
        self.name = name
        self.open_msg = open_msg
        self.chain_id = None
        self.seq = 0
        self.is_open = False
        #: the newest solution (latest answer wins)
        self.latest = None
        #: unread messages dropped from the bounded queue
        self.dropped = 0
        self._queue = deque(maxlen=max(1, queue_size))
        self._ready = None  # an event set when a message is queued
        self._waiting = {}  # seq -> future, in the order sent
        self._paths = {}  # seq -> list of samples
        self._delivered = 0  # the seq of the last solution delivered
        # the seq of the last path_end: no sample of that path after it (an
        # older target's solution may come: ikd ends a path that never
        # started at once, while an older target is still being solved)
        self._path_ended = 0
        self._opened = None
        self._closed = None
        self._on_solution = _Handlers()

    # ---- opening ------------------------------------------------------------------

    async def _open(self):
        loop = asyncio.get_running_loop()
        for attempt in range(2):
            self._opened = loop.create_future()
            await self.conn._send_text(json.dumps(self.open_msg))
            try:
                msg = await self._opened
            except IkdError as e:
                cid = self.open_msg.get("chain_id")
                if attempt == 0 and e.code == "unknown_chain" and cid and \
                        await asyncio.to_thread(self.conn.http.reregister, cid):
                    continue
                raise
            self.chain_id = msg.get("chain_id")
            self.is_open = True
            return

    async def _reopen(self):
        try:
            await asyncio.wait_for(self._open(), self.conn.http.timeout)
        except asyncio.TimeoutError:
            err = IkdError("timeout", "stream %r: no answer to its reopening" % (self.name,),
                           stream=self.name)
        except IkdError as err_:
            err = err_
            err.stream = self.name
        else:
            return
        if self.conn.streams.get(self.name) is self:
            del self.conn.streams[self.name]
        self._ended(err)
        self.conn._error(err)

    # ---- sending ------------------------------------------------------------------

    def _target_text(self, target, seed):
        if not self.is_open:
            raise IkdError("not_connected", "stream %r is not open" % (self.name,),
                           stream=self.name)
        self.seq += 1
        msg = {"type": "target", "stream": self.name, "seq": self.seq, "target": target}
        if seed is not None:
            msg["seed"] = seed
        return json.dumps(msg)

    async def send(self, target, *, seed=None):
        """Sends a target without waiting; returns its seq. Its answer goes
        to `latest`, solutions() and on_solution; an error to the
        connection's on_error."""
        await self.conn._send_text(self._target_text(target, seed))
        return self.seq

    async def submit(self, target, *, seed=None):
        """Sends a target; returns a future of its Solution (to keep many in
        flight). The future fails with the IkdError ikd answered for it."""
        text = self._target_text(target, seed)
        fut = asyncio.get_running_loop().create_future()
        self._waiting[self.seq] = fut
        await self.conn._send_text(text)
        return fut

    async def solve(self, target, *, seed=None, timeout=None):
        """Sends a target and returns its Solution (or the newer one that
        replaced it). Raises the IkdError ikd answered for it."""
        fut = await self.submit(target, seed=seed)
        if timeout is None:
            return await fut
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            # not held until an answer comes (from a server that never
            # answers, one per call)
            for k, f in list(self._waiting.items()):
                if f is fut:
                    del self._waiting[k]
            raise IkdError("timeout", "stream %r: no answer within %s s" % (self.name, timeout),
                           stream=self.name) from None

    async def path(self, waypoints, *, rate_hz=None, duration_s=None):
        """Sends a path and returns it solved: Path(samples, end). The
        samples also reach latest, solutions() and on_solution."""
        if not self.is_open:
            raise IkdError("not_connected", "stream %r is not open" % (self.name,),
                           stream=self.name)
        self.seq += 1
        seq = self.seq
        fut = asyncio.get_running_loop().create_future()
        self._waiting[seq] = fut
        self._paths[seq] = []
        try:
            await self.conn._send_text(json.dumps(_drop_none(
                type="path", stream=self.name, seq=seq, waypoints=waypoints, rate_hz=rate_hz,
                duration_s=duration_s)))
            return await fut
        finally:
            self._paths.pop(seq, None)

    async def close(self):
        """Ends the stream; waits for ikd's "closed" (answers to targets
        still waiting arrive first)."""
        if self._closed is not None and not self._closed.done():
            await asyncio.shield(self._closed)  # a close under way: the same
            return
        if not self.is_open:
            self.conn.streams.pop(self.name, None)
            return
        self._closed = asyncio.get_running_loop().create_future()
        await self.conn._send_text(json.dumps({"type": "close", "stream": self.name}))
        await asyncio.shield(self._closed)

    # ---- reading --------------------------------------------------------------------

    def on_solution(self, fn):
        """fn(Solution) for every solution of this stream, in order (targets,
        path samples, tick items). Returns a function that removes fn."""
        return self._on_solution.add(fn)

    async def solutions(self):
        """The stream's unread messages in order (Solution, PathEnd, and
        IkdError values for targets refused): an async iterator over a
        bounded queue (see MEMORY above; `dropped` counts what it lost)."""
        while True:
            while not self._queue:
                if self._ready is None:
                    self._ready = asyncio.Event()
                self._ready.clear()
                await self._ready.wait()
            yield self._queue.popleft()

    def _queue_put(self, item):
        q = self._queue
        if len(q) == q.maxlen:
            self.dropped += 1
        q.append(item)
        if self._ready is not None:
            self._ready.set()

    def _solution(self, sol):
        if sol.seq > self.seq:  # would answer every target waiting
            self.conn._error(IkdError("bad_answer", "a solution of seq %d, never sent (the last "
                                      "sent is %d)" % (sol.seq, self.seq), stream=self.name))
            return
        if sol.seq < self._delivered or sol.seq == self._path_ended:
            # ikd answers a stream in seq order, and nothing of a path after its end
            self.conn._error(IkdError("bad_answer", "a solution of seq %d after %s" % (
                sol.seq, "its path_end" if sol.seq == self._path_ended else
                "that of seq %d" % self._delivered), stream=self.name))
            return
        self._delivered = sol.seq
        self.latest = sol
        self._queue_put(sol)
        w = self._waiting
        if w:
            seq = sol.seq
            samples = self._paths.get(seq)
            if samples is not None:
                samples.append(sol)
            # this target's answer, and the answer of every older target a
            # newer one replaced while it waited
            while w:
                k = next(iter(w))
                if k > seq or (k == seq and samples is not None):
                    break
                f = w.pop(k)
                if not f.done():
                    f.set_result(sol if k == seq else Solution(
                        sol.stream, seq, sol.skipped, sol.result, k, sol.index, sol.count))
        if self._on_solution:
            self._on_solution.call(sol)

    def _tick_item(self, it):
        if it.error is not None:
            self._queue_put(it.error)
            return
        self._solution(Solution(self.name, it.seq, it.skipped, it.result, it.seq))

    def _deliver(self, kind, msg):
        """Handles a message naming this stream; False when it is not one."""
        if kind in ("solution", "path_end") and _seq(msg.get("seq")) is None:
            # answers no target of this stream: never taken as seq 0
            self.conn._error(IkdError("bad_answer", "a %r message without a seq this client can "
                                      "read" % (kind,), stream=self.name))
        elif kind == "solution":
            seq = msg["seq"]
            self._solution(Solution(self.name, seq, msg.get("skipped", 0), msg.get("result"),
                                    seq, msg.get("index"), msg.get("count")))
        elif kind == "path_end" and msg["seq"] > self.seq:
            self.conn._error(IkdError("bad_answer", "a path_end of seq %d, never sent (the last "
                                      "sent is %d)" % (msg["seq"], self.seq), stream=self.name))
        elif kind == "path_end":
            self._path_ended = max(self._path_ended, msg["seq"])
            end = PathEnd(self.name, msg["seq"], msg.get("sent", 0),
                          msg.get("skipped", 0), msg.get("count", 0),
                          bool(msg.get("completed")))
            self._queue_put(end)
            f = self._waiting.pop(end.seq, None)
            if f is not None and not f.done():
                f.set_result(Path(list(self._paths.get(end.seq, ())), end))
        elif kind == "opened":
            if self._opened is None or self._opened.done():
                return False
            self._opened.set_result(msg)
        elif kind == "closed":
            self.is_open = False
            if self.conn.streams.get(self.name) is self:
                del self.conn.streams[self.name]
            self._ended(IkdError("closed", "stream %r was closed" % (self.name,),
                                 stream=self.name))
            if self._closed is not None and not self._closed.done():
                self._closed.set_result(msg)
        elif kind == "error":
            seq = msg.get("seq")
            if seq is not None and _seq(seq) is None:
                self.conn._error(IkdError("bad_answer", "an error message whose seq this client "
                                          "cannot read", stream=self.name))
                return True
            err = IkdError.from_body(msg, None, self.name, seq)
            if self._opened is not None and not self._opened.done() and seq is None:
                self._opened.set_exception(err)  # the open was refused
                return True
            f = self._waiting.pop(seq, None)
            self._paths.pop(seq, None)
            self._queue_put(err)
            if f is not None and not f.done():
                f.set_exception(err)
            else:
                self.conn._error(err)
        else:
            return False
        return True

    def _dropped(self):
        """The socket dropped: what waits fails; the stream may reopen,
        unless its close was sent: then it is closed (ikd forgot it)."""
        if self._closed is not None and not self._closed.done():
            if self.conn.streams.get(self.name) is self:
                del self.conn.streams[self.name]
            self._ended(IkdError("closed", "stream %r was closed" % (self.name,),
                                 stream=self.name))
            return
        self.is_open = False
        self._fail(IkdError("connection_lost", "the connection dropped before the answer",
                            stream=self.name))

    def _ended(self, err):
        self.is_open = False
        self._fail(err)
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    def _fail(self, err):
        for f in [self._opened, *self._waiting.values()]:
            if f is not None and not f.done():
                f.set_exception(err)
                # nobody may await it any more (an open abandoned): retrieved
                f.exception()
        self._waiting.clear()
        self._paths.clear()

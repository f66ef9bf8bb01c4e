"""
test_loops.py: one ikd, several event loops (--loops, issue 22): what the
loops share holds for all of them together, exactly, and a drain of every
loop loses nothing.

Each test starts $IKD_BIN on 127.0.0.1 port 0 with --loops 4 (whatever
the machine's cores) and talks to it over raw sockets, with enough
connections that every loop has some (ikd_loop_connections says how many
each serves; new connections go to the loop with the fewest). Covered:
- connections spread over the loops, within two of each other;
- --max-connections-per-address holds for the process, not per loop:
  of 12 connections from one address with a limit of 5, exactly 5 are
  served (libmicrohttpd's own limit is per daemon, one per loop);
- --max-connections holds for the process: a connection beyond it waits
  (in the listening socket's backlog) until one of any loop closes;
- --body-budget holds for bodies arriving on every loop together;
- the chain registry is one: a chain registered through one connection is
  found through every other, and --registry-bytes bounds them all;
- the metrics add up: every request, solve and stream of every loop is
  counted once;
- SIGTERM under load on every loop (keep-alive HTTP clients and WebSocket
  streams): every request written completely is answered, every stream's
  last target too, and the process exits 0, once.
Every test also reads the daemon's standard error for ThreadSanitizer's
reports: run against a -fsanitize=thread build (make check
SANITIZER=thread BUILD=build-tsan), it is the multi-loop daemon's race
check.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_limits import (SLOW, TIMEOUT, TWO_BONE, Daemon, KeepAliveClient,  # noqa: E402
                         joints_chain, post, read_response, sample)
from test_stream import RawWS, frame  # noqa: E402

LOOPS = 4


def scrape(d):
    """The /metrics text of d (a connection of its own)."""
    s = d.connect()
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        return read_response(s)[2].decode()
    finally:
        s.close()


def loop_connections(text):
    """ikd_loop_connections by loop, from a /metrics text."""
    out = {}
    for line in text.splitlines():
        if line.startswith('ikd_loop_connections{loop="'):
            out[int(line.split('"')[1])] = int(float(line.split()[1]))
    return out


def answered(sock, timeout):
    """The status of the answer to a request already sent on sock, or None
    when the connection ends (or nothing comes within timeout)."""
    sock.settimeout(timeout)
    try:
        r = read_response(sock)
    except OSError:
        return None
    return r[0] if r else None


class LoopsTest(unittest.TestCase):
    def start(self, *extra):
        d = Daemon("--loops", str(LOOPS), *extra)
        self.addCleanup(d.kill)
        self.addCleanup(self.assert_no_race, d)
        return d

    def assert_no_race(self, d):
        self.assertNotIn("ThreadSanitizer", d.stderr())

    def test_connections_spread_over_the_loops(self):
        d = self.start()
        conns = []
        try:
            for _ in range(15):
                s = d.connect()
                s.sendall(post("/v1/solve", TWO_BONE))
                self.assertEqual(answered(s, TIMEOUT), 200)
                conns.append(s)
            per = loop_connections(scrape(d))  # the scrape's own is the 16th
            print("connections by loop: %s" % per)
            self.assertEqual(sorted(per), list(range(LOOPS)))
            self.assertEqual(sum(per.values()), 16)
            self.assertLessEqual(max(per.values()) - min(per.values()), 2, per)
        finally:
            for s in conns:
                s.close()

    def test_connections_per_address_hold_across_loops(self):
        d = self.start("--max-connections-per-address", "5")
        crowd = []
        try:
            for _ in range(12):
                crowd.append(d.connect("127.0.0.2"))
            time.sleep(0.3 * SLOW)  # every one accepted (or refused)
            for s in crowd:
                s.sendall(b"GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
            statuses = [answered(s, 1.0 * SLOW) for s in crowd]
            other = d.connect("127.0.0.3")  # another address is not held back
            other.sendall(b"GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
            self.assertEqual(answered(other, TIMEOUT), 200)
            other.close()
            refused = sample(scrape(d), 'ikd_rejected_total{reason="connections_per_address"}')
            print("12 connections from one address, limit 5 on %d loops: %s; %d refused"
                  % (LOOPS, statuses, refused))
            self.assertEqual(statuses.count(200), 5, statuses)
            self.assertEqual(statuses.count(None), 7, statuses)
            self.assertEqual(refused, 7)
        finally:
            for s in crowd:
                s.close()

    def test_max_connections_hold_across_loops(self):
        d = self.start("--max-connections", "6")
        held = []
        try:
            for _ in range(6):
                s = d.connect()
                s.sendall(b"GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
                self.assertEqual(answered(s, TIMEOUT), 200)  # open, on some loop
                held.append(s)
            late = d.connect()  # the kernel takes it; ikd may not yet
            late.sendall(b"GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
            early = answered(late, 1.0)
            held.pop().close()  # one slot comes free, on whichever loop
            t0 = time.monotonic()
            status = early or answered(late, TIMEOUT)
            waited = time.monotonic() - t0
            late.close()
            print("a 7th connection with --max-connections 6 on %d loops: %s before a slot "
                  "came free, %s %.2f s after" % (LOOPS, early, status, waited))
            self.assertIsNone(early, "served beyond --max-connections")
            self.assertEqual(status, 200)
            self.assertLess(waited, 2.0 * SLOW)
        finally:
            for s in held:
                s.close()

    def test_body_budget_holds_across_loops(self):
        """12 connections each announce a 2 MB body and send 1 MB of it:
        with --body-budget 8M at most 8 MB is held for them all (12 MB,
        3 MB a loop, with a budget per loop), the announcements that no
        longer fit are refused with 503 before their bodies are read, and
        once the bodies end the ones whose bytes did not fit get 503 too."""
        budget = 8 << 20
        d = self.start("--body-budget", "8M")
        conns = []
        try:
            mb = b"1" * (1 << 20)
            for _ in range(12):
                s = d.connect()
                try:
                    s.sendall(b"POST /v1/solve HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n"
                              % (2 << 20))
                    s.sendall(mb)
                except OSError:
                    pass  # refused on its announcement: ikd answered 503 and closed
                conns.append(s)
            time.sleep(0.5 * SLOW)
            # the sleep is no bound on ikd's reading on a loaded machine:
            # look again until the budget is filled (or 10 s times SLOW),
            # holding every look to the budget
            deadline = time.monotonic() + 10 * SLOW
            peak = 0
            while True:
                text = scrape(d)
                held = sample(text, 'ikd_held_bytes{what="request_bodies"}')
                peak = max(peak, held)
                if held > budget - (2 << 20) or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            spread = loop_connections(text)
            for s in conns:
                try:
                    s.sendall(mb)
                except OSError:
                    pass
            statuses = [answered(s, TIMEOUT) for s in conns]
            print("12 uploads of 1 MB on loops %s: %.1f MB held for a %.0f MB budget; then %s"
                  % (spread, held / 1e6, budget / 1e6, statuses))
            self.assertLessEqual(peak, budget)
            self.assertGreater(held, budget - (2 << 20), "the budget was filled")
            # every upload answered: 400 (its body is no JSON) when it fitted,
            # 503 when it did not (a connection reset after its 503 reads None)
            self.assertGreater(statuses.count(503), 0, statuses)
            self.assertLessEqual(statuses.count(400), 7, statuses)
            self.assertEqual(statuses.count(200), 0, statuses)
        finally:
            for s in conns:
                s.close()

    def test_registry_is_one_and_bounded_across_loops(self):
        bound = 1 << 20
        d = self.start("--registry-bytes", "1M")
        conns = [d.connect() for _ in range(8)]
        try:
            s0 = conns[0]
            s0.sendall(post("/v1/chains", json.dumps(joints_chain(8, 0)).encode()))
            status, _, body, _ = read_response(s0)
            self.assertIn(status, (200, 201))
            cid = json.loads(body)["id"]
            # found through every connection, whatever its loop
            for s in conns:
                s.sendall(b"GET /v1/chains/%s HTTP/1.1\r\nHost: t\r\n\r\n" % cid.encode())
                self.assertEqual(read_response(s)[0], 200)
            errors = []

            def fill(s, k):
                try:
                    for i in range(60):
                        s.sendall(post("/v1/chains",
                                       json.dumps(joints_chain(64, 1000 * k + i + 1)).encode()))
                        r = read_response(s)
                        if r[0] not in (200, 201):
                            errors.append(r[0])
                except OSError as e:
                    errors.append(str(e))

            ts = [threading.Thread(target=fill, args=(s, k)) for k, s in enumerate(conns)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            text = scrape(d)
            held = sample(text, 'ikd_held_bytes{what="registry"}')
            chains = sample(text, "ikd_registry_chains")
            print("registry on loops %s: 480 chains registered at once, %d kept, %.2f MB held "
                  "for a %.0f MB bound" % (loop_connections(text), chains, held / 1e6,
                                             bound / 1e6))
            self.assertEqual(errors, [])
            self.assertLessEqual(held, bound)
            self.assertGreater(held, bound / 2, "the registry was filled")
        finally:
            for s in conns:
                s.close()

    def test_metrics_add_up_across_loops(self):
        d = self.start()
        n_clients, n_requests = 8, 40

        def client(out):
            s = d.connect()
            try:
                for _ in range(n_requests):
                    s.sendall(post("/v1/solve", TWO_BONE))
                    out.append(read_response(s)[0])
            finally:
                s.close()

        results = [[] for _ in range(n_clients)]
        ws = [RawWS(d.port) for _ in range(6)]
        try:
            for k, w in enumerate(ws):
                for j in range(2):
                    w.send_text(json.dumps({"type": "open", "stream": "s%d" % j,
                                            "chain": {"kind": "bones", "positions": [
                                                [0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}}))
                    self.assertEqual(w.recv_json()["type"], "opened")
                for j in range(2):
                    w.send_text(json.dumps({"type": "target", "stream": "s%d" % j, "seq": 1,
                                            "target": {"position": [0.3, 0.6, 0.2]}}))
                for j in range(2):
                    self.assertEqual(w.recv_json()["type"], "solution")
            ts = [threading.Thread(target=client, args=(results[k],)) for k in range(n_clients)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            text = scrape(d)
            spread = loop_connections(text)
            got = sample(text, 'ikd_http_requests_total{route="/v1/solve",status="200"}')
            solves = sample(text, 'ikd_solves_total{solver="two_bone",status="success"}')
            streams = sample(text, "ikd_ws_streams_open")
            print("on loops %s: %d POST answered 200, %d solves, %d streams open"
                  % (spread, got, solves, streams))
            self.assertEqual([len(r) for r in results], [n_requests] * n_clients)
            self.assertTrue(all(st == 200 for r in results for st in r))
            self.assertEqual(got, n_clients * n_requests)
            self.assertEqual(solves, n_clients * n_requests + 12)
            self.assertEqual(streams, 12)
        finally:
            for w in ws:
                w.sock.close()

    def test_ticks_and_targets_of_held_streams(self):
        """Ticks of 40 numeric streams (parts on the pool, decoding, warm
        starting and settling the streams' sessions there) while target
        messages with seeds for the same streams arrive on the loop and
        replace each other (the skips that keep a seed wait for the tick):
        every tick and target is answered or counted as skipped, and the
        last tick is answered in full. Under ThreadSanitizer, the check of
        the sessions' hand-over between the loop and the pool."""
        d = self.start()
        n = 40
        w = RawWS(d.port)
        try:
            for k in range(n):
                w.send_text(json.dumps({"type": "open", "stream": "c%d" % k,
                                        "chain": joints_chain(4, k)}))
            for k in range(n):
                self.assertEqual(w.recv_json()["type"], "opened")
            frames, seq = [], 0
            for r in range(12):
                seq += 1
                frames.append({"type": "tick", "seq": seq, "targets": [
                    {"stream": "c%d" % k, "target": {"position": [0.004, 0.0, 0.0385 + 1e-4 * r]}}
                    for k in range(n)]})
                for k in range(0, n, 4):
                    seq += 1
                    frames.append({"type": "target", "stream": "c%d" % k, "seq": seq,
                                   "target": {"position": [0.003, 0.0, 0.039]},
                                   "seed": [0.1 * r, -0.05 * r]})
            w.sock.sendall(b"".join(frame(0x1, json.dumps(f).encode()) for f in frames))
            last_tick = max(f["seq"] for f in frames if f["type"] == "tick")
            deadline = time.monotonic() + 20 * SLOW
            got = None
            while got is None and time.monotonic() < deadline:
                m = w.recv_json()
                self.assertNotEqual(m["type"], "error", m)
                if m["type"] == "tick_solution" and m["seq"] == last_tick:
                    got = m
            self.assertIsNotNone(got, "the last tick was answered")
            self.assertEqual(len(got["solutions"]), n)
            self.assertTrue(all("result" in a for a in got["solutions"]), got["solutions"][:2])
        finally:
            w.sock.close()

    def test_sigterm_under_load_across_loops_loses_nothing(self):
        deadline = 8
        d = self.start("--drain-timeout", str(deadline), "--log-level", "info")
        clients = [KeepAliveClient(d, TWO_BONE) for _ in range(24)]
        streams = []
        for k in range(4):
            w = RawWS(d.port)
            w.send_text(json.dumps({"type": "open", "stream": "leg",
                                    "chain": {"kind": "bones", "positions": [
                                        [0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}}))
            self.assertEqual(w.recv_json()["type"], "opened")
            streams.append(w)
        for c in clients:
            c.start()
        time.sleep(0.5 * SLOW)
        spread = loop_connections(scrape(d))
        self.assertTrue(all(spread.get(i, 0) > 0 for i in range(LOOPS)), spread)
        # each stream: targets sent right before the signal are answered
        for w in streams:
            w.send_text(json.dumps({"type": "target", "stream": "leg", "seq": 7,
                                    "target": {"position": [0.3, 0.6, 0.2]}}))
        d.proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        try:
            rc = d.proc.wait(deadline + 5 * SLOW)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
        for c in clients:
            c.join(TIMEOUT)
        last = []
        for w in streams:
            got, closed = None, None
            try:
                while True:
                    op, payload = w.recv_frame()
                    if op == 0x1:
                        m = json.loads(payload)
                        if m.get("type") == "solution":
                            got = m["seq"]
                    elif op == 0x8:
                        closed = int.from_bytes(payload[:2], "big")
                        break
            except (OSError, EOFError):
                pass
            last.append((got, closed))
            w.sock.close()
        lost = sum(c.lost for c in clients)
        sent = sum(c.sent for c in clients)
        stopped = d.stderr().count(" stopped")
        print("drain over loops %s: %d requests sent, %d lost; streams %s; exit %s after "
              "%.2f s" % (spread, sent, lost, last, rc, took))
        self.assertEqual(lost, 0, "requests written completely but never answered")
        self.assertTrue(all(c.last_close for c in clients))
        self.assertEqual(last, [(7, 1001)] * len(streams))
        self.assertEqual(rc, 0, d.stderr())
        self.assertEqual(stopped, 1, "one exit")
        self.assertLess(took, deadline)


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""
test_balancer.py: the deployment of docker/compose.yaml, run on loopback:
Debian's haproxy with the repository's own docker/haproxy.cfg and
docker/haproxy-tls.cfg in front of three ikd processes started with a
token and sharing their chain registry in a redis-server started here
(--redis), as an operator runs them.

- requests are spread over the three replicas (each replica's own
  /metrics counts them);
- a chain registered through the balancer, without any affinity header, is
  solved by id through it every time (whichever replica answers), each
  replica describes it, and streams opened by its id through the balancer
  answer;
- haproxy starts while a replica's name does not resolve (init-addr
  last,libc,none and run-time resolvers; it used to refuse to start);
- a WebSocket stream passes through the balancer, answers in seq order;
- a rolling restart (SIGTERM one replica at a time, start it again on its
  port) under wrk load, solves by chain id and a live stream opened by
  chain id loses no request and never meets unknown_chain: wrk sees only
  200s and no socket error, every solve by id answers 200, every replica
  exits 0, the stream is closed with 1001 at most and answers again after
  reconnecting (by id, on whichever replica);
- HTTPS and WSS through the TLS frontend with a certificate made here, and
  plain HTTP refused on that port;
- docker/compose.yaml agrees with the daemon and the balancer: every IKD_*
  variable it sets is one that `ikd --help` names, every variable the two
  HAProxy files read is set for the balancer, the replicas it routes to are
  the compose services, they share the compose Redis, their solver threads
  do not multiply the cores, and only the TLS port is published;
- docker/prometheus: promtool accepts the scrape configuration and the
  alert rules, and every ikd_ or process_ metric the rules name is one a
  real replica exposes;
- tests/bench/balancer_bench.sh (the same setup, measured by make bench)
  leaves no process behind: run briefly in a session of its own, after it
  ends (normally, stopped by SIGTERM midway, or failing at its first
  measurement) no process of that session is left (it used to start its
  replicas inside $(...), where their pids were lost, and leave them
  running).

The daemon is started by test_stream.py's helpers' conventions; haproxy and
redis-server must be installed (docker/install-deps.sh does): without them
the test fails.
"""
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_registry_shared import Redis  # noqa: E402
from test_stream import BONES, IKD_BIN, SLOW, TIMEOUT, bones_target, run  # noqa: E402

import websockets  # noqa: E402
import yaml  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HAPROXY_CFG = os.path.join(ROOT, "docker", "haproxy.cfg")
HAPROXY_TLS_CFG = os.path.join(ROOT, "docker", "haproxy-tls.cfg")
WRK_LUA_ID = os.path.join(ROOT, "tests", "bench", "http_post_id.lua")
TOKEN = "balancer-test-token"
AUTH = {"Authorization": "Bearer " + TOKEN}
SOLVE = {"chain": BONES, "target": {"position": [0.3, 0.6, 0.2]}}


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def http(port, method, path, body=None, headers=None, scheme="http", context=None):
    """(status, text) of one request."""
    data = json.dumps(body).encode() if body is not None else None
    h = dict(AUTH)
    h.update(headers or {})
    req = urllib.request.Request("%s://127.0.0.1:%d%s" % (scheme, port, path), data=data,
                                 method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT, context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(port, name, labels=""):
    status, text = http(port, "GET", "/metrics")
    assert status == 200, (status, text)
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + labels) and not line.startswith("#"):
            rest = line[len(name):]
            if labels or rest.startswith(" ") or rest.startswith("{"):
                total += float(line.rsplit(" ", 1)[1])
    return total


class Replica:
    """One ikd on a fixed port (so that it can be started again there),
    sharing its registry through Redis at redis_url."""

    def __init__(self, port, redis_url):
        self.port = port
        self.redis_url = redis_url
        self.start()

    def start(self):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [IKD_BIN, "--listen", "127.0.0.1:%d" % self.port, "--token", TOKEN,
             "--log-level", "warn", "--redis", self.redis_url],
            stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("ikd listening on "):
            self.proc.kill()
            raise RuntimeError("replica on %d did not start: %r" % (self.port, line))

    def stop(self):
        """SIGTERM and wait; returns the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20 * SLOW)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.log.seek(0)
        self.last_log = self.log.read().decode(errors="replace")
        self.log.close()
        return self.proc.returncode


class BalancerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.haproxy_bin = shutil.which("haproxy") or (
            "/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)
        if cls.haproxy_bin is None:
            raise RuntimeError("haproxy is not installed: run sh docker/install-deps.sh")
        cls.tmp = tempfile.mkdtemp(prefix="ikd-balancer-")
        cls.cert = os.path.join(cls.tmp, "lb.pem")
        key = os.path.join(cls.tmp, "key.pem")
        crt = os.path.join(cls.tmp, "crt.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                        "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", key, "-out", crt], check=True, capture_output=True)
        with open(cls.cert, "w") as out:
            for f in (crt, key):
                with open(f) as src:
                    out.write(src.read())
        cls.ca = ssl.create_default_context(cafile=crt)
        ports = free_ports(5)
        cls.lb_port, cls.tls_port = ports[0], ports[1]
        cls.redis = Redis()
        cls.replicas = [Replica(p, "redis://127.0.0.1:%d" % cls.redis.port) for p in ports[2:]]
        env = dict(os.environ)
        env.update({
            "IKD_LB_BIND": "127.0.0.1:%d" % cls.lb_port,
            "IKD_LB_TLS_BIND": "127.0.0.1:%d" % cls.tls_port,
            "IKD_LB_TLS_CERT": cls.cert,
        })
        for i, r in enumerate(cls.replicas, 1):
            env["IKD_LB_%d" % i] = "127.0.0.1:%d" % r.port
        cls.hap_log = tempfile.TemporaryFile()
        cls.haproxy = subprocess.Popen(
            [cls.haproxy_bin, "-db", "-f", HAPROXY_CFG, "-f", HAPROXY_TLS_CFG],
            env=env, stdout=cls.hap_log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10 * SLOW
        while True:
            try:
                if http(cls.lb_port, "GET", "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if cls.haproxy.poll() is not None or time.monotonic() > deadline:
                cls.hap_log.seek(0)
                raise RuntimeError("haproxy did not come up: %s" % cls.hap_log.read().decode())
            time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        cls.haproxy.terminate()
        cls.haproxy.wait(10)
        cls.hap_log.close()
        for r in cls.replicas:
            if r.proc.poll() is None:
                r.stop()
        cls.redis.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def solves_on(self, r):
        return metric(r.port, "ikd_http_requests_total", '{route="/v1/solve",status="200"}')

    def test_spread(self):
        before = [self.solves_on(r) for r in self.replicas]
        for _ in range(90):
            status, text = http(self.lb_port, "POST", "/v1/solve", SOLVE)
            self.assertEqual(status, 200, text)
        got = [self.solves_on(r) - b for r, b in zip(self.replicas, before)]
        # at least the 90 (a layer-7 retry of a request whose connection
        # closed unanswered may reach a second replica)
        self.assertGreaterEqual(sum(got), 90, got)
        for n in got:
            self.assertGreaterEqual(n, 15, "requests not spread over the replicas: %r" % got)

    def register(self, chain):
        status, text = http(self.lb_port, "POST", "/v1/chains", chain)
        self.assertIn(status, (200, 201), text)
        return json.loads(text)["id"]

    def test_chain_ids_work_on_every_replica(self):
        chain = dict(BONES, positions=[[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0.001]])
        cid = self.register(chain)
        body = {"chain_id": cid, "target": {"position": [0.3, 0.6, 0.2]}}
        for _ in range(30):  # round robin: every replica answers some
            status, text = http(self.lb_port, "POST", "/v1/solve", body)
            self.assertEqual(status, 200, text)
            self.assertEqual(json.loads(text)["status"], "success")
        for r in self.replicas:
            self.assertEqual(http(r.port, "GET", "/v1/chains/" + cid)[0], 200)

        async def opens():
            for i in range(6):
                async with websockets.connect("ws://127.0.0.1:%d/v1/stream" % self.lb_port,
                                              extra_headers=AUTH, ping_interval=None,
                                              open_timeout=TIMEOUT) as ws:
                    await ws.send(json.dumps({"type": "open", "stream": "s", "chain_id": cid}))
                    m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                    self.assertEqual(m["type"], "opened", m)
        run(opens())

    def test_haproxy_starts_while_a_name_does_not_resolve(self):
        env = dict(os.environ, IKD_LB_BIND="127.0.0.1:%d" % free_ports(1)[0],
                   IKD_LB_1="no-such-replica.invalid:8080", IKD_LB_2="127.0.0.1:1",
                   IKD_LB_3="127.0.0.1:2")
        r = subprocess.run([self.haproxy_bin, "-c", "-f", HAPROXY_CFG], env=env,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    async def stream_in_order(self, url, count, **kw):
        async with websockets.connect(url, extra_headers=AUTH, ping_interval=None,
                                      open_timeout=TIMEOUT, **kw) as ws:
            await ws.send(json.dumps({"type": "open", "stream": "s", "chain": BONES}))
            m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
            self.assertEqual(m["type"], "opened", m)
            for i in range(1, count + 1):
                await ws.send(json.dumps({"type": "target", "stream": "s", "seq": i,
                                          "target": bones_target(i)}))
            seqs, skipped = [], 0
            while not seqs or seqs[-1] != count:
                m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                self.assertEqual(m["type"], "solution", m)
                self.assertEqual(m["result"]["status"], "success", m)
                seqs.append(m["seq"])
                skipped += m.get("skipped", 0)
            self.assertEqual(seqs, sorted(seqs), "answers out of order")
            self.assertEqual(len(seqs) + skipped, count)
            return seqs

    def test_stream_through_balancer(self):
        run(self.stream_in_order("ws://127.0.0.1:%d/v1/stream" % self.lb_port, 200))

    def test_tls_frontend(self):
        status, text = http(self.tls_port, "POST", "/v1/solve", SOLVE, scheme="https",
                            context=self.ca)
        self.assertEqual(status, 200, text)
        self.assertEqual(json.loads(text)["status"], "success")
        run(self.stream_in_order("wss://localhost:%d/v1/stream" % self.tls_port, 50,
                                 ssl=self.ca))
        # plain HTTP on the TLS port is not served
        with self.assertRaises(Exception):
            http(self.tls_port, "GET", "/readyz")

    def test_compose_matches_daemon_and_balancer(self):
        with open(os.path.join(ROOT, "docker", "compose.yaml")) as f:
            compose = yaml.safe_load(f)
        helptext = subprocess.run([IKD_BIN, "--help"], capture_output=True, text=True)
        known = set(re.findall(r"IKD_[A-Z_]+", helptext.stdout + helptext.stderr))
        self.assertIn("IKD_TOKEN", known)
        services = compose["services"]
        replicas = sorted(k for k in services if k.startswith("ikd"))
        self.assertEqual(len(replicas), 3, replicas)
        for name in replicas:
            env = services[name]["environment"]
            self.assertIn("IKD_TOKEN", env)
            for var in env:
                self.assertIn(var, known, "%s sets %s, which ikd does not read" % (name, var))
            self.assertNotIn("ports", services[name], "a replica must not be published")
        lb = services["balancer"]
        read = set()
        for cfg in (HAPROXY_CFG, HAPROXY_TLS_CFG):
            with open(cfg) as f:
                read |= set(re.findall(r"\$\{(IKD_LB_[A-Z0-9_]+)\}", f.read()))
        self.assertEqual(read - set(lb["environment"]), set(), "variables the balancer lacks")
        targets = sorted(v.split(":")[0] for k, v in lb["environment"].items()
                         if re.fullmatch(r"IKD_LB_\d", k))
        self.assertEqual(targets, replicas)
        for k, v in lb["environment"].items():
            if re.fullmatch(r"IKD_LB_\d", k):
                self.assertEqual(v.split(":")[1], "8080", "the image's ikd listens on 8080")
        # the replicas share the compose Redis, and their threads add up to
        # no more than one per core (1 each by default)
        self.assertIn("redis", services)
        for name in replicas:
            env = services[name]["environment"]
            self.assertEqual(env["IKD_REDIS"], "redis://redis:6379")
            self.assertEqual(env["IKD_THREADS"], "${IKD_THREADS:-1}")
        self.assertNotIn("ports", services["redis"], "Redis must not be published")
        self.assertEqual(services["redis"]["networks"], ["backend"])
        tls_port = lb["environment"]["IKD_LB_TLS_BIND"].rsplit(":", 1)[1]
        self.assertEqual(lb["ports"], ["%s:%s" % (tls_port, tls_port)],
                         "only the TLS port is published")
        self.assertTrue(lb["environment"]["IKD_LB_BIND"].startswith("127.0.0.1:"),
                        "the plain frontend stays inside the balancer's container")
        with open(os.path.join(ROOT, "Dockerfile")) as f:
            self.assertIn("ENV IKD_LISTEN=0.0.0.0:8080", f.read())

    def test_prometheus_files(self):
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool is not installed: run sh docker/install-deps.sh")
        pdir = os.path.join(ROOT, "docker", "prometheus")
        r = subprocess.run([promtool, "check", "rules", os.path.join(pdir, "alerts.yml")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # the configuration as deployed, its token file made here
        with open(os.path.join(pdir, "prometheus.yml")) as f:
            cfg = f.read()
        token = os.path.join(self.tmp, "ikd-token")
        with open(token, "w") as f:
            f.write(TOKEN)
        shutil.copy(os.path.join(pdir, "alerts.yml"), self.tmp)
        copy = os.path.join(self.tmp, "prometheus.yml")
        with open(copy, "w") as f:
            f.write(cfg.replace("/etc/prometheus/ikd-token", token))
        r = subprocess.run([promtool, "check", "config", copy], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(pdir, "alerts.yml")) as f:
            named = set(re.findall(r"\b((?:ikd|process)_[a-z_]+)", f.read()))
        status, text = http(self.replicas[0].port, "GET", "/metrics")
        self.assertEqual(status, 200, text)
        exposed = set()
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                name, kind = line.split()[2:4]
                exposed.add(name)
                if kind == "histogram":
                    exposed |= {name + "_bucket", name + "_sum", name + "_count"}
        self.assertTrue(named, "the rules name no ikd metric")
        self.assertEqual(named - exposed, set(), "rules name metrics ikd does not expose")

    def test_rolling_restart_loses_nothing(self):
        # every request and stream names its chain by id, without affinity:
        # a replica that restarts (and forgot everything) fetches it again
        cid = self.register(dict(BONES, positions=[[0, 0, 0], [0, 0.5, 0.002], [0, 1.0, 0]]))
        seconds = max(6, int(3 * len(self.replicas) + 3))
        wrk = subprocess.Popen(
            ["wrk", "-t1", "-c16", "-d%ds" % seconds, "-s", WRK_LUA_ID,
             "-H", "Authorization: Bearer " + TOKEN,
             "http://127.0.0.1:%d/v1/solve" % self.lb_port],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=dict(os.environ, IKD_CHAIN_ID=cid))
        stop = {"now": False}
        stats = {"answers": 0, "closes": [], "after_last_restart": 0, "restarts_done": 0}

        async def streamer():
            url = "ws://127.0.0.1:%d/v1/stream" % self.lb_port
            seq = 0
            while not stop["now"]:
                try:
                    async with websockets.connect(url, extra_headers=AUTH, ping_interval=None,
                                                  open_timeout=TIMEOUT) as ws:
                        await ws.send(json.dumps({"type": "open", "stream": "s",
                                                  "chain_id": cid}))
                        m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                        self.assertEqual(m["type"], "opened", m)
                        while not stop["now"]:
                            seq += 1
                            await ws.send(json.dumps({"type": "target", "stream": "s",
                                                      "seq": seq, "target": bones_target(seq)}))
                            m = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                            self.assertEqual((m["type"], m["seq"]), ("solution", seq), m)
                            stats["answers"] += 1
                            if stats["restarts_done"] == len(self.replicas):
                                stats["after_last_restart"] += 1
                            await asyncio.sleep(0.005)
                except websockets.ConnectionClosed as e:
                    stats["closes"].append(e.code)
                    await asyncio.sleep(0.05)

        def restart_all():
            time.sleep(1.0)
            for r in self.replicas:
                rc = r.stop()
                self.assertEqual(rc, 0, "replica exited %s:\n%s" % (rc, r.last_log[-2000:]))
                r.start()
                # back in the pool after two health checks (rise 2, inter 500ms)
                time.sleep(1.5)
                stats["restarts_done"] += 1

        async def main():
            task = asyncio.ensure_future(streamer())
            await asyncio.to_thread(restart_all)
            await asyncio.sleep(0.5)
            stop["now"] = True
            await asyncio.wait_for(task, 10 * SLOW)

        asyncio.run(asyncio.wait_for(main(), 60 * SLOW))
        out, _ = wrk.communicate(timeout=30 * SLOW)
        out = out.decode()
        self.assertEqual(wrk.returncode, 0, out)
        self.assertNotIn("Non-2xx", out, "a request (by chain id) was answered with an error:\n" + out)
        self.assertNotIn("Socket errors", out, "a request was lost:\n" + out)
        self.assertIn("requests in", out, out)
        done = int(out.split(" requests in")[0].split()[-1])
        self.assertGreater(done, 100, out)
        self.assertGreater(stats["answers"], 50, stats)
        self.assertGreater(stats["after_last_restart"], 0, stats)
        for code in stats["closes"]:
            self.assertEqual(code, 1001, stats)


def session_processes(sid):
    """[(pid, state, command)] of the live processes of session sid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append((int(d), fields[0], comm))
    return out


class BalancerBenchTest(unittest.TestCase):
    """balancer_bench.sh stops every process it starts."""

    BENCH = os.path.join(ROOT, "tests", "bench", "balancer_bench.sh")

    def start(self, **env):
        e = dict(os.environ)
        e["IKD_LB_BENCH_SECONDS"] = "1"
        e.update(env)
        proc = subprocess.Popen(["sh", self.BENCH, os.path.dirname(IKD_BIN) or "."], env=e,
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        self.addCleanup(self.kill_session, proc)
        return proc

    @staticmethod
    def kill_session(proc):
        """Whatever a failed test leaves: the script and its session's
        processes, by pid."""
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid, _, _ in session_processes(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def assert_nothing_left(self, proc):
        """No process of the bench's session is alive (waiting up to 2 s
        for processes on their way out)."""
        deadline = time.monotonic() + 2
        left = session_processes(proc.pid)
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = session_processes(proc.pid)
        self.assertEqual(left, [], "processes the benchmark left running")

    def test_a_full_run_leaves_nothing(self):
        proc = self.start()
        out, err = proc.communicate(timeout=120 * SLOW)
        self.assertEqual(proc.returncode, 0, err.decode())
        last = json.loads(out.decode().strip().splitlines()[-1])
        self.assertEqual(last["bench"], "balancer_summary")
        self.assertGreater(last["lb_3_rps"], 0)
        self.assertGreater(last["direct_rps"], 0)
        self.assert_nothing_left(proc)

    def test_stopped_midway_leaves_nothing(self):
        proc = self.start(IKD_LB_BENCH_SECONDS="30")
        deadline = time.monotonic() + 20 * SLOW
        while time.monotonic() < deadline:
            if any(c == "wrk" for _, _, c in session_processes(proc.pid)):
                break
            time.sleep(0.05)
        else:
            self.fail("the benchmark started no wrk")
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=10 * SLOW)  # not the 30 s of the measurement
        except subprocess.TimeoutExpired:
            self.fail("the benchmark did not stop on SIGTERM")
        self.assertNotEqual(proc.returncode, 0)
        self.assert_nothing_left(proc)

    def test_a_failure_leaves_nothing(self):
        # wrk refuses 0 connections: the first measurement fails, after the
        # first replica started
        proc = self.start(IKD_LB_BENCH_CONNECTIONS="0")
        out, err = proc.communicate(timeout=60 * SLOW)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("balancer_bench: wrk failed", err.decode())
        self.assert_nothing_left(proc)


if __name__ == "__main__":
    unittest.main()

#!/bin/sh
# Balancer benchmark (make bench, or alone: sh tests/bench/balancer_bench.sh
# [BUILD]): two-bone POST /v1/solve through HAProxy with the repository's
# docker/haproxy.cfg in front of 1, 2 and 3 ikd replicas, against wrk
# straight to one replica, all in the same run. The replicas' solver
# threads, and their event loops, add up to the machine's cores (one
# replica: all of them; three: one each). Servers of the configuration that a run does not use point at
# a closed port and leave the pool at their first health check.
# Then the same by chain id with the registry shared in Redis (a
# redis-server started here; ikd --redis): three replicas behind HAProxy
# against one replica alone with every core, both by id, in the same run
# (the chain registered once, through the direct replica; each balanced
# replica fetches it from Redis on its first request, as after a restart).
# Prints one JSON object per replica count and one for the ids, then a
# summary object last: requests/s and p99 of each, and each balanced run's
# requests/s as a fraction of its direct run's.
# Knobs: IKD_LB_BENCH_SECONDS (default 5), IKD_LB_BENCH_CONNECTIONS (50).
#
# Every process it starts (replicas, haproxy, wrk, sleep) is started from
# this shell itself, never inside $(...), so that its pid is recorded; all
# are stopped on exit, on failure and on SIGINT/SIGTERM (the waits are
# "wait PID", which a trapped signal interrupts at once).
# tests/server/test_balancer.py runs it briefly and checks that nothing it
# started is left.
set -eu
BUILD=${1:-build}
SECS=${IKD_LB_BENCH_SECONDS:-5}
CONNS=${IKD_LB_BENCH_CONNECTIONS:-50}
HERE=$(dirname "$0")
ROOT="$HERE/../.."
LUA="$HERE/http_post.lua"
LUA_ID="$HERE/http_post_id.lua"
CORES=$(nproc)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || { echo "balancer_bench: haproxy is not installed" >&2; exit 1; }
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
REDIS=$(command -v redis-server || echo /usr/bin/redis-server)
[ -x "$REDIS" ] || { echo "balancer_bench: redis-server is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
pids=""
cleanup() {
    trap - EXIT INT TERM
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    pids=""
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# run CMD...: runs CMD in the background, recorded, and waits for it (a
# trapped signal interrupts the wait); returns CMD's status
run() {
    "$@" &
    _p=$!
    pids="$pids $_p"
    _rc=0
    wait "$_p" || _rc=$?
    pids=$(echo "$pids" | sed "s/ $_p\b//")
    return $_rc
}

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# replica N THREADS [FLAGS...]: starts ikd in the background and sets
# $port (called directly, never in $(...), so that its pid stays recorded)
replica() {
    # the file of a previous round with the same N would otherwise satisfy
    # the wait below before the new process truncates it
    : >"$tmp/r$1.out"
    _n=$1
    _t=$2
    shift 2
    "$BUILD/ikd" --listen 127.0.0.1:0 --log-level warn --threads "$_t" --loops "$_t" \
        --max-connections-per-address 10000 "$@" >"$tmp/r$_n.out" 2>"$tmp/r$_n.err" &
    _p=$!
    pids="$pids $_p"
    # wait for the whole "listening on HOST:PORT" line: a line read while
    # it is being written has no port yet
    i=0
    port=
    while [ -z "$port" ]; do
        if [ "$(tail -c 1 "$tmp/r$_n.out" 2>/dev/null | od -An -c | tr -d ' ')" = '\n' ]; then
            port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/r$_n.out" | head -1)
        fi
        [ -n "$port" ] && break
        i=$((i + 1))
        if [ $i -gt 200 ] || ! kill -0 "$_p" 2>/dev/null; then
            echo "balancer_bench: replica $_n did not start" >&2; cat "$tmp/r$_n.err" >&2; exit 1
        fi
        run sleep 0.05
    done
}

# load URL [SCRIPT]: wrk against URL; sets $rps and $p99 (milliseconds)
load() {
    run wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "${2:-$LUA}" "$1" >"$tmp/wrk.out" ||
        { echo "balancer_bench: wrk failed against $1:" >&2; cat "$tmp/wrk.out" >&2; exit 1; }
    if grep -q "Non-2xx\|Socket errors" "$tmp/wrk.out"; then
        echo "balancer_bench: errors through $1:" >&2; cat "$tmp/wrk.out" >&2; exit 1
    fi
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$tmp/wrk.out")
    p99=$(awk '$1 == "99%" {v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
               if (u == "us") v /= 1000; else if (u == "s") v *= 1000; print v}' "$tmp/wrk.out")
    [ -n "$rps" ] && [ -n "$p99" ] ||
        { echo "balancer_bench: no figures from wrk against $1:" >&2; cat "$tmp/wrk.out" >&2; exit 1; }
}

stop_all() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    pids=""
}

# the baseline: one replica with every core, no balancer
replica 0 "$CORES"
load "http://127.0.0.1:$port/v1/solve"
direct_rps=$rps; direct_p99=$p99
stop_all

closed=$(free_port)
summary=""
for n in 1 2 3; do
    threads=$((CORES / n)); [ "$threads" -ge 1 ] || threads=1
    replica 1 "$threads"; a1=127.0.0.1:$port
    a2=127.0.0.1:$closed; a3=127.0.0.1:$closed
    if [ "$n" -ge 2 ]; then replica 2 "$threads"; a2=127.0.0.1:$port; fi
    if [ "$n" -ge 3 ]; then replica 3 "$threads"; a3=127.0.0.1:$port; fi
    lb=$(free_port)
    IKD_LB_BIND=127.0.0.1:$lb IKD_LB_1=$a1 IKD_LB_2=$a2 IKD_LB_3=$a3 \
        "$HAPROXY" -db -f "$ROOT/docker/haproxy.cfg" >"$tmp/haproxy.$n.log" 2>&1 &
    hap=$!
    pids="$pids $hap"
    run sleep 2 # the unused servers fail their first check and leave the pool
    kill -0 "$hap" 2>/dev/null || { echo "balancer_bench: haproxy stopped:" >&2; cat "$tmp/haproxy.$n.log" >&2; exit 1; }
    load "http://127.0.0.1:$lb/v1/solve"
    stop_all
    line=$(awk -v n="$n" -v t="$threads" -v r="$rps" -v p="$p99" -v d="$direct_rps" 'BEGIN {
        printf "{\"bench\":\"balancer\",\"replicas\":%d,\"threads_each\":%d,\"rps\":%.0f,\"p99_ms\":%.3f,\"ratio_to_direct\":%.3f}", n, t, r, p, r / d }')
    echo "$line"
    summary="$summary\"lb_${n}_rps\":$rps,\"lb_${n}_p99_ms\":$p99,"
done
# by chain id, the registry shared in Redis
rport=$(free_port)
"$REDIS" --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
pids="$pids $!"
i=0
until /usr/bin/python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1",int(sys.argv[1])),1); s.sendall(b"PING\r\n"); sys.exit(0 if s.recv(16).startswith(b"+PONG") else 1)' "$rport" 2>/dev/null; do
    i=$((i + 1))
    [ $i -le 200 ] || { echo "balancer_bench: redis-server did not start" >&2; cat "$tmp/redis.log" >&2; exit 1; }
    run sleep 0.05
done
shared="--redis redis://127.0.0.1:$rport"
# shellcheck disable=SC2086
replica 0 "$CORES" $shared
chain='{"kind":"bones","positions":[[0,0,0],[0,0.5,0],[0,1.0,0]]}'
run curl -s -o "$tmp/chain.json" -X POST -H 'Content-Type: application/json' --data "$chain" \
    "http://127.0.0.1:$port/v1/chains" ||
    { echo "balancer_bench: cannot register the chain" >&2; exit 1; }
IKD_CHAIN_ID=$(sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p' "$tmp/chain.json")
[ ${#IKD_CHAIN_ID} -eq 32 ] || { echo "balancer_bench: no chain id in:" >&2; cat "$tmp/chain.json" >&2; exit 1; }
export IKD_CHAIN_ID
load "http://127.0.0.1:$port/v1/solve" "$LUA_ID"
direct_id_rps=$rps; direct_id_p99=$p99
stop_all
"$REDIS" --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
pids="$pids $!"
run sleep 0.3
threads=$((CORES / 3)); [ "$threads" -ge 1 ] || threads=1
# Redis restarted empty: registered again, then three replicas that never saw it
# shellcheck disable=SC2086
replica 1 "$threads" $shared; a1=127.0.0.1:$port
run curl -s -o /dev/null -X POST -H 'Content-Type: application/json' --data "$chain" \
    "http://127.0.0.1:$port/v1/chains"
# shellcheck disable=SC2086
replica 2 "$threads" $shared; a2=127.0.0.1:$port
# shellcheck disable=SC2086
replica 3 "$threads" $shared; a3=127.0.0.1:$port
lb=$(free_port)
IKD_LB_BIND=127.0.0.1:$lb IKD_LB_1=$a1 IKD_LB_2=$a2 IKD_LB_3=$a3 \
    "$HAPROXY" -db -f "$ROOT/docker/haproxy.cfg" >"$tmp/haproxy.id.log" 2>&1 &
hap=$!
pids="$pids $hap"
run sleep 2
kill -0 "$hap" 2>/dev/null || { echo "balancer_bench: haproxy stopped:" >&2; cat "$tmp/haproxy.id.log" >&2; exit 1; }
load "http://127.0.0.1:$lb/v1/solve" "$LUA_ID"
stop_all
awk -v t="$threads" -v r="$rps" -v p="$p99" -v d="$direct_id_rps" -v dp="$direct_id_p99" 'BEGIN {
    printf "{\"bench\":\"balancer_by_id\",\"replicas\":3,\"threads_each\":%d,\"rps\":%.0f,\"p99_ms\":%.3f,\"direct_rps\":%.0f,\"direct_p99_ms\":%.3f,\"ratio_to_direct\":%.3f}\n", t, r, p, d, dp, r / d }'
summary="$summary\"lb_3_id_rps\":$rps,\"lb_3_id_p99_ms\":$p99,\"direct_id_rps\":$direct_id_rps,\"direct_id_p99_ms\":$direct_id_p99,"

echo "{\"bench\":\"balancer_summary\",\"connections\":$CONNS,\"seconds\":$SECS,\"cores\":$CORES,${summary}\"direct_rps\":$direct_rps,\"direct_p99_ms\":$direct_p99}"

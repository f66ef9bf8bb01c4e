#!/bin/sh
# Balancer benchmark (make bench, or alone: sh tests/bench/balancer_bench.sh
# [BUILD]): two-bone POST /v1/solve through HAProxy with the repository's
# docker/haproxy.cfg in front of 1, 2 and 3 ikd replicas, against wrk
# straight to one replica, all in the same run. The replicas' solver
# threads add up to the machine's cores (one replica: all of them; three:
# one each). Servers of the configuration that a run does not use point at
# a closed port and leave the pool at their first health check.
# Prints one JSON object per replica count, then a summary object last:
# requests/s and p99 of each, and each balanced run's requests/s as a
# fraction of the direct run's.
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
CORES=$(nproc)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || { echo "balancer_bench: haproxy is not installed" >&2; exit 1; }
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
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

# replica N THREADS: starts ikd in the background and sets $port (called
# directly, never in $(...), so that its pid stays recorded)
replica() {
    # the file of a previous round with the same N would otherwise satisfy
    # the wait below before the new process truncates it
    : >"$tmp/r$1.out"
    "$BUILD/ikd" --listen 127.0.0.1:0 --log-level warn --threads "$2" \
        --max-connections-per-address 10000 >"$tmp/r$1.out" 2>"$tmp/r$1.err" &
    _p=$!
    pids="$pids $_p"
    # wait for the whole "listening on HOST:PORT" line: a line read while
    # it is being written has no port yet
    i=0
    port=
    while [ -z "$port" ]; do
        if [ "$(tail -c 1 "$tmp/r$1.out" 2>/dev/null | od -An -c | tr -d ' ')" = '\n' ]; then
            port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/r$1.out" | head -1)
        fi
        [ -n "$port" ] && break
        i=$((i + 1))
        if [ $i -gt 200 ] || ! kill -0 "$_p" 2>/dev/null; then
            echo "balancer_bench: replica $1 did not start" >&2; cat "$tmp/r$1.err" >&2; exit 1
        fi
        run sleep 0.05
    done
}

# load URL: wrk against URL; sets $rps and $p99 (milliseconds)
load() {
    run wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "$LUA" "$1" >"$tmp/wrk.out" ||
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
echo "{\"bench\":\"balancer_summary\",\"connections\":$CONNS,\"seconds\":$SECS,\"cores\":$CORES,${summary}\"direct_rps\":$direct_rps,\"direct_p99_ms\":$direct_p99}"

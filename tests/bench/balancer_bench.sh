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
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# replica N THREADS: starts ikd, prints its port
replica() {
    "$BUILD/ikd" --listen 127.0.0.1:0 --log-level warn --threads "$2" \
        --max-connections-per-address 10000 >"$tmp/r$1.out" 2>"$tmp/r$1.err" &
    pids="$pids $!"
    i=0
    while ! grep -q "listening on" "$tmp/r$1.out" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 100 ] && { echo "balancer_bench: replica $1 did not start" >&2; exit 1; }
        sleep 0.05
    done
    sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$tmp/r$1.out" | head -1
}

# wrk URL: prints "rps p99_ms"
load() {
    wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "$LUA" "$1" >"$tmp/wrk.out"
    if grep -q "Non-2xx\|Socket errors" "$tmp/wrk.out"; then
        echo "balancer_bench: errors through $1:" >&2; cat "$tmp/wrk.out" >&2; exit 1
    fi
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$tmp/wrk.out")
    p99=$(awk '$1 == "99%" {v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
               if (u == "us") v /= 1000; else if (u == "s") v *= 1000; print v}' "$tmp/wrk.out")
    echo "$rps $p99"
}

stop_all() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    pids=""
}

# the baseline: one replica with every core, no balancer
port=$(replica 0 "$CORES")
set -- $(load "http://127.0.0.1:$port/v1/solve")
direct_rps=$1; direct_p99=$2
stop_all

closed=$(free_port)
summary=""
for n in 1 2 3; do
    threads=$((CORES / n)); [ "$threads" -ge 1 ] || threads=1
    a1=127.0.0.1:$(replica 1 "$threads")
    a2=127.0.0.1:$closed; a3=127.0.0.1:$closed
    [ "$n" -ge 2 ] && a2=127.0.0.1:$(replica 2 "$threads")
    [ "$n" -ge 3 ] && a3=127.0.0.1:$(replica 3 "$threads")
    lb=$(free_port)
    IKD_LB_BIND=127.0.0.1:$lb IKD_LB_1=$a1 IKD_LB_2=$a2 IKD_LB_3=$a3 \
        "$HAPROXY" -db -f "$ROOT/docker/haproxy.cfg" >"$tmp/haproxy.$n.log" 2>&1 &
    pids="$pids $!"
    sleep 2 # the unused servers fail their first check and leave the pool
    set -- $(load "http://127.0.0.1:$lb/v1/solve")
    stop_all
    line=$(awk -v n="$n" -v t="$threads" -v r="$1" -v p="$2" -v d="$direct_rps" 'BEGIN {
        printf "{\"bench\":\"balancer\",\"replicas\":%d,\"threads_each\":%d,\"rps\":%.0f,\"p99_ms\":%.3f,\"ratio_to_direct\":%.3f}", n, t, r, p, r / d }')
    echo "$line"
    summary="$summary\"lb_${n}_rps\":$1,\"lb_${n}_p99_ms\":$2,"
done
echo "{\"bench\":\"balancer_summary\",\"connections\":$CONNS,\"seconds\":$SECS,\"cores\":$CORES,${summary}\"direct_rps\":$direct_rps,\"direct_p99_ms\":$direct_p99}"

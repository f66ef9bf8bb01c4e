#!/bin/sh
# Runs the benchmarks (make bench): the two-bone benchmark (seed 001), the
# proto layer alone on the two-bone HTTP body (decode, run, encode, free),
# then the chain benchmark on the five
# shared robots with their shared target files ($IKD_DATA/targets/, TRAC-IK
# protocol: full pose at 1e-5, 5 ms budget, seeded from mid-limit), 2000
# samples each, then the HTTP benchmark, then the WebSocket benchmark. Every
# command prints one JSON object on its last line.
set -eu
BUILD=${1:-build}
IKD_DATA="${IKD_DATA:-../shared/data}"
SAMPLES=${IKD_BENCH_SAMPLES:-2000}
BIN="$BUILD/ikbench"

chain() { # robot base tip
    "$BIN" chain --urdf "$IKD_DATA/robots/$1.urdf" --base "$2" --tip "$3" \
        --targets "$IKD_DATA/targets/$1.txt" --samples "$SAMPLES" --timeout-ms 5 --tol 1e-5
}

"$BIN" two-bone --samples "$SAMPLES"
"$BIN" proto
"$BIN" parse
chain ur5 base_link tool0
chain abb_irb120 base_link tool0
chain kuka_iiwa14_r820 base_link tool0
chain franka_panda panda_link0 panda_link8
chain pr2 torso_lift_link r_wrist_roll_link

# the daemon over HTTP: wrk against ikd and a bare libmicrohttpd server,
# same run (tests/bench/http_bench.sh)
sh "$(dirname "$0")/http_bench.sh" "$BUILD"

# the daemon over WebSocket (build/ws_bench, a C client on libuv and wslay,
# against ikd started here on a free port): 50 connections streaming
# two-bone targets (issue 4 asks for at least 150,000 solutions/s), then
# 7-joint full-pose streams on the KUKA iiwa 14, printed next to the
# solver's own rate on the same robot and targets (ikbench chain, measured
# again here so that both figures come from the same run) as a ratio.
# Knobs: IKD_WS_BENCH_SECONDS (default 5), IKD_WS_BENCH_CONNECTIONS (50),
# IKD_WS_BENCH_STREAMS (streams per connection, default 4),
# IKD_WS_BENCH_CHAIN_CONNECTIONS (8).
WS_SECS=${IKD_WS_BENCH_SECONDS:-5}
ws_tmp=$(mktemp -d)
ikd_pid=""
ws_cleanup() {
    [ -n "$ikd_pid" ] && kill "$ikd_pid" 2>/dev/null && wait "$ikd_pid" 2>/dev/null
    rm -rf "$ws_tmp"
}
trap ws_cleanup EXIT INT TERM
"$BUILD/ikd" --listen 127.0.0.1:0 --log-level warn >"$ws_tmp/ikd.out" 2>"$ws_tmp/ikd.err" &
ikd_pid=$!
i=0
while ! grep -q "listening on" "$ws_tmp/ikd.out" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 "$ikd_pid" 2>/dev/null; then
        echo "ws_bench: ikd did not start" >&2; cat "$ws_tmp/ikd.err" >&2; exit 1
    fi
    sleep 0.05
done
port=$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$ws_tmp/ikd.out" | head -1)
"$BUILD/ws_bench" two-bone --url "127.0.0.1:$port" --seconds "$WS_SECS" \
    --connections "${IKD_WS_BENCH_CONNECTIONS:-50}" --streams "${IKD_WS_BENCH_STREAMS:-4}"
solver=$(chain kuka_iiwa14_r820 base_link tool0 | tail -1)
echo "$solver"
ws=$("$BUILD/ws_bench" chain --url "127.0.0.1:$port" --seconds "$WS_SECS" \
    --connections "${IKD_WS_BENCH_CHAIN_CONNECTIONS:-8}" \
    --urdf "$IKD_DATA/robots/kuka_iiwa14_r820.urdf" --base base_link --tip tool0 \
    --targets "$IKD_DATA/targets/kuka_iiwa14_r820.txt" | tail -1)
echo "$ws"
# the same robot streamed as a controller does: a smooth motion (20 poses
# between consecutive configurations of the target file), warm starts apply
smooth=$("$BUILD/ws_bench" chain --url "127.0.0.1:$port" --seconds "$WS_SECS" \
    --connections "${IKD_WS_BENCH_CHAIN_CONNECTIONS:-8}" --smooth 20 \
    --urdf "$IKD_DATA/robots/kuka_iiwa14_r820.urdf" --base base_link --tip tool0 \
    --targets "$IKD_DATA/targets/kuka_iiwa14_r820.txt" | tail -1)
echo "$smooth"
kill "$ikd_pid"
rc=0
wait "$ikd_pid" || rc=$?
ikd_pid=""
[ "$rc" -eq 0 ] || { echo "ws_bench: ikd exited with $rc after SIGTERM" >&2; exit 1; }
# ratio: the daemon's 7-joint solutions/s over one solver thread's solves/s
# (1e6 / mean_us); ikd's pool has one thread per core by default
solver_mean=$(echo "$solver" | sed -n 's/.*"mean_us":\([0-9.eE+-]*\).*/\1/p')
ws_rate=$(echo "$ws" | sed -n 's/.*"solutions_per_s":\([0-9.eE+-]*\).*/\1/p')
ws_solve=$(echo "$ws" | sed -n 's/.*"solve_us_mean":\([0-9.eE+-]*\).*/\1/p')
awk -v m="$solver_mean" -v w="$ws_rate" -v s="$ws_solve" -v t="$(nproc)" 'BEGIN {
    r = 1e6 / m
    printf "{\"bench\":\"ws_chain_vs_solver\",\"robot\":\"kuka_iiwa14_r820\",\"ws_solutions_per_s\":%.0f,", w
    printf "\"solver_solves_per_s\":%.0f,\"ratio\":%.3f,\"pool_threads\":%d,", r, w / r, t
    printf "\"solver_mean_us\":%.2f,\"ws_solve_us_mean\":%.2f}\n", m, s
}'
smooth_rate=$(echo "$smooth" | sed -n 's/.*"solutions_per_s":\([0-9.eE+-]*\).*/\1/p')
smooth_solve=$(echo "$smooth" | sed -n 's/.*"solve_us_mean":\([0-9.eE+-]*\).*/\1/p')
awk -v m="$solver_mean" -v w="$smooth_rate" -v s="$smooth_solve" -v t="$(nproc)" 'BEGIN {
    r = 1e6 / m
    printf "{\"bench\":\"ws_chain_smooth_vs_solver\",\"robot\":\"kuka_iiwa14_r820\",\"ws_solutions_per_s\":%.0f,", w
    printf "\"solver_solves_per_s\":%.0f,\"ratio\":%.3f,\"pool_threads\":%d,", r, w / r, t
    printf "\"solver_mean_us\":%.2f,\"ws_solve_us_mean\":%.2f}\n", m, s
}'

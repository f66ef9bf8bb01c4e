#!/bin/sh
# Runs the benchmarks (make bench): the two-bone benchmark (seed 001), the
# proto layer alone on the two-bone HTTP body (decode, run, encode, free),
# then the chain benchmark on the five
# shared robots with their shared target files ($IKD_DATA/targets/, TRAC-IK
# protocol: full pose at 1e-5, 5 ms budget, seeded from mid-limit), 2000
# samples each, then the HTTP benchmark. Every command prints one JSON
# object on its last line.
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
chain ur5 base_link tool0
chain abb_irb120 base_link tool0
chain kuka_iiwa14_r820 base_link tool0
chain franka_panda panda_link0 panda_link8
chain pr2 torso_lift_link r_wrist_roll_link

# the daemon over HTTP: wrk against ikd and a bare libmicrohttpd server,
# same run (tests/bench/http_bench.sh)
sh "$(dirname "$0")/http_bench.sh" "$BUILD"

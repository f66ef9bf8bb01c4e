#!/bin/sh
# Runs the benchmarks (make bench): the two-bone benchmark (seed 001), the
# proto layer alone on the two-bone HTTP body (decode, run, encode, free),
# then the chain benchmark on the five
# shared robots with their shared target files ($IKD_DATA/targets/, TRAC-IK
# protocol: full pose at 1e-5, 5 ms budget, seeded from mid-limit), 2000
# samples each, collision-aware IK on the iiwa among three boxes (plain and
# avoiding, same run), the tree benchmark on both PR2 arms and the Baxter-like
# tree, the CMU walk as a tree of bones against a tree of joints, the
# decode of URDF chains as POST /v1/chains registers them, then the HTTP
# benchmark, then the WebSocket benchmarks (robot_bench.py among them), then
# the JavaScript and Python clients against the raw protocol. Every
# command prints one JSON object on its last line.
set -eu
BUILD=${1:-build}
IKD_DATA="${IKD_DATA:-tests/data}"
SAMPLES=${IKD_BENCH_SAMPLES:-2000}
BIN="$BUILD/ikbench"

chain() { # robot base tip
    "$BIN" chain --urdf "$IKD_DATA/robots/$1.urdf" --base "$2" --tip "$3" \
        --targets "$IKD_DATA/targets/$1.txt" --samples "$SAMPLES" --timeout-ms 5 --tol 1e-5
}

"$BIN" two-bone --samples "$SAMPLES"
"$BIN" proto
"$BIN" parse
# the number writers: shortest and options.digits against 17 digits
"$BIN" doubles
chain ur5 base_link tool0
chain abb_irb120 base_link tool0
chain kuka_iiwa14_r820 base_link tool0
chain franka_panda panda_link0 panda_link8
chain pr2 torso_lift_link r_wrist_roll_link

# collision-aware IK (solver/ik_collide.h, ikbench collide): the iiwa with
# our 23 spheres among a pillar, a plank and a shelf (tests/data/collision),
# targets from configurations 1 to 8 cm from an obstacle, each solved plainly
# and avoiding collisions in the same run (ratio: CPU time avoiding over
# plain; plain_colliding: the plain answers that hit something), with the
# margin 0 (avoid_collisions' default) and 1 cm (the targets' own clearance)
for margin in 0 0.01; do
    "$BIN" collide --urdf "$IKD_DATA/robots/kuka_iiwa14_r820.urdf" --base base_link --tip tool0 \
        --spheres "$IKD_DATA/collision/kuka_iiwa14_r820.json" --samples "$SAMPLES" \
        --timeout-ms 5 --tol 1e-5 --margin "$margin"
done
# the UR5 (18 spheres, a table and a post): numeric, then its closed form,
# each plainly and avoiding
"$BIN" collide --urdf "$IKD_DATA/robots/ur5.urdf" --base base_link --tip tool0 \
    --spheres "$IKD_DATA/collision/ur5.json" --samples "$SAMPLES" --timeout-ms 5 --tol 1e-5 \
    --margin 0.01

# the chain benchmark with two busy-looping processes beside it against
# the same run idle, back to back (tests/bench/contention_bench.sh): the
# time budget counts the solver thread's CPU time (solver/ik_budget.h)
sh "$(dirname "$0")/contention_bench.sh" "$BUILD"

# closed form (solver/ik_closed.h) against the numeric solver, same targets,
# same run: the UR5 and the IRB 120 with their target files, the UR10-like
# arm on random targets drawn inside its limits
closed() { # robot [ARGS]
    r=$1
    shift
    "$BIN" closed --urdf "$IKD_DATA/robots/$r.urdf" --base base_link --tip tool0 \
        --samples "$SAMPLES" --timeout-ms 5 --tol 1e-5 "$@"
}
# (and the same targets as one batch through the wire format: the time each
# result reports against the solver's own, service_added_us)
closed ur5 --targets "$IKD_DATA/targets/ur5.txt"
closed abb_irb120 --targets "$IKD_DATA/targets/abb_irb120.txt"
closed ur10_like

# several end effectors on one tree (solver/ik_tree.h): both PR2 arms, from
# torso_lift_link (two independent arms) and from base_link (the prismatic
# torso shared), and the Baxter-like tree (a torso yaw shared by two 7-joint
# arms), against the same arms solved as separate chains in the same run
# (ratio_tree_vs_separate; cpu_ratio in thread CPU time)
tree() { # robot base tips [ARGS]
    r=$1
    b=$2
    t=$3
    shift 3
    "$BIN" tree --urdf "$IKD_DATA/robots/$r.urdf" --base "$b" \
        --tips "$t" --samples "$SAMPLES" --timeout-ms 5 --tol 1e-5 "$@"
}
tree pr2 torso_lift_link l_wrist_roll_link,r_wrist_roll_link
tree pr2 base_link l_wrist_roll_link,r_wrist_roll_link
tree baxter_like base_link left_hand,right_hand

# whole bodies (tests/data/robots/humanoid_like.urdf, ours): from the
# pelvis, both feet and both hands (29 joints, the back shared by the hands)
# and the same with the ten fingertips (59 joints, the fingertips on
# positions), against the same tips as separate chains in the same run
tree humanoid_like pelvis l_foot,r_foot,l_hand,r_hand
tree humanoid_like pelvis \
    l_foot,r_foot,l_hand,r_hand,l_thumb_tip,l_index_tip,l_middle_tip,l_ring_tip,l_pinky_tip,r_thumb_tip,r_index_tip,r_middle_tip,r_ring_tip,r_pinky_tip \
    --position-tips l_thumb_tip,l_index_tip,l_middle_tip,l_ring_tip,l_pinky_tip,r_thumb_tip,r_index_tip,r_middle_tip,r_ring_tip,r_pinky_tip

# long chains (ikbench snake): snakes of 6, 12, 24, 48 and 64 joints, the
# chain protocol, cost per solve and per joint against the 6-joint one's
"$BIN" snake --samples "$((SAMPLES / 4))" --timeout-ms 5 --tol 1e-5

# strict priorities on trees with shared joints (ikbench priority): the
# priority-0 tip on a reachable pose, the priority-1 tip 10 m away (far) or
# on the pose of another configuration (conflict): how often each is met,
# the outcomes, the time; then the priority-1 tip's arm alone out of reach,
# as a one-tip tree and as a chain (issue 23: under 1 ms, out_of_reach)
priority() { # robot base tipA,tipB
    "$BIN" priority --urdf "$IKD_DATA/robots/$1.urdf" --base "$2" --tips "$3" \
        --samples "$((SAMPLES / 10))" --timeout-ms 5 --tol 1e-5
}
priority pr2 base_link l_wrist_roll_link,r_wrist_roll_link
priority humanoid_like pelvis l_hand,r_hand

# a character's walk streamed through the wire format as a tree of a
# skeleton's bones, against the same walk as a tree of joints in the same
# run (ratio_bones_vs_joints; tests/bench/walk_bench.c)
"$BUILD/walk_bench" --data "$IKD_DATA"

# registering URDF chains (POST /v1/chains's decode on this thread, one
# line per case: the UR5, the iiwa with and without its spheres, the PR2
# as a tree, the iiwa padded to 4.4 MB; tests/bench/register_bench.c):
# about 2 s
"$BUILD/register_bench" --data "$IKD_DATA"

# a robot controller's stream at solver level (ikbench stream): 12 smooth
# motions of 300 steps each, every solve seeded with the previous answer,
# plainly and following the motion (ik_numeric_opts.follow, what streams
# use) in the same run: the iiwa through its aligned axes (joints 2 and 6
# around 0) and at an ordinary working pose, the Panda, the PR2's arm
stream() { # robot base tip [--centre ...]
    r=$1
    b=$2
    t=$3
    shift 3
    "$BIN" stream --urdf "$IKD_DATA/robots/$r.urdf" --base "$b" --tip "$t" \
        --timeout-ms 5 --tol 1e-5 "$@"
}
stream kuka_iiwa14_r820 base_link tool0 --centre 0.2,0,-0.2,-1.3,0.3,0,0.1
stream kuka_iiwa14_r820 base_link tool0 --centre 0.2,0.7,-0.2,-1.3,0.3,0.8,0.1
stream franka_panda panda_link0 panda_link8 --centre 0.1,-0.4,0.1,-2,0.1,1.7,0.7
stream pr2 torso_lift_link r_wrist_roll_link
# stream continuity unseeded (the stream opens without a seed: its first
# answer from the mid-limit pose, first found, then every solve seeded with
# the previous answer): the largest answer step against the motion's own, on
# the repository's robots
stream ur5 base_link tool0 --unseeded
stream abb_irb120 base_link tool0 --unseeded
stream kuka_iiwa14_r820 base_link tool0 --centre 0.2,0.7,-0.2,-1.3,0.3,0.8,0.1 --unseeded
stream franka_panda panda_link0 panda_link8 --centre 0.1,-0.4,0.1,-2,0.1,1.7,0.7 --unseeded
stream pr2 torso_lift_link r_wrist_roll_link --unseeded

# the daemon over HTTP: wrk against ikd and a bare libmicrohttpd server,
# same run (tests/bench/http_bench.sh)
sh "$(dirname "$0")/http_bench.sh" "$BUILD"

# large batches over HTTP, the client included (tests/bench/batch_bench.c):
# 100,000 two-bone targets answered in full (the baseline), reduced to
# local_rotations at 6 digits, and in the binary form (application/
# vnd.ikd.batch), alternated in the same run; ikd's peak RSS
. "$(dirname "$0")/daemon.sh" # start, stop
start ikd "$BUILD/ikd" --listen 127.0.0.1:0 --log-level warn
"$BUILD/batch_bench" --url "127.0.0.1:$port" --targets 100000 \
    --rounds "${IKD_BATCH_BENCH_ROUNDS:-5}" --pid "$pid"
stop

# replicas behind HAProxy (docker/haproxy.cfg) against one replica direct,
# same run (tests/bench/balancer_bench.sh)
sh "$(dirname "$0")/balancer_bench.sh" "$BUILD"

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
# ws_chain [ARGS]: 7-joint full-pose streams on the iiwa against the running ikd
ws_chain() {
    "$BUILD/ws_bench" chain --url "127.0.0.1:$port" --seconds "$WS_SECS" \
        --connections "${IKD_WS_BENCH_CHAIN_CONNECTIONS:-8}" \
        --urdf "$IKD_DATA/robots/kuka_iiwa14_r820.urdf" --base base_link --tip tool0 \
        --targets "$IKD_DATA/targets/kuka_iiwa14_r820.txt" "$@"
}
. "$(dirname "$0")/daemon.sh" # start, stop
start ikd "$BUILD/ikd" --listen 127.0.0.1:0 --log-level warn
"$BUILD/ws_bench" two-bone --url "127.0.0.1:$port" --seconds "$WS_SECS" \
    --connections "${IKD_WS_BENCH_CONNECTIONS:-50}" --streams "${IKD_WS_BENCH_STREAMS:-4}"
solver=$(chain kuka_iiwa14_r820 base_link tool0 | tail -1)
echo "$solver"
ws=$(ws_chain | tail -1)
echo "$ws"
# the same robot streamed as a controller does: a smooth motion (20 poses
# between consecutive configurations of the target file), warm starts apply
smooth=$(ws_chain --smooth 20 | tail -1)
echo "$smooth"
# robot controllers (tests/bench/robot_bench.py): stream continuity on the
# iiwa seeded at open against unseeded (motions of 0.1 and 0.2 rad steps),
# servo solutions/s against plain stream solutions/s, samples skipped by
# 1000 Hz paths as the machine is and with two busy loops beside ikd
/usr/bin/python3 "$(dirname "$0")/robot_bench.py" --port "$port" --seconds "$WS_SECS"
stop || { echo "ws_bench: ikd exited with $? after SIGTERM" >&2; exit 1; }
# ratio: the daemon's 7-joint solutions/s over one solver thread's solves/s
# (1e6 / mean_us); ikd's pool has one thread per core by default
solver_mean=$(echo "$solver" | sed -n 's/.*"mean_us":\([0-9.eE+-]*\).*/\1/p')
ratio() { # NAME WS_BENCH_LINE
    rate=$(echo "$2" | sed -n 's/.*"solutions_per_s":\([0-9.eE+-]*\).*/\1/p')
    solve=$(echo "$2" | sed -n 's/.*"solve_us_mean":\([0-9.eE+-]*\).*/\1/p')
    awk -v n="$1" -v m="$solver_mean" -v w="$rate" -v s="$solve" -v t="$(nproc)" 'BEGIN {
        r = 1e6 / m
        printf "{\"bench\":\"%s\",\"robot\":\"kuka_iiwa14_r820\",\"ws_solutions_per_s\":%.0f,", n, w
        printf "\"solver_solves_per_s\":%.0f,\"ratio\":%.3f,\"pool_threads\":%d,", r, w / r, t
        printf "\"solver_mean_us\":%.2f,\"ws_solve_us_mean\":%.2f}\n", m, s
    }'
}
ratio ws_chain_vs_solver "$ws"
ratio ws_chain_smooth_vs_solver "$smooth"

# ticks over one WebSocket (issue 14): 1000 characters, each on its own
# two-bone rig, answers reduced to local_rotations at 6 digits; one "tick"
# message per tick against the same rigs as separate streams (1000 "target"
# messages per tick, the baseline), alternated in the same run, closed loop
# (window 1: the next tick when the answer is in) and pipelined (window 2);
# ticks per second and p99 tick latency (issue 14 asks for at least 500
# ticks per second). Then the same ticks through the C network client
# (build/client_bench: libikdclient builds each tick from typed targets and
# decodes each answer into structs) against ws_bench tick (the raw
# protocol, pre-formatted targets, answers scanned not parsed), three runs
# of each alternated in the same run: ratio_client_vs_raw of the medians,
# and the client's CPU per tick; then the client's binary ticks against its
# JSON ticks (client_tick_binary_vs_json).
start ikd "$BUILD/ikd" --listen 127.0.0.1:0 --log-level warn
for w in 1 2; do
    tick=$("$BUILD/ws_bench" tick --url "127.0.0.1:$port" --seconds "$WS_SECS" --window "$w" |
        tail -1)
    echo "$tick"
    # the client against the raw protocol: three alternations (the first
    # raw run is the one above), medians compared
    raws="$tick"
    clients=""
    for round in 1 2 3; do
        if [ "$round" -gt 1 ]; then
            raw=$("$BUILD/ws_bench" tick --url "127.0.0.1:$port" --seconds "$WS_SECS" \
                --window "$w" | tail -1)
            echo "$raw"
            raws="$raws
$raw"
        fi
        client=$("$BUILD/client_bench" --url "127.0.0.1:$port" --seconds "$WS_SECS" \
            --window "$w" | tail -1)
        echo "$client"
        clients="$clients
$client"
    done
    printf '%s\n' "$clients" | awk -v w="$w" -v raws="$raws" 'function f(s, k) {
            if (!match(s, "\"" k "\":[0-9.eE+-]+"))
                return 0
            return substr(s, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0
        }
        function median(a, n,    i, j, t) {
            for (i = 1; i <= n; i++)
                for (j = i + 1; j <= n; j++)
                    if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        NF { n++; c[n] = f($0, "ticks_per_s"); cpu[n] = f($0, "client_cpu_us_per_tick") }
        END {
            m = split(raws, lines, "\n")
            k = 0
            for (i = 1; i <= m; i++)
                if (lines[i] != "") { k++; r[k] = f(lines[i], "ticks_per_s") }
            cm = median(c, n); rm = median(r, k); q = 0
            if (rm > 0)
                q = cm / rm
            printf "{\"bench\":\"client_tick_vs_raw\",\"window\":%d,\"rounds\":%d,", w, n
            printf "\"client_ticks_per_s\":%.1f,\"raw_ticks_per_s\":%.1f,", cm, rm
            printf "\"ratio_client_vs_raw\":%.2f,\"client_cpu_us_per_tick\":%.0f}\n", q, median(cpu, n)
        }'
    sep=$("$BUILD/ws_bench" tick --url "127.0.0.1:$port" --seconds "$WS_SECS" --window "$w" \
        --separate 1 | tail -1)
    echo "$sep"
    awk -v w="$w" -v a="$tick" -v b="$sep" 'function f(s, k) {
            if (!match(s, "\"" k "\":[0-9.eE+-]+"))
                return 0
            return substr(s, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0
        }
        BEGIN {
            t = f(a, "ticks_per_s"); s = f(b, "ticks_per_s"); r = 0
            if (s > 0)
                r = t / s
            printf "{\"bench\":\"ws_tick_vs_separate\",\"window\":%d,\"ticks_per_s\":%.1f,", w, t
            printf "\"separate_ticks_per_s\":%.1f,\"ratio\":%.2f,\"p99_us\":%.0f,", s, r, f(a, "p99_us")
            printf "\"separate_p99_us\":%.0f}\n", f(b, "p99_us")
        }'
done
# the C client's binary ticks (ikd_conn_set_binary_ticks; STREAM.md, "Binary
# ticks") against its JSON ticks, the same ticks alternated three times on
# the same ikd: medians of ticks per second (ratio_binary_vs_json) and of
# the client's CPU per tick (cpu_ratio_binary_vs_json: below 1 is less)
forms=""
for round in 1 2 3; do
    for form in json binary; do
        one=$("$BUILD/client_bench" --url "127.0.0.1:$port" --seconds "$WS_SECS" --window 1 \
            --form "$form" | tail -1)
        echo "$one"
        forms="$forms
$one"
    done
done
printf '%s\n' "$forms" | awk 'function f(s, k) {
        if (!match(s, "\"" k "\":[0-9.eE+-]+"))
            return 0
        return substr(s, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0
    }
    function median(a, n,    i, j, t) {
        for (i = 1; i <= n; i++)
            for (j = i + 1; j <= n; j++)
                if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    /"form":"binary"/ { nb++; bt[nb] = f($0, "ticks_per_s"); bc[nb] = f($0, "client_cpu_us_per_tick")
        bo[nb] = f($0, "bytes_in_per_tick"); bi[nb] = f($0, "bytes_out_per_tick") }
    /"form":"json"/ { nj++; jt[nj] = f($0, "ticks_per_s"); jc[nj] = f($0, "client_cpu_us_per_tick")
        jo[nj] = f($0, "bytes_in_per_tick"); ji[nj] = f($0, "bytes_out_per_tick") }
    END {
        b = median(bt, nb); j = median(jt, nj); cb = median(bc, nb); cj = median(jc, nj)
        printf "{\"bench\":\"client_tick_binary_vs_json\",\"window\":1,\"rounds\":%d,", nb
        printf "\"binary_ticks_per_s\":%.1f,\"json_ticks_per_s\":%.1f,", b, j
        printf "\"ratio_binary_vs_json\":%.2f,", (j > 0 ? b / j : 0)
        printf "\"binary_cpu_us_per_tick\":%.0f,\"json_cpu_us_per_tick\":%.0f,", cb, cj
        printf "\"cpu_ratio_binary_vs_json\":%.2f,", (cj > 0 ? cb / cj : 0)
        printf "\"binary_bytes_per_tick\":[%.0f,%.0f],\"json_bytes_per_tick\":[%.0f,%.0f]}\n",
            median(bo, nb), median(bi, nb), median(jo, nj), median(ji, nj)
    }'
stop || { echo "ws_bench tick: ikd exited with $? after SIGTERM" >&2; exit 1; }

# the clients under their users' loads (issue 26), each against the raw
# protocol in the same run, on one daemon:
# - Node game server, 1000 characters per tick (tests/bench/js_client_bench.mjs):
#   the JavaScript client's tick API and per-target API against the same
#   messages by hand over "ws", and the tick API against ws_bench tick (C)
#   measured here first (best of 2 rounds each: the machine is noisy;
#   js_client_tick_vs_ws_bench: issue 26 asks 0.9 with the binary tick
#   form, the client's default; the client's JSON form beside it);
# - Python robot controller, a UR5 stream at 1 kHz (tests/bench/py_client_bench.py):
#   the Python client against a bare websockets loop, IKD_PY_BENCH_SECONDS
#   each (default 15; issue 26's goals are over 60 s: run it by hand with
#   --seconds 60).
start ikd "$BUILD/ikd" --listen 127.0.0.1:0 --log-level warn
wst=$("$BUILD/ws_bench" tick --url "127.0.0.1:$port" --seconds "$WS_SECS" --window 1 | tail -1)
echo "$wst"
node "$(dirname "$0")/js_client_bench.mjs" --url "127.0.0.1:$port" --seconds "$WS_SECS" \
    --rounds 2 >"$bench_tmp/js.out"
cat "$bench_tmp/js.out"
awk -v a="$(tail -1 "$bench_tmp/js.out")" -v b="$wst" 'function f(s, k) {
        if (!match(s, "\"" k "\":[0-9.eE+-]+"))
            return 0
        return substr(s, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0
    }
    BEGIN {
        t = f(a, "api_tick_per_s"); j = f(a, "api_tick_json_per_s"); w = f(b, "ticks_per_s")
        r = 0; rj = 0
        if (w > 0) {
            r = t / w; rj = j / w
        }
        printf "{\"bench\":\"js_client_tick_vs_ws_bench\",\"characters\":1000,\"form\":\"binary\","
        printf "\"api_tick_per_s\":%.1f,\"ws_bench_tick_per_s\":%.1f,\"ratio\":%.2f,", t, w, r
        printf "\"api_tick_json_per_s\":%.1f,\"json_ratio\":%.2f}\n", j, rj
    }'
/usr/bin/python3 "$(dirname "$0")/py_client_bench.py" --port "$port" \
    --seconds "${IKD_PY_BENCH_SECONDS:-15}"
stop || { echo "client benchmarks: ikd exited with $? after SIGTERM" >&2; exit 1; }

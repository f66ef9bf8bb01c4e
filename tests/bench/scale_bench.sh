#!/bin/sh
# scale_bench.sh [DIR]: does one ikd use the machine it runs on (issue 22)?
#
# For N = 1, 2, 4, ... up to the machine's cores (and the cores themselves
# when not a power of two), under each load of tests/bench/scale_lib.sh
# (HTTP single solves, 200 two-bone streams, 1000-rig ticks, 100,000-target
# compact batches), in the same run:
#   one       one ikd with --loops N --threads N, N clients of the load at
#             once (batches: one batch_bench with --clients N);
#   separate  N ikd processes with --loops 1 --threads 1 (the baseline:
#             what operators ran before, one replica per core), one client
#             each, all at once;
# and ratio = one / separate (issue 22 asks for at least 0.8 of 16
# single-loop processes on HTTP single solves and streams). Two more
# figures follow the scaling of one client on one ikd of N loops and
# threads, against N = 1: ticks_one_client (one game server's ticks, fanned
# out to the pool) and batches_one_client (one client's batch). Each "one"
# run also gives the busiest ikd thread's share of ikd's CPU time. At the
# largest N, 8 batch clients at once against that one ikd
# (batches_8_clients), and a line "scale_goals" with issue 22's goals for a
# 16-core machine next to what was measured (ratios at the largest N,
# ticks/s of one client, one client's and 8 clients' targets/s).
#
# The clients run on the same machine as ikd, the same clients in both
# modes, so the ratio compares the two at equal client load; absolute
# rates are the machine's, with its clients.
#
# Programs: from DIR when given, else PATH (ikd, ws_bench, batch_bench,
# wrk; see scale_lib.sh), so that it runs where only the kit of
# shared/manycore/make-kit.sh was carried: ". build/kit/env.sh && sh
# tests/bench/scale_bench.sh". Knobs: IKD_SCALE_SECONDS (each measurement,
# default 5), IKD_SCALE_ROUNDS (batch rounds, default 3), IKD_SCALE_MAX
# (the largest N, default the cores), IKD_SCALE_LOADS (a comma-separated
# subset of http,streams,ticks,batches), IKD_SCALE_BUDGET_S (default 480:
# no step starts after that many seconds; the figures so far are printed).
# With the defaults it takes about 6 minutes on 16 cores.
#
# Output: one JSON line per figure as it is measured, e.g.
#   {"bench":"scale","load":"http","n":4,"unit":"requests_per_s",
#    "one":..,"separate":..,"ratio":..,"busiest_thread_share":..,
#    "busiest_thread":"ikd-loop-2"}
#   {"bench":"scale","load":"ticks_one_client","n":4,"unit":"ticks_per_s",
#    "one":..,"n1":..,"ratio_vs_n1":..}
#   {"bench":"scale_goals","n":16,"http_ratio":..,"goal_http_ratio":0.8,...}
# then the whole run on the last line, one JSON object:
#   {"bench":"scale_all","cores":..,"seconds":..,"steps":[1,2,4],
#    "http_one":[..],"http_separate":[..],"http_ratio":[..],...}
set -u
. "$(dirname "$0")/scale_lib.sh"
scale_find_programs "${1:-}"

CORES=$(nproc 2>/dev/null || echo 2)
MAX=${IKD_SCALE_MAX:-$CORES}
SECS=${IKD_SCALE_SECONDS:-5}
ROUNDS=${IKD_SCALE_ROUNDS:-3}
LOADS=${IKD_SCALE_LOADS:-http,streams,ticks,batches}
BUDGET=${IKD_SCALE_BUDGET_S:-480}
[ -n "$WRK" ] || LOADS=$(echo "$LOADS" | tr ',' '\n' | grep -vx http | paste -sd, -)
start_s=$(date +%s)

steps=""
n=1
while [ "$n" -lt "$MAX" ]; do
    steps="$steps $n"
    n=$((n * 2))
done
steps="$steps $MAX"
echo "scale_bench: $CORES cores, steps$steps, $SECS s each, loads $LOADS" >&2

# run_clients LOAD PORTS...: one client of LOAD against each port, all at
# once; prints the sum of their rates
run_clients() {
    _rc_what=$1
    shift
    _rc_k=0
    _rc_pids=""
    for _rc_p in "$@"; do
        _rc_k=$((_rc_k + 1))
        rm -f "$scale_tmp/rate.$_rc_k"
        load "$_rc_what" "$_rc_p" "$scale_tmp/rate.$_rc_k" &
        _rc_pids="$_rc_pids $!"
    done
    for _rc_c in $_rc_pids; do
        wait "$_rc_c" || true
    done
    _rc_i=0
    while [ "$_rc_i" -lt "$_rc_k" ]; do
        _rc_i=$((_rc_i + 1))
        cat "$scale_tmp/rate.$_rc_i" 2>/dev/null || echo 0
    done | awk '{ s += $1 } END { printf "%.1f\n", s }'
}

# repeat WORD N: WORD N times, space-separated
repeat() {
    _rp_r=""
    _rp_i=0
    while [ "$_rp_i" -lt "$2" ]; do
        _rp_r="$_rp_r $1"
        _rp_i=$((_rp_i + 1))
    done
    echo "$_rp_r"
}

all="" # name=value pairs of the summary, in order
note() { # KEY VALUE: appended to the summary's array KEY
    all="$all
$1 $2"
}

unit_of() {
    case $1 in
    http) echo requests_per_s ;;
    streams) echo solutions_per_s ;;
    ticks*) echo ticks_per_s ;;
    batches*) echo targets_per_s ;;
    esac
}

n1_ticks=0
n1_batches=0
for n in $steps; do
    if [ $(($(date +%s) - start_s)) -ge "$BUDGET" ]; then
        echo "scale_bench: past IKD_SCALE_BUDGET_S ($BUDGET s): stopping before n=$n" >&2
        break
    fi
    note steps "$n"
    for what in $(echo "$LOADS" | tr ',' ' '); do
        cl=$what
        [ "$what" = batches ] && cl="batches$n"
        # one ikd, N loops and threads, N clients (batches: one client
        # process with N connections at once)
        if ikd_start one --loops "$n" --threads "$n"; then
            opid=$ikd_pid
            cpu_snap "$opid" "$scale_tmp/b"
            if [ "$what" = batches ]; then
                one=$(run_clients "$cl" "$ikd_port")
            else
                one=$(run_clients "$what" $(repeat "$ikd_port" "$n"))
            fi
            cpu_snap "$opid" "$scale_tmp/a"
            set -- $(cpu_share "$scale_tmp/b" "$scale_tmp/a")
            share=$1
            busiest=$2
            ikd_stop "$opid" || true
        else
            one=0
            share=0
            busiest=none
        fi
        # N processes of one loop and one thread, one client each
        ports=""
        spids=""
        ok=1
        i=0
        while [ "$i" -lt "$n" ]; do
            i=$((i + 1))
            if ikd_start "sep$i" --loops 1 --threads 1; then
                ports="$ports $ikd_port"
                spids="$spids $ikd_pid"
            else
                ok=0
            fi
        done
        if [ "$ok" = 1 ]; then
            [ "$what" = batches ] && cl=batches1
            sep=$(run_clients "$cl" $ports)
        else
            sep=0
        fi
        for p in $spids; do
            ikd_stop "$p" || true
        done
        ratio=$(awk -v a="$one" -v b="$sep" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
        printf '{"bench":"scale","load":"%s","n":%d,"unit":"%s","one":%s,"separate":%s,' \
            "$what" "$n" "$(unit_of "$what")" "$one" "$sep"
        printf '"ratio":%s,"busiest_thread_share":%s,"busiest_thread":"%s"}\n' \
            "$ratio" "$share" "$busiest"
        note "${what}_one" "$one"
        note "${what}_separate" "$sep"
        note "${what}_ratio" "$ratio"
        note "${what}_busiest_share" "$share"
        # one client against one ikd of N loops and threads
        if [ "$what" = ticks ] || [ "$what" = batches ]; then
            c1=$what
            [ "$what" = batches ] && c1=batches1
            if ikd_start one1 --loops "$n" --threads "$n"; then
                r=$(run_clients "$c1" "$ikd_port")
                ikd_stop "$ikd_pid" || true
            else
                r=0
            fi
            if [ "$n" = 1 ]; then
                [ "$what" = ticks ] && n1_ticks=$r
                [ "$what" = batches ] && n1_batches=$r
            fi
            base=$n1_ticks
            [ "$what" = batches ] && base=$n1_batches
            rv=$(awk -v a="$r" -v b="$base" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
            printf '{"bench":"scale","load":"%s_one_client","n":%d,"unit":"%s","one":%s,' \
                "$what" "$n" "$(unit_of "$what")" "$r"
            printf '"n1":%s,"ratio_vs_n1":%s}\n' "$base" "$rv"
            note "${what}_one_client" "$r"
            note "${what}_one_client_vs_n1" "$rv"
        fi
    done
done

# at the largest N: 8 batch clients at once, and the goals
last=$(echo "$all" | awk '$1 == "steps" { v = $2 } END { print v }')
b8=0
if [ -n "$last" ] && echo ",$LOADS," | grep -q ",batches,"; then
    if ikd_start goal --loops "$last" --threads "$last"; then
        b8=$(run_clients batches8 "$ikd_port")
        ikd_stop "$ikd_pid" || true
    fi
    printf '{"bench":"scale","load":"batches_8_clients","n":%s,"unit":"targets_per_s","one":%s}\n' \
        "$last" "$b8"
    note batches_8_clients "$b8"
fi
echo "$all" | awk -v b8="$b8" '
    NF == 2 { last[$1] = $2 }
    END {
        printf "{\"bench\":\"scale_goals\",\"n\":%d", last["steps"]
        printf ",\"http_ratio\":%s,\"goal_http_ratio\":0.8", ("http_ratio" in last) ? last["http_ratio"] : 0
        printf ",\"streams_ratio\":%s,\"goal_streams_ratio\":0.8", ("streams_ratio" in last) ? last["streams_ratio"] : 0
        printf ",\"ticks_one_client\":%s,\"goal_ticks_one_client\":2000", ("ticks_one_client" in last) ? last["ticks_one_client"] : 0
        printf ",\"batches_one_client\":%s,\"goal_batches_one_client\":3000000", ("batches_one_client" in last) ? last["batches_one_client"] : 0
        printf ",\"batches_8_clients\":%s,\"goal_batches_8_clients\":8000000}\n", b8
    }'

# the summary: every key's values in order of the steps, on one line
echo "$all" | awk -v cores="$CORES" -v secs="$SECS" -v took="$(($(date +%s) - start_s))" '
    NF == 2 {
        if ($1 in v)
            v[$1] = v[$1] "," $2
        else {
            order[++k] = $1
            v[$1] = $2
        }
    }
    END {
        printf "{\"bench\":\"scale_all\",\"cores\":%d,\"seconds\":%d,\"took_s\":%d", cores, secs, took
        for (i = 1; i <= k; i++)
            printf ",\"%s\":[%s]", order[i], v[order[i]]
        printf "}\n"
    }'

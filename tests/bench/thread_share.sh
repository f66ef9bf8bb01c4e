#!/bin/sh
# thread_share.sh [DIR]: how ikd's CPU time spreads over its threads under
# each load of tests/bench/scale_lib.sh (issue 22: on a 2-core machine, ikd
# with --threads 8 --loops 8 should have no thread doing more than 25% of
# ikd's CPU time under any of them).
#
# One ikd with --threads IKD_SHARE_THREADS (default 8) and --loops
# IKD_SHARE_LOOPS (default 8); for each load, one client of it (batches:
# 4 clients at once), IKD_SHARE_SECONDS (default 5) long; the CPU time of
# every thread of ikd is read from /proc/PID/task/*/stat before and after,
# and the busiest thread's share of the whole is printed, with its name
# (ikd, ikd-loop-N, ikd-pool) and the load's rate. With
# IKD_SHARE_BASELINE=PROGRAM the same is measured on that ikd too (an
# older build: started with --threads only), in the same run.
#
# Programs: from DIR when given, else PATH (see scale_lib.sh). One JSON
# line per load and program:
#   {"bench":"thread_share","program":"ikd","load":"http","loops":8,"threads":8,
#    "rate":..,"unit":"requests_per_s","busiest_thread_share":..,
#    "busiest_thread":"ikd-loop-3","threads_seen":..,"goal":0.25}
set -u
. "$(dirname "$0")/scale_lib.sh"
scale_find_programs "${1:-}"
SECS=${IKD_SHARE_SECONDS:-5}
ROUNDS=${IKD_SHARE_ROUNDS:-3}
THREADS=${IKD_SHARE_THREADS:-8}
LOOPS=${IKD_SHARE_LOOPS:-8}
LOADS=${IKD_SHARE_LOADS:-http,streams,ticks,batches}
[ -n "$WRK" ] || LOADS=$(echo "$LOADS" | tr ',' '\n' | grep -vx http | paste -sd, -)

unit_of() {
    case $1 in
    http) echo requests_per_s ;;
    streams) echo solutions_per_s ;;
    ticks) echo ticks_per_s ;;
    batches*) echo targets_per_s ;;
    esac
}

measure() { # LABEL ARGS...: the loads against one ikd started with ARGS
    _m_label=$1
    shift
    for _m_what in $(echo "$LOADS" | tr ',' ' '); do
        if ! ikd_start share "$@"; then
            echo "thread_share: $_m_label did not start" >&2
            return 1
        fi
        _m_pid=$ikd_pid
        _m_client=$_m_what
        [ "$_m_what" = batches ] && _m_client=batches4
        cpu_snap "$_m_pid" "$scale_tmp/b"
        load "$_m_client" "$ikd_port" "$scale_tmp/rate"
        cpu_snap "$_m_pid" "$scale_tmp/a"
        ikd_stop "$_m_pid" || true
        _m_share=$(cpu_share "$scale_tmp/b" "$scale_tmp/a")
        printf '{"bench":"thread_share","program":"%s","load":"%s","loops":"%s","threads":%s,' \
            "$_m_label" "$_m_what" "$_m_loops" "$THREADS"
        printf '"rate":%s,"unit":"%s",' "$(cat "$scale_tmp/rate")" "$(unit_of "$_m_what")"
        echo "$_m_share" | awk '{ printf "\"busiest_thread_share\":%s,\"busiest_thread\":\"%s\",\"threads_seen\":%d,\"goal\":0.25}\n", $1, $2, $4 }'
    done
}

_m_loops=$LOOPS
measure ikd --threads "$THREADS" --loops "$LOOPS"
if [ -n "${IKD_SHARE_BASELINE:-}" ]; then
    IKD=$IKD_SHARE_BASELINE
    _m_loops=default
    measure baseline --threads "$THREADS"
fi

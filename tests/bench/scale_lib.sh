# scale_lib.sh: sourced by tests/bench/scale_bench.sh and
# tests/bench/thread_share.sh: finding the programs, starting and stopping
# ikd processes, the four loads of issue 22, per-thread CPU time, and JSON
# fields. POSIX sh and awk only (no Python), so that it runs where only
# the kit of shared/manycore/make-kit.sh was carried.
#
# Programs: from the folder given as the scripts' first argument when it
# holds them, else from PATH: ikd, ws_bench, batch_bench, and wrk (the HTTP
# load; without it that load is left out). The Lua script of the HTTP load
# is tests/bench/http_post.lua, beside this file.
#
# The loads (each one client process; the scripts run several at once):
#   http     wrk -t1 -c50, two-bone POST /v1/solve (http_post.lua)
#   streams  ws_bench two-bone, 50 connections x 4 streams (200 streams)
#   ticks    ws_bench tick, 1000 characters, window 2
#   batches  batch_bench, 100,000 two-bone targets, compact answers
#            (local_rotations at 6 digits), --clients K at once
# each for SECS seconds (batches: ROUNDS rounds, the best one), printing
# its rate: requests/s, solutions/s, ticks/s, targets/s.

SCALE_HERE=$(cd "$(dirname "$0")" && pwd)
scale_tmp=$(mktemp -d)
scale_pids=""

scale_cleanup() {
    for p in $scale_pids; do
        kill "$p" 2>/dev/null || true
    done
    for p in $scale_pids; do
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$scale_tmp"
}
trap scale_cleanup EXIT
trap 'exit 130' INT TERM

# prog NAME: the program's path (from $SCALE_DIR, else PATH), or nothing
prog() {
    if [ -n "${SCALE_DIR:-}" ] && [ -x "$SCALE_DIR/$1" ]; then
        echo "$SCALE_DIR/$1"
    else
        command -v "$1" 2>/dev/null || true
    fi
}

scale_find_programs() { # [DIR]
    SCALE_DIR=${1:-}
    IKD=$(prog ikd)
    WS_BENCH=$(prog ws_bench)
    BATCH_BENCH=$(prog batch_bench)
    WRK=$(prog wrk)
    for p in IKD WS_BENCH BATCH_BENCH; do
        eval "v=\$$p"
        if [ -z "$v" ]; then
            echo "scale: no $(echo "$p" | tr '[:upper:]' '[:lower:]') in ${SCALE_DIR:-PATH}" >&2
            exit 2
        fi
    done
    [ -n "$WRK" ] || echo "scale: wrk not found: the HTTP load is left out" >&2
}

# ikd_start NAME ARGS...: starts ikd on a free port; sets $ikd_pid and
# $ikd_port (the whole "listening on" line is waited for, 10 s at most)
ikd_start() {
    _is_name=$1
    shift
    "$IKD" --listen 127.0.0.1:0 --log-level warn "$@" >"$scale_tmp/$_is_name.out" \
        2>"$scale_tmp/$_is_name.err" &
    ikd_pid=$!
    scale_pids="$scale_pids $ikd_pid"
    ikd_port=
    _is_i=0
    while [ -z "$ikd_port" ]; do
        if [ "$(tail -c 1 "$scale_tmp/$_is_name.out" 2>/dev/null | od -An -c | tr -d ' ')" = '\n' ]; then
            ikd_port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$scale_tmp/$_is_name.out" |
                head -1)
        fi
        [ -n "$ikd_port" ] && break
        _is_i=$((_is_i + 1))
        if [ $_is_i -gt 200 ] || ! kill -0 "$ikd_pid" 2>/dev/null; then
            echo "scale: ikd did not start: $(cat "$scale_tmp/$_is_name.err")" >&2
            return 1
        fi
        sleep 0.05
    done
}

# ikd_stop PID: SIGTERM and wait (its drain); the exit status
ikd_stop() {
    kill "$1" 2>/dev/null || true
    _st_rc=0
    wait "$1" 2>/dev/null || _st_rc=$?
    scale_pids=$(echo "$scale_pids" | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ')
    return $_st_rc
}

# cpu_snap PID FILE: "tid name ticks" per thread (utime + stime, clock ticks)
cpu_snap() {
    for _cs_t in /proc/"$1"/task/*; do
        _cs_s=$(cat "$_cs_t/stat" 2>/dev/null) || continue
        _cs_n=$(cat "$_cs_t/comm" 2>/dev/null) || _cs_n=unknown
        echo "${_cs_t##*/} $_cs_n $(echo "$_cs_s" | sed 's/.*) //' | awk '{print $12 + $13}')"
    done >"$2"
}

# cpu_share BEFORE AFTER: "busiest_share busiest_name total_ticks threads"
# over what the threads did between the two snapshots (a thread that
# appeared in between counts from 0)
cpu_share() {
    awk 'NR == FNR { b[$1] = $3; next }
        { d = $3 - (($1 in b) ? b[$1] : 0); if (d < 0) d = 0; t += d; n++
          if (d > m) { m = d; who = $2 } }
        END { printf "%.3f %s %d %d\n", (t > 0 ? m / t : 0), (who == "" ? "none" : who), t, n }' "$1" "$2"
}

# field NAME LINE: the number after "NAME": in a JSON line (empty when none)
field() {
    echo "$2" | sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p" | head -1
}

# load NAME PORT OUT: runs one client of load NAME against 127.0.0.1:PORT,
# its rate on the last line of OUT (0 when it failed: the reason is in OUT)
load() {
    _ld_name=$1
    _ld_port=$2
    _ld_out=$3
    _ld_limit=$((SECS * 3 + 60))
    _ld_rate=0
    case $_ld_name in
    http)
        timeout "$_ld_limit" "$WRK" -t1 -c50 -d"${SECS}s" -s "$SCALE_HERE/http_post.lua" \
            "http://127.0.0.1:$_ld_port/v1/solve" >"$_ld_out.log" 2>&1 || true
        if ! grep -q "Non-2xx" "$_ld_out.log"; then
            _ld_rate=$(awk '/^Requests\/sec:/ {print $2}' "$_ld_out.log")
        fi
        ;;
    streams)
        timeout "$_ld_limit" "$WS_BENCH" two-bone --url "127.0.0.1:$_ld_port" --seconds "$SECS" \
            --connections 50 --streams 4 >"$_ld_out.log" 2>&1 || true
        _ld_rate=$(field solutions_per_s "$(tail -1 "$_ld_out.log")")
        ;;
    ticks)
        timeout "$_ld_limit" "$WS_BENCH" tick --url "127.0.0.1:$_ld_port" --seconds "$SECS" \
            --window 2 >"$_ld_out.log" 2>&1 || true
        _ld_rate=$(field ticks_per_s "$(tail -1 "$_ld_out.log")")
        ;;
    batches*)
        _ld_k=${_ld_name#batches}
        [ -n "$_ld_k" ] || _ld_k=1
        timeout "$((_ld_limit * 2))" "$BATCH_BENCH" --url "127.0.0.1:$_ld_port" --targets 100000 \
            --rounds "$ROUNDS" --clients "$_ld_k" --forms compact >"$_ld_out.log" 2>&1 || true
        _ld_rate=$(field compact_best_tps "$(tail -1 "$_ld_out.log")")
        ;;
    esac
    echo "${_ld_rate:-0}" >"$_ld_out"
}

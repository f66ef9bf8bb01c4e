# daemon.sh: sourced by the benchmark scripts (http_bench.sh, run.sh) to run
# a server in the background for the length of a benchmark.
#
#   start NAME CMD...  runs CMD with its output in $bench_tmp/NAME.out/.err,
#                      waits for its "... listening on HOST:PORT" line (5 s
#                      at most; a server that dies or stays silent ends the
#                      script with its standard error), sets $pid and $port
#   stop               SIGTERM, waits; returns the server's exit status
#
# $bench_tmp is a fresh folder, removed (and a server still running
# stopped) when the script exits.
bench_tmp=$(mktemp -d)
pid=""
bench_cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$bench_tmp"
}
trap bench_cleanup EXIT INT TERM

start() {
    name=$1; shift
    "$@" >"$bench_tmp/$name.out" 2>"$bench_tmp/$name.err" &
    pid=$!
    # the whole "listening on HOST:PORT" line (one read while it is being
    # written has no port, or part of it)
    i=0
    port=
    while [ -z "$port" ]; do
        if [ "$(tail -c 1 "$bench_tmp/$name.out" 2>/dev/null | od -An -c | tr -d ' ')" = '\n' ]; then
            port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$bench_tmp/$name.out" |
                head -1)
        fi
        [ -n "$port" ] && break
        i=$((i + 1))
        if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
            echo "bench: $name did not start" >&2; cat "$bench_tmp/$name.err" >&2; exit 1
        fi
        sleep 0.05
    done
}

stop() {
    kill "$pid"
    rc=0
    wait "$pid" || rc=$?
    pid=""
    return $rc
}

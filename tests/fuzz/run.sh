#!/bin/sh
# Runs every libFuzzer target of tests/fuzz for a bounded time (`make fuzz`).
#
#   tests/fuzz/run.sh BUILD SECONDS [TARGET...]
#
# Each target keeps its growing corpus in BUILD/corpus/NAME, seeded on every
# run from the repository (read-only): fixtures' bodies for the request and
# JSON targets (and the binary batches and a batch of items of
# tests/fuzz/seeds/request), the
# messages of tests/fuzz/seeds/stream, the robots of tests/data (and our iiwa SRDF) for
# the URDF target, for the C client's readers (fuzz_client) the fixtures'
# answers, the server messages of proto/STREAM.md and binary tick answers
# captured from ikd (tests/fuzz/seeds/tick_answer), and for the
# differential target (fuzz_diff: its first byte 0 a solve body, 1 a batch
# body, 2 a stream message, 3 a binary batch, 4 a binary tick) the requests,
# messages, binary batches and binary ticks.
# A crash or a wrong answer leaves BUILD/crash-NAME-* and makes the run fail;
# the last line of each target's log gives its executions.
set -eu
BUILD=${1:-build-fuzz}
SECONDS_EACH=${2:-60}
shift 2 2>/dev/null || shift $#
TARGETS=${*:-"fuzz_json fuzz_request fuzz_stream fuzz_urdf fuzz_client fuzz_diff"}
FIX=tests/fixtures
SEED=$BUILD/seeds
rm -rf "$SEED"
mkdir -p "$SEED/json" "$SEED/request" "$SEED/stream" "$SEED/urdf" "$SEED/client" "$SEED/diff"

# The first byte of a JSON or request input selects flags or the kind.
for f in "$FIX"/*.json; do
    b=$(basename "$f" .json)
    { printf '\001'; cat "$f"; } >"$SEED/json/$b"
    case "$b" in
    batch_*.request) k='\001' ;;
    chain_*.request) k='\002' ;;
    *) k='\000' ;;
    esac
    case "$b" in
    *.request)
        { printf "$k"; cat "$f"; } >"$SEED/request/$b"
        case "$b" in
        chain_*) ;;
        *) { printf "$k"; cat "$f"; } >"$SEED/diff/$b" ;;
        esac ;;
    esac
done
cp tests/fuzz/seeds/stream/* "$SEED/stream/"
for f in tests/fuzz/seeds/stream/*; do
    { printf '\002'; cat "$f"; } >"$SEED/diff/stream-$(basename "$f")"
done
# binary batches (first byte 3), in the layout of
# proto/README.md, "Binary batches", and a batch of items (first byte 1)
cp tests/fuzz/seeds/request/* "$SEED/request/"
cp tests/fuzz/seeds/request/* "$SEED/diff/"
# binary ticks (first byte 4), in the layout of proto/STREAM.md, "Binary ticks"
cp tests/fuzz/seeds/tick/* "$SEED/diff/"

# The client's inputs: the first byte selects the reader (fuzz_client.c):
# 0 a stream message, 1 an HTTP answer, 2 a chain description, 3 an error,
# 5 a binary tick's answer.
for f in "$FIX"/*.response.json; do
    b=$(basename "$f" .response.json)
    case "$b" in
    solve_* | batch_*) k='\001' ;;
    chain_*) k='\002' ;;
    error_*) k='\003' ;;
    *) continue ;;
    esac
    { printf "$k"; cat "$f"; } >"$SEED/client/$b"
done
# binary tick answers (first byte 5), captured from ikd (tests/fuzz/seeds/tick_answer)
for f in tests/fuzz/seeds/tick_answer/*; do
    { printf '\005'; cat "$f"; } >"$SEED/client/tick_answer-$(basename "$f")"
done
awk '/<!-- check: server -->/ {s = 1; next} s && /^```json$/ {f = 1; next}
     f && /^```$/ {f = 0; s = 0; next} f {n++; printf "%c%s", 0, $0 > (dir "/stream_md_" n)}' \
    dir="$SEED/client" proto/STREAM.md

# URDF inputs: "BASE\nTIP\n" then the document.
urdf() { { printf '%s\n%s\n' "$2" "$3"; cat "tests/data/robots/$1.urdf"; } >"$SEED/urdf/$1"; }
urdf ur5 base_link tool0
urdf abb_irb120 base_link tool0
urdf kuka_iiwa14_r820 base_link tool0
urdf franka_panda panda_link0 panda_link8
urdf pr2 torso_lift_link r_wrist_roll_link
# an SRDF (the URDF target reads its input as an SRDF too)
{ printf 'base_link\ntool0\n'; cat tests/data/collision/kuka_iiwa14_r820.srdf; } >"$SEED/urdf/srdf"

status=0
for t in $TARGETS; do
    name=${t#fuzz_}
    mkdir -p "$BUILD/corpus/$name"
    echo "== $t (${SECONDS_EACH}s)"
    dict=""
    [ "$name" != urdf ] && dict="-dict=tests/fuzz/json.dict"
    if ! "$BUILD/$t" $dict -max_total_time="$SECONDS_EACH" -print_final_stats=1 -max_len=65536 \
        -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$BUILD/crash-$name-" \
        "$BUILD/corpus/$name" "$SEED/$name" >"$BUILD/$t.log" 2>&1; then
        status=1
        tail -40 "$BUILD/$t.log"
    fi
    grep -E 'stat::number_of_executed_units|DONE' "$BUILD/$t.log" | tail -2
done
exit $status

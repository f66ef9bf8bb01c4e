#!/bin/sh
# Runs every test of ikd and prints one closing line "N passed, N failed".
#
# - build/tests/<area>/test_*: check suites (fork mode), one per source module;
#   their own summary line ("100%: Checks: 12, Failures: 0, Errors: 0") is
#   summed into the totals.
# - tests/server/test_*.py: tests that start the real daemon and talk to it
#   with independent clients (python3-websockets from Debian, hence the
#   interpreter by its full path); unittest's "Ran N tests" is summed.
# - tests/*/test_*.mjs: Node's test runner (node --test, TAP output): the
#   JavaScript client against the real daemon (tests/clients), the live page
#   in Debian's chromium (tests/web, which also needs build/web), the
#   OpenAPI document loaded strictly and validated (tests/proto), the
#   Kubernetes manifests and the npm packages' node engines (tests/docker);
#   TAP's "# pass N" and "# fail N" are summed.
# - tests/*/test_*.sh: shell tests printing TAP ("ok N - ..." and
#   "not ok N - ..."), counted line by line: the C library installed and an
#   example built against it (tests/clients/test_c_install.sh).
# Every test finds the shared robots and motion through IKD_DATA (default
# tests/data, the repository's own copy) and the daemon through
# IKD_BIN. Each suite runs under a time limit so that a hang is a failure.
set -u
BUILD=${1:-build}
export CK_FORK=yes
export IKD_BIN="${IKD_BIN:-$BUILD/ikd}"
export IKD_DATA="${IKD_DATA:-tests/data}"
export IKD_BUILD="$BUILD"
LIMIT=${IKD_TEST_TIMEOUT:-600}
passed=0
failed=0
failed_suites=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for t in $(find "$BUILD/tests" -type f -name 'test_*' -perm -u+x | sort); do
    echo "== $t"
    timeout "$LIMIT" "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    line=$(grep -E '^[0-9]+%: Checks: [0-9]+' "$log" | tail -1)
    if [ -n "$line" ]; then
        n=$(echo "$line" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
        f=$(echo "$line" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
        e=$(echo "$line" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
        passed=$((passed + n - f - e))
        failed=$((failed + f + e))
        if [ "$rc" -ne 0 ] && [ $((f + e)) -eq 0 ]; then failed=$((failed + 1)); fi
    else
        if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    fi
    [ "$rc" -ne 0 ] && failed_suites="$failed_suites $t(rc=$rc)"
done

for t in $(ls tests/server/test_*.py 2>/dev/null | sort); do
    echo "== $t"
    timeout "$LIMIT" /usr/bin/python3 "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    n=$(grep -E '^Ran [0-9]+ test' "$log" | tail -1 | sed -E 's/Ran ([0-9]+).*/\1/')
    [ -n "$n" ] || n=1
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + n))
    else
        # "FAILED (failures=2, errors=1)": every count in the parentheses
        bad=$(grep -E '^FAILED \(' "$log" | tail -1 | grep -oE '(failures|errors)=[0-9]+' |
            sed -E 's/.*=//' | awk '{s += $1} END {print s + 0}')
        [ "$bad" -gt 0 ] 2>/dev/null || bad=
        [ -n "$bad" ] || bad=1
        passed=$((passed + n - bad))
        failed=$((failed + bad))
        failed_suites="$failed_suites $t(rc=$rc)"
    fi
done

for t in $(ls tests/*/test_*.mjs 2>/dev/null | sort); do
    echo "== $t"
    timeout "$LIMIT" node --test --test-reporter=tap "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    n=$(grep -E '^# pass [0-9]+' "$log" | tail -1 | sed -E 's/# pass ([0-9]+)/\1/')
    bad=$(grep -E '^# fail [0-9]+' "$log" | tail -1 | sed -E 's/# fail ([0-9]+)/\1/')
    [ -n "$n" ] || n=0
    [ -n "$bad" ] || bad=0
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    passed=$((passed + n))
    failed=$((failed + bad))
    [ "$rc" -ne 0 ] && failed_suites="$failed_suites $t(rc=$rc)"
done

for t in $(ls tests/*/test_*.sh 2>/dev/null | sort); do
    echo "== $t"
    timeout "$LIMIT" sh "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    n=$(grep -c '^ok ' "$log")
    bad=$(grep -c '^not ok ' "$log")
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    passed=$((passed + n))
    failed=$((failed + bad))
    [ "$rc" -ne 0 ] && failed_suites="$failed_suites $t(rc=$rc)"
done

[ -n "$failed_suites" ] && echo "failing suites:$failed_suites"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ -z "$failed_suites" ]

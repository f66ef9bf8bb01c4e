#!/bin/sh
# test_c_install.sh: the two C libraries as programs get them (make install,
# pkg-config, the examples of clients/c/), checked from outside the tree:
# libikdclient, the network client, and libiksolver, the embedded solvers.
#
# 1. The ```sh block of clients/c/README.md runs as written, with HOME in a
#    scratch folder (so "make install PREFIX=$HOME/.local" installs there)
#    and IKD_URL naming an ikd this script starts on a free port: the
#    client's C and C++ examples and the solver's example (shared and
#    static) are built against the installed copy, and each run must print
#    the example's own verdict ("all checks passed": answers checked by
#    their geometry, the UR5's full poses by forward kinematics) and exit 0.
# 2. What was installed: exactly the expected files; the public headers
#    (<ikd/client.h>, and every *.h of solver/ but *_internal.h as
#    <ikd/solver/...>), each compiling alone with only pkg-config's flags,
#    <ikd/client.h> also as C++11; the examples' headers read from the
#    installed copy (cc -M); the sonames and the symlinks (readelf -d,
#    readlink); the shared examples NEEDing libikdclient.so.0 and
#    libiksolver.so.1 and loading the installed ones, the static one not;
#    only public ik_ and ikd_ symbols exported; the .pc files' fields.
# 3. DESTDIR: files land under it, the .pc files name the PREFIX without it.
# 4. make uninstall removes every installed file.
#
# Output is TAP ("ok N - ..." / "not ok N - ..."), which tests/run.sh counts.
# The libraries are built by a make of their own (the MAKEFLAGS of an
# enclosing "make check", and the variables make exports from its command
# line, such as SANITIZER=address BUILD=build-asan, are dropped: the
# examples are ordinary programs and link ordinary libraries).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
bad=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; }
# check NAME CMD...: ok when CMD succeeds
check() {
    name=$1; shift
    if "$@" >"$tmp/check.out" 2>&1; then ok "$name"; else
        notok "$name"; sed 's/^/#   /' "$tmp/check.out"; fi
}
CLEAN_ENV="-u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD -u SANITIZER -u OPT -u WERROR"
cleanmake() { env $CLEAN_ENV make "$@"; }

# ---- 1. the README's commands, as written ------------------------------
awk '/^```sh$/ {f = 1; next} /^```$/ {f = 0} f' clients/c/README.md >"$tmp/readme.sh"
if [ ! -s "$tmp/readme.sh" ]; then
    notok "clients/c/README.md has a sh block"
    echo "1..$n"; exit 1
fi
# an ikd for the client examples, on a free port
IKD="${IKD_BIN:-build/ikd}"
[ -x "$IKD" ] || cleanmake -s build/ikd >/dev/null 2>&1
"$IKD" --listen 127.0.0.1:0 --log-level warn >"$tmp/ikd.out" 2>"$tmp/ikd.err" &
ikd_pid=$!
trap 'kill "$ikd_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
port=
i=0
while [ -z "$port" ] && [ $i -lt 100 ]; do
    port=$(sed -n 's/^ikd listening on .*:\([0-9][0-9]*\)$/\1/p' "$tmp/ikd.out")
    [ -n "$port" ] || sleep 0.05
    i=$((i + 1))
done
if [ -n "$port" ]; then ok "an ikd for the client examples listens"; else
    notok "an ikd for the client examples listens"; sed 's/^/#   /' "$tmp/ikd.err"; fi
mkdir -p "$tmp/home"
rm -f build/iksolver-example build/iksolver-example-static build/ikdclient-example \
    build/ikdclient-example-cpp
HOME="$tmp/home" IKD_URL="http://127.0.0.1:$port" env $CLEAN_ENV -u PKG_CONFIG_PATH \
    -u IKD_TOKEN sh -e "$tmp/readme.sh" >"$tmp/readme.out" 2>"$tmp/readme.err"
rc=$?
if [ $rc -eq 0 ]; then ok "the README's commands run (exit 0)"; else
    notok "the README's commands run (exit $rc)"
    sed 's/^/#   /' "$tmp/readme.out" "$tmp/readme.err" | tail -40
fi
runs=$(grep -c '^all checks passed$' "$tmp/readme.out")
if [ "$runs" -eq 4 ] && ! grep -q FAILED "$tmp/readme.out"; then
    ok "the four example builds print: all checks passed"
else
    notok "the four example builds print: all checks passed (got $runs)"
    sed 's/^/#   /' "$tmp/readme.out"
fi
for what in "two_bone: ok" "ur5 pose 1: ok" "ur5 pose 2: ok" "ur5 pose 3: ok"; do
    c=$(grep -c "^$what" "$tmp/readme.out")
    if [ "$c" -eq 2 ]; then ok "solver example output: $what (twice)"; else
        notok "solver example output: $what (twice; got $c)"; fi
done
for what in "registered the leg: chain " "solve by id: success by two_bone" \
    "10 ticks of 3 characters answered" "c++: 20 targets streamed, every foot on its target"; do
    if grep -q "^$what" "$tmp/readme.out"; then ok "client example output: $what"; else
        notok "client example output: $what"; fi
done

P="$tmp/home/.local"
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
L="$P/lib"

# ---- 2. what was installed ---------------------------------------------
(cd "$P" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort) >"$tmp/files"
{
    printf '%s\n' lib/libiksolver.a lib/libiksolver.so lib/libiksolver.so.1 \
        lib/libiksolver.so.1.0.0 lib/pkgconfig/iksolver.pc \
        lib/libikdclient.a lib/libikdclient.so lib/libikdclient.so.0 \
        lib/libikdclient.so.0.2.0 lib/pkgconfig/ikdclient.pc include/ikd/client.h
    for h in solver/*.h; do
        case "$h" in *_internal.h) ;; *) echo "include/ikd/$h" ;; esac
    done
} | sort >"$tmp/expected"
check "installed files: the libraries, the .pc files and the public headers, nothing else" \
    diff "$tmp/expected" "$tmp/files"
check "no internal header installed" sh -c "! ls '$P/include/ikd/solver/' | grep -q internal"

# every public header alone, from a folder with nothing else in it
mkdir -p "$tmp/hdr"
hdr_bad=""
for h in "$P"/include/ikd/solver/*.h; do
    b=$(basename "$h")
    printf '#include <ikd/solver/%s>\nint main(void) { return 0; }\n' "$b" >"$tmp/hdr/t.c"
    (cd "$tmp/hdr" && cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
        $(pkg-config --cflags iksolver) t.c) >"$tmp/hdr/err" 2>&1 || {
        hdr_bad="$hdr_bad $b"; sed 's/^/#   /' "$tmp/hdr/err"; }
done
if [ -z "$hdr_bad" ]; then ok "each installed solver header compiles alone as <ikd/solver/...>"; else
    notok "installed headers that do not compile alone:$hdr_bad"; fi
printf '#include <ikd/client.h>\nint main(void) { return ikd_client_version()[0] == 0; }\n' \
    >"$tmp/hdr/c.c"
cp "$tmp/hdr/c.c" "$tmp/hdr/c.cpp"
check "<ikd/client.h> compiles alone as C11 (-Wall -Wextra -Wpedantic -Werror)" \
    sh -c "cd '$tmp/hdr' && cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
        $(pkg-config --cflags ikdclient) c.c"
check "<ikd/client.h> compiles alone as C++11 and links (-Wall -Wextra -Wpedantic -Werror)" \
    sh -c "cd '$tmp/hdr' && c++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -o cpp c.cpp \
        $(pkg-config --cflags --libs ikdclient)"

cc -M $(pkg-config --cflags iksolver) clients/c/solver_example.c >"$tmp/deps" 2>&1
check "the solver example reads the installed headers" grep -q "$P/include/ikd/solver/ik_numeric.h" "$tmp/deps"
check "the solver example reads no header of the source tree" sh -c "! grep -q '$ROOT/solver/\| solver/' '$tmp/deps'"
cc -M $(pkg-config --cflags ikdclient) clients/c/client_example.c >"$tmp/deps" 2>&1
check "the client example reads the installed header" grep -q "$P/include/ikd/client.h" "$tmp/deps"
check "the client example reads no header of the source tree" \
    sh -c "! grep -q 'clients/c/include' '$tmp/deps'"

# the solver library's ABI is 1 (IK_MAX_DOF gone, caller storage), the
# client's 0; each .pc file gives its library's version
for lv in iksolver:1:1.0.0 ikdclient:0:0.2.0; do
    lib=${lv%%:*}; v=${lv##*:}; m=${lv#*:}; m=${m%%:*}
    check "soname lib$lib.so.$m (readelf -d)" \
        sh -c "readelf -d '$L/lib$lib.so.$v' | grep -q 'Library soname: \[lib$lib.so.$m\]'"
    check "lib$lib.so.$m -> lib$lib.so.$v" test "$(readlink "$L/lib$lib.so.$m")" = lib$lib.so.$v
    check "lib$lib.so -> lib$lib.so.$m" test "$(readlink "$L/lib$lib.so")" = lib$lib.so.$m
    check "pkg-config --modversion $lib is $v" test "$(pkg-config --modversion $lib)" = "$v"
done
check "the solver library needs libm and libc only" \
    test -z "$(readelf -d "$L/libiksolver.so.1.0.0" | grep NEEDED | grep -v 'libc\.so\|libm\.so')"
check "the client library needs libcurl, GnuTLS, nettle, wslay, libm and libc only" \
    test -z "$(readelf -d "$L/libikdclient.so.0.2.0" | grep NEEDED |
        grep -v 'libcurl\.so\|libgnutls\.so\|libnettle\.so\|libwslay\.so\|libc\.so\|libm\.so')"
check "the shared solver example NEEDs libiksolver.so.1" \
    sh -c "readelf -d build/iksolver-example | grep -q 'Shared library: \[libiksolver.so.1\]'"
check "the shared solver example loads the installed library" \
    sh -c "LD_LIBRARY_PATH='$L' ldd build/iksolver-example | grep -q '$L/libiksolver.so.1'"
check "the static solver example needs no libiksolver" \
    sh -c "! readelf -d build/iksolver-example-static | grep -q libiksolver"
for ex in ikdclient-example ikdclient-example-cpp; do
    check "$ex NEEDs libikdclient.so.0 and loads the installed one" \
        sh -c "readelf -d build/$ex | grep -q 'Shared library: \[libikdclient.so.0\]' &&
            LD_LIBRARY_PATH='$L' ldd build/$ex | grep -q '$L/libikdclient.so.0'"
done
nm -D --defined-only "$L/libiksolver.so.1.0.0" | awk 'NF == 3 {print $3}' >"$tmp/syms"
check "the solver library exports ik_numeric_solve and ik_twobone_solve" \
    sh -c "grep -qx ik_numeric_solve '$tmp/syms' && grep -qx ik_twobone_solve '$tmp/syms'"
check "the solver library exports nothing internal (ik__) or unprefixed" \
    sh -c "! grep -v '^ik_[a-zA-Z0-9]' '$tmp/syms' | grep -q ."
nm -D --defined-only "$L/libikdclient.so.0.2.0" | awk 'NF == 3 {print $3}' >"$tmp/syms"
check "the client library exports ikd_conn_process and ikd_solve" \
    sh -c "grep -qx ikd_conn_process '$tmp/syms' && grep -qx ikd_solve '$tmp/syms'"
check "the client library exports nothing internal (ikd__) or unprefixed" \
    sh -c "! grep -v '^ikd_[a-zA-Z0-9]' '$tmp/syms' | grep -q ."
for lib in iksolver ikdclient; do
    # (echo drops the blank that pkg-config may end its output with)
    check "pkg-config $lib: Cflags -I.../include" test "$(echo $(pkg-config --cflags $lib))" = "-I$P/include"
    check "pkg-config $lib: Libs -L... -l$lib" test "$(echo $(pkg-config --libs $lib))" = "-L$L -l$lib"
done
check "pkg-config iksolver: Libs.private -lm" test "$(echo $(pkg-config --static --libs iksolver))" = "-L$L -liksolver -lm"
check "pkg-config ikdclient: Libs.private names libcurl, GnuTLS, nettle and wslay" \
    sh -c "pkg-config --static --libs ikdclient | grep -q -- '-lcurl -lgnutls -lnettle -lwslay'"

# ---- 3. DESTDIR --------------------------------------------------------
cleanmake -s install DESTDIR="$tmp/stage" PREFIX=/opt/ikd >"$tmp/d.out" 2>&1
check "DESTDIR: the files land under it" \
    sh -c "test -f '$tmp/stage/opt/ikd/lib/libiksolver.so.1.0.0' &&
        test -f '$tmp/stage/opt/ikd/lib/libikdclient.so.0.2.0' &&
        test -f '$tmp/stage/opt/ikd/include/ikd/client.h'"
check "DESTDIR: the .pc files name the PREFIX without DESTDIR" \
    sh -c "grep -qx 'prefix=/opt/ikd' '$tmp/stage/opt/ikd/lib/pkgconfig/iksolver.pc' &&
        grep -qx 'prefix=/opt/ikd' '$tmp/stage/opt/ikd/lib/pkgconfig/ikdclient.pc'"

# ---- 4. uninstall ------------------------------------------------------
cleanmake -s uninstall PREFIX="$P" >"$tmp/u.out" 2>&1
left=$(find "$P" \( -type f -o -type l \) | wc -l)
check "make uninstall removes every installed file" test "$left" -eq 0
check "make uninstall removes include/ikd" test ! -e "$P/include/ikd"

rm -f build/iksolver-example build/iksolver-example-static build/ikdclient-example \
    build/ikdclient-example-cpp
echo "1..$n"
[ "$bad" -eq 0 ]

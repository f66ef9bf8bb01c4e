#!/bin/sh
# test_c_install.sh: the C library as those who embed it get it (make
# install, pkg-config, clients/c/example.c), checked from outside the tree.
#
# 1. The ```sh block of clients/c/README.md runs as written, with HOME in a
#    scratch folder (so "make install PREFIX=$HOME/.local" installs there):
#    the example is built against the installed copy, shared and static, and
#    each run must print the example's own verdict ("all checks passed": the
#    two-bone leg by its geometry, the UR5's full poses by forward
#    kinematics) and exit 0.
# 2. What was installed: exactly the expected files; the public headers of
#    solver/ (every *.h but *_internal.h), each compiling alone with only
#    pkg-config's flags; the example's headers read from the installed copy
#    (cc -M); the soname and the symlinks (readelf -d, readlink); the shared
#    example NEEDing libiksolver.so.0 and loading the installed one, the
#    static one not; only public ik_ symbols exported; the .pc file's
#    fields.
# 3. DESTDIR: files land under it, the .pc names the PREFIX without it.
# 4. make uninstall removes every installed file.
#
# Output is TAP ("ok N - ..." / "not ok N - ..."), which tests/run.sh counts.
# The library is built by a make of its own (the MAKEFLAGS of an enclosing
# "make check", and the variables make exports from its command line, such
# as SANITIZER=address BUILD=build-asan, are dropped: the example is an
# ordinary program and links an ordinary library).
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
mkdir -p "$tmp/home"
rm -f build/iksolver-example build/iksolver-example-static
HOME="$tmp/home" env $CLEAN_ENV -u PKG_CONFIG_PATH \
    sh -e "$tmp/readme.sh" >"$tmp/readme.out" 2>"$tmp/readme.err"
rc=$?
if [ $rc -eq 0 ]; then ok "the README's commands run (exit 0)"; else
    notok "the README's commands run (exit $rc)"
    sed 's/^/#   /' "$tmp/readme.out" "$tmp/readme.err" | tail -40
fi
runs=$(grep -c '^all checks passed$' "$tmp/readme.out")
if [ "$runs" -eq 2 ] && ! grep -q FAILED "$tmp/readme.out"; then
    ok "both builds of the example print: all checks passed"
else
    notok "both builds of the example print: all checks passed (got $runs)"
    sed 's/^/#   /' "$tmp/readme.out"
fi
for what in "two_bone: ok" "ur5 pose 1: ok" "ur5 pose 2: ok" "ur5 pose 3: ok"; do
    c=$(grep -c "^$what" "$tmp/readme.out")
    if [ "$c" -eq 2 ]; then ok "example output: $what (twice)"; else
        notok "example output: $what (twice; got $c)"; fi
done

P="$tmp/home/.local"
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
L="$P/lib"

# ---- 2. what was installed ---------------------------------------------
(cd "$P" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort) >"$tmp/files"
{
    printf '%s\n' lib/libiksolver.a lib/libiksolver.so lib/libiksolver.so.0 \
        lib/libiksolver.so.0.2.0 lib/pkgconfig/iksolver.pc
    for h in solver/*.h; do
        case "$h" in *_internal.h) ;; *) echo "include/ikd/$h" ;; esac
    done
} | sort >"$tmp/expected"
check "installed files: the libraries, the .pc and the public headers, nothing else" \
    diff "$tmp/expected" "$tmp/files"
check "no internal header installed" sh -c "! ls '$P/include/ikd/solver/' | grep -q internal"

# every public header alone, from a folder with nothing else in it
mkdir -p "$tmp/hdr"
hdr_bad=""
for h in "$P"/include/ikd/solver/*.h; do
    b=$(basename "$h")
    printf '#include <solver/%s>\nint main(void) { return 0; }\n' "$b" >"$tmp/hdr/t.c"
    (cd "$tmp/hdr" && cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
        $(pkg-config --cflags iksolver) t.c) >"$tmp/hdr/err" 2>&1 || {
        hdr_bad="$hdr_bad $b"; sed 's/^/#   /' "$tmp/hdr/err"; }
done
if [ -z "$hdr_bad" ]; then ok "each installed header compiles alone with pkg-config's flags"; else
    notok "installed headers that do not compile alone:$hdr_bad"; fi

cc -M $(pkg-config --cflags iksolver) clients/c/example.c >"$tmp/deps" 2>&1
check "the example reads the installed headers" grep -q "$P/include/ikd/solver/ik_numeric.h" "$tmp/deps"
check "the example reads no header of the source tree" sh -c "! grep -q '$ROOT/solver/\| solver/' '$tmp/deps'"

check "soname libiksolver.so.0 (readelf -d)" \
    sh -c "readelf -d '$L/libiksolver.so.0.2.0' | grep -q 'Library soname: \[libiksolver.so.0\]'"
check "libiksolver.so.0 -> libiksolver.so.0.2.0" test "$(readlink "$L/libiksolver.so.0")" = libiksolver.so.0.2.0
check "libiksolver.so -> libiksolver.so.0" test "$(readlink "$L/libiksolver.so")" = libiksolver.so.0
check "the shared library needs libm and libc only" \
    test -z "$(readelf -d "$L/libiksolver.so.0.2.0" | grep NEEDED | grep -v 'libc\.so\|libm\.so')"
check "the shared example NEEDs libiksolver.so.0" \
    sh -c "readelf -d build/iksolver-example | grep -q 'Shared library: \[libiksolver.so.0\]'"
check "the shared example loads the installed library" \
    sh -c "LD_LIBRARY_PATH='$L' ldd build/iksolver-example | grep -q '$L/libiksolver.so.0'"
check "the static example needs no libiksolver" \
    sh -c "! readelf -d build/iksolver-example-static | grep -q libiksolver"
nm -D --defined-only "$L/libiksolver.so.0.2.0" | awk 'NF == 3 {print $3}' >"$tmp/syms"
check "the shared library exports ik_numeric_solve and ik_twobone_solve" \
    sh -c "grep -qx ik_numeric_solve '$tmp/syms' && grep -qx ik_twobone_solve '$tmp/syms'"
check "the shared library exports nothing internal (ik__) or unprefixed" \
    sh -c "! grep -v '^ik_[a-zA-Z0-9]' '$tmp/syms' | grep -q ."
check "pkg-config: version 0.2.0" test "$(pkg-config --modversion iksolver)" = 0.2.0
# (echo drops the blank that pkg-config may end its output with)
check "pkg-config: Cflags -I.../include/ikd" test "$(echo $(pkg-config --cflags iksolver))" = "-I$P/include/ikd"
check "pkg-config: Libs -L... -liksolver" test "$(echo $(pkg-config --libs iksolver))" = "-L$L -liksolver"
check "pkg-config: Libs.private -lm" test "$(echo $(pkg-config --static --libs iksolver))" = "-L$L -liksolver -lm"

# ---- 3. DESTDIR --------------------------------------------------------
cleanmake -s install DESTDIR="$tmp/stage" PREFIX=/opt/iksolver >"$tmp/d.out" 2>&1
check "DESTDIR: the files land under it" test -f "$tmp/stage/opt/iksolver/lib/libiksolver.so.0.2.0"
check "DESTDIR: the .pc names the PREFIX without DESTDIR" \
    grep -qx 'prefix=/opt/iksolver' "$tmp/stage/opt/iksolver/lib/pkgconfig/iksolver.pc"

# ---- 4. uninstall ------------------------------------------------------
cleanmake -s uninstall PREFIX="$P" >"$tmp/u.out" 2>&1
left=$(find "$P" \( -type f -o -type l \) | wc -l)
check "make uninstall removes every installed file" test "$left" -eq 0
check "make uninstall removes include/ikd" test ! -e "$P/include/ikd"

rm -f build/iksolver-example build/iksolver-example-static
echo "1..$n"
[ "$bad" -eq 0 ]

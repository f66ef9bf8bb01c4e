#!/bin/sh
# Installs the Debian packages ikd needs to build, run, test and benchmark.
# The README's two commands, .ci/run and the Dockerfile all call this one script,
# so the list below is the single place where ikd's dependencies are named.
# It is idempotent: when every package is already installed it only checks.
# Usage: docker/install-deps.sh [runtime|build|fuzz|image]   ("runtime" installs
# only what the daemon links against, for slim images; "build" only what
# compiles it, without the test tools, node or the browser; "fuzz" what
# compiles it plus clang and its libFuzzer and sanitizer runtimes, for
# `make fuzz`; "image" the container tools that docker/image-test.sh
# falls back to when no Docker engine runs: buildah, podman, runc and
# debootstrap).
#
# The full install also brings the browser side of the tests: Node.js and
# npm (Debian's, unless a node and npm of 18 or later are already on PATH),
# Debian's chromium for the page test, python3-venv, -pip, -setuptools and
# -wheel (the Python client is installed as a package into a venv, offline,
# by its test), node-typescript (tsc checks the JavaScript client's
# declarations), and the npm packages pinned in package-lock.json (three.js,
# ws, playwright-core and the test tools), installed with `npm ci` into
# node_modules when the lock file is next to this script's folder and
# changed since the last install. Every locked package accepts node 18, the
# floor checked below (Debian 12 ships 18), so npm prints no EBADENGINE
# warning (tests/docker/test_node_engines.mjs).
set -eu

# (GnuTLS: ikd's own TLS, --tls-cert, and the C network client, clients/c/,
# which `make` builds too with libcurl; hiredis: the shared chain registry in
# Redis, --redis, whose tests start Debian's redis-server on loopback)
BUILD_PKGS="build-essential pkg-config make gcc \
  libmicrohttpd-dev libjansson-dev libuv1-dev libwslay-dev nettle-dev libxml2-dev \
  libcurl4-openssl-dev libgnutls28-dev libhiredis-dev"
TEST_PKGS="check python3 python3-websockets wrk curl chromium haproxy openssl python3-yaml prometheus \
  redis-server \
  python3-venv python3-pip python3-setuptools python3-wheel node-typescript"
NODE_PKGS="nodejs npm"
FUZZ_PKGS="clang-14 libclang-rt-14-dev"
IMAGE_PKGS="buildah podman runc debootstrap"
RUNTIME_PKGS="libmicrohttpd12 libjansson4 libuv1 libwslay1 libnettle8 libxml2 libgnutls30 \
  libhiredis0.14"

case "${1:-}" in
runtime) PKGS="$RUNTIME_PKGS" ;;
build) PKGS="$BUILD_PKGS" ;;
fuzz) PKGS="$BUILD_PKGS $FUZZ_PKGS" ;;
image) PKGS="$IMAGE_PKGS curl python3 python3-websockets" ;;
*)
    PKGS="$BUILD_PKGS $TEST_PKGS"
    # A node and npm already installed (from Debian or elsewhere) are kept.
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        PKGS="$PKGS $NODE_PKGS"
    fi
    ;;
esac

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if [ -n "$missing" ]; then
    echo "install-deps: installing$missing" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
fi

[ -z "${1:-}" ] || exit 0
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 18 ]; then
    echo "install-deps: node 18 or later is needed for the page and the JavaScript client (found: $(node --version 2>/dev/null || echo none))" >&2
    exit 1
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$root/package-lock.json" ] &&
    ! cmp -s "$root/package-lock.json" "$root/node_modules/.ikd-installed-lock"; then
    echo "install-deps: npm ci (three.js, ws, playwright-core and test tools from package-lock.json)" >&2
    (cd "$root" && npm ci --ignore-scripts --no-audit --no-fund >&2 &&
        cp package-lock.json node_modules/.ikd-installed-lock)
fi

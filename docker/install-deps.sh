#!/bin/sh
# Installs the Debian packages ikd needs to build, run, test and benchmark.
# The README's two commands, .ci/run and the Dockerfile all call this one script,
# so the list below is the single place where ikd's dependencies are named.
# It is idempotent: when every package is already installed it only checks.
# Usage: docker/install-deps.sh [runtime]   ("runtime" installs only what the
# daemon links against, for slim images).
set -eu

BUILD_PKGS="build-essential pkg-config make gcc \
  libmicrohttpd-dev libjansson-dev libuv1-dev libwslay-dev nettle-dev libxml2-dev"
TEST_PKGS="check libcurl4-openssl-dev python3 python3-websockets wrk curl"
RUNTIME_PKGS="libmicrohttpd12 libjansson4 libuv1 libwslay1 libnettle8 libxml2"

if [ "${1:-}" = "runtime" ]; then
    PKGS="$RUNTIME_PKGS"
else
    PKGS="$BUILD_PKGS $TEST_PKGS"
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing$missing" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2

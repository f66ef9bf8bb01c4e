#!/bin/sh
# image-test.sh: builds the repository's Dockerfile and tests the image as an
# operator runs it (make image-test; .ci/run runs it after the tests).
#
# The engine: docker when a Docker engine answers; otherwise Debian's buildah
# (build) and podman (run), installed by docker/install-deps.sh image, with
# the vfs storage driver and chroot isolation. When the base image that the
# Dockerfile names (debian:12-slim) cannot be had from a registry, it is made
# here the way the official slim image is: debootstrap --variant=minbase of
# bookworm from the Debian mirror apt already uses, plus the official image's
# apt "docker-clean" configuration and dpkg's doc/man/locale exclusions, then
# imported under that name.
#
# Checks, each failing the script with a message: the daemon answers /livez,
# a two-bone solve and a WebSocket stream; it runs as uid 10001, not root;
# the image's HEALTHCHECK (ikd probe, no HTTP client in the image) passes;
# SIGTERM lets an in-flight request finish with 200 and the container exits
# 0; the image is at most IKD_IMAGE_BUDGET_MB (default 130; 118 when measured) megabytes.
# The container uses the host's network (no bridge is set up on these
# machines) and listens on a free loopback port given as IKD_LISTEN, which
# the health check follows.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUDGET_MB=${IKD_IMAGE_BUDGET_MB:-130}
TAG=ikd:image-test
NAME=ikd-image-test-$$
WORK="$ROOT/build/image"
mkdir -p "$WORK"

say() { echo "image-test: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    ENGINE=docker
    BUILD="docker build"
    RUN="docker"
else
    sh docker/install-deps.sh image
    ENGINE=podman
    STORE="--storage-driver vfs"
    BUILD="buildah bud $STORE --isolation chroot --pull=never --format docker"
    RUN="podman $STORE --runtime runc"
fi
say "engine: $ENGINE"

# ---- the base image ---------------------------------------------------------
have_base() { $RUN image inspect debian:12-slim >/dev/null 2>&1; }
if ! have_base && [ "$ENGINE" = docker ]; then docker pull debian:12-slim >/dev/null 2>&1 || true; fi
if ! have_base; then
    mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    [ -n "$mirror" ] || fail "no Debian mirror found in apt's sources"
    say "making debian:12-slim with debootstrap from $mirror"
    rootfs="$WORK/rootfs"
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
        { tail -20 "$WORK/debootstrap.log" >&2; fail "debootstrap"; }
    # what the official slim image adds: apt cleans its caches after every
    # install, dpkg leaves out documentation, manuals and locales
    cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
EOF
    rm -rf "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin \
        "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/usr/share/doc" \
        "$rootfs/usr/share/man" "$rootfs/usr/share/locale" "$rootfs/usr/share/info"
    tar -C "$rootfs" -c . | $RUN import - debian:12-slim >/dev/null || fail "importing the base image"
    rm -rf "$rootfs"
fi

# ---- build --------------------------------------------------------------------
t0=$(date +%s)
$BUILD -t "$TAG" . >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log" >&2; fail "building the Dockerfile"; }
say "built $TAG in $(( $(date +%s) - t0 )) s"
size=$($RUN image inspect --format '{{.Size}}' "$TAG")
size_mb=$((size / 1000000))
say "image size: $size_mb MB (budget $BUDGET_MB MB)"
[ "$size_mb" -le "$BUDGET_MB" ] || fail "the image is $size_mb MB, over its budget of $BUDGET_MB MB"

# ---- run ------------------------------------------------------------------------
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() { $RUN rm -f "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM
$RUN run -d --name "$NAME" --network host \
    --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
    -e "IKD_LISTEN=127.0.0.1:$port" "$TAG" >/dev/null || fail "starting the container"
base="http://127.0.0.1:$port"
i=0
until curl -fsS "$base/livez" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { $RUN logs "$NAME" >&2 || true; fail "/livez did not answer within 10 s"; }
    sleep 0.1
done
say "/livez answers"

answer=$(curl -fsS -X POST --data-binary @tests/fixtures/solve_two_bone.request.json "$base/v1/solve") ||
    fail "the two-bone solve"
echo "$answer" | grep -q '"status":"success"' || fail "the solve answered: $answer"
say "a two-bone solve succeeds"

/usr/bin/python3 - "$port" <<'EOF' || fail "the WebSocket stream"
import asyncio, json, sys
import websockets
async def main(port):
    async with websockets.connect("ws://127.0.0.1:%s/v1/stream" % port, ping_interval=None) as ws:
        await ws.send(json.dumps({"type": "open", "stream": "s", "chain": {"kind": "bones",
                      "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]}}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "opened"
        for seq in range(1, 21):
            await ws.send(json.dumps({"type": "target", "stream": "s", "seq": seq,
                                      "target": {"position": [0.3, 0.6, 0.2 + seq * 0.001]}}))
            m = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert (m["type"], m["seq"], m["result"]["status"]) == ("solution", seq, "success"), m
asyncio.run(main(sys.argv[1]))
EOF
say "a WebSocket stream answers in order"

uid=$($RUN exec "$NAME" id -u) || fail "exec id -u"
[ "$uid" = 10001 ] || fail "the daemon runs as uid $uid, not 10001"
say "runs as uid 10001"

if [ "$ENGINE" = podman ]; then
    podman $STORE --runtime runc healthcheck run "$NAME" >/dev/null || fail "the health check failed"
else
    $RUN exec "$NAME" /usr/local/bin/ikd probe || fail "the health check failed"
fi
hc=$($RUN image inspect --format '{{json .Config.Healthcheck}}' "$TAG")
echo "$hc" | grep -q '"/usr/local/bin/ikd","probe"' || fail "the image's HEALTHCHECK is not ikd probe: $hc"
say "the health check passes"

# SIGTERM while a batch is being solved: the batch still gets its 200
/usr/bin/python3 - >"$WORK/batch.json" <<'EOF'
import json
targets = [{"position": [0.3, 0.6, 0.2 + 1e-6 * i]} for i in range(100000)]
print(json.dumps({"chain": {"kind": "bones", "positions": [[0, 0, 0], [0, 0.5, 0], [0, 1.0, 0]]},
                  "targets": targets}))
EOF
curl -sS -o "$WORK/batch.out" -w '%{http_code}' -X POST --data-binary @"$WORK/batch.json" \
    "$base/v1/solve/batch" >"$WORK/batch.code" 2>"$WORK/batch.err" &
curl_pid=$!
sleep 0.3
$RUN kill --signal TERM "$NAME" >/dev/null || fail "sending SIGTERM"
wait "$curl_pid" || true
code=$(cat "$WORK/batch.code")
[ "$code" = 200 ] || fail "the in-flight batch got '$code' after SIGTERM: $(cat "$WORK/batch.err")"
i=0
while [ "$($RUN inspect --format '{{.State.Running}}' "$NAME")" = true ]; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "the container did not exit within 30 s of SIGTERM"
    sleep 0.1
done
rc=$($RUN inspect --format '{{.State.ExitCode}}' "$NAME")
[ "$rc" = 0 ] || fail "the container exited $rc after SIGTERM"
say "SIGTERM: the in-flight batch answered 200, exit 0"
rm -f "$WORK/batch.json" "$WORK/batch.out"
say "all checks passed"

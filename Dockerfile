# ikd container image: build stage compiles and tests nothing but the build;
# the runtime stage carries only the daemon and the libraries it links.
#   docker build -t ikd .
#   docker run --rm -p 8080:8080 ikd                 # serves on port 8080
#   docker run --rm -e IKD_TOKEN=secret -p 8080:8080 ikd
# Every flag of "ikd --help" can be appended to "docker run ... ikd" or set
# through its IKD_* environment variable.

FROM debian:12-slim AS build
WORKDIR /src
COPY docker/install-deps.sh docker/install-deps.sh
RUN sh docker/install-deps.sh build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN make clean && make -j"$(nproc)" build/ikd

FROM debian:12-slim
COPY docker/install-deps.sh /tmp/install-deps.sh
RUN sh /tmp/install-deps.sh runtime \
    && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh \
    && useradd --system --no-create-home --uid 10001 ikd
COPY --from=build /src/build/ikd /usr/local/bin/ikd
USER ikd
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=2s --start-period=2s --retries=3 \
    CMD ["/usr/local/bin/ikd", "probe"]
STOPSIGNAL SIGTERM
# the daemon and its health check (ikd probe) both read IKD_LISTEN
ENV IKD_LISTEN=0.0.0.0:8080
ENTRYPOINT ["/usr/local/bin/ikd"]

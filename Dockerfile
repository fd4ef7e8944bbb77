# Spout in a container: build with the Swift 6 toolchain image, run on a slim Debian with only
# the runtime libraries. The Swift standard library and Foundation are linked statically, so the
# runtime image needs just libcurl (FoundationNetworking's HTTP client) and CA certificates.
#
#   docker build --build-arg SPOUT_REVISION=$(git rev-parse --short HEAD) -t spout .
#   docker run --rm -p 8080:8080 spout
#
# SIGTERM (docker stop, Kubernetes) drains: /ready answers 503 for shutdown.delaySeconds (5 s) while requests are
# still served, then open streams get shutdown.graceSeconds (10 s). Keep the stop timeout above their sum
# (docker stop -t 20; Kubernetes' default terminationGracePeriodSeconds of 30 s is enough).
#
# Swift 6.2 or later: the sources use InlineArray. Keep the toolchain in step with the one CI uses (6.3).
ARG SWIFT_IMAGE=swift:6.3-bookworm
FROM ${SWIFT_IMAGE} AS build
# Linking Foundation statically needs libcurl's development files (-lcurl); the official Swift images
# carry them, a slimmer build image may not.
RUN dpkg -s libcurl4-openssl-dev >/dev/null 2>&1 \
    || (apt-get update && apt-get install -y --no-install-recommends libcurl4-openssl-dev \
        && rm -rf /var/lib/apt/lists/*)
WORKDIR /src
# The source revision, written into the binary (spout --version, spout_build_info): SwiftPM without plugins
# cannot stamp a build, so this stage rewrites the one line that holds it. Letters, digits, . _ - only.
ARG SPOUT_REVISION=unknown
# The manifest first, so dependency resolution (there is none beyond the toolchain) caches.
# Tests too: the manifest declares the test targets, and SwiftPM wants their folders. Not bench/ (a package of
# its own that this build never reads), so editing a benchmark does not rebuild the image. Plugins/ holds the build
# plugin that writes Reactive's Merge…Merge8 (docs/REACTIVE.md).
COPY Package.swift ./
COPY Plugins Plugins
COPY Sources Sources
COPY Tests Tests
COPY config config
RUN case "$SPOUT_REVISION" in (*[!A-Za-z0-9._-]*|"") echo "SPOUT_REVISION must be letters, digits, . _ -" >&2; exit 1;; esac \
    && sed -i "s/public static let revision = \"unknown\"/public static let revision = \"$SPOUT_REVISION\"/" \
        Sources/Spout/Observability/BuildInfo.swift \
    && grep -q "revision = \"$SPOUT_REVISION\"" Sources/Spout/Observability/BuildInfo.swift \
    && swift build -c release --product spout --static-swift-stdlib -Xswiftc -cross-module-optimization \
    && install -D "$(swift build -c release --show-bin-path)/spout" /out/usr/local/bin/spout \
    && install -D -m 0644 config/spout.json /out/etc/spout/spout.json

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4 ca-certificates tzdata curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 spout \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin spout
COPY --from=build /out/ /
# Numeric, so a pod's runAsNonRoot: true holds without a runAsUser (Kubernetes cannot tell a name is not root).
USER 10001:10001
ENV SPOUT_CONFIG=/etc/spout/spout.json \
    SPOUT_HOST=0.0.0.0 \
    SPOUT_PORT=8080
EXPOSE 8080
# Follows SPOUT_PORT when `docker run -e SPOUT_PORT=…` moves the listener.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD curl -fsS "http://127.0.0.1:${SPOUT_PORT:-8080}/health" || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/spout"]

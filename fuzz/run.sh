#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer and AddressSanitizer and runs each for its share of the time.
# Usage: fuzz/run.sh [total-seconds] [target...]   (default 60 s and every target; the time is split evenly).
# Exits non-zero when any target found a crash, leak, hang, OOM or broken invariant (the others still run).
# FUZZ_OPTIMIZATION=-Onone keeps the standard library's debug bounds checks on unsafe buffers (slower).
# FUZZ_BUILD_ONLY=1 builds the targets and runs none (CI does this first: the targets compile sources outside
# `swift build`, so a changed API breaks them without breaking the package).
set -euo pipefail
shopt -s globstar nullglob

# Library modules a target can import, in dependency order, each built once: name, the libraries it imports
# (comma-separated, or -), then its sources (globs from the repository root).
libraries=(
    "HTTPServer  -           Sources/HTTPServer/Types/*.swift Sources/HTTPServer/Parser/*.swift"
    "Spout       HTTPServer  Sources/Spout/Routing/QueryValidation.swift Sources/Spout/Encoding/MediaType.swift Sources/Spout/Encoding/ASCIIFolding.swift Sources/Spout/Encoding/JSONText.swift Sources/Spout/Problems/Problem.swift Sources/Spout/Problems/ProblemType.swift Sources/Spout/Problems/ProblemType+Identity.swift Sources/Spout/Config/ConfigJSON.swift Sources/Spout/Identity/Base64URL.swift Sources/Spout/Encoding/StrictJSONReader.swift Sources/Spout/Identity/JWSToken.swift Sources/Spout/Identity/JWTClaims.swift Sources/Spout/Channels/ChannelPublishBody.swift"
)

# Targets, one line each: a folder of fuzz/ with main.swift (and, when it has them, a seed corpus/ and a
# libFuzzer dictionary *.dict), the libraries it imports (or -), then sources compiled into the target's own
# module (or -).
targets=(
    "ParserFuzz  -                 Sources/HTTPServer/Types/*.swift Sources/HTTPServer/Parser/*.swift"
    "QueryFuzz   HTTPServer,Spout  -"
    "AcceptFuzz  HTTPServer,Spout  -"
    "RESPFuzz    -                 Sources/RESP/**/*.swift"
    "JWSFuzz     HTTPServer,Spout  -"
    "PublishFuzz HTTPServer,Spout  -"
)

seconds="${1:-60}"
shift || true
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
work="$here/corpus-work"
build="$work/build"
mkdir -p "$build"

flags=(
    -sanitize=fuzzer,address -parse-as-library "${FUZZ_OPTIMIZATION:--O}" -swift-version 6
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility
    -package-name Spout -enable-testing -I "$build"
)

# The targets to run: those named on the command line, or all.
selected=()
for line in "${targets[@]}"; do
    read -r name _ <<<"$line"
    if [ $# -eq 0 ] || [[ " $* " == *" $name "* ]]; then selected+=("$line"); fi
done
[ ${#selected[@]} -gt 0 ] || { echo "no such target: $*" >&2; exit 2; }

# Sets `expanded` to the files matching the globs (from the repository root) listed in $1, or to none for "-".
expand() {
    local patterns pattern matches
    expanded=()
    [ "$1" = "-" ] && return
    read -r -a patterns <<<"$1"
    for pattern in "${patterns[@]}"; do
        # shellcheck disable=SC2206
        matches=("$root"/$pattern)
        [ ${#matches[@]} -gt 0 ] || { echo "no sources match $pattern" >&2; exit 2; }
        expanded+=("${matches[@]}")
    done
}

# The libraries `$1` (comma-separated) needs, with their own, in dependency order.
needed() {
    local wanted=",$1," line name imports changed=1
    while [ $changed -eq 1 ]; do
        changed=0
        for line in "${libraries[@]}"; do
            read -r name imports _ <<<"$line"
            if [[ "$wanted" == *",$name,"* && "$imports" != "-" ]]; then
                for dependency in ${imports//,/ }; do
                    if [[ "$wanted" != *",$dependency,"* ]]; then wanted+="$dependency,"; changed=1; fi
                done
            fi
        done
    done
    for line in "${libraries[@]}"; do
        read -r name _ <<<"$line"
        if [[ "$wanted" == *",$name,"* ]]; then echo "$name"; fi
    done
}

built=","
build_library() {
    local line name imports files
    [[ "$built" == *",$1,"* ]] && return
    for line in "${libraries[@]}"; do
        read -r name imports files <<<"$line"
        [ "$name" = "$1" ] || continue
        echo "building library $name"
        expand "$files"
        swiftc "${flags[@]}" -module-name "$name" -emit-module -emit-module-path "$build/$name.swiftmodule" \
            -emit-library -static -o "$build/lib$name.a" "${expanded[@]}"
        built+="$name,"
        return
    done
    echo "unknown library $1" >&2
    exit 2
}

failed=()
share=$(( seconds / ${#selected[@]} ))
[ "$share" -ge 1 ] || share=1
for line in "${selected[@]}"; do
    read -r name imports files <<<"$line"
    binary="$here/$(echo "${name%Fuzz}" | tr '[:upper:]' '[:lower:]')-fuzz.bin"  # ParserFuzz: parser-fuzz.bin
    archives=()
    if [ "$imports" != "-" ]; then
        for library in $(needed "$imports"); do
            build_library "$library"
            archives=("$build/lib$library.a" "${archives[@]}")  # dependents before their dependencies
        done
    fi
    echo "building $binary"
    expand "$files"
    swiftc "${flags[@]}" -module-name "$name" "${expanded[@]}" "$here/$name"/*.swift "${archives[@]}" -o "$binary"
    [ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && continue

    mkdir -p "$work/$name/corpus" "$work/$name/artifacts"
    if [ -d "$here/$name/corpus" ]; then cp -r "$here/$name/corpus"/. "$work/$name/corpus/"; fi
    options=(-max_total_time="$share" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$work/$name/artifacts/")
    for dictionary in "$here/$name"/*.dict; do options+=(-dict="$dictionary"); done
    echo "fuzzing $name for ${share}s; crashes go to $work/$name/artifacts/"
    if ! "$binary" "$work/$name/corpus" "${options[@]}"; then failed+=("$name"); fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing failed: ${failed[*]}" >&2
    exit 1
fi
if [ "${FUZZ_BUILD_ONLY:-0}" = 1 ]; then
    echo "fuzz targets built: ${#selected[@]}"
else
    echo "fuzzing passed: ${#selected[@]} targets, ${share}s each"
fi

#!/usr/bin/env bash
# JWT verification cost: Spout's public SignedTokenVerifier (bench/JWTBench) cold and cached, beside PyJWT's
# jwt.decode and OpenSSL's own `openssl speed` for the primitive underneath (HMAC-SHA256 over a token-sized input,
# ECDSA P-256 verify), all in the same run.
# Usage: bench/jwt.sh            (RUNS=3 runs of ROUNDS=7 rounds; SPOUT_PYTHON: a python3 with pyjwt and cryptography)
# Figures are thread CPU time per verification (the machine is shared), medians over the runs; the summary gives
# each one's ratio to OpenSSL's bare primitive, which the load affects alike.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${SPOUT_PYTHON:-python3}"
RUNS="${RUNS:-3}"
ROUNDS="${ROUNDS:-7}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "== uptime: $(uptime)"
echo "== $("$PYTHON" -c 'import jwt, cryptography; print("PyJWT", jwt.__version__, "cryptography", cryptography.__version__)'), $(openssl version)"
"$PYTHON" bench/jwt_tokens.py make "$WORK" 500
swift build -c release --package-path bench --scratch-path .build-bench --product jwt-bench >/dev/null
BIN=.build-bench/release/jwt-bench

: >"$WORK/figures"
for run in $(seq "$RUNS"); do
    "$BIN" "$WORK" "$ROUNDS" | tee -a "$WORK/figures"
    "$PYTHON" bench/jwt_tokens.py time "$WORK" "$ROUNDS" | tee -a "$WORK/figures"
    # The signing input of these tokens is about 250 bytes: HMAC-SHA256 over 256-byte blocks.
    openssl speed -seconds 2 -bytes 256 -hmac sha256 2>&1 \
        | sed -n 's/.*: \([0-9]*\) hmac(sha256).s in \([0-9.]*\)s.*/openssl HS256 \1 \2/p' \
        | awk '{ printf "openssl HS256 %.0f\n", $4 * 1e9 / $3 }' | tee -a "$WORK/figures"
    openssl speed -seconds 2 ecdsap256 2>/dev/null \
        | awk '/ecdsa \(nistp256\)/ { printf "openssl ES256 %.0f\n", 1e9 / $NF }' | tee -a "$WORK/figures"
done
echo "== uptime: $(uptime)"
"$PYTHON" - "$WORK/figures" <<'PY'
import statistics, sys
figures = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 3 and parts[0] in ("spout", "pyjwt", "openssl"):
        try:
            figures.setdefault((parts[0], parts[1]), []).append(float(parts[2]))
        except ValueError:
            pass
median = {key: statistics.median(values) for key, values in figures.items()}
print("== medians over %d runs (ns per verification, thread CPU time)" % max(len(v) for v in figures.values()))
for alg, goal in (("HS256", 5000), ("ES256", 60000)):
    base = median.get(("openssl", alg))
    cold = median.get(("spout", alg + "-cold"))
    cached = median.get(("spout", alg + "-cached"))
    py = median.get(("pyjwt", alg))
    print("%s: spout cold %.0f (goal %d), cached %.0f, PyJWT %.0f, openssl primitive %.0f" % (alg, cold, goal, cached, py, base))
    print("       spout cold / openssl %.2f, PyJWT / spout cold %.1f, cold / cached %.0f" % (cold / base, py / cold, cold / cached))
PY

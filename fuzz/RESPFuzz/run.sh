#!/usr/bin/env bash
# The RESP target alone: fuzz/RESPFuzz/run.sh [seconds] (default 60) is fuzz/run.sh [seconds] RESPFuzz.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../run.sh" "${1:-60}" RESPFuzz

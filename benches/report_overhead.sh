#!/usr/bin/env bash
# What `--report DIR` adds to `iosched repro`: the two commands alternately, ROUNDS times
# (default 5), wall time of each, then the medians and their ratio.
# Usage: benches/report_overhead.sh [BIN]   (default: builds target/release/iosched)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
    cargo build --release --quiet -p iosched
    bin=target/release/iosched
fi
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
plain=() report=()
for i in $(seq "$rounds"); do
    t0=$(now); "$bin" repro >/dev/null; t1=$(now)
    rm -rf "$tmp/rep"; "$bin" repro --report "$tmp/rep" >/dev/null 2>&1; t2=$(now)
    plain+=("$(echo "$t1 - $t0" | bc)") report+=("$(echo "$t2 - $t1" | bc)")
    echo "round $i: repro ${plain[-1]} s, repro --report ${report[-1]} s"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mp=$(median "${plain[@]}") mr=$(median "${report[@]}")
echo "median: repro $mp s, repro --report $mr s: +$(echo "scale=1; 100 * ($mr - $mp) / $mp" | bc) %"

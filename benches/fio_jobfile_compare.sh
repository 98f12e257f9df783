#!/usr/bin/env bash
# `iosched real fio` against fio itself, the same job on the same file: 4 KiB random
# reads, O_DIRECT, io_uring, iodepth 32, RUNTIME seconds, our noop. Each round runs fio,
# then us, then fio again; our IOPS are taken against the mean of the two fio runs around
# them (which cancels the device's drift), and our p50 and p99 completion latencies
# against theirs. Prints the rounds, then the medians of the three ratios.
#
#   benches/fio_jobfile_compare.sh [FILE]     (default /tmp/iosched-fio-jobfile.img)
#   env: SIZE=1G RUNTIME=10 ROUNDS=3 IOSCHED=target/release/iosched
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=${1:-/tmp/iosched-fio-jobfile.img}
SIZE=${SIZE:-1G}
RUNTIME=${RUNTIME:-10}
ROUNDS=${ROUNDS:-3}
IOSCHED=${IOSCHED:-target/release/iosched}

[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer (got '$ROUNDS')" >&2; exit 2; }
[[ "$RUNTIME" =~ ^[1-9][0-9]*$ ]] || { echo "RUNTIME must be a positive number of seconds (got '$RUNTIME')" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed to read the JSON" >&2; exit 2; }
[ -x "$IOSCHED" ] || cargo build --release -q -p iosched
JOB=(--rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth=32 --runtime="$RUNTIME" --time_based
    --size="$SIZE")
if [ ! -s "$FILE" ]; then
    # Create the target and write it once, so that the reads touch the device.
    "$IOSCHED" real fio --target "$FILE" -- --name=fill --rw=write --bs=1m --direct=1 --size="$SIZE" >/dev/null
fi

# IOPS, p50 and p99 completion latency (us) of a fio-format JSON document on stdin.
summary='import json,sys
r = json.load(sys.stdin)["jobs"][0]["read"]
p = r["clat_ns"]["percentile"]
print(round(r["iops"]), p["50.000000"] / 1e3, p["99.000000"] / 1e3)'
fio_run() { fio --name=cmp --filename="$FILE" "${JOB[@]}" --output-format=json 2>/dev/null | python3 -c "$summary"; }
our_run() { "$IOSCHED" real fio --sched noop --target "$FILE" --output-format json -- --name=cmp "${JOB[@]}" | python3 -c "$summary"; }

echo "4 KiB random reads, O_DIRECT, io_uring, iodepth 32, ${RUNTIME}s each, file $FILE ($SIZE)"
printf '%-6s %9s %9s %9s | %9s %9s %9s | %7s %7s %7s\n' round fio_iops fio_p50 fio_p99 our_iops our_p50 our_p99 iops% p50% p99%
before=$(fio_run)
shares=()
for r in $(seq 1 "$ROUNDS"); do
    ours=$(our_run)
    after=$(fio_run)
    line=$(python3 - "$before" "$ours" "$after" <<'PY'
import sys
b, o, a = (list(map(float, s.split())) for s in sys.argv[1:4])
f = [(x + y) / 2 for x, y in zip(b, a)]
print(f"{f[0]:9.0f} {f[1]:9.1f} {f[2]:9.1f} | {o[0]:9.0f} {o[1]:9.1f} {o[2]:9.1f} | "
      f"{100*o[0]/f[0]:7.1f} {100*o[1]/f[1]:7.1f} {100*o[2]/f[2]:7.1f}")
PY
)
    printf '%-6s %s\n' "$r" "$line"
    shares+=("$line")
    before=$after
done
printf '%s\n' "${shares[@]}" | python3 -c '
import sys, statistics
rows = [l.split("|")[2].split() for l in sys.stdin if l.strip()]
med = [statistics.median(float(r[i]) for r in rows) for i in range(3)]
print(f"median: IOPS {med[0]:.1f} % of fio; p50 {med[1]:.1f} %, p99 {med[2]:.1f} % of fios")'

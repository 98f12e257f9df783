#!/usr/bin/env bash
# iosched's real runtime against fio on the same file: 4 KiB random reads, O_DIRECT,
# queue depth 32, RUNTIME seconds each. Prints fio's io_uring IOPS and ours with noop and
# deadline side by side, round by round (interleaved, so drift of the device hits all
# three alike), then the medians and our share of fio.
#
#   benches/fio_compare.sh [FILE]          (default /tmp/iosched-fio-compare.img)
#   env: SIZE=1G RUNTIME=10 ROUNDS=3 IOSCHED=target/release/iosched
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=${1:-/tmp/iosched-fio-compare.img}
SIZE=${SIZE:-1G}
RUNTIME=${RUNTIME:-10}
ROUNDS=${ROUNDS:-3}
IOSCHED=${IOSCHED:-target/release/iosched}

command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed to read the JSON" >&2; exit 2; }
[ -x "$IOSCHED" ] || cargo build --release -q -p iosched
if [ ! -s "$FILE" ]; then
    # Create the target (marker block + data) and write it once, so reads touch the device.
    "$IOSCHED" real fio-like --sched noop --target "$FILE" --rw write --bs 1m --iodepth 8 \
        --size "$SIZE" --json >/dev/null
fi

fio_iops() {
    fio --name=cmp --filename="$FILE" --rw=randread --bs=4k --direct=1 --ioengine=io_uring \
        --iodepth=32 --runtime="$RUNTIME" --time_based --size="$SIZE" --output-format=json \
        2>/dev/null | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}
our_iops() {
    "$IOSCHED" real fio-like --sched "$1" --target "$FILE" --rw randread --bs 4k --iodepth 32 \
        --size "$SIZE" --runtime "${RUNTIME}s" --json \
        | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["results"][0]["iops"]))'
}

echo "4 KiB random reads, O_DIRECT, iodepth 32, ${RUNTIME}s each, file $FILE ($SIZE)"
printf '%-6s %12s %12s %12s\n' round "fio io_uring" "iosched noop" "iosched dl"
F=(); N=(); D=()
for r in $(seq 1 "$ROUNDS"); do
    f=$(fio_iops); n=$(our_iops noop); d=$(our_iops deadline)
    F+=("$f"); N+=("$n"); D+=("$d")
    printf '%-6s %12s %12s %12s\n' "$r" "$f" "$n" "$d"
done
python3 - "${F[*]}" "${N[*]}" "${D[*]}" <<'PY'
import statistics, sys
f, n, d = (list(map(int, a.split())) for a in sys.argv[1:4])
mf, mn, md = statistics.median(f), statistics.median(n), statistics.median(d)
print(f"{'median':<6} {mf:12.0f} {mn:12.0f} {md:12.0f}")
print(f"noop reaches {100*mn/mf:.1f} % of fio (target >= 95 %), deadline {100*md/mf:.1f} % (target >= 90 %)")
PY

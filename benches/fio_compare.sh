#!/usr/bin/env bash
# iosched's real runtime against fio on the same file: 4 KiB random reads, O_DIRECT,
# queue depth 32, RUNTIME seconds each. Runs fio, then per round our noop, our deadline
# and fio again, so each of our runs sits between two fio runs; a round's share of fio is
# our IOPS over the mean of the fio runs around it, which cancels the device's drift from
# minute to minute (on a VM it moves by ±10 %). Prints the rounds, then the median share.
#
#   benches/fio_compare.sh [FILE]          (default /tmp/iosched-fio-compare.img)
#   env: SIZE=1G RUNTIME=10 ROUNDS=5 IOSCHED=target/release/iosched
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=${1:-/tmp/iosched-fio-compare.img}
SIZE=${SIZE:-1G}
RUNTIME=${RUNTIME:-10}
ROUNDS=${ROUNDS:-5}
IOSCHED=${IOSCHED:-target/release/iosched}

[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer (got '$ROUNDS')" >&2; exit 2; }
[[ "$RUNTIME" =~ ^[1-9][0-9]*$ ]] || { echo "RUNTIME must be a positive number of seconds (got '$RUNTIME')" >&2; exit 2; }
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
printf '%-6s %12s %12s %12s %8s %8s\n' round "fio before" "iosched noop" "iosched dl" "noop %" "dl %"
F=("$(fio_iops)"); N=(); D=()
for r in $(seq 1 "$ROUNDS"); do
    n=$(our_iops noop); d=$(our_iops deadline); f=$(fio_iops)
    F+=("$f"); N+=("$n"); D+=("$d")
    read -r pn pd < <(python3 -c "m=(${F[$((r-1))]}+$f)/2; print(f'{100*$n/m:.1f} {100*$d/m:.1f}' if m else 'n/a n/a')")
    printf '%-6s %12s %12s %12s %8s %8s\n' "$r" "${F[$((r-1))]}" "$n" "$d" "$pn" "$pd"
done
python3 - "${F[*]}" "${N[*]}" "${D[*]}" <<'PY'
import statistics, sys
f, n, d = (list(map(int, a.split())) for a in sys.argv[1:4])
around = [(f[i] + f[i + 1]) / 2 for i in range(len(n))]
if not all(around):
    sys.exit("fio reported 0 IOPS in a round: no share can be computed (is the target readable?)")
pn = [100 * x / m for x, m in zip(n, around)]
pd = [100 * x / m for x, m in zip(d, around)]
print(f"fio runs: {' '.join(map(str, f))}")
print(f"noop reaches {statistics.median(pn):.1f} % of fio (median of rounds, range {min(pn):.1f}-{max(pn):.1f}; target >= 95 %)")
print(f"deadline reaches {statistics.median(pd):.1f} % of fio (median of rounds, range {min(pd):.1f}-{max(pd):.1f}; target >= 90 %)")
PY

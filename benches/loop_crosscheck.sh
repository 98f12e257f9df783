#!/usr/bin/env bash
# Kernel cross-check (needs root and losetup): on one loop device with direct I/O,
#  1. the kernel's scheduler set to `none`, our `deadline` (2.6.20) in front of it;
#  2. the same with our `mq-deadline` (the kernel's own algorithm);
#  3. the kernel's `mq-deadline`, fio in front of it;
# same job (4 KiB random reads, O_DIRECT, iodepth 32, RUNTIME s). Prints the IOPS and
# the differences (target: within 15 %). ROUNDS rounds, interleaved; medians compared.
#
#   sudo benches/loop_crosscheck.sh        env: SIZE_MB=1024 RUNTIME=10 ROUNDS=3
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-1024}
RUNTIME=${RUNTIME:-10}
ROUNDS=${ROUNDS:-3}
IOSCHED=${IOSCHED:-target/release/iosched}
WORK=${WORK:-/tmp/iosched-loop-crosscheck}

[ "$(id -u)" = 0 ] || { echo "needs root (losetup)" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 2; }
[ -x "$IOSCHED" ] || cargo build --release -q -p iosched
mkdir -p "$WORK"
IMG="$WORK/backing.img"
# A fully written backing file, so reads reach the disk under the loop device.
dd if=/dev/zero of="$IMG" bs=1M count="$SIZE_MB" conv=fsync status=none
DEV=$(losetup --find --show --direct-io=on "$IMG")
trap 'losetup -d "$DEV"' EXIT
Q=/sys/block/$(basename "$DEV")/queue/scheduler
DATA=$(( (SIZE_MB - 1) * 1024 * 1024 ))   # our marker block takes the first 4 KiB

ours() {
    echo none > "$Q"
    "$IOSCHED" real fio-like --sched "$1" --target "$DEV" --rw randread --bs 4k \
        --iodepth 32 --size "$DATA" --runtime "${RUNTIME}s" --json \
        | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["results"][0]["iops"]))'
}
kernel() {
    echo mq-deadline > "$Q"
    fio --name=cmp --filename="$DEV" --rw=randread --bs=4k --direct=1 --ioengine=io_uring \
        --iodepth=32 --runtime="$RUNTIME" --time_based --size="$DATA" --output-format=json \
        2>/dev/null | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

echo "loop device $DEV (direct-io=on) over $IMG, ${SIZE_MB} MiB; 4 KiB randread, iodepth 32, ${RUNTIME}s"
printf '%-6s %22s %25s %26s\n' round "iosched deadline/none" "iosched mq-deadline/none" "kernel mq-deadline + fio"
O=(); M=(); K=()
for r in $(seq 1 "$ROUNDS"); do
    o=$(ours deadline); m=$(ours mq-deadline); k=$(kernel); O+=("$o"); M+=("$m"); K+=("$k")
    printf '%-6s %22s %25s %26s\n' "$r" "$o" "$m" "$k"
done
python3 - "${O[*]}" "${M[*]}" "${K[*]}" <<'PY'
import statistics, sys
o, m, k = (list(map(int, a.split())) for a in sys.argv[1:4])
mo, mm, mk = statistics.median(o), statistics.median(m), statistics.median(k)
print(f"{'median':<6} {mo:22.0f} {mm:25.0f} {mk:26.0f}")
print(f"deadline vs kernel mq-deadline: {100*(mo-mk)/mk:+.1f} % (target: within 15 %)")
print(f"mq-deadline vs kernel mq-deadline: {100*(mm-mk)/mk:+.1f} %")
PY

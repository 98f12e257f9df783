#!/usr/bin/env bash
# Behavioural cross-check of I/O priorities against the kernel (needs root and losetup):
# two jobs of 4 KiB random reads, O_DIRECT, iodepth 32 each, RUNTIME s, with different I/O
# priorities, on one loop device with direct I/O. Each case runs
#  - our scheduler (the kernel's set to `none`): `iosched real fio-like --prio A,B`;
#  - the kernel's scheduler of the same name: fio with two jobs, prioclass/prio per job;
# and prints each job's IOPS and the ratio of the first job's to the second's. Cases:
# BFQ weights (be/0 = weight 80 against be/7 = 10), BFQ and mq-deadline classes (rt
# against be), and mq-deadline levels (which it ignores within a class).
#
#   sudo benches/prio_crosscheck.sh        env: SIZE_MB=1024 RUNTIME=5 ROUNDS=2
RUNTIME=${RUNTIME:-5}
ROUNDS=${ROUNDS:-2}
# shellcheck source=loop_setup.sh
source "$(dirname "$0")/loop_setup.sh"

# fio's prioclass numbers.
fio_prio() {
    case "$1" in
        rt/*) echo "--prioclass=1 --prio=${1#rt/}" ;;
        be/*) echo "--prioclass=2 --prio=${1#be/}" ;;
        idle) echo "--prioclass=3 --prio=7" ;;
        *) echo "unknown priority $1" >&2; exit 2 ;;
    esac
}
ours() {  # sched prio_a prio_b -> "iops_a iops_b"
    echo none > "$Q"
    "$IOSCHED" real fio-like --sched "$1" --target "$DEV" --rw randread --bs 4k --iodepth 32 \
        --size "$DATA" --runtime "${RUNTIME}s" --prio "$2,$3" --json \
        | python3 -c 'import json,sys; j=json.load(sys.stdin)["results"][0]["jobs"]; print(round(j[0]["iops"]), round(j[1]["iops"]))'
}
kernel() {
    grep -qw "$1" "$Q" || { echo "- -"; return; }
    echo "$1" > "$Q"
    # shellcheck disable=SC2046
    fio --filename="$DEV" --rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth=32 \
        --runtime="$RUNTIME" --time_based --size="$DATA" --output-format=json \
        --name=a $(fio_prio "$2") --name=b $(fio_prio "$3") 2>/dev/null \
        | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"]; print(round(j[0]["read"]["iops"]), round(j[1]["read"]["iops"]))'
}

echo "loop device $DEV (direct-io=on, rotational=$(cat /sys/block/$(basename "$DEV")/queue/rotational)); two jobs of 4 KiB randread, iodepth 32 each, ${RUNTIME}s"
printf '%-12s %-12s %6s %12s %12s %8s %12s %12s %8s\n' sched jobs round "ours A" "ours B" "A/B" "kernel A" "kernel B" "A/B"
for case in "bfq be/0 be/7" "bfq rt/4 be/4" "mq-deadline rt/4 be/4" "mq-deadline be/0 be/7"; do
    read -r s a b <<<"$case"
    for r in $(seq 1 "$ROUNDS"); do
        read -r oa ob < <(ours "$s" "$a" "$b")
        read -r ka kb < <(kernel "$s" "$a" "$b")
        python3 - "$s" "$a,$b" "$r" "$oa" "$ob" "$ka" "$kb" <<'PY'
import sys
s, jobs, r, oa, ob, ka, kb = sys.argv[1:]
ratio = lambda x, y: f"{int(x) / int(y):.1f}" if y.isdigit() and int(y) > 0 else ("inf" if y.isdigit() else "-")
print(f"{s:<12} {jobs:<12} {r:>6} {oa:>12} {ob:>12} {ratio(oa, ob):>8} {ka:>12} {kb:>12} {ratio(ka, kb):>8}")
PY
    done
done

#!/usr/bin/env bash
# Kernel cross-check (needs root and losetup): on one loop device with direct I/O, the same
# job (4 KiB random reads, O_DIRECT, iodepth 32, RUNTIME s) through
#  - our schedulers with the kernel's scheduler set to `none`: deadline (2.6.20), and
#    mq-deadline, kyber and bfq (the kernel's own algorithms);
#  - fio with the kernel's `none`, `mq-deadline`, `kyber` and `bfq`.
# fio with `none` separates the two halves of any gap: fio against our runtime (same
# kernel path) and the kernel scheduler's own cost. ROUNDS rounds; each comparison is made
# between neighbouring runs of a round and its median over the rounds is reported (target of
# issue #6: our deadline within 15 % of the kernel's mq-deadline).
#
#   sudo benches/loop_crosscheck.sh        env: SIZE_MB=1024 RUNTIME=10 ROUNDS=4
RUNTIME=${RUNTIME:-10}
ROUNDS=${ROUNDS:-4}
# shellcheck source=loop_setup.sh
source "$(dirname "$0")/loop_setup.sh"

# Kernel schedulers this kernel offers (a missing one is reported, not fatal).
have() { grep -qw "$1" "$Q"; }
for k in mq-deadline kyber bfq; do
    have "$k" || echo "note: this kernel has no $k scheduler" >&2
done
have none || { echo "the loop device offers no 'none' scheduler" >&2; exit 2; }

ours() {
    echo none > "$Q"
    "$IOSCHED" real fio-like --sched "$1" --target "$DEV" --rw randread --bs 4k \
        --iodepth 32 --size "$DATA" --runtime "${RUNTIME}s" --json \
        | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["results"][0]["iops"]))'
}
kernel() {
    echo "$1" > "$Q"
    fio --name=cmp --filename="$DEV" --rw=randread --bs=4k --direct=1 --ioengine=io_uring \
        --iodepth=32 --runtime="$RUNTIME" --time_based --size="$DATA" --output-format=json \
        2>/dev/null | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

echo "loop device $DEV (direct-io=on, rotational=$(cat "/sys/block/$(basename "$DEV")/queue/rotational")) over $IMG, ${SIZE_MB} MiB; 4 KiB randread, iodepth 32, ${RUNTIME}s"
# The runs of a round go in an order that puts the compared pairs side by side (the loop
# device's speed drifts by ±10 % from minute to minute, more than the gaps measured; only
# ours vs the kernel's mq-deadline sit two apart, the kernel's having three partners):
# ours deadline | kernel mq-deadline | kernel none | ours mq-deadline | ours kyber |
# kernel kyber | ours bfq | kernel bfq. Even rounds run the sequence backwards, so a steady
# drift favours neither side of a pair (use an even ROUNDS). Each comparison is made within
# a round, and the median over rounds is reported. A run that fails stops the script
# (set -e, from loop_setup.sh).
SEQ=("ours deadline")
have mq-deadline && SEQ+=("fio+kernel mq-deadline")
SEQ+=("fio+kernel none" "ours mq-deadline" "ours kyber")
have kyber && SEQ+=("fio+kernel kyber")
SEQ+=("ours bfq")
have bfq && SEQ+=("fio+kernel bfq")
printf '%-6s' round; printf ' %22s' "${SEQ[@]}"; echo
ALL=()
for r in $(seq 1 "$ROUNDS"); do
    order=("${SEQ[@]}")
    if (( r % 2 == 0 )); then
        order=(); for (( i=${#SEQ[@]}-1; i>=0; i-- )); do order+=("${SEQ[$i]}"); done
    fi
    declare -A got=()
    for c in "${order[@]}"; do
        case "$c" in
            "ours "*) got[$c]=$(ours "${c#ours }") ;;
            *) got[$c]=$(kernel "${c#fio+kernel }") ;;
        esac
    done
    row=(); for c in "${SEQ[@]}"; do row+=("${got[$c]}"); done
    printf '%-6s' "$r"; printf ' %22s' "${row[@]}"; echo
    ALL+=("$(IFS=,; echo "${row[*]}")")
    unset got
done
python3 - "$(IFS=';'; echo "${SEQ[*]}")" "${ALL[@]}" <<'PY'
import statistics, sys
cols = sys.argv[1].split(';')
rows = [dict(zip(cols, map(int, r.split(',')))) for r in sys.argv[2:]]
med = {c: statistics.median(r[c] for r in rows) for c in cols}
print(f"{'median':<6}" + ''.join(f" {med[c]:22.0f}" for c in cols))
def cmp(a, b, note=''):
    if a not in cols or b not in cols:
        return
    d = [100 * (r[a] - r[b]) / r[b] for r in rows if r[b]]
    if not d:
        print(f"{a} vs {b}: no figure ({b} gave 0 IOPS in every round)")
        return
    print(f"{a} vs {b}: {statistics.median(d):+.1f} % (median of rounds, range {min(d):+.1f} to {max(d):+.1f}){note}")
cmp('ours deadline', 'fio+kernel mq-deadline', '; target: within 15 %')
for s in ('mq-deadline', 'kyber', 'bfq'):
    cmp(f'ours {s}', f'fio+kernel {s}')
cmp('fio+kernel mq-deadline', 'fio+kernel none', "; the kernel scheduler's own cost")
cmp('ours mq-deadline', 'fio+kernel none', '; our runtime and policy against fio with no kernel scheduler')
PY

#!/usr/bin/env bash
# How fast the simulated fio runs: a direct 4 KiB random-read job (libaio, iodepth 32,
# deadline) on three disk models, ROUNDS runs each (default 3); prints simulated
# requests per second of wall time (median), the simulator's rate that issue #27 asks
# to be at least 1 M/s. The null device (100 µs, queue depth 32) measures the host, the
# queue and the executor; the rotating models add the drive's mechanics (SPTF over 32
# queued commands on sata-2004-ncq).
# Usage: benches/fio_sim_speed.sh [BIN]   (default: builds target/release/iosched)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
    cargo build --release --quiet -p iosched
    bin=target/release/iosched
fi
rounds=${ROUNDS:-3}
job=(--name=r --rw=randread --size=1G --direct=1 --ioengine=libaio --iodepth=32 --bs=4k --time_based)
for disk_time in null:4 ide-2003:300 sata-2004-ncq:300; do
    disk=${disk_time%:*} runtime=${disk_time#*:}
    rates=()
    for _ in $(seq "$rounds"); do
        t0=$(date +%s.%N)
        ios=$("$bin" fio --disk "$disk" --sched deadline --output-format json -- "${job[@]}" --runtime="$runtime" |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["read"]["total_ios"])')
        t1=$(date +%s.%N)
        rates+=("$(echo "$ios / ($t1 - $t0)" | bc)")
    done
    median=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$disk: $ios simulated requests per run; ${rates[*]} requests/s; median $median"
done

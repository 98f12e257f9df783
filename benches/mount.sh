#!/usr/bin/env bash
# `iosched mount` measured, and docs/mount-results.md written from the figures.
#
#   benches/mount.sh [--scale S] [--cap SECONDS] [--out FILE] [--only seed|tools|overhead]
#
# Three parts, each run side by side in this one script run (root; fio, sysbench, fuse3):
#
# 1. The seed experiment for real: a mount of an empty BACKING with --emulate
#    ide-2003-fast; `iosched kernel-tree` lays the 2.4.19-like tree out through it (scale
#    S of the tree, default 0.25: the simulator's --quick tree); caches are dropped; then
#    `find TREE -type f | xargs cat > /dev/null` is timed alone, and again while
#    `while true; do dd if=/dev/zero of=MNT/foo bs=1M count=512 conv=notrunc; done`
#    runs, under deadline, cfq and as. A loaded read still running after --cap seconds
#    (default 300) is stopped and reported as "> cap".
# 2. Real tools through the mount: fio (buffered, and direct=1 at iodepth 32) and sysbench
#    fileio run to completion on a mount, without and with --emulate sata-2004-ncq.
# 3. Overhead, without --emulate, under noop: 1 MiB sequential reads of a cold 2 GiB file
#    through the mount against reading it from BACKING directly; fio's 4 KiB random reads
#    at queue depth 32 (direct) through the mount against the same job on BACKING.
set -euo pipefail
cd "$(dirname "$0")/.."

scale=0.25 cap=300 out=docs/mount-results.md only=all
while (($#)); do
    case "$1" in
        --scale) scale=$2; shift 2 ;;
        --cap) cap=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        *) echo "usage: benches/mount.sh [--scale S] [--cap SECONDS] [--out FILE] [--only seed|tools|overhead]" >&2; exit 2 ;;
    esac
done
case $only in all | seed | tools | overhead) ;; *) echo "--only $only: expected seed, tools or overhead" >&2; exit 2 ;; esac
want() { [[ $only == all || $only == "$1" ]]; }
[[ $(id -u) == 0 ]] || { echo "benches/mount.sh: needs root (mounts, drop_caches)" >&2; exit 2; }
for t in fio sysbench fusermount3 python3 bc; do
    command -v "$t" >/dev/null || { echo "benches/mount.sh: needs $t" >&2; exit 2; }
done

cargo build --release -q -p iosched
bin=$PWD/target/release/iosched
work=$(mktemp -d /var/tmp/iosched-mount-bench.XXXXXX)
daemon=""
cleanup() {
    pkill -f "of=$work/" 2>/dev/null || true
    [[ -n $daemon ]] && { umount_retry "$work/mnt" || kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; }
    fusermount3 -u "$work/mnt" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

umount_retry() {
    for _ in $(seq 60); do
        "$bin" umount "$1" 2>/dev/null && return 0
        sleep 1
    done
    return 1
}

# mount_again SCHED [options…]: mount BACKING at the mount point; the daemon's pid in $daemon.
mount_again() {
    "$bin" mount "$work/backing" "$work/mnt" --sched "$@" >"$work/mount.out" 2>"$work/mount.err" &
    daemon=$!
    for _ in $(seq 100); do
        grep -q " $work/mnt " /proc/self/mountinfo && return 0
        sleep 0.1
    done
    cat "$work/mount.err" >&2
    exit 1
}
# start_mount SCHED [options…]: the same on a fresh, empty BACKING and mount point.
start_mount() {
    rm -rf "$work/backing" "$work/mnt"
    mkdir -p "$work/backing" "$work/mnt"
    mount_again "$@"
}
stop_mount() {
    umount_retry "$work/mnt"
    wait "$daemon"
    daemon=""
}
now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# --- 1. the seed experiment ------------------------------------------------------------
declare -A alone loaded
want seed && for s in deadline cfq as; do
    echo "mount.sh: readmany under $s (scale $scale)" >&2
    start_mount "$s" --emulate ide-2003-fast
    "$bin" kernel-tree "$work/mnt/tree" --scale "$scale" 2>"$work/tree.err"
    tree_line=$(sed 's/^iosched: kernel tree in [^:]*: //' "$work/tree.err")
    drop
    t0=$(now)
    find "$work/mnt/tree" -type f | xargs cat >/dev/null
    alone[$s]=$(elapsed "$t0")
    (while true; do dd if=/dev/zero of="$work/mnt/foo" bs=1M count=512 conv=notrunc 2>/dev/null; done) &
    writer=$!
    sleep 3
    drop
    t0=$(now)
    if timeout "$cap" sh -c "find '$work/mnt/tree' -type f | xargs cat >/dev/null"; then
        loaded[$s]=$(elapsed "$t0")
    else
        loaded[$s]="> $cap"
    fi
    kill "$writer"; wait "$writer" 2>/dev/null || true
    pkill -f "of=$work/mnt/foo" 2>/dev/null || true
    stop_mount
done

# --- 2. real tools through the mount ------------------------------------------------------
fio_json() { # fio_json FILE: "read MB/s, IOPS" of the job's JSON
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; r=j["read"]; w=j["write"]; print("%.1f MB/s, %.0f IOPS" % ((r["bw_bytes"]+w["bw_bytes"])/1e6, r["iops"]+w["iops"]))' "$1"
}
declare -A tools
want tools && for emu in none sata-2004-ncq; do
    args=(cfq)
    [[ $emu != none ]] && args+=(--emulate "$emu")
    start_mount "${args[@]}"
    fio --name=buffered --directory="$work/mnt" --rw=read --bs=128k --size=256M --output-format=json \
        --output="$work/f1.json" >/dev/null
    drop
    fio --name=buffered --directory="$work/mnt" --rw=read --bs=128k --size=256M --output-format=json \
        --output="$work/f1.json" >/dev/null
    tools[fio-buffered-$emu]=$(fio_json "$work/f1.json")
    fio --name=direct --directory="$work/mnt" --rw=randread --bs=4k --size=256M --direct=1 --ioengine=libaio \
        --iodepth=32 --runtime=10 --time_based --output-format=json --output="$work/f2.json" >/dev/null
    tools[fio-direct-$emu]=$(fio_json "$work/f2.json")
    (cd "$work/mnt" && sysbench fileio --file-total-size=256M --file-num=8 prepare >/dev/null &&
        sysbench fileio --file-total-size=256M --file-num=8 --file-test-mode=rndrw --time=10 run >"$work/sb.txt" &&
        sysbench fileio --file-total-size=256M --file-num=8 cleanup >/dev/null)
    tools[sysbench-$emu]=$(awk '/read, MiB\/s:/{r=$3} /written, MiB\/s:/{w=$3} /reads\/s:/{rs=$2} /writes\/s:/{ws=$2} END{printf "read %s MiB/s, written %s MiB/s (%s reads/s, %s writes/s)", r, w, rs, ws}' "$work/sb.txt")
    stop_mount
done

# --- 3. overhead ---------------------------------------------------------------------------
# Each figure is the median of three runs, direct and through the mount alternating, so
# that a slow moment of the machine (its disk is a VM's) falls on both.
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
seq_read() { # seq_read FILE: MB/s of 1 MiB reads of FILE, cold
    drop
    dd if="$1" of=/dev/null bs=1M 2>&1 | awk '/copied/{for(i=1;i<=NF;i++) if($i=="s,") printf "%.0f\n", $1 / $(i-1) / 1e6}'
}
rand() { # rand FILE: IOPS of 4 KiB random reads at depth 32, direct
    fio --name=r --filename="$1" --rw=randread --bs=4k --size=1G --direct=1 --ioengine=libaio --iodepth=32 \
        --runtime=10 --time_based --output-format=json --output="$work/r.json" >/dev/null
    python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"])' "$work/r.json"
}
if want overhead; then
    start_mount noop
    dd if=/dev/urandom of="$work/backing/cold" bs=1M count=2048 status=none
    fio --name=rand --filename="$work/backing/rand" --rw=write --bs=1M --size=1G --output=/dev/null
    sync
    ds=() ms=() dr=() mr=() ds8=() ms8=()
    for _ in 1 2 3; do
        ds+=("$(seq_read "$work/backing/cold")")
        ms+=("$(seq_read "$work/mnt/cold")")
        dr+=("$(rand "$work/backing/rand")")
        mr+=("$(rand "$work/mnt/rand")")
    done
    stop_mount
    # The same, with the mount's read-ahead as large as BACKING's disk has and FUSE's
    # largest requests, so that the two read ahead alike.
    backing_ra=$(cat "/sys/class/bdi/$(mountpoint -d "$(df --output=target "$work" | tail -1)")/read_ahead_kb")
    mount_again noop --readahead "$((backing_ra > 16384 ? 16384 : backing_ra))k" --max-request 1M
    for _ in 1 2 3; do
        ds8+=("$(seq_read "$work/backing/cold")")
        ms8+=("$(seq_read "$work/mnt/cold")")
    done
    stop_mount
    direct_seq=$(median "${ds[@]}") mount_seq=$(median "${ms[@]}")
    direct_rand=$(median "${dr[@]}") mount_rand=$(median "${mr[@]}")
    direct_seq8=$(median "${ds8[@]}") mount_seq8=$(median "${ms8[@]}")
fi

pct() { echo "scale=1; 100 * $1 / $2" | bc; }
ratio() { [[ $2 == ">"* ]] && echo "> $(echo "scale=1; ${2#> } / $1" | bc)" || echo "$(echo "scale=1; $2 / $1" | bc)"; }
{
    echo "# \`iosched mount\`: measured"
    echo
    echo "Generated by \`benches/mount.sh --scale $scale --cap $cap$([[ $only != all ]] && echo " --only $only")\` on $(date -u +%Y-%m-%d) (kernel $(uname -r),"
    echo "$(nproc) CPUs; BACKING on $(df -T "$work" | awk 'NR==2{print $2}')); what the mount does is in [mount.md](mount.md)."
    echo
    want seed && {
    echo "## The seed experiment, for real"
    echo
    echo "\`find TREE -type f | xargs cat > /dev/null\` of the kernel tree ($tree_line) through"
    echo "\`iosched mount --emulate ide-2003-fast\`, caches dropped, alone and beside"
    echo "\`while true; do dd if=/dev/zero of=MNT/foo bs=1M count=512 conv=notrunc; done\`:"
    echo
    echo "| scheduler | alone (s) | loaded (s) | loaded / alone |"
    echo "|---|---|---|---|"
    for s in deadline cfq as; do
        printf '| %s | %.1f | %s | %s |\n' "$s" "${alone[$s]}" \
            "$([[ ${loaded[$s]} == ">"* ]] && echo "${loaded[$s]}" || printf '%.1f' "${loaded[$s]}")" \
            "$(ratio "${alone[$s]}" "${loaded[$s]}")"
    done
    echo
    echo "The seed's shape: AS loaded within 3× of its time alone, deadline loaded at least 5×."
    echo
    }
    want tools && {
    echo "## Real tools through the mount"
    echo
    echo "cfq; fio 256 MiB files, sysbench fileio 8 files of 32 MiB (rndrw, 10 s):"
    echo
    echo "| tool | no emulation | --emulate sata-2004-ncq |"
    echo "|---|---|---|"
    echo "| fio, buffered 128 KiB sequential reads (cold) | ${tools[fio-buffered-none]} | ${tools[fio-buffered-sata-2004-ncq]} |"
    echo "| fio, direct=1 4 KiB random reads, libaio iodepth 32 | ${tools[fio-direct-none]} | ${tools[fio-direct-sata-2004-ncq]} |"
    echo "| sysbench fileio rndrw | ${tools[sysbench-none]} | ${tools[sysbench-sata-2004-ncq]} |"
    echo
    }
    want overhead && {
    echo "## Overhead"
    echo
    echo "noop, no emulation, the same files read through the mount and from BACKING directly (BACKING's"
    echo "whole-page reads with O_DIRECT, the default); each figure the median of three runs, the two"
    echo "alternating. All runs, MB/s or IOPS: sequential at the defaults direct ${ds[*]}, mount ${ms[*]};"
    echo "with the read-ahead matched direct ${ds8[*]}, mount ${ms8[*]}; random direct ${dr[*]}, mount ${mr[*]}."
    echo
    echo "| load | BACKING directly | through the mount | mount / direct |"
    echo "|---|---|---|---|"
    echo "| 1 MiB sequential reads of a cold 2 GiB file (dd, MB/s), the mount's defaults (read-ahead 128 KiB, requests 128 KiB: 2.6's) | $direct_seq | $mount_seq | $(pct "$mount_seq" "$direct_seq") % |"
    echo "| the same, the mount's read-ahead as BACKING's disk has (${backing_ra} KiB), requests 1 MiB (FUSE's largest) | $direct_seq8 | $mount_seq8 | $(pct "$mount_seq8" "$direct_seq8") % |"
    echo "| 4 KiB random reads, direct, libaio iodepth 32 (fio, IOPS), the mount's defaults | $direct_rand | $mount_rand | $(pct "$mount_rand" "$direct_rand") % |"
    echo
    echo "Targets: at least 70 % for the sequential reads, 50 % for the random ones."
    }
} >"$out"
cat "$out"

# Shared set-up of the kernel cross-checks (sourced by loop_crosscheck.sh and
# prio_crosscheck.sh, with RUNTIME and ROUNDS defaults set): checks root, fio and the
# numeric settings, builds iosched if needed, and puts a loop device with direct I/O over
# a fully written SIZE_MB file (so reads reach the disk under it). Sets DEV, Q (the
# device's scheduler file) and DATA (our data area: the marker block takes 4 KiB); the
# device is detached on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SIZE_MB=${SIZE_MB:-1024}
IOSCHED=${IOSCHED:-target/release/iosched}
WORK=${WORK:-/tmp/iosched-loop-crosscheck}

[ "$(id -u)" = 0 ] || { echo "needs root (losetup)" >&2; exit 2; }
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer (got '$ROUNDS')" >&2; exit 2; }
[[ "$RUNTIME" =~ ^[1-9][0-9]*$ ]] || { echo "RUNTIME must be a positive number of seconds (got '$RUNTIME')" >&2; exit 2; }
[[ "$SIZE_MB" =~ ^[1-9][0-9]*$ ]] || { echo "SIZE_MB must be a positive integer (got '$SIZE_MB')" >&2; exit 2; }
[ -x "$IOSCHED" ] || cargo build --release -q -p iosched
mkdir -p "$WORK"
IMG="$WORK/backing.img"
dd if=/dev/zero of="$IMG" bs=1M count="$SIZE_MB" conv=fsync status=none
DEV=$(losetup --find --show --direct-io=on "$IMG")
trap 'losetup -d "$DEV"' EXIT
Q=/sys/block/$(basename "$DEV")/queue/scheduler
DATA=$(( (SIZE_MB - 1) * 1024 * 1024 ))

#!/usr/bin/env bash
# The SHA-256 of the output of a fixed list of simulated commands, one line per command:
# run it with one build's binary, run it again with another's, and diff the two lists. A
# change that is meant to leave behaviour alone (a refactoring) must leave every line equal.
#
#   benches/output_hashes.sh target/release/iosched > before.txt
#   ... change, rebuild ...
#   benches/output_hashes.sh target/release/iosched > after.txt && diff before.txt after.txt
#
# Every command is deterministic (seeded); the list covers each simulated benchmark, the repro
# job, an A/B study, the disk validation and every golden scenario script.
set -euo pipefail
bin=${1:?usage: $0 PATH/TO/iosched}
root=$(cd "$(dirname "$0")/.." && pwd)

run() {
    local name=$1
    shift
    local sum
    # Both streams: a message that moved from stdout to stderr is a change too.
    sum=$("$bin" "$@" 2>&1 | sha256sum | cut -d' ' -f1)
    printf '%s  %s\n' "$sum" "$name"
}

run "repro --json" repro --json
run "repro --quick --json --seed 3" repro --quick --json --seed 3
for disk in ide-2003 sata-2004-ncq scsi-15k; do
    run "tiobench --disk $disk" tiobench --disk "$disk" --threads 1,8 --size 64M --random 1000
done
run "tiobench --as-printed" tiobench --threads 4 --size 64M --as-printed
run "readmany --vmstat" readmany --vmstat
run "sysbench fileio rndrw" sysbench fileio --file-test-mode rndrw
run "iozone -a" iozone -a
run "aio-stress" aio-stress
run "compare --runs 2 --json" compare --a cfq --b cfq:defer_slice_start=1 --runs 2 --json
run "disk validate --json" disk validate --all --json
for f in "$root"/crates/policies/tests/golden/*.scn; do
    run "scenario $(basename "$f")" scenario "$f"
done

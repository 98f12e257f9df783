#!/usr/bin/env bash
# Draw the README's pictures from a fresh `iosched repro --report` run (seed 1): the
# tiobench sequential-read rates beside the seed's, and read-many's elapsed times.
# Usage: docs/img/make.sh   (from anywhere; builds the release binary)
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet -p iosched
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
target/release/iosched repro --report "$tmp/rep" >/dev/null
cp "$tmp/rep/repro-tiobench-rate-seq-read.svg" docs/img/repro-tiobench-seq-read.svg
cp "$tmp/rep/repro-readmany-elapsed.svg" docs/img/repro-readmany-elapsed.svg
seeks=$(ls "$tmp"/rep/repro-readmany-seeks-*-2-5-61-as-stream-write.svg)
cp "$seeks" docs/img/repro-readmany-seeks-as.svg
echo "docs/img: repro-tiobench-seq-read.svg repro-readmany-elapsed.svg repro-readmany-seeks-as.svg"

#!/usr/bin/env bash
# Fuzzes the sniff -> table -> limits -> convert -> decode -> thumbnail -> FFmpeg probe path (LocalMediaInspector) on
# arbitrary bytes with libFuzzer and AddressSanitizer, seeded from TestMedia/, TestMedia/cases/ and
# the real-world corpus (.corpus/files, from scripts/corpus.sh) when present. libFuzzer runs its
# target in-process (it needs the decoders' coverage); then every input of the grown corpus is
# replayed through the worker path (decoding in decoder worker processes, as the pipeline does),
# and each must get an answer.
# Usage: scripts/fuzz.sh [SECONDS]   (default 300). Crashing inputs land in .fuzz/crashes/;
# replay one with: swift run attach-fetch-fuzz .fuzz/crashes/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"
scripts/install-deps.sh
swift build --scratch-path .build-fuzz -c debug --product attach-fetch-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
bin="$(swift build --scratch-path .build-fuzz -c debug --show-bin-path)/attach-fetch-fuzz"
mkdir -p .fuzz/corpus .fuzz/crashes
cp -n TestMedia/*.* TestMedia/cases/* .fuzz/corpus/ 2>/dev/null || true
# The real-world corpus (scripts/corpus.sh), when assembled: other projects' test files find
# what ours do not. Files over -max_len are left out.
if [ -d .corpus/files ]; then
  find .corpus/files -type f -size -256k -exec cp -n {} .fuzz/corpus/ \;
fi
rm -f .fuzz/corpus/make-media.sh .fuzz/corpus/make-cases.sh
# -rss_limit_mb: libvips decoding is bounded by the pixel budgets; exceeding 2 GB is a finding.
"$bin" .fuzz/corpus -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=262144 \
  -artifact_prefix=.fuzz/crashes/ -print_final_stats=1 2>&1 | tee .fuzz/last-run.log | grep -E "^#|Done|ERROR|stat::" | tail -n 30

# The worker path: the same inputs, each decoded in a confined decoder worker process.
swift build --product attach-fetch-fuzz >/dev/null && swift build --product attach-fetch-decoder >/dev/null
replayer="$(swift build --show-bin-path)/attach-fetch-fuzz"
find .fuzz/corpus -type f -print0 | xargs -0 -n 200 "$replayer" --isolated > .fuzz/worker-replay.log || true
inputs=$(find .fuzz/corpus -type f | wc -l)
answered=$(grep -c '^ok ' .fuzz/worker-replay.log || true)
crashed=$(grep -c ' decoderCrashed ' .fuzz/worker-replay.log || true)
echo "worker path: $inputs inputs, $answered answered, $crashed decoderCrashed (.fuzz/worker-replay.log)"
[ "$answered" -eq "$inputs" ]

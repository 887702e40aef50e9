#!/usr/bin/env bash
# Fuzzes ContentDecoder, the RFC 8188 decoder the device runs on whatever a server sends, with
# libFuzzer and AddressSanitizer (Sources/content-decoder-fuzz): random keys, headers, record
# sizes (0 to 2^32-1), streams, mutations of valid streams and chunkings. The target traps when
# the decoder hands out plaintext other than what was encrypted, refuses a valid stream, holds
# more than one record (or the longest header), accepts a record size over its maximum, or when
# a stream is longer than maxContentLength says; -rss_limit_mb bounds the process as a whole.
# It depends on EncryptedContent alone, so it builds without the pipeline's C libraries.
# Usage: scripts/fuzz-decoder.sh [SECONDS]   (default 60, the CI run). Crashing inputs land in
# .fuzz/decoder-crashes/; replay one with: swift run content-decoder-fuzz .fuzz/decoder-crashes/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
# Release: the decoder's AES-GCM and copies at full speed, so a minute covers many inputs;
# preconditions stay on. Its own scratch path: the sanitizer flags would rebuild .build.
scratch=.build-decoder-fuzz
swift build --scratch-path "$scratch" -c release --product content-decoder-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
bin="$(swift build --scratch-path "$scratch" -c release --show-bin-path)/content-decoder-fuzz"
corpus=.fuzz/decoder-corpus
mkdir -p "$corpus" .fuzz/decoder-crashes
# Seeds, one per mode (the input's first byte): the mode, a 16-byte key, an 8-byte seed, four
# parameter bytes, then data. Mode 0 gets RFC 8188's first example (its key, then its stream).
base64url() { local s; s=$(printf '%s' "$1" | tr '_-' '/+'); while [ $(( ${#s} % 4 )) -ne 0 ]; do s="$s="; done; printf '%s' "$s" | base64 -d; }
{ printf '\x00'; base64url yqdlZ-tYemfogSmv7Ws5PQ; head -c 12 /dev/zero
  base64url I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg; } > "$corpus/seed-rfc8188"
for mode in 1 2 3; do
  [ -e "$corpus/seed-mode-$mode" ] || { printf "\\x0$mode"; head -c 300 /dev/urandom; } > "$corpus/seed-mode-$mode"
done
# The memory bound: the target's own checks hold the decoder to one record; this holds the
# process (inputs make streams of up to 4 MiB and records of up to 16 MiB). A small ASan
# quarantine keeps freed records from counting against it.
status=0
ASAN_OPTIONS="quarantine_size_mb=16:detect_leaks=1" \
  "$bin" "$corpus" -max_total_time="$seconds" -rss_limit_mb=512 -max_len=4096 \
  -artifact_prefix=.fuzz/decoder-crashes/ -print_final_stats=1 > .fuzz/decoder-last-run.log 2>&1 || status=$?
grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|Done|ERROR|SUMMARY|stat::" .fuzz/decoder-last-run.log | tail -n 30 || true
if [ "$status" -ne 0 ]; then
  echo "content-decoder-fuzz found a problem (status $status): .fuzz/decoder-last-run.log, .fuzz/decoder-crashes/" >&2
  exit "$status"
fi

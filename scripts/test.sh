#!/usr/bin/env bash
# The README's second command: installs what is missing, assembles the real-world corpus
# (scripts/corpus.sh: Pillow's published test images, checked against Tests/Corpus/manifest.tsv)
# and runs the whole test suite, the corpus suite included and required, then the inspector's
# tests in a real browser, then the OpenAPI contract tests (scripts/api-tests.sh), then the
# instruction-count guard (callgrind; fails on a growth of
# more than 5 % per attachment over Benchmarks/Thresholds/instructions.json) and the system-call
# guard (strace; fails past Benchmarks/Thresholds/syscalls.json's file-system calls per attachment).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh "$@"
scripts/corpus.sh
ATTACH_FETCH_CORPUS_REQUIRED=1 swift test --no-parallel
# The inspector page in a real browser (Chromium over WebDriver) against the service just built.
scripts/browser-tests.sh
# The service's OpenAPI document: validated, fuzzed by schemathesis, and a generated client.
scripts/api-tests.sh
# Instructions per attachment against the stored baseline.
Benchmarks/instruction-guard
# File-system calls per attachment against the stored limits.
Benchmarks/syscall-guard

#!/usr/bin/env bash
# The README's second command: installs what is missing, assembles the real-world corpus
# (scripts/corpus.sh: Pillow's published test images, checked against Tests/Corpus/manifest.tsv)
# and runs the whole test suite in parallel (below), the corpus suite included and required, then the inspector's
# tests in a real browser, then the OpenAPI contract tests (scripts/api-tests.sh), then the
# instruction-count guard (callgrind; fails on a growth of
# more than 5 % per attachment over Benchmarks/Thresholds/instructions.json) and the system-call
# guard (strace; fails past Benchmarks/Thresholds/syscalls.json's file-system calls per attachment).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh "$@"
scripts/corpus.sh
swift build --build-tests
# The Swift tests, in parallel, in three groups (docs/performance.md#the-test-suite):
# - "alone": suites that measure the test process itself (its threads, descriptors and
#   resident memory; its worker processes) or read libvips' process-wide error text. One
#   test at a time, in a process of their own, beside the first group.
# - everything else, at most four tests at once: unbounded, every test starts together and
#   hundreds of pipelines fork their decoder workers at the same moment.
# - "timed": suites that hold real elapsed time to a bound (the time contract, the stall
#   timeout beside a dead host, the service's connection timers, retention and drains, the
#   object store's retries, a killed replica's lease, an avatar's timeout, the transfer pace's connection counts), and the device's
#   peak memory while it decrypts a 37 MiB video (its URLSession holds more while the machine
#   is busy). One test at a time, once
#   the other two are done, so that they time the code and not the machine's load.
alone='LeakTests|IsolationTests|StageEquivalenceTests'
timed='TransferPaceTests|EncryptedPublishingTests|DeadlineTests|ThumbnailDeadlineTests|HostileServerTests|OriginBreakerTests|OriginBreakerServiceTests|ConnectionLimitTests|PlatformVariantTests|ServiceTests|ServiceProcessTests|ObjectStoreTests|CoalescingTests|LibraryAPITests|PayloadTests|ProbeTests|ReplicaTests'
bundle="$(swift build --show-bin-path)/attach-fetchPackageTests.xctest"
alone_log=$(mktemp)
# The bundle itself, not `swift test`: two SwiftPM processes cannot share .build at once.
"$bundle" --testing-library swift-testing --no-parallel --filter "$alone" > "$alone_log" 2>&1 &
alone_pid=$!
status=0
ATTACH_FETCH_CORPUS_REQUIRED=1 SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${ATTACH_FETCH_TEST_WIDTH:-4} \
    swift test --skip-build --skip "$alone|$timed" || status=$?
wait "$alone_pid" || status=$?
cat "$alone_log"
rm -f "$alone_log"
"$bundle" --testing-library swift-testing --no-parallel --filter "$timed" || status=$?
[ "$status" -eq 0 ] || { echo "swift test failed" >&2; exit "$status"; }
# The inspector page in a real browser (Chromium over WebDriver) against the service just built.
scripts/browser-tests.sh
# The service's OpenAPI document: validated, fuzzed by schemathesis, and a generated client.
scripts/api-tests.sh
# Instructions per attachment against the stored baseline.
Benchmarks/instruction-guard
# File-system calls per attachment against the stored limits.
Benchmarks/syscall-guard

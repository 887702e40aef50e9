#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, assembles the real-world corpus
# while it builds (scripts/corpus.sh: six projects' published test files, checked against
# Tests/Corpus/manifest.tsv) and runs the whole test suite in parallel (below), the corpus suite
# included and required, then the inspector's
# tests in a real browser and the OpenAPI contract tests (scripts/api-tests.sh), with the
# instruction-count guard beside them on the debug build just built (callgrind; fails on a
# growth of more than 5 % per attachment over Benchmarks/Thresholds/instructions-debug.json),
# then the system-call guard (strace; fails past Benchmarks/Thresholds/syscalls.json's
# file-system calls per attachment, or the whole process tree's calls per attachment and to
# start and stop, or its programs executed), and the batch-length memory guard (Benchmarks/scale
# --guard), all beside them too.
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests' temporary files, the CLI's default output directories and the tools' own (Chromium,
# SeaweedFS) go to one directory of the run's, removed when it ends, however it ends: a run
# leaves nothing in /tmp. Short, for the Unix sockets named there.
if [ -z "${ATTACH_FETCH_TEST_TMPDIR:-}" ]; then
    ATTACH_FETCH_TEST_TMPDIR=$(mktemp -d /tmp/af-test.XXXXXX)
    export ATTACH_FETCH_TEST_TMPDIR
    run_status=0
    TMPDIR="$ATTACH_FETCH_TEST_TMPDIR" "$0" "$@" || run_status=$?
    rm -rf "$ATTACH_FETCH_TEST_TMPDIR"
    exit "$run_status"
fi
# --quick: the inner loop (docs/performance.md#the-test-suite). The per-layer test targets alone
# (Core, Transfer, Media, Device, Runtime, the sandbox, the keeper, the object store against its
# SeaweedFS), after the same install, import check and build: no guards,
# no browser, no corpus, no API tests, no whole-pipeline suite.
if [ "${1:-}" = "--quick" ]; then
    shift
    scripts/install-deps.sh "$@"
    python3 scripts/check-imports.py
    swift build --build-tests -debug-info-format none
    exec "$(swift build --show-bin-path)/attach-fetchPackageTests.xctest" --testing-library swift-testing \
        --filter '^(AttachFetchCoreTests|AttachFetchTransferTests|AttachFetchMediaTests|AttachFetchDeviceTests|AttachFetchRuntimeTests|DecoderSandboxTests|AttachFetchDecoderKeeperTests|AttachFetchObjectStoreTests)\.' < /dev/null
fi
# Each step's end, on standard error (docs/performance.md#the-test-suite): the seconds since the
# start, and the CPU-seconds (user + system) that the finished child processes have used so far
# (the kernel's count for this shell's reaped children and theirs: /proc/PID/stat's cutime and
# cstime, in clock ticks, after the command name).
mark() {
  local stat fields
  stat=$(< "/proc/$$/stat")
  read -r -a fields <<< "${stat##*) }"
  echo "test.sh: $1 done at ${SECONDS} s, $(( (fields[13] + fields[14]) / $(getconf CLK_TCK) )) CPU-seconds" >&2
}
# The build needs only the build libraries. Beside it, on what the compiler leaves of the machine
# (mostly network and disk): the test-only tools, the corpus and the Python environments of the
# browser and API tests.
scripts/install-deps.sh --build-only "$@"
# Every target declares what it imports, and imports what it declares (docs/architecture.md).
python3 scripts/check-imports.py
# sudo's password, if the test-only tools need it, is asked for now, not in the build's output.
if [ "$(id -u)" -ne 0 ] && ! scripts/install-deps.sh --check; then sudo -v; fi
mark "installing the build libraries"
preparing_log=$(mktemp)
# At the lowest CPU and disk priority: the compiler and the linker come first, and these still
# finish well within the build on the time they leave idle.
( renice -n 19 -p "$BASHPID" > /dev/null && ionice -c 3 -p "$BASHPID" \
    && scripts/install-deps.sh && scripts/corpus.sh && scripts/browser-tests.sh --prepare \
    && scripts/api-tests.sh --prepare ) > "$preparing_log" 2>&1 & preparing_pid=$!
# Should the build fail, the installation is let finish (an apt-get cut short leaves dpkg to
# be repaired), then its log removed.
trap 'echo "test.sh: waiting for the test tools and the corpus to be installed" >&2; wait "$preparing_pid" 2>/dev/null; rm -f "$preparing_log"' EXIT
# Without debug information: a build from scratch takes 52 s less (DWARF for every module and
# its link), with the same code; a crash's backtrace names functions but not lines.
build_log=$(mktemp)
swift build --build-tests -debug-info-format none 2>&1 | tee "$build_log" || { status=$?; rm -f "$build_log"; exit "$status"; }
# The project's own code builds without warnings; the dependencies' (under .build) are theirs.
# A build from scratch compiles every file, so it shows every warning.
warnings=$(grep -E "^/[^ ]*/(Sources|Tests|Benchmarks)/[^:]+:[0-9]+:[0-9]+: warning:" "$build_log" | grep -v "/\.build/" | sort -u || true)
rm -f "$build_log"
[ -z "$warnings" ] || { printf '%s\n' "$warnings" >&2; echo "the build has warnings (above)" >&2; exit 1; }
mark "the build"
preparing_status=0
wait "$preparing_pid" || preparing_status=$?
trap - EXIT
cat "$preparing_log"
rm -f "$preparing_log"
[ "$preparing_status" -eq 0 ] || { echo "installing the test tools, the corpus or the Python packages failed" >&2; exit "$preparing_status"; }
# The browser and API tests' scripts need not run pip again.
export ATTACH_FETCH_PYTHON_READY=1
mark "installing the test tools and the corpus"
# The Swift tests, in parallel, in two phases (docs/performance.md#the-test-suite). First:
# - the suites that hold real elapsed time to a bound, one test at a time (serialized suites,
#   Tests/AttachFetchTests/SuiteGroups.swift), in two processes side by side: work held to a
#   deadline, which needs the cores (DeadlineBoundSuites), then the suites that read the test
#   process's own worker processes or libvips' process-wide error text (ProcessWideSuites);
#   and timers, which mostly wait (TimerBoundSuites, the service's ServiceTimerSuites, then
#   ObjectStoreBoundSuites);
# - beside them, LeakTests under SCHED_IDLE (chrt --idle), in a process of its own (it counts
#   the process's threads, descriptors and memory), on the cores the timed tests leave idle.
#   Swift Testing keeps no backtrace of thrown errors there: it would grow the live heap the
#   test measures.
# Then, once those are done, everything else, at most four tests at once: unbounded, every test
# starts together and hundreds of pipelines fork their decoder workers at the same moment. The
# timed groups never share the cores with it.
leaks='LeakTests'
alone='ProcessWideSuites'
deadlines='DeadlineBoundSuites'
timers='TimerBoundSuites'
service_timers='ServiceTimerSuites'
stores='ObjectStoreBoundSuites'
# The device library's memory under hostile answers, with both cores kept busy by its own
# threads: alone, so that the busy cores are the condition measured and not the rest of the suite.
hostile='DeviceHostileAnswerTests'
breaker='OriginBreakerServiceTests'
bundle="$(swift build --show-bin-path)/attach-fetchPackageTests.xctest"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
status=0
# One group, its output in $logs/NAME: group FILTER NAME [COMMAND PREFIX...]. Each group is a
# serialized suite (Tests/AttachFetchTests/SuiteGroups.swift, and LeakTests): one test at a time.
# The bundle itself, not `swift test`: two SwiftPM processes cannot share .build at once.
group() {
  local filter=$1 name=$2
  shift 2
  "$@" "$bundle" --testing-library swift-testing --filter "$filter" ${skip:+--skip "$skip"} < /dev/null > "$logs/$name" 2>&1
}
group "$hostile" hostile || status=$?
# A healthy stream's latency beside a dead host, against the wall clock: alone too, so that what
# it measures is the dead host's effect, not the other groups' load.
group "$breaker" breaker || status=$?
( s=0
  skip="$breaker" group "$deadlines" deadlines || s=$?
  group "$alone" alone || s=$?
  exit $s ) & deadlines_pid=$!
( s=0
  group "$timers" timers || s=$?
  group "$service_timers" service-timers || s=$?
  group "$stores" stores || s=$?
  exit $s ) & timers_pid=$!
group "$leaks" leaks env SWT_SWIFT_ERROR_BACKTRACING_ENABLED=0 chrt --idle 0 & leaks_pid=$!
for pid in "$deadlines_pid" "$timers_pid" "$leaks_pid"; do wait "$pid" || status=$?; done
mark "the Swift tests' first phase"
# The bundle here too: `swift test` would first start it for XCTest, which has no tests here
# (4-8 s).
# Its output kept too (tee), for the check of skipped tests below.
set +e
ATTACH_FETCH_CORPUS_REQUIRED=1 SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${ATTACH_FETCH_TEST_WIDTH:-4} \
    "$bundle" --testing-library swift-testing --skip "$leaks|$alone|$deadlines|$timers|$service_timers|$stores|$hostile|$breaker" < /dev/null 2>&1 \
    | tee "$logs/main"
main_status=${PIPESTATUS[0]}
set -e
[ "$main_status" -eq 0 ] || status=$main_status
cat "$logs/hostile" "$logs/breaker" "$logs/deadlines" "$logs/timers" "$logs/service-timers" "$logs/stores" "$logs/leaks" "$logs/alone"
# On a kernel with Landlock (landlock_create_ruleset's version query answers 1 or more), a test
# skipped for want of it did not run, and is not a pass: the sandbox's own tests must all run.
landlock=$(python3 -c 'import ctypes; print(ctypes.CDLL(None).syscall(444, None, 0, 1))' 2>/dev/null || echo -1)
if [ "$landlock" -ge 1 ] && grep -h "skipped" "$logs"/* | grep -i "landlock"; then
  echo "test.sh: this kernel has Landlock (ABI $landlock), but the tests above that need it were skipped" >&2
  status=1
fi
rm -rf "$logs"
trap - EXIT
[ "$status" -eq 0 ] || { echo "swift test failed" >&2; exit "$status"; }
mark "the Swift tests"
# Instructions per attachment against the stored baseline, counted on the debug build (the
# release build would take another 1.7 min: docs/performance.md#the-instruction-count-guard),
# then file-system calls per attachment against the stored limits, with beside them the peak RSS
# of one CLI batch of 10,000 distinct URLs against one of 300 (at most 1.5x: memory follows the
# attachments in flight, not the batch; docs/performance.md#memory-and-batch-length). Counts and
# memory, not times: they run beside the browser and API tests, on what those leave idle. The
# memory guard waits for the instruction count, whose keeper polls more often the longer a
# batch takes under callgrind; the system-call guard runs one strace'd batch at a time.
guard_log=$(mktemp)
memory_log=$(mktemp)
# In a process group of its own (setsid), so that valgrind, strace and the batches they run can
# be stopped with it.
setsid bash -c 'Benchmarks/instruction-guard --configuration debug --skip-build || exit
    Benchmarks/scale --guard --configuration debug --skip-build > "$1" 2>&1 & memory=$!
    status=0
    Benchmarks/syscall-guard --configuration debug --skip-build || status=$?
    wait "$memory" || { status=$?; echo "the memory guard failed"; }
    exit "$status"' guards "$memory_log" > "$guard_log" 2>&1 & guard_pid=$!
# The inspector page in a real browser (Chromium over WebDriver) against a service of its own,
# beside the API tests: the browser mostly waits for the page (its waits are 30-s bounds, none
# a time measured), the API tests for their services' answers.
browser_log=$(mktemp)
setsid scripts/browser-tests.sh > "$browser_log" 2>&1 & browser_pid=$!
# Should a step below fail, the guards and the browser tests stop with the script and leave
# nothing behind.
trap 'kill -- -"$guard_pid" -"$browser_pid" 2>/dev/null; wait "$guard_pid" "$browser_pid" 2>/dev/null; rm -f "$guard_log" "$memory_log" "$browser_log"' EXIT
# The service's OpenAPI document: validated, fuzzed by schemathesis, and a generated client.
scripts/api-tests.sh
mark "the API tests"
browser_status=0
wait "$browser_pid" || browser_status=$?
cat "$browser_log"
[ "$browser_status" -eq 0 ] || { echo "the browser tests failed" >&2; exit "$browser_status"; }
mark "the browser tests"
guard_status=0
wait "$guard_pid" || guard_status=$?
trap - EXIT
rm -f "$browser_log"
cat "$guard_log" "$memory_log"
rm -f "$guard_log" "$memory_log"
[ "$guard_status" -eq 0 ] || { echo "the instruction-count, system-call or memory guard failed" >&2; exit "$guard_status"; }
mark "the instruction-count, system-call and memory guards"

#!/usr/bin/env python3
"""Measures the system calls the decoder workers make, for their seccomp allow-list
(Sources/DecoderSandbox/SystemCallAllowList.swift, docs/security.md#the-allow-list).

Runs the built `attach-fetch` over every file of the corpus (.corpus/files, scripts/corpus.sh)
and of TestMedia/, served from 127.0.0.1, for iOS and Android, under `strace -f`, in batches,
with each batch once more at `--thumbnail-time 0` and `--no-normalize` (their other paths).
Of the trace it keeps the decoder workers' calls: each process that executed
`attach-fetch-decoder` or was forked by one, from its filter's installation on, and every thread
either made. Prints each call with the number of workers that made it, most common first,
and the highest descriptor number a worker was given (`DecoderWorker.Limits.openFiles`).

Usage: scripts/measure-system-calls.py [--bin DIR] [--batch N] [--only SUBSTRING]
"""
import argparse
import collections
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALL = re.compile(r"^([a-z0-9_]+)\(")
CLONE = re.compile(r"^clone3?\(.*\) = (\d+)$")
# Calls that answer a new descriptor, and the descriptors a message brings (SCM_RIGHTS).
OPENS = re.compile(r"^(openat|open|dup|dup2|dup3|memfd_create)\(.*\) = (\d+)")
PASSED = re.compile(r"cmsg_data=\[([0-9, ]+)\]")


def media_files(only):
    found = []
    for directory in (os.path.join(ROOT, ".corpus", "files"), os.path.join(ROOT, "TestMedia"), os.path.join(ROOT, "TestMedia", "cases")):
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and (only is None or only in name):
                found.append(path)
    return found


def serve(files):
    """Serves each file under /N/NAME from 127.0.0.1; answers the server and the URLs."""
    by_path = {f"/{index}/{os.path.basename(path)}": path for index, path in enumerate(files)}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = by_path.get(self.path)
            if path is None:
                self.send_error(404)
                return
            with open(path, "rb") as body:
                data = body.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *arguments):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    return server, [base + path for path in by_path]


def worker_calls(trace_directory):
    """The decoder workers' calls in one `strace -ff` run: {call: set of worker pids}."""
    lines = {}
    for name in os.listdir(trace_directory):
        tid = int(name.rsplit(".", 1)[1])
        with open(os.path.join(trace_directory, name), errors="replace") as trace:
            lines[tid] = trace.read().splitlines()
    # Who started whom: a thread (CLONE_THREAD) belongs to its maker's process.
    maker, thread = {}, {}
    for tid, trace in lines.items():
        for line in trace:
            match = CLONE.match(line)
            if match:
                child = int(match.group(1))
                maker[child] = tid
                thread[child] = "CLONE_THREAD" in line
    decoders = {tid for tid, trace in lines.items()
                if any(line.startswith("execve(") and "attach-fetch-decoder" in line and line.endswith("= 0") for line in trace)}

    @functools.lru_cache(maxsize=None)
    def worker_of(tid):
        """The worker process a task belongs to, or None for the pipeline's own."""
        if tid in decoders:
            return tid
        if tid not in maker:
            return None
        owner = worker_of(maker[tid])
        if owner is None:
            return None
        return owner if thread[tid] else tid

    calls = collections.defaultdict(set)
    highest = 0
    for tid, trace in lines.items():
        owner = worker_of(tid)
        if owner is None:
            continue
        # A process's own calls count from its filter on; a thread's, all of them.
        recording = owner != tid
        for line in trace:
            if not recording:
                recording = line.startswith("seccomp(SECCOMP_SET_MODE_FILTER")
                continue
            match = CALL.match(line)
            if match:
                calls[match.group(1)].add(owner)
            opened = OPENS.match(line)
            if opened:
                highest = max(highest, int(opened.group(2)))
            for passed in PASSED.findall(line):
                highest = max([highest] + [int(fd) for fd in passed.split(",")])
    return calls, highest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=None, help="the directory of the built attach-fetch (default: swift build --show-bin-path)")
    parser.add_argument("--batch", type=int, default=60)
    parser.add_argument("--only", default=None, help="only files whose name holds this")
    options = parser.parse_args()
    binary_directory = options.bin or subprocess.check_output(["swift", "build", "--show-bin-path"], cwd=ROOT, text=True).strip()
    program = os.path.join(binary_directory, "attach-fetch")
    files = media_files(options.only)
    if not files:
        sys.exit("no media: run scripts/corpus.sh")
    server, urls = serve(files)
    totals = collections.defaultdict(set)
    highest_descriptor = 0
    scratch = tempfile.mkdtemp(prefix="measure-system-calls-")
    variants = [[], ["--thumbnail-time", "0", "--no-normalize"]]
    try:
        for start in range(0, len(urls), options.batch):
            for number, extra in enumerate(variants):
                run = os.path.join(scratch, f"run-{start}-{number}")
                traces, out = os.path.join(run, "trace"), os.path.join(run, "out")
                os.makedirs(traces)
                os.makedirs(out)
                listing = os.path.join(run, "urls.txt")
                with open(listing, "w") as handle:
                    handle.write("\n".join(urls[start:start + options.batch]) + "\n")
                subprocess.run(["strace", "-f", "-ff", "-qq", "-e", "signal=none", "-o", os.path.join(traces, "t"), program,
                                "--allow-private-network", "--platforms", "ios,android", "--format", "jsonl", "--input", listing,
                                "--out", out, "--deadline", "1800", "--timeout", "1800", "--max-concurrency", "4"] + extra,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                calls, highest = worker_calls(traces)
                for call, workers in calls.items():
                    totals[call] |= {(start, number, pid) for pid in workers}
                highest_descriptor = max(highest_descriptor, highest)
                shutil.rmtree(run)
            print(f"measured {min(start + options.batch, len(urls))} of {len(urls)} files: {len(totals)} calls so far", file=sys.stderr)
    finally:
        server.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
    for call, workers in sorted(totals.items(), key=lambda item: (-len(item[1]), item[0])):
        print(f"{call}\t{len(workers)}")
    # RLIMIT_NOFILE bounds descriptor numbers: the highest a worker was given after its filter.
    print(f"highest descriptor\t{highest_descriptor}")


if __name__ == "__main__":
    main()

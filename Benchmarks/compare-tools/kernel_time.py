"""Harness behind Benchmarks/kernel-time: the CPU time (user and kernel apart) the release CLI
and its decoder workers spend on the 300 small JPEGs (small300), in two states of the machine,
alternated over rounds:

- clean: right after the page cache, dentries and inodes were dropped (needs root; skipped
  otherwise);
- after mixed: right after the mixed batch (20 media files, 60 MB) ran and its files were
  removed, the state in which ext4's inode allocator and the directory locks cost most.

Times come from wait4's rusage of the CLI, which includes its reaped children (the workers).
Writes Benchmarks/results/kernel-time.json and prints medians per attachment."""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import build_corpus, build_small300, media_server  # noqa: E402
from service_bench import start_service, stop  # noqa: E402


def cpu_seconds(pid):
    """(user, system) seconds of a live process and its reaped children, from /proc."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[13])) / ticks, (int(fields[12]) + int(fields[14])) / ticks


def files_none_service(bin_dir, small_urls, scratch):
    """Kernel and user ms per call of `serve` answering `"files": "none"` calls of one small
    image each: 300 misses (distinct URLs), then the same 300 again as cache hits."""
    process, base = start_service(bin_dir, scratch)
    figures = {}
    try:
        for phase in ("miss", "hit"):
            before = cpu_seconds(process.pid)
            for url in small_urls:
                body = json.dumps({"urls": [url], "files": "none"}).encode()
                request = urllib.request.Request(f"{base}/v1/attachments", data=body, headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=30) as answer:
                    if b'"ready"' not in answer.read():
                        sys.exit(f"kernel-time: a files=none {phase} was not ready")
            after = cpu_seconds(process.pid)
            figures[phase] = {"userMsPerCall": round((after[0] - before[0]) / len(small_urls) * 1000, 3),
                              "kernelMsPerCall": round((after[1] - before[1]) / len(small_urls) * 1000, 3)}
    finally:
        stop(process)
    return figures


def run_cli(bin_dir, urls, out_dir):
    """(user seconds, system seconds, ready count) of one CLI run over `urls`."""
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    process = subprocess.Popen([os.path.join(bin_dir, "attach-fetch"), "--allow-private-network", "--format", "jsonl",
                                "--out", out_dir, *urls], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    output = process.stdout.read()
    _, _, usage = os.wait4(process.pid, 0)
    ready = sum(1 for line in output.splitlines() if '"status":"ready"' in line)
    return usage.ru_utime, usage.ru_stime, ready


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    corpus = os.path.join(args.work, "corpus")
    mixed_dir, _ = build_corpus(corpus)
    small_dir = build_small300(corpus)
    scratch = tempfile.mkdtemp(prefix="attach-fetch-kernel-time-")
    results = {"clean": [], "after mixed": []}
    # One attachment in the same state: what starting and stopping cost (loading the binary,
    # starting the workers), subtracted for the cost of one more attachment.
    singles = {"clean": [], "after mixed": []}
    try:
        with media_server(args.bin, mixed_dir) as (_, mixed_base), media_server(args.bin, small_dir) as (_, small_base):
            mixed_urls = [f"{mixed_base}/media/{name}" for name in sorted(os.listdir(mixed_dir))]
            small_urls = [f"{small_base}/media/{name}" for name in sorted(os.listdir(small_dir))]
            run_cli(args.bin, small_urls, os.path.join(scratch, "warm"))
            for _ in range(args.rounds):
                for urls, table in ((small_urls, results), (small_urls[:1], singles)):
                    if drop_caches():
                        time.sleep(0.5)
                        table["clean"].append(run_cli(args.bin, urls, os.path.join(scratch, "small")))
                    run_cli(args.bin, mixed_urls, os.path.join(scratch, "mixed"))
                    shutil.rmtree(os.path.join(scratch, "mixed"), ignore_errors=True)
                    table["after mixed"].append(run_cli(args.bin, urls, os.path.join(scratch, "small")))
        with media_server(args.bin, small_dir) as (_, small_base):
            service = files_none_service(args.bin, [f"{small_base}/media/{name}" for name in sorted(os.listdir(small_dir))],
                                         scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    count = 300
    summary = {}
    print(f"| small300 ({count} JPEGs 160x120), release CLI | user per attachment | kernel per attachment | "
          f"kernel per attachment, less a 1-attachment run | runs |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for state, runs in results.items():
        if not runs:
            print(f"| {state} | not run (dropping the page cache needs root) | | | 0 |")
            continue
        if any(ready != count for _, _, ready in runs):
            sys.exit(f"kernel-time: a run in state {state!r} delivered fewer than {count} attachments: {[r for _, _, r in runs]}")
        user = statistics.median(u for u, _, _ in runs) / count * 1000
        system = statistics.median(s for _, s, _ in runs) / count * 1000
        single = statistics.median(s for _, s, _ in singles[state])
        marginal = (statistics.median(s for _, s, _ in runs) - single) / (count - 1) * 1000
        summary[state] = {"userMsPerAttachment": round(user, 3), "kernelMsPerAttachment": round(system, 3),
                          "kernelMsPerAttachmentLessStart": round(marginal, 3), "kernelSecondsOneAttachment": round(single, 3),
                          "runs": len(runs)}
        print(f"| {state} | {user:.2f} ms | {system:.2f} ms | {marginal:.2f} ms | {len(runs)} |")
    print("\n| `serve`, `\"files\": \"none\"`, one small JPEG a call | user per call | kernel per call |\n| --- | ---: | ---: |")
    for phase, figure in service.items():
        print(f"| {phase} | {figure['userMsPerCall']:.2f} ms | {figure['kernelMsPerCall']:.2f} ms |")
    summary["serve files=none"] = service
    os.makedirs(os.path.join(HERE, "..", "results"), exist_ok=True)
    with open(os.path.join(HERE, "..", "results", "kernel-time.json"), "w") as f:
        json.dump({"machine": {"cores": os.cpu_count(), "uname": os.uname().release}, "states": summary}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()

"""Harness behind Benchmarks/scale: one CLI batch of N distinct URLs (300 small JPEGs served
by nginx on loopback, `?n=<i>` making every URL distinct, so nothing is coalesced) at the CLI's
defaults but a deadline of an hour, for N = 300, 3,000, 10,000 and 100,000: wall time, CPU per item and peak RSS
(`/usr/bin/time`'s maximum resident set), beside a plain Python baseline (asyncio + aiohttp +
python-magic + pyvips, 100 connections: compare-tools/baseline.py). Checks the ratios in
Thresholds/scale.json and writes results/scale.json.
Usage: scale.py --bin DIR --work DIR [--sizes LIST] [--guard] [--no-baseline] [--python PATH]"""
import argparse, json, os, shutil, socket, subprocess, sys, tempfile, time

from compare import build_small300  # noqa: E402  (one copy of the corpus: compare's small300)

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(work, root):
    """nginx in the foreground on a free loopback port, serving `root`: (process, base URL)."""
    port = free_port()
    conf_dir = os.path.join(work, "nginx")
    os.makedirs(conf_dir, exist_ok=True)
    conf = os.path.join(conf_dir, "nginx.conf")
    with open(conf, "w") as f:
        # No master process: one process as the user who runs the benchmark, which can read
        # a clone in a private directory (a master running as root hands the work to nobody).
        f.write(f"""worker_processes 1;
daemon off;
master_process off;
pid {conf_dir}/nginx.pid;
error_log {conf_dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {conf_dir}/body;
  proxy_temp_path {conf_dir}/proxy;
  fastcgi_temp_path {conf_dir}/fcgi;
  uwsgi_temp_path {conf_dir}/uwsgi;
  scgi_temp_path {conf_dir}/scgi;
  keepalive_requests 1000000;
  types {{ image/jpeg jpg; }}
  server {{ listen 127.0.0.1:{port}; root {root}; }}
}}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    process = subprocess.Popen([nginx, "-c", conf, "-p", conf_dir], stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    process.kill()
    sys.exit("nginx did not start")


def url_file(work, base, n):
    path = os.path.join(work, f"urls{n}.txt")
    with open(path, "w") as f:
        for i in range(n):
            f.write(f"{base}/small{i % 300:03d}.jpg?n={i}\n")
    return path


def timed(command, stdout_path):
    """Runs `command` under /usr/bin/time: wall s, CPU s, peak RSS in KiB (the largest of the
    process and its children, as rusage keeps it), exit status."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report, open(stdout_path, "wb") as out:
        status = subprocess.run(["/usr/bin/time", "-o", report.name, "-f", "%e %U %S %M", *command],
                                stdout=out, stderr=subprocess.DEVNULL).returncode
        wall, user, system, rss = report.read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss), status


def run_cli(bin_dir, work, urls, n, fmt):
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    stdout = os.path.join(work, f"cli.{fmt}")
    # Defaults but the deadline: 100,000 attachments take longer than 25 s on two cores.
    wall, cpu, rss, status = timed([os.path.join(bin_dir, "attach-fetch"), "--allow-private-network", "--format", fmt,
                                    "--deadline", "3600", "--out", out, "--input", urls], stdout)
    size = os.path.getsize(stdout)
    if fmt == "jsonl":
        ready = sum(1 for line in open(stdout) if '"status":"ready"' in line)
    else:
        ready = sum(1 for a in json.load(open(stdout))["attachments"] if a["status"] == "ready")
    shutil.rmtree(out, ignore_errors=True)
    os.unlink(stdout)
    if ready != n:
        sys.exit(f"attach-fetch {fmt} N={n}: {ready} ready of {n} (exit {status})")
    return {"wallS": wall, "cpuMsPerItem": cpu * 1000 / n, "peakRssMiB": rss / 1024, "outputBytes": size}


def run_python(python, work, urls, n):
    out = os.path.join(work, "py-out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    stdout = os.path.join(work, "py.txt")
    wall, cpu, rss, status = timed([python, os.path.join(HERE, "baseline.py"), urls, out, "100"], stdout)
    ready = sum(1 for line in open(stdout) if line.endswith(" ready\n"))
    shutil.rmtree(out, ignore_errors=True)
    if ready != n:
        print(f"python N={n}: {ready} ready of {n} (exit {status})", file=sys.stderr)
    return {"wallS": wall, "cpuMsPerItem": cpu * 1000 / n, "peakRssMiB": rss / 1024}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--sizes", default="300,3000,10000,100000")
    parser.add_argument("--guard", action="store_true", help="N=300 and 10,000, peak RSS only (jsonl), no baseline")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--python", default=os.path.join(BENCH, ".venv-scale", "bin", "python"))
    args = parser.parse_args()
    thresholds = json.load(open(os.path.join(BENCH, "Thresholds", "scale.json")))
    sizes = [300, 10000] if args.guard else [int(s) for s in args.sizes.split(",")]
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    root = build_small300(args.work)
    nginx, base = start_nginx(args.work, root)
    results = {"date": time.strftime("%Y-%m-%d"), "sizes": {}}
    try:
        for n in sizes:
            urls = url_file(args.work, base, n)
            row = {"jsonl": run_cli(args.bin, args.work, urls, n, "jsonl")}
            if not args.guard and n == max(sizes):
                row["json"] = run_cli(args.bin, args.work, urls, n, "json")
            if not args.guard and not args.no_baseline:
                row["python"] = run_python(args.python, args.work, urls, n)
            results["sizes"][n] = row
            os.unlink(urls)
    finally:
        nginx.terminate()
        nginx.wait()

    print(f"{'N':>8} | {'attach-fetch wall':>17} | {'CPU ms/item':>11} | {'peak RSS':>9} || {'Python wall':>11} | {'CPU ms/item':>11} | {'peak RSS':>9}")
    for n, row in results["sizes"].items():
        cli, py = row["jsonl"], row.get("python")
        line = f"{n:>8,} | {cli['wallS']:>15.2f} s | {cli['cpuMsPerItem']:>11.2f} | {cli['peakRssMiB']:>5.0f} MiB"
        if py:
            line += f" || {py['wallS']:>9.2f} s | {py['cpuMsPerItem']:>11.2f} | {py['peakRssMiB']:>5.0f} MiB"
        print(line)
        if "json" in row:
            print(f"{'':>8}   --format json: {row['json']['wallS']:.2f} s, peak RSS {row['json']['peakRssMiB']:.0f} MiB, "
                  f"document {row['json']['outputBytes'] / 1048576:.0f} MiB")

    # The checks: memory follows the work in flight; time per item does not grow with N.
    failures = []
    rows = results["sizes"]
    base_rss = rows[300]["jsonl"]["peakRssMiB"]
    checks = []
    for n in sizes:
        if n >= 10000:
            checks.append((f"peak RSS N={n} / N=300", rows[n]["jsonl"]["peakRssMiB"] / base_rss, thresholds["peakRssOverN300"]))
    if not args.guard:
        top = max(sizes)
        if "json" in rows[top]:
            allowed = base_rss + rows[top]["json"]["outputBytes"] / 1048576
            checks.append((f"json peak RSS N={top} / (N=300 + document)", rows[top]["json"]["peakRssMiB"] / allowed,
                           thresholds["jsonPeakRssOverN300PlusDocument"]))
        if 3000 in rows and top > 3000:
            per = lambda n: rows[n]["jsonl"]["wallS"] / n
            checks.append((f"wall per item N={top} / N=3,000", per(top) / per(3000), thresholds["wallPerItemOverN3000"]))
    for name, value, limit in checks:
        ok = value <= limit
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {value:.2f} (at most {limit})")
        if not ok:
            failures.append(name)
    results["checks"] = {name: {"value": round(value, 3), "limit": limit} for name, value, limit in checks}
    os.makedirs(os.path.join(BENCH, "results"), exist_ok=True)
    with open(os.path.join(BENCH, "results", "scale-guard.json" if args.guard else "scale.json"), "w") as f:
        json.dump(results, f, indent=2)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

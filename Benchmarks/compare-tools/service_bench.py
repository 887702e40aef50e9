"""Harness behind Benchmarks/service: `attach-fetch serve` driven by wrk at 64 connections over
loopback, thumbor 7.8 and the CLI on the same 300 images in the same run, and a soak at half the
measured maximum rate. Prints a table, writes Benchmarks/results/service.json, and checks the
targets in Benchmarks/Thresholds/service.json (exit 1 when one is missed).
--rtt-ms N puts the origin of the uncached scenarios (cold single-image requests and their
origin floors, the 300 distinct images) behind delay_proxy.py at that round-trip time, and
writes service-rttN.json; --only-uncached runs only the 300 distinct images against attach-fetch
serve (no thumbor, CLI, cached runs or soak) and writes service-uncached[-rttN].json;
--serve-extra ARGS is appended to every `attach-fetch serve` command line."""
import argparse, asyncio, contextlib, resource, json, os, shlex, shutil, signal, statistics, subprocess, sys, tempfile, threading, time
import aiohttp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import CORES, far_origin, ff, media_server, process_tree, tree_pss_kb  # noqa: E402  (one copy of these helpers)

CONNECTIONS = 64


def build_corpus(root):
    """single.jpg (the single-image scenarios) and 300 distinct 640x480 JPEGs d001.jpg…d300.jpg
    (the origin serves one directory level)."""
    if os.path.exists(os.path.join(root, "done")):
        return distinct_names(root)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    ff("-f", "lavfi", "-i", "testsrc2=size=640x480:rate=1:duration=1", "-frames:v", "1", "-update", "1", "-q:v", "8",
       os.path.join(root, "single.jpg"))
    # testsrc2 moves and the hue turns: every frame is a different image.
    ff("-f", "lavfi", "-i", "testsrc2=size=640x480:rate=30:duration=10", "-vf", "hue=h=t*36", "-q:v", "8",
       os.path.join(root, "d%03d.jpg"))
    if len(distinct_names(root)) != 300:
        sys.exit(f"corpus: made {len(distinct_names(root))} images, expected 300")
    open(os.path.join(root, "done"), "w").close()
    return distinct_names(root)


def distinct_names(root):
    return sorted(name for name in os.listdir(root) if name.startswith("d") and name.endswith(".jpg"))


class Sampler:
    """Samples a process tree's PSS (and the root's open descriptors) while a scenario runs."""

    def __init__(self, pid, every=0.5):
        self.pid, self.every = pid, every
        self.samples = []  # (seconds, pss KiB, fds)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        started = time.monotonic()
        while not self._stop.is_set():
            try:
                fds = len(os.listdir(f"/proc/{self.pid}/fd"))
            except OSError:
                fds = -1
            self.samples.append((time.monotonic() - started, tree_pss_kb(self.pid), fds))
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join()

    @property
    def peak_mib(self):
        return max((s[1] for s in self.samples), default=0) / 1024


def tree_cpu_seconds(root):
    """CPU seconds (user and system) of a process and its live descendants."""
    ticks = 0
    for pid in process_tree(root):
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_idle_seconds():
    """Idle and I/O-wait seconds of all cores together, from /proc/stat."""
    fields = open("/proc/stat").readline().split()[1:]
    return (int(fields[3]) + int(fields[4])) / os.sysconf("SC_CLK_TCK")


class CoreAccount:
    """Where the machine's cores went during one load run: the server under test (its process
    tree), the origin, the load generator (wrk, a child of this harness, counted when reaped),
    and idle. A server that leaves cores idle is waiting (on the origin, on its own locks, on
    the network); one that takes both cores is computing; a load generator that takes a core
    from a server on a 2-core machine is part of why ratios differ between machines."""

    def __init__(self, server_pid, origin_pid, proxy_pid=None):
        self.pids = {"server": server_pid, "origin": origin_pid}
        if proxy_pid is not None:
            self.pids["proxy"] = proxy_pid  # delay_proxy.py, under --rtt-ms

    def __enter__(self):
        self.started = time.monotonic()
        self.before = {name: tree_cpu_seconds(pid) for name, pid in self.pids.items()}
        self.children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.idle = machine_idle_seconds()
        return self

    def __exit__(self, *_):
        wall = time.monotonic() - self.started
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cores = {name: (tree_cpu_seconds(pid) - self.before[name]) / wall for name, pid in self.pids.items()}
        self.cores["wrk"] = (children.ru_utime + children.ru_stime - self.children.ru_utime - self.children.ru_stime) / wall
        self.cores["idle"] = (machine_idle_seconds() - self.idle) / wall
        self.cores["other"] = max(0.0, CORES - sum(self.cores.values()))

    def line(self):
        return ", ".join(f"{name} {value:.2f}" for name, value in self.cores.items()) + " cores"


WRK_RUNS = iter(range(1, 1_000_000))


def wrk(url, mode, seconds, connections=CONNECTIONS, **env):
    # A new ROUND for every run unless one is given: cold URLs of one run are never another's hits.
    env.setdefault("ROUND", f"w{next(WRK_RUNS)}")
    command = ["wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{seconds}s", "--timeout", "30s", "-s", os.path.join(HERE, "wrk.lua"), url]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "MODE": mode, **{k: str(v) for k, v in env.items()}},
                          timeout=seconds + 120)
    line = next((l for l in done.stdout.splitlines() if l.startswith("WRKJSON ")), None)
    if done.returncode != 0 or line is None:
        sys.exit(f"wrk failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    result = json.loads(line[len("WRKJSON "):])
    result["rate"] = result["requests"] / result["seconds"]
    return result


def is_tmpfs(path):
    with open("/proc/mounts") as mounts:
        return any(line.split()[1] == path and line.split()[2] == "tmpfs" for line in mounts)


def start_service(bin_dir, scratch, *extra):
    env = {**os.environ, "TMPDIR": scratch}
    process = subprocess.Popen([os.path.join(bin_dir, "attach-fetch"), "serve", "--port", "0", "--allow-private-network",
                                "--max-batches", "128", "--retention", "60", *extra],
                               stderr=subprocess.PIPE, text=True, env=env)
    for line in process.stderr:
        if "attach-fetch: listening on " in line:
            base = line.strip().split("listening on ")[1]
            break
    else:
        sys.exit("attach-fetch serve did not start")
    # Keep reading its log (one line per request) so the pipe never fills.
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    return process, base


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def start_thumbor(venv, port, work):
    conf = os.path.join(work, "thumbor.conf")
    with open(conf, "w") as f:
        # Nothing kept between requests (attach-fetch's cache is off for the same reason: every
        # URL in that scenario is new); the http loader fetches from the loopback origin.
        f.write("STORAGE = 'thumbor.storages.no_storage'\nRESULT_STORAGE = None\nALLOW_UNSAFE_URL = True\n"
                "LOADER = 'thumbor.loaders.http_loader'\nHTTP_LOADER_CONNECT_TIMEOUT = 5\nHTTP_LOADER_REQUEST_TIMEOUT = 20\n")
    process = subprocess.Popen([os.path.join(venv, "bin", "thumbor"), "-i", "127.0.0.1", "-p", str(port), "-c", conf,
                                "--processes", "2", "-l", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    for _ in range(200):
        try:
            if subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port}/healthcheck"], capture_output=True).returncode == 0:
                return process
        except OSError:
            pass
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGTERM)
    process.wait()
    sys.exit("thumbor did not start")


async def fetch_all(urls, make_request):
    """Every URL once, CONNECTIONS at a time over keep-alive connections; (seconds, results)."""
    connector = aiohttp.TCPConnector(limit=CONNECTIONS)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        queue = list(enumerate(urls))
        results = [None] * len(urls)

        async def worker():
            while queue:
                index, url = queue.pop()
                results[index] = await make_request(session, url)

        started = time.monotonic()
        await asyncio.gather(*[worker() for _ in range(CONNECTIONS)])
        return time.monotonic() - started, results


async def via_service(session, base, url):
    async with session.post(f"{base}/v1/attachments", json={"urls": [url]}) as response:
        body = await response.json()
        descriptor = body["attachments"][0]
        return response.status == 200 and descriptor["status"] == "ready" and "thumbnail" in descriptor


async def via_thumbor(session, base, url):
    async with session.get(f"{base}/unsafe/fit-in/320x320/{url.removeprefix('http://')}") as response:
        body = await response.read()
        return response.status == 200 and body[:2] == b"\xff\xd8"


def first_call(base, url):
    """One call for `url` (it makes the cache entry the warm loads hit), which must succeed."""
    subprocess.run(["curl", "-sf", "-o", "/dev/null", "-H", "Content-Type: application/json", "-d",
                    json.dumps({"urls": [url]}), f"{base}/v1/attachments"], check=True)


def corrected_delay(delay_ms, rate, target):
    """The pause that makes `target` requests/s from a run that made `rate` with `delay_ms`: the
    run's latency is what its rate leaves of each connection's cycle beyond the pause."""
    latency_ms = max(0.0, CONNECTIONS * 1000 / rate - delay_ms)
    return round(max(0.0, CONNECTIONS * 1000 / target - latency_ms), 3)


def checked_wrk(url, mode, seconds, **env):
    """wrk in a checking mode (distinct, thumbor): every answer must be a 200 that the script
    accepted, with no socket error; else the benchmark stops."""
    run = wrk(url, mode, seconds, **env)
    wrong = sum(count for status, count in run["statuses"].items() if status != "200")
    if wrong or run["socket_errors"] or not run["requests"]:
        sys.exit(f"{mode}: {wrong} wrong answers and {run['socket_errors']} socket errors of {run['requests']}: {run['statuses']}")
    return run


DISTINCT_TOOLS = ["service", "thumbor", "cliBatch", "cliPerImage", "serviceViaPython", "thumborViaPython"]


def distinct_images(bin_dir, origin, names, thumbor_base, service_base, rounds, seconds, tmpdir, pids, tools=DISTINCT_TOOLS):
    """The same small images through the service (a new URL every request: uncached) and through
    thumbor, both driven by wrk at 64 connections for `seconds`, every answer checked; then the
    same 300 through the CLI (one batch; one process per image), and through both services once
    more from a Python asyncio client (aiohttp), as a parsed, per-URL check. `pids`: the service's,
    thumbor's and the origin's (and "proxy": delay_proxy's, if any), for the account of where the
    cores went in each wrk run. `tools`: which of DISTINCT_TOOLS run (--only-uncached: the service)."""
    if names != [f"d{i:03d}.jpg" for i in range(1, len(names) + 1)]:
        sys.exit("the distinct images must be d001.jpg, d002.jpg, ... (wrk.lua numbers them)")
    timings = {tool: [] for tool in DISTINCT_TOOLS if tool in tools}
    latencies = {tool: [] for tool in ("service", "thumbor") if tool in timings}
    cores = {tool: [] for tool in latencies}
    for round_index in range(-1, rounds):
        # A new ROUND per round (and a new query per request): every URL is new to the service's
        # cache, so each round is uncached. Round -1 warms every tool up (decoder processes,
        # Python imports) and is not counted.
        urls = [f"{origin}/media/{name}?round={round_index}" for name in names]
        plain = [f"{origin}/media/{name}" for name in names]
        order = list(timings)
        if round_index % 2:
            order.reverse()
        for tool in order:
            # The CLI's files on the same file system as the service's.
            out = tempfile.mkdtemp(dir=tmpdir, prefix="attach-fetch-bench-")
            count = 100 if tool == "cliPerImage" else len(urls)
            if tool in ("service", "thumbor"):
                base, mode = (service_base + "/v1/attachments", "distinct") if tool == "service" else (thumbor_base, "thumbor")
                with CoreAccount(pids[tool], pids["origin"], pids.get("proxy")) as account:
                    run = checked_wrk(base, mode, seconds if round_index >= 0 else 3, ORIGIN=origin, IMAGES=len(names),
                                      ROUND=round_index)
                rate, ok = run["rate"], [True] * count
                if round_index >= 0:
                    latencies[tool].append({"p50_ms": run["p50_ms"], "p99_ms": run["p99_ms"], "requests": run["requests"]})
                    cores[tool].append(account.cores)
                print(f"  round {round_index + 1} {tool}: where the {CORES} cores went: {account.line()}", flush=True)
            elif tool == "serviceViaPython":
                seconds_taken, ok = asyncio.run(fetch_all([u + "&py=1" for u in urls], lambda s, u: via_service(s, service_base, u)))
                rate = count / seconds_taken
            elif tool == "thumborViaPython":
                seconds_taken, ok = asyncio.run(fetch_all(plain, lambda s, u: via_thumbor(s, thumbor_base, u)))
                rate = count / seconds_taken
            elif tool == "cliBatch":
                started = time.monotonic()
                done = subprocess.run([os.path.join(bin_dir, "attach-fetch"), "--allow-private-network", "--format", "json",
                                       "--max-concurrency", "16", "--out", out, *urls], capture_output=True, text=True,
                                      env={**os.environ, "TMPDIR": tmpdir})
                rate = count / (time.monotonic() - started)
                ok = [a["status"] == "ready" and "thumbnail" in a for a in json.loads(done.stdout)["attachments"]]
            else:
                # What a backend that spawns the CLI per notification pays: a process per image
                # (on the first 100 images: at a few images per second, 300 would take minutes).
                started = time.monotonic()
                script = (f'"{os.path.join(bin_dir, "attach-fetch")}" --allow-private-network --format jsonl '
                          f'--out "$(mktemp -d -p {out})" "$0" | grep -c \'"status":"ready"\'')
                done = subprocess.run(["xargs", "-P", str(CONNECTIONS), "-n", "1", "sh", "-c", script],
                                      input="\n".join(urls[:100]), capture_output=True, text=True,
                                      env={**os.environ, "TMPDIR": tmpdir})
                rate = count / (time.monotonic() - started)
                ok = [line.strip() == "1" for line in done.stdout.splitlines()]
            shutil.rmtree(out, ignore_errors=True)
            if len(ok) != count or not all(ok):
                sys.exit(f"{tool}: {sum(map(bool, ok))} of {count} images came back with a thumbnail")
            if round_index >= 0:
                timings[tool].append(rate)
            print(f"  round {round_index + 1} {tool}: {rate:.0f} images/s", flush=True)
    results = {tool: {"imagesPerSecondByRound": values, "imagesPerSecond": statistics.median(values)}
               for tool, values in timings.items()}
    for tool, runs in latencies.items():
        results[tool]["latencyByRound"] = runs
        results[tool]["coresByRound"] = cores[tool]
    if "service" in timings and "thumbor" in timings:
        results["service"]["thumborRatioByRound"] = [a / b for a, b in zip(timings["service"], timings["thumbor"])]
    return results


def calibrated_delay(url, mode, target, **env):
    """The DELAY_MS at which wrk's 64 connections offer about `target` requests/s, and the last
    calibration run. Each connection waits DELAY_MS after each answer, so it makes 1 / (delay +
    latency) requests per second; a 10-second run measures the latency at that rate. The latency
    depends on the rate, so the calibration is repeated at the corrected delay. The delay is
    fractional (wrk.lua dithers whole milliseconds to meet it on average)."""
    delay_ms = round(CONNECTIONS * 1000 / target, 3)
    for _ in range(3):
        calibration = wrk(url, mode, 10, DELAY_MS=f"{delay_ms:.3f}", **env)
        delay_ms = corrected_delay(delay_ms, calibration["rate"], target)
    return delay_ms, calibration


def soak(service, url, hot, cold, max_rate, seconds):
    target = max_rate / 2
    # The result cache is bounded (10,000 entries by default) and fills first: one new URL in 20
    # at ~1,000 requests/s takes minutes to fill it, and that bounded growth is not a leak. So
    # the cache is filled beforehand with new URLs only (12,000, past its bound) and the
    # soak's memory is compared from its first minute on.
    prime = wrk(url, "mix", 15, HOT_URL=hot, COLD_URL=cold + "?prime=1", COLD_EVERY=1)
    while prime["requests"] < 12_000:
        more = wrk(url, "mix", 15, HOT_URL=hot, COLD_URL=cold + f"?prime={prime['requests']}", COLD_EVERY=1)
        prime["requests"] += more["requests"]
    delay_ms, calibration = calibrated_delay(url, "mix", target, HOT_URL=hot, COLD_URL=cold)
    with Sampler(service.pid, every=5) as sampler:
        result = wrk(url, "mix", seconds, HOT_URL=hot, COLD_URL=cold, DELAY_MS=delay_ms)
    # Compared from the first minute on (from half-way in a shorter soak): connections and the
    # service's working set settle first.
    settled = min(60, seconds / 2)
    warm = [s for s in sampler.samples if s[0] >= settled] or sampler.samples
    first, last = warm[0], sampler.samples[-1]
    fds = [s[2] for s in warm]
    result.update({
        "targetRate": target, "delayMs": delay_ms, "primingRequests": prime["requests"], "calibrationRate": calibration["rate"],
        "pssAfterFirstMinuteMiB": first[1] / 1024, "pssAtEndMiB": last[1] / 1024, "peakPssMiB": sampler.peak_mib,
        "pssGrowth": last[1] / first[1] - 1,
        "fdsAfterFirstMinute": first[2], "fdsAtEnd": last[2], "fdsMin": min(fds), "fdsMax": max(fds),
        "serverErrors": sum(count for status, count in result["statuses"].items() if int(status) >= 500),
        "samples": sampler.samples,
    })
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--thumbor-venv", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--soak-seconds", type=int, default=600)
    parser.add_argument("--service-tmpdir", default=None,
                        help="where the service keeps its files (TMPDIR): default /dev/shm when it is tmpfs, as the "
                             "README's systemd unit and container recipe run it; else --work")
    parser.add_argument("--rtt-ms", type=float, default=0.0,
                        help="round-trip time (ms) of the origin in the uncached scenarios, through delay_proxy.py (default 0: "
                             "the origin directly)")
    parser.add_argument("--only-uncached", action="store_true",
                        help="only the 300 distinct images, uncached, at 64 wrk connections against attach-fetch serve: "
                             "images/s and p50/p99 latency (no thumbor, CLI, cached scenarios or soak; no targets checked)")
    parser.add_argument("--serve-extra", default="", metavar="ARGS",
                        help="arguments appended to every `attach-fetch serve` command line (shell-split), e.g. "
                             "--serve-extra='--max-host-connections 16'")
    args = parser.parse_args()
    if args.rtt_ms < 0:
        parser.error("--rtt-ms must not be negative")
    if args.service_tmpdir is None:
        args.service_tmpdir = "/dev/shm" if is_tmpfs("/dev/shm") else args.work
    os.makedirs(args.work, exist_ok=True)
    with open(os.path.join(HERE, "..", "Thresholds", "service.json")) as f:
        thresholds = json.load(f)
    corpus = os.path.join(args.work, "corpus")
    names = build_corpus(corpus)
    results = {"connections": CONNECTIONS, "cores": os.cpu_count(), "originRttMs": args.rtt_ms, "serveExtra": args.serve_extra,
               "serviceExits": [], "serviceLeftovers": []}
    service = scratch = None
    # The origin, its delay proxy and thumbor, stopped on the way out whatever happens.
    servers = contextlib.ExitStack()

    def fresh_service(tmpdir=None):
        """Each part on a new service: a part must not pay for the previous one's backlog (the
        retention sweep of tens of thousands of batch directories, transfers cut off by wrk)."""
        nonlocal service, scratch
        if service is not None:
            retire_service()
        scratch = tempfile.mkdtemp(dir=tmpdir or args.service_tmpdir, prefix="attach-fetch-bench-")
        service, base = start_service(args.bin, scratch, *shlex.split(args.serve_extra))
        return base

    def retire_service():
        nonlocal service
        results["serviceExits"].append(stop(service))
        results["serviceLeftovers"] += os.listdir(scratch)
        shutil.rmtree(scratch, ignore_errors=True)
        service = None

    set_up = False
    try:
        origin_process, origin = servers.enter_context(media_server(args.bin, corpus))
        # What the uncached scenarios fetch from: the origin behind delay_proxy at --rtt-ms (the
        # origin itself at 0). Cache hits and the soak use the origin directly.
        far, proxy = servers.enter_context(far_origin(origin, args.rtt_ms))
        pids = {"service": None, "origin": origin_process.pid, "proxy": proxy.pid if proxy else None}
        if args.only_uncached:
            print(f"300 distinct small images, uncached, attach-fetch serve only (origin RTT {args.rtt_ms:g} ms)", flush=True)
            base = fresh_service()
            results["distinct"] = distinct_images(args.bin, far, names, None, base, args.rounds, args.seconds,
                                                   args.service_tmpdir, {**pids, "service": service.pid}, tools=["service"])
            retire_service()
        set_up = True
    finally:
        if args.only_uncached or not set_up:
            if service is not None:
                retire_service()
            servers.close()
    if args.only_uncached:
        figures = results["distinct"]["service"]
        p50 = statistics.median(r["p50_ms"] for r in figures["latencyByRound"])
        p99 = statistics.median(r["p99_ms"] for r in figures["latencyByRound"])
        figures.update({"p50MsMedian": p50, "p99MsMedian": p99})
        print(f"  service {figures['imagesPerSecond']:.0f} images/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms (medians of "
              f"{len(figures['imagesPerSecondByRound'])} rounds of {args.seconds} s at {CONNECTIONS} connections; origin RTT "
              f"{args.rtt_ms:g} ms)", flush=True)
        print(f"  by round: " + "; ".join(f"{rate:.0f} images/s, p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms"
                                          for rate, r in zip(figures["imagesPerSecondByRound"], figures["latencyByRound"])))
        print(f"  service exit statuses {results['serviceExits']}, files left {len(results['serviceLeftovers'])}", flush=True)
        met = True
        if args.rtt_ms == 100 and not args.serve_extra:
            # The stored far-origin targets: the service at its defaults, origin 100 ms away.
            targets = json.load(open(os.path.join(HERE, "..", "Thresholds", "far-origins.json")))
            rate_ok = figures["imagesPerSecond"] >= targets["serviceUncachedImagesPerSecondAt100ms"]
            p50_ok = p50 <= targets["serviceUncachedP50RoundTripsAt100ms"] * args.rtt_ms
            met = rate_ok and p50_ok
            print(f"  target {'met' if rate_ok else 'MISSED'}: {figures['imagesPerSecond']:.0f} images/s >= "
                  f"{targets['serviceUncachedImagesPerSecondAt100ms']}")
            print(f"  target {'met' if p50_ok else 'MISSED'}: p50 {p50:.0f} ms <= "
                  f"{targets['serviceUncachedP50RoundTripsAt100ms']} round trips ({targets['serviceUncachedP50RoundTripsAt100ms'] * args.rtt_ms:g} ms)")
            figures["targetsMet"] = met
        write_results(results, f"service-uncached{rtt_suffix(args.rtt_ms)}.json")
        sys.exit(0 if met and max(map(abs, results["serviceExits"])) == 0 and not results["serviceLeftovers"] else 1)

    try:
        thumbor = start_thumbor(args.thumbor_venv, 18888, args.work)
        servers.callback(lambda: (os.killpg(thumbor.pid, signal.SIGTERM), thumbor.wait()))
        base = fresh_service()
        single = f"{origin}/media/single.jpg"
        far_single = f"{far}/media/single.jpg"
        runs = {}
        print("single-image requests" + (f" (cold ones and their origin floors at an origin RTT of {args.rtt_ms:g} ms)"
                                         if args.rtt_ms > 0 else ""), flush=True)
        runs["healthzFloor"] = wrk(f"{base}/healthz", "get", args.seconds)
        runs["origin64"] = wrk(far_single, "get", args.seconds)
        runs["origin1"] = wrk(far_single, "get", args.seconds, connections=1)
        first_call(base, single)
        for name, mode, connections in [("warm64", "warm", CONNECTIONS), ("warm1", "warm", 1),
                                        ("cold64", "cold", CONNECTIONS), ("cold1", "cold", 1)]:
            with Sampler(service.pid) as sampler:
                runs[name] = wrk(f"{base}/v1/attachments", mode, args.seconds, connections=connections,
                                 HOT_URL=single, COLD_URL=far_single)
            runs[name]["peakPssMiB"] = sampler.peak_mib
        # A hit's cost in /healthz calls, on the same service, in alternating runs (the machine
        # drifts by tens of per cent within minutes, so one /healthz run at the start is no
        # floor for a hit measured later): /healthz, a hit without files ("files": "none", no
        # directory made), a hit with the call's own directory (the default); per round the
        # ratio of /healthz's rate to each, the median checked.
        hit_rounds = []
        for _ in range(3):
            seconds = max(5, args.seconds // 3)
            healthz = wrk(f"{base}/healthz", "get", seconds)
            none = wrk(f"{base}/v1/attachments", "warm", seconds, HOT_URL=single, COLD_URL=single, FILES="none")
            kept = wrk(f"{base}/v1/attachments", "warm", seconds, HOT_URL=single, COLD_URL=single)
            hit_rounds.append({"healthz": healthz["rate"], "hitNoFiles": none["rate"], "hitKept": kept["rate"],
                               "noFilesInHealthzCalls": healthz["rate"] / none["rate"],
                               "keptInHealthzCalls": healthz["rate"] / kept["rate"]})
        results["hitCost"] = {"rounds": hit_rounds,
                           "noFilesInHealthzCalls": statistics.median(r["noFilesInHealthzCalls"] for r in hit_rounds),
                           "keptInHealthzCalls": statistics.median(r["keptInHealthzCalls"] for r in hit_rounds)}
        print("a hit's cost in /healthz calls, by round: without files "
              + ", ".join(f"{r['noFilesInHealthzCalls']:.2f}" for r in hit_rounds) + "; kept "
              + ", ".join(f"{r['keptInHealthzCalls']:.2f}" for r in hit_rounds)
              + " (/healthz " + ", ".join(f"{r['healthz']:,.0f}" for r in hit_rounds) + "/s; without files "
              + ", ".join(f"{r['hitNoFiles']:,.0f}" for r in hit_rounds) + "/s; kept "
              + ", ".join(f"{r['hitKept']:,.0f}" for r in hit_rounds) + "/s)", flush=True)
        # The latency target is a latency at a rate: p99 while 64 connections offer the target
        # rate of cache hits. At saturation (above) the latency is the queue: 64 connections over
        # the maximum rate, by Little's law. On a service of its own (the runs above left some
        # 150,000 batch directories for the retention sweep), for 90 s: past the 60-s retention,
        # so its own sweeps (removing what it makes, as in steady operation) fall inside it.
        at_rate_base = fresh_service()
        first_call(at_rate_base, single)
        # Aimed 2 % over the target. The calibration runs are short and see no retention sweep;
        # the 90-s run does, and its latency, and so its rate, moves (3-6 % under the aim in the
        # first runs). So the run is repeated, at most twice, at a pause corrected by its own
        # latency while its rate is under the target; every attempt is kept in the results, the
        # last one is checked.
        target = thresholds["cachedRequestsPerSecondMin"]
        delay_ms, _ = calibrated_delay(f"{at_rate_base}/v1/attachments", "warm", 1.02 * target, HOT_URL=single, COLD_URL=single)
        attempts = []
        for _ in range(3):
            with Sampler(service.pid) as sampler:
                run = wrk(f"{at_rate_base}/v1/attachments", "warm", max(args.seconds, 90), HOT_URL=single, COLD_URL=single,
                          DELAY_MS=f"{delay_ms:.3f}")
            run.update({"peakPssMiB": sampler.peak_mib, "delayMs": delay_ms})
            attempts.append(run)
            if run["rate"] >= target:
                break
            delay_ms = corrected_delay(delay_ms, run["rate"], 1.02 * target)
        runs["warm64AtTarget"] = attempts[-1]
        runs["warm64AtTarget"]["attempts"] = [{k: a[k] for k in ("rate", "p50_ms", "p99_ms", "delayMs")} for a in attempts]
        # The same warm load with TMPDIR on the work directory's disk file system, for comparison
        # (reported, not a target: the README says why tmpfs).
        if args.service_tmpdir != args.work:
            disk_base = fresh_service(args.work)
            first_call(disk_base, single)
            with Sampler(service.pid) as sampler:
                runs["warm64Disk"] = wrk(f"{disk_base}/v1/attachments", "warm", args.seconds, HOT_URL=single, COLD_URL=single)
            runs["warm64Disk"]["peakPssMiB"] = sampler.peak_mib
        results["serviceTmpdir"] = {"path": args.service_tmpdir, "tmpfs": is_tmpfs(args.service_tmpdir)}
        print(f"  (service TMPDIR: {args.service_tmpdir}{', tmpfs' if is_tmpfs(args.service_tmpdir) else ''}; "
              f"warm64Disk: TMPDIR {args.work})", flush=True)
        for name, run in runs.items():
            print(f"  {name:14} {run['rate']:8.0f} req/s  p50 {run['p50_ms']:7.2f} ms  p99 {run['p99_ms']:7.2f} ms"
                  f"  {run.get('peakPssMiB', 0):6.0f} MiB  statuses {run['statuses']}  socket errors {run['socket_errors']}", flush=True)
            for attempt in run.get("attempts", [])[:-1]:
                print(f"    an earlier attempt: {attempt['rate']:.0f} req/s at a {attempt['delayMs']:.3f} ms pause, "
                      f"p99 {attempt['p99_ms']:.2f} ms", flush=True)
        results["single"] = runs

        print("300 distinct small images, uncached" + (f" (origin RTT {args.rtt_ms:g} ms)" if args.rtt_ms > 0 else ""), flush=True)
        base = fresh_service()
        results["distinct"] = distinct_images(args.bin, far, names, "http://127.0.0.1:18888", base, args.rounds, args.seconds,
                                               args.service_tmpdir, {**pids, "service": service.pid, "thumbor": thumbor.pid})
        for tool, figures in results["distinct"].items():
            print(f"  {tool:12} {figures['imagesPerSecond']:6.0f} images/s (median of {len(figures['imagesPerSecondByRound'])})", flush=True)

        print(f"soak: {args.soak_seconds} s at half the maximum of a mix (one new URL in 20, the rest cache hits)", flush=True)
        base = fresh_service()
        mix_max = wrk(f"{base}/v1/attachments", "mix", args.seconds, HOT_URL=single, COLD_URL=single)
        results["soakMaximum"] = mix_max
        results["soak"] = soak(service, f"{base}/v1/attachments", single, single, mix_max["rate"], args.soak_seconds)
        s = results["soak"]
        print(f"  maximum {mix_max['rate']:.0f} req/s; soak {s['rate']:.0f} req/s, PSS {s['pssAfterFirstMinuteMiB']:.0f} → "
              f"{s['pssAtEndMiB']:.0f} MiB ({s['pssGrowth'] * 100:+.1f} %), peak {s['peakPssMiB']:.0f} MiB, descriptors "
              f"{s['fdsMin']}–{s['fdsMax']} (end {s['fdsAtEnd']}), 5xx {s['serverErrors']}, statuses {s['statuses']}", flush=True)
    finally:
        if service is not None:
            retire_service()
        servers.close()

    runs, distinct, soaked = results["single"], results["distinct"], results["soak"]
    checks = [
        ("cached requests/s, 64 connections, saturated", runs["warm64"]["rate"], ">=", thresholds["cachedRequestsPerSecondMin"]),
        ("/healthz requests/s ÷ cached requests/s without files, 64 connections, alternating, median "
         "(a hit's cost in /healthz calls)", results["hitCost"]["noFilesInHealthzCalls"], "<=", thresholds["cachedCostInHealthzCallsMax"]),
        ("cached requests/s in the p99 run", runs["warm64AtTarget"]["rate"], ">=", thresholds["cachedRequestsPerSecondMin"]),
        ("cached p99 ms at that rate, 64 connections", runs["warm64AtTarget"]["p99_ms"], "<=", thresholds["cachedP99MsMax"]),
        ("uncached images/s ÷ thumbor", distinct["service"]["imagesPerSecond"] / distinct["thumbor"]["imagesPerSecond"], ">=",
         thresholds["uncachedVsThumborMin"]),
        ("uncached images/s ÷ thumbor, the lowest round", min(distinct["service"]["thumborRatioByRound"]), ">=",
         thresholds["uncachedVsThumborMin"]),
        ("cold p99 over the origin's, 1 connection, ms", runs["cold1"]["p99_ms"] - runs["origin1"]["p99_ms"], "<=",
         thresholds["coldP99OverOriginMsMax"]),
        ("soak PSS growth", soaked["pssGrowth"], "<=", thresholds["soakPssGrowthMax"]),
        ("soak open descriptors spread", soaked["fdsMax"] - soaked["fdsMin"], "<=", thresholds["soakDescriptorSpreadMax"]),
        ("soak 5xx", soaked["serverErrors"], "<=", 0),
        ("service exit statuses", max(map(abs, results["serviceExits"])), "<=", 0),
        ("files left by the service", len(results["serviceLeftovers"]), "<=", 0),
    ]
    results["checks"] = []
    missed = 0
    print("targets", flush=True)
    for name, value, op, bound in checks:
        met = value >= bound if op == ">=" else value <= bound
        missed += not met
        results["checks"].append({"name": name, "value": value, "bound": f"{op} {bound}", "met": met})
        print(f"  {'met   ' if met else 'MISSED'} {name}: {value:.3f} (target {op} {bound})", flush=True)
    write_results(results, f"service{rtt_suffix(args.rtt_ms)}.json")
    sys.exit(1 if missed else 0)


def rtt_suffix(rtt_ms):
    """'' at RTT 0 (the loopback reference files keep their names), else '-rttN'."""
    return f"-rtt{rtt_ms:g}" if rtt_ms > 0 else ""


def write_results(results, name):
    os.makedirs(os.path.join(HERE, "..", "results"), exist_ok=True)
    with open(os.path.join(HERE, "..", "results", name), "w") as f:
        json.dump(results, f, indent=1)
    print(f"raw numbers: Benchmarks/results/{name}", flush=True)


if __name__ == "__main__":
    main()

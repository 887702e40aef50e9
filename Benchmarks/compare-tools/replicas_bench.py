"""Harness behind Benchmarks/replicas: the campaign fan-out (10,000 notifications over 20 media
URLs) through 3 `attach-fetch serve` replicas behind nginx, publishing to a real SeaweedFS on
loopback, against 1 replica publishing to a directory, in the same run; then upload throughput to
SeaweedFS next to `curl --aws-sigv4` uploading the same files (the floor). Everything listens on
127.0.0.1. Credentials reach the replicas and curl through the environment and a 0600 file only.
Prints a table and writes Benchmarks/results/replicas.json."""
import argparse, asyncio, json, os, random, shutil, signal, statistics, subprocess, sys, tempfile, time
import aiohttp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import ff  # noqa: E402
from service_bench import start_service, stop  # noqa: E402

KEY, SECRET = "benchkey", "bench-" + "".join(random.choice("abcdef0123456789") for _ in range(32))
CONNECTIONS = 64


def free_port_block():
    """A base port below 55,536 with base..base+3 and their +10,000 (weed's gRPC) free."""
    import socket
    for _ in range(200):
        base = random.randint(20000, 45000)
        ports = [base + i for i in range(4)]
        ok = True
        for port in ports + [p + 10000 for p in ports]:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
        if ok:
            return ports
    sys.exit("no free ports")


def start_store(weed, work):
    ports = free_port_block()
    data = os.path.join(work, "weed-data")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    identities = os.path.join(work, "identities.json")
    with open(identities, "w") as f:
        json.dump({"identities": [{"name": "bench", "credentials": [{"accessKey": KEY, "secretKey": SECRET}],
                                   "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
    process = subprocess.Popen([weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}", "-s3",
                                f"-s3.port={ports[0]}", f"-master.port={ports[1]}", f"-volume.port={ports[2]}",
                                f"-filer.port={ports[3]}", f"-s3.config={identities}", "-s3.port.iceberg=0",
                                "-s3.port.lance=0", "-master.telemetry=false"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    endpoint = f"http://127.0.0.1:{ports[0]}"
    for _ in range(600):
        if curl(endpoint, ["-o", "/dev/null", "-w", "%{http_code}", f"{endpoint}/"], work) == "200":
            break
        time.sleep(0.1)
    else:
        sys.exit("SeaweedFS did not start")
    return process, endpoint, ports


def curl(endpoint, arguments, work):
    config = os.path.join(work, "curl.conf")
    if not os.path.exists(config):
        with open(os.open(config, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(f'user = "{KEY}:{SECRET}"\n')
    return subprocess.run(["curl", "-s", "-K", config, "--aws-sigv4", "aws:amz:us-east-1:s3", *arguments],
                          capture_output=True, text=True).stdout


def nginx(work, name, body):
    prefix = os.path.join(work, name)
    shutil.rmtree(prefix, ignore_errors=True)
    os.makedirs(prefix)
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(f"""daemon off; master_process off; worker_processes 1;
pid {prefix}/nginx.pid; error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{ client_body_temp_path {prefix}/b; proxy_temp_path {prefix}/p; fastcgi_temp_path {prefix}/f;
       uwsgi_temp_path {prefix}/u; scgi_temp_path {prefix}/s; {body} }}""")
    process = subprocess.Popen(["/usr/sbin/nginx", "-p", prefix, "-c", f"{prefix}/nginx.conf", "-e", f"{prefix}/error.log"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    return process, prefix


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def notify_all(base, urls):
    """Every URL once, CONNECTIONS calls at a time; (seconds, per-call latencies, answers)."""
    connector = aiohttp.TCPConnector(limit=CONNECTIONS)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        queue = list(enumerate(urls))
        latencies, answers = [0.0] * len(urls), [None] * len(urls)

        async def worker():
            while queue:
                index, url = queue.pop()
                started = time.monotonic()
                async with session.post(f"{base}/v1/attachments", json={"urls": [url]}) as response:
                    body = await response.json()
                latencies[index] = time.monotonic() - started
                answers[index] = body["attachments"][0]

        started = time.monotonic()
        await asyncio.gather(*[worker() for _ in range(CONNECTIONS)])
        return time.monotonic() - started, latencies, answers


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def store_requests(bases):
    totals = {}
    for base in bases:
        text = subprocess.run(["curl", "-s", f"{base}/metrics"], capture_output=True, text=True).stdout
        for line in text.splitlines():
            if line.startswith("attach_fetch_object_store_requests{"):
                method = line.split('method="')[1].split('"')[0]
                totals[method] = totals.get(method, 0) + int(float(line.split()[-1]))
    return totals


def fan_out(bin_dir, work, media, endpoint, replicas_count, publish, notifications, label):
    """One fan-out run: `replicas_count` replicas (behind nginx when more than one)."""
    origin_port = free_port()
    origin, origin_prefix = nginx(work, f"origin-{label}", f"""access_log {work}/origin-{label}.log;
        server {{ listen 127.0.0.1:{origin_port}; root {media}; add_header Cache-Control "max-age=3600"; }}""")
    scratch = tempfile.mkdtemp(dir=work)
    replicas = []
    env = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ENDPOINT_URL": endpoint}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        for _ in range(replicas_count):
            replicas.append(start_service(bin_dir, scratch, "--max-batches", "256", *publish))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    bases = [base for _, base in replicas]
    balancer = None
    if replicas_count > 1:
        port = free_port()
        servers = " ".join(f"server {b.removeprefix('http://')};" for b in bases)
        balancer, _ = nginx(work, f"balancer-{label}", f"""access_log off;
            upstream replicas {{ {servers} keepalive 64; }}
            server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://replicas; proxy_http_version 1.1;
                     proxy_set_header Connection ""; }} }}""")
        entry = f"http://127.0.0.1:{port}"
    else:
        entry = bases[0]
    names = sorted(os.listdir(media))
    urls = [f"http://127.0.0.1:{origin_port}/{names[i % len(names)]}" for i in range(notifications)]
    random.Random(7).shuffle(urls)
    cold_seconds, _, answers = asyncio.run(notify_all(entry, urls))
    warm_seconds, warm, _ = asyncio.run(notify_all(entry, urls))
    ready = sum(1 for a in answers if a["status"] == "ready")
    with open(f"{work}/origin-{label}.log") as log:
        origin_requests = sum(1 for _ in log)
    requests = store_requests(bases)
    for process, _ in replicas:
        stop(process)
    for process in [origin, balancer]:
        if process:
            process.kill()
            process.wait()
    return {"replicas": replicas_count, "notifications": notifications, "ready": ready, "originRequests": origin_requests,
            "storeRequests": requests, "coldPerSecond": notifications / cold_seconds, "warmPerSecond": notifications / warm_seconds,
            "warmP50Ms": percentile(warm, 0.5) * 1000, "warmP99Ms": percentile(warm, 0.99) * 1000}


def uploads(bin_dir, work, endpoint, videos):
    """MB/s publishing the same files: attach-fetch's uploads (the CLI with --publish-to less the
    same run with --publish-dir, alternated) next to curl --aws-sigv4 uploading them, 8 at a time."""
    origin_port = free_port()
    origin, _ = nginx(work, "upload-origin", f"access_log off; server {{ listen 127.0.0.1:{origin_port}; root {videos}; }}")
    names = sorted(os.listdir(videos))
    total = sum(os.path.getsize(os.path.join(videos, n)) for n in names)
    urls = [f"http://127.0.0.1:{origin_port}/{n}" for n in names]
    env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ENDPOINT_URL": endpoint}
    ours, floor = [], []
    for round_ in range(3):
        publish_dir = tempfile.mkdtemp(dir=work)
        timings = {}
        for mode in ["dir", "s3"]:
            target = (["--publish-dir", publish_dir, "--public-base", "https://cdn.example.test/"] if mode == "dir" else
                      ["--publish-to", f"s3://bench/upload-{round_}-{time.time_ns()}", "--public-base", "https://cdn.example.test/"])
            started = time.monotonic()
            subprocess.run([os.path.join(bin_dir, "attach-fetch"), "--allow-private-network", "--format", "json",
                            "--max-concurrency", "8", "--deadline", "120", "--out", tempfile.mkdtemp(dir=work), *target, *urls],
                           env=env, stdout=subprocess.DEVNULL, check=True)
            timings[mode] = time.monotonic() - started
        ours.append(total / 1e6 / max(0.001, timings["s3"] - timings["dir"]))
        started = time.monotonic()
        processes = [subprocess.Popen(["curl", "-s", "-K", os.path.join(work, "curl.conf"), "--aws-sigv4", "aws:amz:us-east-1:s3",
                                       "-T", os.path.join(videos, n), "-o", "/dev/null",
                                       f"{endpoint}/bench/floor-{round_}-{time.time_ns()}/{n}"]) for n in names]
        for p in processes:
            p.wait()
        floor.append(total / 1e6 / (time.monotonic() - started))
    origin.kill()
    origin.wait()
    return {"files": len(names), "megabytes": total / 1e6, "attachFetchMBps": statistics.median(ours),
            "curlMBps": statistics.median(floor)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--weed", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--notifications", type=int, default=10000)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    media = os.path.join(args.work, "media")
    if not os.path.exists(os.path.join(media, "u20.jpg")):
        os.makedirs(media, exist_ok=True)
        ff("-f", "lavfi", "-i", "testsrc2=size=640x480:rate=2:duration=10", "-vf", "hue=h=t*36", "-q:v", "8",
           os.path.join(media, "u%02d.jpg"))
    videos = os.path.join(args.work, "videos")
    if not os.path.exists(os.path.join(videos, "v8.mp4")):
        os.makedirs(videos, exist_ok=True)
        for i in range(1, 9):
            ff("-f", "lavfi", "-i", f"testsrc2=size=1280x720:rate=30:duration=20", "-vf", f"hue=h={i * 40}",
               "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "8M", os.path.join(videos, f"v{i}.mp4"))
    store, endpoint, _ = start_store(args.weed, args.work)
    try:
        curl(endpoint, ["-X", "PUT", f"{endpoint}/bench"], args.work)
        prefix = f"s3://bench/fanout-{time.time_ns()}"
        three = fan_out(args.bin, args.work, media, endpoint, 3, ["--publish-to", prefix, "--public-base", "https://cdn.example.test/"],
                        args.notifications, "three")
        publish_dir = tempfile.mkdtemp(dir=args.work)
        one = fan_out(args.bin, args.work, media, endpoint, 1, ["--publish-dir", publish_dir, "--public-base", "https://cdn.example.test/"],
                      args.notifications, "one")
        upload = uploads(args.bin, args.work, endpoint, videos)
    finally:
        store.kill()
        store.wait()
    result = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "threeReplicasS3": three, "oneReplicaDirectory": one,
              "upload": upload}
    print(f"{'':28}{'3 replicas + S3':>18}{'1 replica + dir':>18}")
    for key, label, fmt in [("originRequests", "origin requests", "{:.0f}"), ("ready", "ready", "{:.0f}"),
                            ("coldPerSecond", "notifications/s (cold)", "{:.0f}"),
                            ("warmPerSecond", "notifications/s (warm)", "{:.0f}"),
                            ("warmP50Ms", "warm p50 ms", "{:.1f}"), ("warmP99Ms", "warm p99 ms", "{:.1f}")]:
        print(f"{label:28}{fmt.format(three[key]):>18}{fmt.format(one[key]):>18}")
    print(f"object-store requests (3 replicas): {three['storeRequests']}")
    print(f"uploads: attach-fetch {upload['attachFetchMBps']:.0f} MB/s, curl --aws-sigv4 {upload['curlMBps']:.0f} MB/s "
          f"({upload['attachFetchMBps'] / upload['curlMBps']:.2f}x), {upload['files']} files, {upload['megabytes']:.0f} MB")
    os.makedirs(os.path.join(HERE, "..", "results"), exist_ok=True)
    with open(os.path.join(HERE, "..", "results", "replicas.json"), "w") as f:
        json.dump(result, f, indent=2)
    if three["originRequests"] != 20:
        sys.exit(f"expected 20 origin requests through 3 replicas, saw {three['originRequests']}")


if __name__ == "__main__":
    main()

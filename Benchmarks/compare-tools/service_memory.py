"""The service's memory with many batches in flight: `attach-fetch serve` (release build) and
BATCHES batches of 100 distinct URLs posted at once (`"files": "none"`) through delay_proxy.py
(100 ms round trip) to an origin serving small JPEGs (small000.jpg ... small299.jpg, as
Benchmarks/scale's nginx does). Prints the answers' statuses (503 beyond --max-batches, 64 by
default), the ready count, the wall time and the service's peak RSS (VmHWM, read every 50 ms).
Usage: service_memory.py ORIGIN_HOST:PORT BATCHES [ATTACH_FETCH_BINARY]   (Benchmarks/.venv-scale's python)"""
import asyncio, json, re, subprocess, sys, time
import aiohttp

HERE = __file__.rsplit("/", 1)[0]


async def main(upstream, batches, binary):
    proxy = subprocess.Popen([sys.executable, f"{HERE}/delay_proxy.py", "--upstream", upstream, "--rtt-ms", "100"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    origin = proxy.stdout.readline().strip()
    serve = subprocess.Popen([binary, "serve", "--port", "18954", "--allow-private-network"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:18954"
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120),
                                         connector=aiohttp.TCPConnector(limit=batches + 16)) as session:
            for _ in range(100):
                try:
                    async with session.get(f"{base}/healthz") as answer:
                        if answer.status == 200:
                            break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
            peak = 0

            async def watch():
                nonlocal peak
                while True:
                    status = open(f"/proc/{serve.pid}/status").read()
                    peak = max(peak, int(re.search(r"VmHWM:\s+(\d+)", status).group(1)))
                    await asyncio.sleep(0.05)

            async def batch(b):
                urls = [f"{origin}/small{(b * 100 + i) % 300:03d}.jpg?b={b}&i={i}" for i in range(100)]
                async with session.post(f"{base}/v1/attachments", json={"urls": urls, "files": "none"}) as answer:
                    body = await answer.read()
                    if answer.status != 200:
                        return answer.status, 0
                    return 200, sum(1 for a in json.loads(body)["attachments"] if a["status"] == "ready")

            watcher = asyncio.create_task(watch())
            start = time.monotonic()
            results = await asyncio.gather(*(batch(b) for b in range(batches)))
            wall = time.monotonic() - start
            watcher.cancel()
    finally:
        serve.terminate()
        serve.wait()
        proxy.terminate()
        proxy.wait()
    statuses = {}
    for status, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
    print(f"{batches} batches of 100: answers {statuses}, ready {sum(r for _, r in results)}, "
          f"wall {wall:.1f} s, service peak RSS {peak / 1024:.0f} MiB")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else ".build/release/attach-fetch"))

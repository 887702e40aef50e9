"""The Python baseline: asyncio + aiohttp + python-magic + pyvips doing the same job as
attach-fetch — download to a temp file, sniff, size check, thumbnail.
Usage: baseline.py URLS_FILE OUTDIR [CONNECTIONS]   (downloads at once; default 8, as
attach-fetch's CLI had; the far-origin sweep uses aiohttp's own default, 100)"""
import asyncio, os, sys
import aiohttp, magic, pyvips
from concurrent.futures import ThreadPoolExecutor

LIMITS = {"image": 10485760, "audio": 5242880, "video": 52428800}
KINDS = {"image/jpeg": "image", "image/png": "image", "image/gif": "image", "audio/mpeg": "audio",
         "audio/x-wav": "audio", "audio/x-aiff": "audio", "audio/x-m4a": "audio", "audio/mp4": "audio",
         "video/mp4": "video", "video/mpeg": "video", "video/x-msvideo": "video", "video/x-m4v": "video"}

def thumbnail(path, out_base):
    image = pyvips.Image.thumbnail(path, 320, size="down")
    ext = "png" if image.hasalpha() else "jpg"
    image.write_to_file(f"{out_base}.{ext}")

async def fetch(session, index, url, out, pool, slots):
    async with slots:
        path = os.path.join(out, f"{index}.body")
        try:
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=10, connect=5)) as response:
                if response.status != 200:
                    return f"{index} failed"
                with open(path, "wb") as f:
                    async for chunk in response.content.iter_chunked(65536):
                        f.write(chunk)
        except Exception:
            return f"{index} failed"
    kind = KINDS.get(magic.from_file(path, mime=True))
    if kind is None or os.path.getsize(path) > LIMITS[kind]:
        os.unlink(path)
        return f"{index} rejected"
    if kind == "image":
        await asyncio.get_running_loop().run_in_executor(pool, thumbnail, path, os.path.join(out, f"{index}.thumb"))
    return f"{index} ready"

async def main(urls_file, out, connections):
    urls = [line.strip() for line in open(urls_file) if line.strip()]
    slots = asyncio.Semaphore(connections)
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        async with aiohttp.ClientSession(auto_decompress=False) as session:
            results = await asyncio.gather(*(fetch(session, i, u, out, pool, slots) for i, u in enumerate(urls)))
    print("\n".join(results))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 8))

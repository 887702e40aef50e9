"""The thumbnail floor: libvips alone, one process, local files, no download.
Usage: floor_thumbnails.py OUTDIR FILE..."""
import os, sys
import pyvips
from concurrent.futures import ThreadPoolExecutor

def one(args):
    index, path = args
    image = pyvips.Image.thumbnail(path, 320, size="down")
    ext = "png" if image.hasalpha() else "jpg"
    image.write_to_file(os.path.join(sys.argv[1], f"{index}.thumb.{ext}"))

with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
    list(pool.map(one, enumerate(sys.argv[2:])))

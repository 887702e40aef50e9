#!/usr/bin/env bash
# Makes TestMedia/cases/: one small file per real-world defect found by serving other projects'
# published test corpora (see the README's "Real-world media" section). Each file reproduces one
# defect; the tests name the file and the verdict it must get. Outputs are committed, so tests
# never need these tools; run this only to change the cases.
# Usage: TestMedia/make-cases.sh   (needs: apt-get install ffmpeg python3)
set -euo pipefail
cd "$(dirname "$0")/cases"
ff() { timeout 60 ffmpeg -hide_banner -loglevel error -y "$@"; }

# --- H.264 MP4s at the frame sizes whose poster conversion overran its buffer ----------------
# libswscale's unscaled yuv420p -> rgb24 path stores past a destination of exactly
# stride x height bytes; these sizes crashed the process before the destination was padded.
for size in 2x2 8x8 10x10 12x12 24x24 40x30 8x320 200x150 312x176 14x14 16x16 64x64 320x240; do
  ff -f lavfi -i "testsrc=size=${size}:rate=5" -t 0.4 -c:v libx264 -pix_fmt yuv420p -preset veryfast -crf 30 "h264-${size}.mp4"
done
# Odd sizes cannot be 4:2:0; 4:4:4 H.264 carries them.
for size in 1x1 7x5; do
  ff -f lavfi -i "testsrc=size=${size}:rate=5" -t 0.4 -c:v libx264 -pix_fmt yuv444p -preset veryfast -crf 30 "h264-${size}.mp4"
done

# --- PNGs whose metadata chunks declare a gigabyte --------------------------------------------
# Like libpng's own "crashers" test files: a 1x1 PNG, then one chunk whose length field says
# 0x3fffffff with a few bytes behind it. libpng allocated the declared size before reading.
# png-big-text.png is the honest neighbour: a real 100 KB tEXt chunk, which must still be read.
python3 - <<'PY'
import struct, zlib
def chunk(kind, data, declared=None):
    length = len(data) if declared is None else declared
    return struct.pack(">I", length) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
idat = chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
iend = chunk(b"IEND", b"")
sig = b"\x89PNG\r\n\x1a\n"
for kind in [b"tEXt", b"zTXt", b"iTXt", b"sPLT", b"pCAL", b"sCAL", b"iCCP", b"eXIf"]:
    open("png-huge-%s.png" % kind.decode(), "wb").write(sig + ihdr + chunk(kind, b"key\x00value", declared=0x3fffffff) + idat + iend)
open("png-huge-IDAT.png", "wb").write(sig + ihdr + chunk(b"IDAT", b"\x78\x9c", declared=0x3fffffff) + iend)
open("png-big-text.png", "wb").write(sig + ihdr + chunk(b"tEXt", b"Comment\x00" + b"x" * 100_000) + idat + iend)
PY
ls -l

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
ls -l

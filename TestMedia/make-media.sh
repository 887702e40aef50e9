#!/usr/bin/env bash
# Regenerates every file in TestMedia/ from real encoders (Debian's ffmpeg, sox, libvips-tools).
# The outputs are committed, so tests never need these tools; run this only to change the corpus.
# Usage: TestMedia/make-media.sh   (needs: apt-get install ffmpeg sox libvips-tools)
set -euo pipefail
cd "$(dirname "$0")"
ff() { timeout 60 ffmpeg -hide_banner -loglevel error -y "$@"; }

# --- supported images -------------------------------------------------------
ff -f lavfi -i testsrc2=size=480x320:rate=1 -frames:v 1 -update 1 -q:v 6 photo.jpg
# 200x100 RGBA with a transparent half, so thumbnails must keep alpha (PNG out).
ff -f lavfi -i "color=c=red@0.5:size=200x100,format=rgba" -frames:v 1 -update 1 alpha.png
ff -f lavfi -i testsrc=size=160x120:rate=4:duration=1 -vf "split[a][b];[a]palettegen[p];[b][p]paletteuse" animated.gif
# A 1000x500 JPEG whose EXIF orientation is 6 (rotate 90 CW): displayed as 500x1000.
ff -f lavfi -i testsrc2=size=1000x500:rate=1 -frames:v 1 -update 1 -q:v 12 /tmp/af-landscape.jpg
cp /tmp/af-landscape.jpg rotated.jpg
python3 - <<'PY'
# Insert a minimal EXIF APP1 segment carrying Orientation=6 after SOI.
import struct
data = open("rotated.jpg", "rb").read()
assert data[:2] == b"\xff\xd8"
ifd = struct.pack(">H", 1) + struct.pack(">HHIHH", 0x0112, 3, 1, 6, 0) + struct.pack(">I", 0)
tiff = b"MM\x00\x2a" + struct.pack(">I", 8) + ifd
app1 = b"Exif\x00\x00" + tiff
seg = b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1
open("rotated.jpg", "wb").write(data[:2] + seg + data[2:])
PY
rm -f /tmp/af-landscape.jpg

# --- supported audio -------------------------------------------------------------
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -ar 22050 -c:a libmp3lame -b:a 32k tone.mp3
sox -n -r 8000 -b 16 -c 1 tone.wav synth 1 sine 440
sox -n -r 8000 -b 16 -c 1 tone.aiff synth 1 sine 440
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -ar 22050 -c:a aac -b:a 32k tone.m4a

# --- supported video -------------------------------------------------------------
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -c:v libx264 -pix_fmt yuv420p -preset veryfast -crf 35 -movflags +faststart clip.mp4
ff -f lavfi -i testsrc=size=160x120:rate=25 -t 1 -c:v mpeg2video -b:v 200k -f vob clip.mpg
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -c:v mpeg4 -q:v 10 clip.avi

# A 10-minute video (2 frames/s, a keyframe every 10 s): poster frames late in a long file.
ff -f lavfi -i testsrc=size=160x120:rate=2 -t 600 -c:v libx264 -pix_fmt yuv420p -preset veryfast -crf 40 -g 20 -movflags +faststart long.mp4
# MPEG-4 brand confusion: audio only in an "isom" MP4 (libmagic: video/mp4), video in an "M4A " file.
ff -f lavfi -i "sine=frequency=330:duration=2" -ac 1 -ar 22050 -c:a aac -b:a 32k -f mp4 audio-only.mp4
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -c:v libx264 -pix_fmt yuv420p -preset veryfast -crf 35 -brand "M4A " -f ipod video-branded.m4a
# VP9 in MP4: a container iOS takes, a codec iOS does not play (re-encoded to H.264).
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -c:v libvpx-vp9 -b:v 100k -f mp4 vp9.mp4
# An Opus voice note and a WebM (VP9 + Opus): re-encoded to AAC in .m4a and H.264 + AAC in .mp4.
ff -f lavfi -i "sine=frequency=330:sample_rate=48000" -t 2 -ac 1 -c:a libopus -b:a 16k voice.opus
ff -f lavfi -i testsrc=size=160x120:rate=10 -f lavfi -i "sine=frequency=440:sample_rate=48000" -t 1 \
   -c:v libvpx-vp9 -b:v 100k -c:a libopus -b:a 24k clip.webm
python3 - <<'PY'
import random, struct
# rotated.mp4: clip.mp4 with a display matrix turning it 90 degrees clockwise (phones do this).
data = bytearray(open("clip.mp4", "rb").read())
i = data.find(b"tkhd")
assert i > 0 and data[i + 4] == 0  # version 0
struct.pack_into(">9i", data, i + 4 + 4 + 4 * 5 + 8 + 2 * 4, 0, 65536, 0, -65536, 0, 0, 120 * 65536, 0, 1 << 30)
open("rotated.mp4", "wb").write(data)
# corrupt.mp4: clip.mp4 with its media data replaced by noise; the container still opens.
data = bytearray(open("clip.mp4", "rb").read())
j = data.find(b"mdat")
size = struct.unpack(">I", data[j - 4:j])[0]
r = random.Random(7)
for k in range(j + 4, j - 4 + size):
    data[k] = r.getrandbits(8)
open("corrupt.mp4", "wb").write(data)
PY

# --- converted when normalising (refused with it off) ------------------------------
ff -f lavfi -i testsrc2=size=160x120:rate=1 -frames:v 1 -update 1 image.webp
vips copy photo.jpg "image.heic[Q=30]" 2>/dev/null || ff -f lavfi -i testsrc2=size=160x120 -frames:v 1 -c:v hevc -f hevc image.heic
vips copy photo.jpg "image.avif[Q=40]"
ff -f lavfi -i testsrc=size=160x120:rate=5:duration=1 -c:v libwebp_anim -loop 0 -lossless 0 -q:v 50 animated.webp
ff -f lavfi -i "color=c=blue@0.5:size=200x100,format=rgba" -frames:v 1 -c:v libwebp -lossless 1 alpha.webp

# --- must be refused -------------------------------------------------------------
printf '%s\n' '%PDF-1.4' '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj' \
  '2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj' 'trailer << /Root 1 0 R >>' '%%EOF' > document.pdf
printf '%s\n' '<!DOCTYPE html>' '<html><head><title>404 Not Found</title></head>' \
  '<body><h1>Not Found</h1><p>The CDN returned an error page with status 200.</p></body></html>' > error-page.html
size=$(stat -c %s photo.jpg); head -c $((size / 2)) photo.jpg > truncated.jpg
: > empty.bin
# Fixed-seed "random" bytes, so regenerating does not churn the repository.
python3 -c "import random,sys; r=random.Random(20261122); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(8192)))" > random.bin
ls -l

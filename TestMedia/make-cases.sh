#!/usr/bin/env bash
# Makes TestMedia/cases/: one small file per real-world defect found by serving other projects'
# published test corpora (see docs/media.md, "Real-world media"). Each file reproduces one
# defect; the tests name the file and the verdict it must get. Outputs are committed, so tests
# never need these tools; run this only to change the cases.
# Usage: TestMedia/make-cases.sh   (needs: apt-get install ffmpeg libvips-tools libjpeg-turbo-progs python3)
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
# HDR: 10-bit 4:2:0 with BT.2020 primaries, HLG (H.264) and PQ with HDR10 mastering metadata
# (HEVC, tagged hvc1 as Apple plays it). The poster goes through the 10-bit path of libswscale.
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 0.4 -c:v libx264 -pix_fmt yuv420p10le -preset veryfast \
   -color_primaries bt2020 -color_trc arib-std-b67 -colorspace bt2020nc h264-hlg-10bit.mp4
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 0.4 -c:v libx265 -pix_fmt yuv420p10le -preset veryfast -tag:v hvc1 \
   -color_primaries bt2020 -color_trc smpte2084 -colorspace bt2020nc \
   -x265-params "log-level=error:hdr10=1:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400" \
   hevc-hdr10.mp4

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
# --- MP3s that libmagic cannot type from their first 4 KiB -----------------------------------
# Cover art in an ID3v2 tag (usual for music and podcasts), and zero padding before the first
# frame. libmagic sees only the tag or the zeros; ffprobe decodes all of them.
ff -f lavfi -i testsrc2=size=640x480 -frames:v 1 -q:v 2 /tmp/af-cover-small.jpg
ff -f lavfi -i testsrc2=size=1600x1200 -frames:v 1 -q:v 1 /tmp/af-cover-large.jpg
for cover in small large; do
  ff -f lavfi -i "sine=frequency=440:duration=2" -i "/tmp/af-cover-${cover}.jpg" -map 0 -map 1 \
     -c:a libmp3lame -b:a 32k -c:v copy -id3v2_version 3 -metadata:s:v title="Album cover" \
     -metadata:s:v comment="Cover (front)" "mp3-id3-cover-${cover}.mp3"
done
rm -f /tmp/af-cover-small.jpg /tmp/af-cover-large.jpg
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -ar 22050 -c:a libmp3lame -b:a 32k -write_xing 0 -id3v2_version 0 /tmp/af-bare.mp3
{ head -c 2000 /dev/zero; cat /tmp/af-bare.mp3; } > mp3-leading-padding.mp3
python3 - <<'PY'
# An ID3v2.4 tag of 6000 bytes (mostly padding, as taggers leave it), then 1000 zero bytes, then frames.
frames = open("/tmp/af-bare.mp3", "rb").read()
body = 6000 - 10
size = bytes([(body >> 21) & 0x7f, (body >> 14) & 0x7f, (body >> 7) & 0x7f, body & 0x7f])
frame = b"TIT2" + bytes([0, 0, 0, 6, 0, 0]) + b"\x03Tone"
tag = b"ID3\x04\x00\x00" + size + frame + b"\x00" * (body - len(frame))
open("mp3-id3-then-padding.mp3", "wb").write(tag + b"\x00" * 1000 + frames)
PY
rm -f /tmp/af-bare.mp3
# --- JPEGs whose scan is cut short ------------------------------------------------------------
# A 4032x3024 photo cut after 30 KB, with an ICC profile, with an EXIF segment (orientation 1),
# and with neither, each cut at the end of the file and cut with an end marker after the cut:
# each must be corruptMedia, whichever decoder path it takes.
ff -f lavfi -i testsrc2=size=4032x3024 -frames:v 1 -q:v 3 /tmp/af-photo.jpg
vips copy /tmp/af-photo.jpg "/tmp/af-photo-icc.jpg[profile=srgb,Q=90]"
python3 - <<'PY'
import struct
plain = open("/tmp/af-photo.jpg", "rb").read()
icc = open("/tmp/af-photo-icc.jpg", "rb").read()
ifd = struct.pack(">H", 1) + struct.pack(">HHIHH", 0x0112, 3, 1, 1, 0) + struct.pack(">I", 0)
app1 = b"Exif\x00\x00" + b"MM\x00\x2a" + struct.pack(">I", 8) + ifd
exif = plain[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + plain[2:]
for name, data in [("jpeg-cut-icc.jpg", icc), ("jpeg-cut-exif.jpg", exif), ("jpeg-cut-plain.jpg", plain)]:
    open(name, "wb").write(data[:30000])
    # The same scan cut short, then an end-of-image marker: libjpeg warns "premature end of
    # data segment" (no end-of-file for libvips' fail_on=error to catch) and greys the rest.
    open(name.replace(".jpg", "-eoi.jpg"), "wb").write(data[:30000] + b"\xff\xd9")
PY
rm -f /tmp/af-photo.jpg /tmp/af-photo-icc.jpg
# --- JPEGs with chroma subsampling TurboJPEG cannot classify ---------------------------------
# libjpeg (cjpeg) writes them, libvips and ffmpeg decode them; the fast path must hand them on.
ff -f lavfi -i testsrc2=size=480x320 -frames:v 1 /tmp/af-source.ppm
for sampling in 1x3 3x2; do
  cjpeg -sample "${sampling},1x1,1x1" -quality 85 /tmp/af-source.ppm > "jpeg-sampling-${sampling}.jpg"
done
rm -f /tmp/af-source.ppm
# --- An animated GIF whose last frame does not decode -----------------------------------------
# TestMedia/animated.gif with the LZW data of its last frame scrambled: frame 0 is fine.
python3 - <<'PY'
data = bytearray(open("../animated.gif", "rb").read())
# Image descriptors (0x2C) that follow a graphic control extension (21 F9 04 .. .. .. .. 00).
frames = [i for i in range(8, len(data) - 10) if data[i] == 0x2C and data[i - 1] == 0 and data[i - 8] == 0x21]
last = frames[-1]
start = last + 10 + (3 * 2 ** ((data[last + 9] & 7) + 1) if data[last + 9] & 0x80 else 0) + 1
for k in range(start + 1, min(start + 200, len(data) - 2)):
    data[k] = (data[k] * 7 + 13) & 0xFF
open("gif-bad-last-frame.gif", "wb").write(data)
PY
# --- Audio and video verdicts ------------------------------------------------------------------
# An MPEG program stream holding only AC-3 audio (no video: not a video attachment).
ff -f lavfi -i "sine=frequency=440:duration=1" -c:a ac3 -f vob mpeg-ps-ac3-only.mpg
# Encrypted MP4 (CENC, AES-CTR): the container opens, no device can decrypt the samples.
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 0.5 -c:v libx264 -pix_fmt yuv420p -preset veryfast \
   -encryption_scheme cenc-aes-ctr -encryption_key 00112233445566778899aabbccddeeff \
   -encryption_kid 00112233445566778899aabbccddeeff mp4-cenc.mp4
# 320x240 H.264 whose bitstream says 27:64 pixels while the container's pasp box says 1:1
# (as two Samsung slow-motion files do): players follow the container, so 320x240.
ff -f lavfi -i testsrc=size=320x240:rate=10 -t 0.5 -vf setsar=27/64 -c:v libx264 -pix_fmt yuv420p -preset veryfast /tmp/af-sar.mp4
python3 - <<'PY'
import struct
d = bytearray(open("/tmp/af-sar.mp4", "rb").read())
i = d.find(b"pasp")
struct.pack_into(">II", d, i + 4, 1, 1)
open("mp4-pasp-square.mp4", "wb").write(d)
# Codecs FFmpeg has no decoder for: the sample entry's four-character code renamed to MPEG-H 3D
# audio (its esds box renamed too, so it is not read as AAC) and to VVC video (FFmpeg on
# Debian 12 knows neither).
a = open("../tone.m4a", "rb").read()
open("m4a-mpegh-codec.m4a", "wb").write(a.replace(b"mp4a", b"mha1", 1).replace(b"esds", b"free", 1))
v = open("../clip.mp4", "rb").read()
i = v.find(b"avc1", v.find(b"stsd"))
open("mp4-vvc-codec.mp4", "wb").write(v[:i] + b"vvc1" + v[i + 4:])
# An AVIF whose ispe box declares 17000x17000 (over libheif's security limit and the pixel budget).
f = bytearray(open("../image.avif", "rb").read())
i = f.find(b"ispe")
struct.pack_into(">II", f, i + 8, 17000, 17000)
open("avif-17000.avif", "wb").write(f)
# Found by the fuzzer: an ispe box of 2^32-1 x 2^32-1 (the area overflowed a 64-bit product and
# trapped), and a box whose 64-bit "largesize" runs to 2^63 (the offset sum overflowed).
struct.pack_into(">II", f, i + 8, 0xFFFFFFFF, 0xFFFFFFFF)
open("avif-ispe-overflow.avif", "wb").write(f)
g = bytearray(open("../image.avif", "rb").read())
j = g.find(b"meta") - 4
box = struct.pack(">I", 1) + b"free" + struct.pack(">Q", (1 << 63) - 8)
open("avif-largesize.avif", "wb").write(bytes(g[:j]) + box + bytes(g[j:]))
PY
rm -f /tmp/af-sar.mp4
# --- A JPEG with junk bytes before a marker ---------------------------------------------------
# libjpeg warns ("extraneous bytes before marker") and decodes it; so do libvips and ffmpeg, and
# so do devices: it must be delivered, on the fast path's account as on libvips'.
python3 - <<'PY'
data = open("../photo.jpg", "rb").read()
i = data.find(b"\xff\xdb")
open("jpeg-extraneous-bytes.jpg", "wb").write(data[:i] + b"\x00\x11\x22\x33\x44" + data[i:])
PY
# --- Containers iOS refuses whose streams MPEG-4 carries: remuxed when converting -------------
# QuickTime (what iPhones record) with H.264 and AAC;
# 3GPP and 3GPP2 as older Android phones and MMS gateways send them; and a QuickTime file with
# ProRes, which MPEG-4 cannot carry without re-encoding.
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -f lavfi -i "sine=duration=1" -c:v libx264 -pix_fmt yuv420p \
   -preset veryfast -crf 35 -c:a aac -b:a 32k -shortest -f mov mov-h264-aac.mov
ff -f lavfi -i testsrc=size=176x144:rate=10 -t 1 -f lavfi -i "sine=duration=1:sample_rate=8000" -c:v libx264 \
   -pix_fmt yuv420p -preset veryfast -crf 35 -c:a aac -ar 8000 -ac 1 -b:a 16k -shortest -f 3gp video.3gp
ff -f lavfi -i testsrc=size=176x144:rate=10 -t 1 -c:v libx264 -pix_fmt yuv420p -preset veryfast -crf 35 -f 3g2 video.3g2
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 0.3 -c:v prores -f mov mov-prores.mov
# 3GPP2 from a KDDI phone: major brand "kddi", which libmagic does not know ("ISO Media",
# application/octet-stream); the compatible brand "3g2a" says what it is. ffmpeg writes the
# compatible brands "kddi isom iso2": the last two are overwritten in place (same size, so no
# offset moves) with "3g2a kddi".
ff -f lavfi -i testsrc=size=176x144:rate=10 -t 1 -f lavfi -i "sine=duration=1:sample_rate=8000" -c:v libx264 \
   -pix_fmt yuv420p -preset veryfast -crf 35 -c:a aac -ar 8000 -ac 1 -b:a 16k -shortest -brand kddi -f 3g2 video-kddi.3g2
python3 - <<'PY'
data = bytearray(open("video-kddi.3g2", "rb").read())
assert data[4:12] == b"ftypkddi" and data[20:28] == b"isomiso2", data[:32]
data[20:28] = b"3g2akddi"
open("video-kddi.3g2", "wb").write(bytes(data))
PY
# --- Ordinary files phones and CDNs make, refused before -------------------------------------
# An iPhone-style QuickTime movie: H.264 + AAC with a timed-metadata track (the timecode track
# ffmpeg writes, its sample entry and handler renamed to Apple's "mebx"/"meta") and two frames at
# one instant (variable frame rate: the video's stts gets a zero delta), which the MPEG-4 muxer
# refused as "Invalid argument" until timestamps were ordered as ffmpeg -c copy orders them.
# Beside it, a movie with a timecode track and a subtitle track: both are dropped.
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -f lavfi -i "sine=duration=1" -c:v libx264 -bf 0 -pix_fmt yuv420p \
   -preset veryfast -crf 35 -c:a aac -b:a 32k -shortest -timecode 01:00:00:00 -f mov /tmp/af-tmcd.mov
printf '1\n00:00:00,000 --> 00:00:00,900\nHello\n' > /tmp/af-subs.srt
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -f lavfi -i "sine=duration=1" -i /tmp/af-subs.srt -map 0 -map 1 -map 2 \
   -c:v libx264 -pix_fmt yuv420p -preset veryfast -crf 35 -c:a aac -b:a 32k -c:s mov_text -shortest \
   -timecode 01:00:00:00 -f mov mov-tmcd-subtitles.mov
python3 - <<'PY'
import struct
data = open("/tmp/af-tmcd.mov", "rb").read()
containers = {b"moov", b"trak", b"mdia", b"minf", b"stbl"}
state = {"stts": False}
def rebuild(buf):
    out, i = b"", 0
    while i < len(buf):
        size, kind = struct.unpack(">I4s", buf[i:i + 8])
        body = buf[i + 8:i + size]
        if kind in containers:
            body = rebuild(body)
        elif kind == b"stts" and not state["stts"]:   # the first track: the video
            state["stts"] = True
            count, delta = struct.unpack(">II", body[8:16])
            entries = [(count // 2, delta), (1, 0), (count - count // 2 - 1, delta)]
            body = body[:4] + struct.pack(">I", len(entries)) + b"".join(struct.pack(">II", *e) for e in entries)
        elif kind == b"hdlr" and body[8:12] == b"tmcd":
            body = body[:8] + b"meta" + body[12:]
        elif kind == b"stsd" and body[12:16] == b"tmcd":
            body = body[:12] + b"mebx" + body[16:]
        out += struct.pack(">I", len(body) + 8) + kind + body
        i += size
    return out
open("mov-mebx-vfr.mov", "wb").write(rebuild(data))   # moov follows mdat: no chunk offset moves
PY
rm -f /tmp/af-tmcd.mov /tmp/af-subs.srt
# MPEG transport streams (HLS segments): H.264 + AAC, HEVC + AAC, and H.264 + MPEG-1 Layer II
# audio (MPEG-4 carries MP2, but iOS does not play it: refused, saying so).
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -f lavfi -i "sine=duration=1" -c:v libx264 -pix_fmt yuv420p \
   -preset veryfast -crf 35 -c:a aac -b:a 32k -shortest -f mpegts ts-h264-aac.ts
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -f lavfi -i "sine=duration=1" -c:v libx265 -x265-params log-level=error \
   -pix_fmt yuv420p -preset veryfast -crf 35 -c:a aac -b:a 32k -shortest -f mpegts ts-hevc-aac.ts
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -f lavfi -i "sine=duration=1" -c:v libx264 -pix_fmt yuv420p \
   -preset veryfast -crf 35 -c:a mp2 -b:a 64k -shortest -f mpegts ts-h264-mp2.ts
# MP3s libmagic names "data": a capture that starts in the middle of a frame; two ID3v2 tags in
# a row; an ID3v2.3 tag with unsynchronised frames whose size field counts the bytes before
# unsynchronisation (as some taggers write it), so the tag runs past its declared end.
ff -f lavfi -i "sine=frequency=440:duration=2" -ac 2 -ar 44100 -c:a libmp3lame -b:a 128k -write_xing 0 -id3v2_version 0 /tmp/af-frames.mp3
tail -c +101 /tmp/af-frames.mp3 > mp3-raw-midframe.mp3
ff -f lavfi -i testsrc2=size=320x240 -frames:v 1 -q:v 2 /tmp/af-cover.jpg
python3 - <<'PY'
import struct
frames = open("/tmp/af-frames.mp3", "rb").read()
cover = open("/tmp/af-cover.jpg", "rb").read()
def syncsafe(n): return bytes([(n >> 21) & 0x7f, (n >> 14) & 0x7f, (n >> 7) & 0x7f, n & 0x7f])
def frame(fid, data): return fid + struct.pack(">I", len(data)) + b"\x00\x00" + data
def unsynchronise(b):
    out = bytearray()
    for i, byte in enumerate(b):
        out.append(byte)
        if byte == 0xFF and (i + 1 == len(b) or b[i + 1] == 0 or b[i + 1] >= 0xE0): out.append(0)
    return bytes(out)
body = frame(b"TIT2", b"\x00Tone") + frame(b"APIC", b"\x00image/jpeg\x00\x03\x00" + cover)
unsync = unsynchronise(body)
assert len(unsync) > len(body) + 8
open("mp3-id3v23-unsync.mp3", "wb").write(b"ID3\x03\x00\x80" + syncsafe(len(body)) + unsync + frames)
first = frame(b"TIT2", b"\x00One")
open("mp3-two-id3-tags.mp3", "wb").write(b"ID3\x03\x00\x00" + syncsafe(len(first)) + first
                                          + b"ID3\x04\x00\x00" + syncsafe(len(body)) + body + frames)
PY
rm -f /tmp/af-frames.mp3 /tmp/af-cover.jpg
# A fragmented MP4 (as CDNs and DASH packagers write) whose major and compatible brands are all
# unknown: libmagic says "ISO Media", application/octet-stream.
ff -f lavfi -i testsrc=size=160x120:rate=10 -t 1 -f lavfi -i "sine=duration=1" -c:v libx264 -pix_fmt yuv420p \
   -preset veryfast -crf 35 -c:a aac -b:a 32k -shortest -movflags frag_keyframe+empty_moov mp4-fragmented-unknown-brands.mp4
python3 - <<'PY'
import struct
data = bytearray(open("mp4-fragmented-unknown-brands.mp4", "rb").read())
size = struct.unpack(">I", data[:4])[0]
data[8:12] = b"abcd"
for offset in range(16, size, 4): data[offset:offset + 4] = b"zzzz"
open("mp4-fragmented-unknown-brands.mp4", "wb").write(data)
PY
# A 400-frame animation (472x298, a box moving across): 225 MB of RGBA frames in all, over
# libvips' 100 MB disc threshold.
ff -f lavfi -i "color=c=navy:size=472x298:rate=25,drawbox=x='mod(t*100,440)':y=100:w=32:h=32:color=yellow:t=fill" \
   -frames:v 400 -gifflags +transdiff gif-400-frames.gif
# A PNG with an unknown ancillary chunk before IHDR: libmagic says "data", libpng reads it.
python3 - <<'PY'
import struct, zlib
png = open("../alpha.png", "rb").read()
chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
open("png-chunk-before-ihdr.png", "wb").write(png[:8] + chunk(b"fAKE", b"an unknown ancillary chunk") + png[8:])
PY
# --- Audio whose header states an impossible rate ----------------------------------------------
# A Monkey's Audio header (version 3.96) whose WAV header states 380,077,556 samples a second
# (found by scripts/fuzz.sh): libswresample took seconds and a gigabyte to build its filter.
python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(
  "4d414320780fd00716000200f485a716a92e2c000000000001000000c07a0200000000000100000052494646"
  "24eb090057415645666d7420100000000100020044ac000010b10200840010006461746100eb0900580000005c"
  "636861707465720000010000000000"))' > ape-rate-380mhz.ape
ls -l

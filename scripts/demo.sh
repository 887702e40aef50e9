#!/usr/bin/env bash
# The README's first command: installs what building needs when missing (not the test-only
# tools: scripts/test.sh installs those), builds, serves TestMedia on a loopback
# port and runs attach-fetch against it, showing the descriptors.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build-only
# The build scripts/test.sh makes (no debug information), so that either command reuses the other's.
swift build -debug-info-format none
bin="$(swift build --show-bin-path)"

url_file="$(mktemp)"
out_dir="$(mktemp -d)"
"$bin/loopback-media-server" TestMedia > "$url_file" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true; rm -f "$url_file"' EXIT
for _ in $(seq 50); do [ -s "$url_file" ] && break; sleep 0.1; done
base="$(head -n 1 "$url_file")"
echo "TestMedia is served at $base (loopback only)"
echo

# Every supported type, the formats converted to one (WebP, HEIC, AVIF; an Opus voice note, a
# WebM and VP9 in MPEG-4 transcoded), MPEG-4 typed by its streams, then inputs that must be
# refused, each for its own reason.
urls=()
for f in photo.jpg rotated.jpg alpha.png animated.gif tone.mp3 tone.wav tone.aiff tone.m4a clip.mp4 clip.mpg clip.avi \
         image.webp animated.webp image.heic image.avif audio-only.mp4 voice.opus clip.webm vp9.mp4 \
         document.pdf truncated.jpg corrupt.mp4 empty.bin; do
  urls+=("$base/media/$f")
done
urls+=("$base/media/photo.jpg?type=text/plain")          # wrong Content-Type: the bytes decide
urls+=("$base/media/error-page.html?type=image/jpeg")    # an HTML error page posing as a JPEG
urls+=("$base/synth/photo.jpg?bytes=30000000&length=none") # 30 MB "image": re-encoded to fit 10 MiB
urls+=("$base/synth/photo.jpg?bytes=60000000&length=none") # 60 MB "image": cut off at the 40 MiB source limit
urls+=("$base/status/404" "$base/redirect/9/media/photo.jpg" "ftp://example.invalid/a.jpg")
urls+=("$base/stall/clip.mp4")                           # never finishes: timed out by the stall detector

# Where the kernel has no Landlock (before Linux 5.13, many containers), attach-fetch refuses
# to start its decoders unless told to run them without it: the demo says so and does.
landlock=(); abi=$(python3 -c 'import ctypes; l = ctypes.CDLL(None); l.syscall.restype = ctypes.c_long; print(l.syscall(444, None, 0, 1))' 2>/dev/null || echo 0)
if [ "${abi:-0}" -lt 1 ]; then
  echo "This kernel has no Landlock: the demo runs the decoders without it (--decoders-without-landlock, docs/security.md)." >&2
  landlock=(--decoders-without-landlock)
fi

set +e
"$bin/attach-fetch" "${landlock[@]}" --allow-private-network --format table --deadline 10 --out "$out_dir" "${urls[@]}"
status=$?
set -e
echo
echo "One descriptor as JSON (clipped thumbnail of the left half):"
mkdir "$out_dir/clipped"
"$bin/attach-fetch" "${landlock[@]}" --allow-private-network --format json --clip 0,0,0.5,1 --out "$out_dir/clipped" "$base/media/rotated.jpg" \
  | sed 's/^/  /' || true
echo
echo "attach-fetch exited $status (1 = some attachments were not ready, as intended here). Files: $out_dir"

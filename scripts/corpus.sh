#!/usr/bin/env bash
# Assembles the real-world corpus: other projects' published test files, fetched with ordinary
# package clients (CI can reach them), checked file by file against the committed manifest.
#   - Pillow's source distribution (its Tests/images: about 1,000 images, good, odd and broken),
#     downloaded with pip;
#   - mutagen's source distribution (its tests/data: 99 audio and video files — MP3s with odd
#     ID3 tags, M4A/M4B/MP4, AIFF, WAV, AAC, and formats Apple's table does not list), with pip;
#   - puremagic's source distribution (its test/resources: 53 files, one of each format it
#     sniffs: 3G2, AVI, FLV, MKV, MP4, MPEG-PS, WMV, AAC, AIFF, MP3, WAV, images, and non-media
#     such as archives, office documents, disk images and an .exe), with pip;
#   - pymediainfo's source distribution (its tests/data: 15 files: small MP4s, an MKV, an FLV,
#     HE-AACv2 ADTS, a 72-byte MP3, an MP3 with cover art, and the XML it compares), with pip;
#   - filetype's source distribution (its tests/fixtures: 26 files: a QuickTime .mov, MP4, M4A,
#     HEIC, AVIF, JPEG 2000, GIF, PNG, JPEG, TIFF, and office and archive formats), with pip;
#   - mediafile's source distribution (its test/rsrc: 66 files, each audio format as empty,
#     full, with cover art and with unparseable tags: MP3, M4A and ALAC, OGG, Opus, FLAC, WAV,
#     AIFF, APE, WavPack, Musepack, DSF, WMA; and three tiny images), with pip (0.13.0: its
#     last release that ships them);
#   - TestMedia/ and TestMedia/cases/ (ours: every audio and video case, and each defect found).
# The files land flattened (a/b.png -> SOURCE__a__b.png; characters other than letters, digits,
# '.', '_' and '-' become '_') in .corpus/files/, served as they are by the tests.
# Usage: scripts/corpus.sh            fetch (if needed), verify, flatten
#        scripts/corpus.sh --manifest rewrite Tests/Corpus/manifest.tsv from what was fetched
set -euo pipefail
cd "$(dirname "$0")/.."
pillow_version=12.0.0
mutagen_version=1.47.0
puremagic_version=1.30
pymediainfo_version=7.0.1
filetype_version=1.2.0
mediafile_version=0.13.0
# The source distributions are downloaded once per user (beside the Python environments,
# scripts/python-env.sh) and checked, file by file, on every run.
cache="${ATTACH_FETCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/attach-fetch}/corpus"
files=.corpus/files
unpacked=.corpus/unpacked
manifest=Tests/Corpus/manifest.tsv
mkdir -p "$cache" "$unpacked"

pip=(python3 -m pip)
if ! "${pip[@]}" --version >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-pip >/dev/null
fi
sdist="$cache/pillow-$pillow_version.tar.gz"
if [ ! -s "$sdist" ]; then
  # --no-binary pillow: the source distribution (the wheels carry no test images); build
  # dependencies still come as wheels. pip only reads the package's metadata; nothing is built.
  "${pip[@]}" download --quiet --no-deps --no-binary pillow "pillow==$pillow_version" -d "$cache"
fi

mutagen_sdist="$cache/mutagen-$mutagen_version.tar.gz"
if [ ! -s "$mutagen_sdist" ]; then
  "${pip[@]}" download --quiet --no-deps --no-binary mutagen "mutagen==$mutagen_version" -d "$cache"
fi

# The other sources: NAME VERSION TEST-DATA-DIRECTORY (in the source distribution).
others=(
  "puremagic $puremagic_version test/resources"
  "pymediainfo $pymediainfo_version tests/data"
  "filetype $filetype_version tests/fixtures"
  "mediafile $mediafile_version test/rsrc"
)
for other in "${others[@]}"; do
  read -r name version _ <<< "$other"
  if [ ! -s "$cache/$name-$version.tar.gz" ]; then
    "${pip[@]}" download --quiet --no-deps --no-binary "$name" "$name==$version" -d "$cache"
  fi
done

rm -rf "$files" "$unpacked/pillow" "$unpacked/mutagen"
mkdir -p "$files" "$unpacked/pillow" "$unpacked/mutagen"
tar -xzf "$sdist" -C "$unpacked/pillow" --wildcards "pillow-$pillow_version/Tests/images/*"
tar -xzf "$mutagen_sdist" -C "$unpacked/mutagen" --wildcards "mutagen-$mutagen_version/tests/data/*"
flatten() { # SOURCE-NAME ROOT: copies every regular file under ROOT into $files, flattened
  # Byte by byte, whatever the locale (pymediainfo's accentu\xc3\xa9.txt -> accentu__.txt).
  local LC_ALL=C
  local source=$1 root=$2
  (cd "$root" && find . -type f ! -name '*.sh' -printf '%P\n') | LC_ALL=C sort | while IFS= read -r path; do
    local name="${source}__${path//\//__}"
    cp "$root/$path" "$files/${name//[^A-Za-z0-9._-]/_}"
  done
}
flatten pillow "$unpacked/pillow/pillow-$pillow_version/Tests/images"
flatten mutagen "$unpacked/mutagen/mutagen-$mutagen_version/tests/data"
for other in "${others[@]}"; do
  read -r name version data <<< "$other"
  rm -rf "${unpacked:?}/$name" && mkdir -p "$unpacked/$name"
  tar -xzf "$cache/$name-$version.tar.gz" -C "$unpacked/$name" --wildcards "$name-$version/$data/*"
  flatten "$name" "$unpacked/$name/$name-$version/$data"
done
flatten testmedia TestMedia

# The manifest: source, path (flattened name) and SHA-256 of every fetched file (TestMedia is
# in this repository already).
listing() { # one sha256sum for them all: a process per file cost more than the hashing
  (cd "$files" && LC_ALL=C ls | grep -v '^testmedia__' | tr '\n' '\0' | xargs -0 sha256sum --) \
    | LC_ALL=C sort -k2 | while read -r sum name; do printf '%s\t%s\t%s\n' "${name%%__*}" "$name" "$sum"; done
}
if [ "${1:-}" = "--manifest" ]; then
  { printf 'source\tpath\tsha256\n'; listing; } > "$manifest"
  echo "wrote $manifest ($(($(wc -l < "$manifest") - 1)) files)"
  exit 0
fi
if ! diff <(tail -n +2 "$manifest") <(listing) > .corpus/manifest.diff; then
  echo "the corpus differs from $manifest (see .corpus/manifest.diff)" >&2
  head -n 20 .corpus/manifest.diff >&2
  exit 1
fi
echo "corpus: $(ls "$files" | wc -l) files in $files, as the manifest says"

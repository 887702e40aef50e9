# Sourced by the scripts that need a Python environment of their own (install-deps.sh for
# SeaweedFS, browser-tests.sh, api-tests.sh). Each environment lives once per user, in
# ${ATTACH_FETCH_CACHE:-${XDG_CACHE_HOME:-~/.cache}/attach-fetch}/, named by what it pins; the
# repository's .venv-NAME is a link to it. A second clone, or a clean one, finds it there ready
# instead of installing the same pinned packages again.
#
#   python_env NAME KEY-FILE...   links .venv-NAME to the environment for those files' contents
#                                 (and this python3's version); returns 0 if it is ready, 1 if it
#                                 is new (the caller installs into it, then calls python_env_ready);
#                                 sets python_env_dir to its real path, which the caller's pip
#                                 must run from (pip writes its own path into the scripts it
#                                 installs, and a clone's link may go away)
#   python_env_ready NAME         marks it complete
attach_fetch_cache="${ATTACH_FETCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/attach-fetch}"

python_env() {
  local name=$1
  shift
  local key
  key=$( { echo "layout 2"; python3 --version; cat "$@"; } | sha256sum | cut -c1-16)
  local target="$attach_fetch_cache/venv-$name-$key"
  python_env_dir=$target
  mkdir -p "$attach_fetch_cache"
  # A real directory from before (or a stale link) gives way to the link.
  if [ "$(readlink ".venv-$name" 2>/dev/null)" != "$target" ]; then rm -rf ".venv-$name" && ln -s "$target" ".venv-$name"; fi
  [ -e "$target/.complete" ] && return 0
  # Unfinished (an install cut short): start it again.
  rm -rf "$target" && python3 -m venv "$target"
  return 1
}

python_env_ready() {
  touch ".venv-$1/.complete"
}

#!/usr/bin/env bash
# The inspector page's browser tests: Selenium drives Debian's headless Chromium (through
# /usr/bin/chromedriver, never a downloaded driver) against `attach-fetch serve` on 127.0.0.1.
# Expects `swift build` done already (scripts/test.sh runs it first) and uses .build/debug/attach-fetch.
# Needs the apt packages chromium, chromium-driver, python3-venv and libvips-tools
# (scripts/install-deps.sh). Python packages go into .venv-browser (scripts/python-env.sh).
# Extra arguments go to pytest, e.g. scripts/browser-tests.sh -k token.
# ATTACH_FETCH_SCREENSHOTS=DIR saves inspector-360.png and inspector-1440.png there.
# --prepare (as the only argument): only install the Python packages (scripts/test.sh does it
# while it builds).
set -euo pipefail
cd "$(dirname "$0")/.."

prepare() {
  # scripts/test.sh has just run the --prepare step.
  [ "${ATTACH_FETCH_PYTHON_READY:-}" = 1 ] && [ -x .venv-browser/bin/python ] && return
  . scripts/python-env.sh
  local axe=axe-playwright-python==0.1.8
  python_env browser Tests/Browser/requirements.txt <(echo "$axe") && return
  "$python_env_dir/bin/python" -m pip install -q --disable-pip-version-check -r Tests/Browser/requirements.txt
  # Only axe-core's bundled axe.min.js is used: Playwright is never installed.
  "$python_env_dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$axe"
  python_env_ready browser
}
if [ "${1:-}" = --prepare ]; then prepare; exit 0; fi

missing=0
for file in .build/debug/attach-fetch /usr/bin/chromium /usr/bin/chromedriver; do
  if [ ! -x "$file" ]; then
    echo "browser-tests: $file is missing" >&2
    missing=1
  fi
done
if [ "$missing" -ne 0 ]; then
  echo "browser-tests: run swift build for .build/debug/attach-fetch, and scripts/install-deps.sh for chromium and chromium-driver" >&2
  exit 1
fi
command -v vips >/dev/null || { echo "browser-tests: the vips command is missing (apt: libvips-tools)" >&2; exit 1; }

export SE_AVOID_STATS=true   # Selenium sends no usage statistics
prepare
exec .venv-browser/bin/python -m pytest -q -p no:cacheprovider Tests/Browser "$@"

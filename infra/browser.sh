#!/usr/bin/env bash
# Makes sure the browser the dashboard's tests drive is on the machine: Debian's `chromium`
# (playwright-core drives it; no browser download of Playwright's own, which this network
# cannot fetch). Idempotent: does nothing when it is there. Prints the path on stdout.
#
# CHROMIUM_PATH names another binary (e.g. a developer's Chrome); it is then only checked.
set -euo pipefail

bin="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
if [ -n "${CHROMIUM_PATH:-}" ]; then
  echo "infra/browser.sh: CHROMIUM_PATH=$CHROMIUM_PATH is not an executable" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "infra/browser.sh: no $bin and no apt-get: install Chromium and set CHROMIUM_PATH" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "infra/browser.sh: installing Chromium needs root (apt-get install -y chromium)" >&2
    exit 1
  fi
fi
echo "infra/browser.sh: installing Debian's chromium (apt-get)…" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq chromium >&2
[ -x "$bin" ] || {
  echo "infra/browser.sh: apt-get installed chromium but $bin is missing" >&2
  exit 1
}
echo "$bin"

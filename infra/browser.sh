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
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
apt_root infra/browser.sh chromium
echo "infra/browser.sh: installing Debian's chromium (apt-get)…" >&2
apt_install chromium
[ -x "$bin" ] || {
  echo "infra/browser.sh: apt-get installed chromium but $bin is missing" >&2
  exit 1
}
echo "$bin"

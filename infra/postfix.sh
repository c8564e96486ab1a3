#!/usr/bin/env bash
# Makes sure Debian's Postfix (and swaks, to poke it by hand) is on the machine for the delivery
# feedback e2e test (test/e2e/postfix-bounce.e2e.test.ts, SPEC §21): the test runs its own Postfix
# from a config directory of its own on a loopback high port. Idempotent: does nothing when
# Postfix is there. The package's own system service is never left running: its default instance
# is stopped and not started at boot. Prints the path of `postfix` on stdout.
set -euo pipefail

bin=/usr/sbin/postfix
if [ -x "$bin" ] && command -v swaks >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
apt_root infra/postfix.sh postfix swaks
echo "infra/postfix.sh: installing Debian's postfix and swaks (apt-get)…" >&2
export DEBIAN_FRONTEND=noninteractive
# No mail of the machine's own: the package is configured as "No configuration" (no system MTA).
echo "postfix postfix/main_mailer_type select No configuration" | $sudo debconf-set-selections
# The package must not start its service: policy-rc.d refuses it during the install.
policy=/usr/sbin/policy-rc.d
restore_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
  restore_policy=1
fi
cleanup() { if ((restore_policy)); then $sudo rm -f "$policy"; fi; }
trap cleanup EXIT
apt_install --no-install-recommends postfix swaks libio-socket-ssl-perl libnet-ssleay-perl
# Whatever the package did, its default instance is not left running, nor started at boot.
$sudo "$bin" stop >/dev/null 2>&1 || true
$sudo rm -f /etc/systemd/system/multi-user.target.wants/postfix.service
if command -v update-rc.d >/dev/null 2>&1; then $sudo update-rc.d postfix disable >/dev/null 2>&1 || true; fi
[ -x "$bin" ] || {
  echo "infra/postfix.sh: apt-get installed postfix but $bin is missing" >&2
  exit 1
}
echo "$bin"

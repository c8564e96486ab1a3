#!/usr/bin/env bash
# Makes sure swaks (Debian's SMTP test client) is on the machine: the SMTP submission tests drive it
# as a real client nobody here wrote (SPEC §22). Idempotent: does nothing when it is there.
# Prints the path on stdout.
set -euo pipefail

# STARTTLS (the submission tests' 587 path) needs swaks' TLS modules, which are only Recommends.
if bin="$(command -v swaks)" && perl -MIO::Socket::SSL -MNet::SSLeay -e 1 2>/dev/null; then
  echo "$bin"
  exit 0
fi
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
apt_root infra/swaks.sh swaks
echo "infra/swaks.sh: installing Debian's swaks (apt-get)…" >&2
apt_install swaks libio-socket-ssl-perl libnet-ssleay-perl
command -v swaks

#!/usr/bin/env bash
# Makes sure swaks (Debian's SMTP test client) is on the machine: the SMTP submission tests drive it
# as a real client nobody here wrote (SPEC §22). Idempotent: does nothing when it is there.
# Prints the path on stdout.
set -euo pipefail

if bin="$(command -v swaks)"; then
  echo "$bin"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "infra/swaks.sh: no swaks and no apt-get: install swaks" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "infra/swaks.sh: installing swaks needs root (apt-get install -y swaks)" >&2
    exit 1
  fi
fi
echo "infra/swaks.sh: installing Debian's swaks (apt-get)…" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq swaks >&2
command -v swaks

# Shared by the infra scripts that install a Debian package the tests drive (browser.sh,
# swaks.sh, postfix.sh). Source it, then call `apt_root <script> <packages…>` (sets $sudo, or
# exits naming what to install by hand) and `apt_install <packages…>`.

# Sets $sudo to "" (root) or "sudo"; exits 1 with the command to run when neither can install.
apt_root() {
  local script="$1"
  shift
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$script: no apt-get here: install $* yourself" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo="sudo"
    else
      echo "$script: installing needs root (apt-get install -y $*)" >&2
      exit 1
    fi
  fi
}

# Installs the packages quietly (progress on stderr: stdout is the script's answer). Waits up to
# 5 minutes for dpkg's lock: another apt-get on the machine (a developer's, an image's unattended
# upgrade) must delay the install, not fail it.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  local lock=(-o DPkg::Lock::Timeout=300)
  $sudo apt-get "${lock[@]}" update -qq >&2
  $sudo apt-get "${lock[@]}" install -y -qq "$@" >&2
}

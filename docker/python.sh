#!/bin/sh
# The image's Python, from the base's distribution (apt): the project needs >= 3.11.
#   rocelab-python install [--venv] [PKG...]
#       apt-get install python3 (Debian 12: 3.11) or, where the base's python3 is older
#       (Ubuntu 22.04 under p4lang/p4c), python3.11; with --venv its venv module too; and
#       PKG... in the same apt run. Links it as /usr/local/bin/rocelab-python3, the
#       interpreter the venv is made with in both stages of docker/Dockerfile.
#   rocelab-python requirements PYPROJECT EXTRA
#       the build requirements, dependencies and EXTRA's dependencies of PYPROJECT, one a
#       line (so the slow pip layer depends on pyproject.toml only, not on the sources).
set -eu

new_enough() {
  command -v "$1" >/dev/null 2>&1 \
    && "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

case "${1:-}" in
install)
  shift
  venv=
  if [ "${1:-}" = --venv ]; then venv=1; shift; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3 >/dev/null
  py=python3
  new_enough python3 || py=python3.11
  pkgs="$py"
  [ -z "$venv" ] || pkgs="$pkgs $py-venv"
  # shellcheck disable=SC2086 # word splitting of the package lists is wanted
  apt-get install -y -qq --no-install-recommends $pkgs "$@" >/dev/null
  rm -rf /var/lib/apt/lists/*
  new_enough "$py" || { echo "rocelab-python: no Python >= 3.11 in this base's apt" >&2; exit 2; }
  ln -sf "$(command -v "$py")" /usr/local/bin/rocelab-python3
  rocelab-python3 --version
  ;;
requirements)
  rocelab-python3 - "$2" "$3" <<'EOF'
import sys
import tomllib

with open(sys.argv[1], "rb") as f:
    doc = tomllib.load(f)
project = doc["project"]
for req in (doc["build-system"]["requires"] + project["dependencies"]
            + project["optional-dependencies"][sys.argv[2]]):
    print(req)
EOF
  ;;
*)
  echo "usage: rocelab-python install [--venv] [PKG...] | requirements PYPROJECT EXTRA" >&2
  exit 2
  ;;
esac

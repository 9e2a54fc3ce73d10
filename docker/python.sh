#!/bin/sh
# The image's Python, from the base's distribution (apt): the project needs >= 3.11.
#   rocelab-python install [--venv] [PKG...]
#       apt-get install python3 (Debian 12: 3.11) or, where the base's python3 is older
#       (Ubuntu 22.04 under p4lang/p4c), python3.11; with --venv its venv module too; and
#       PKG... in the same apt run. Links it as /usr/local/bin/rocelab-python3, the
#       interpreter the venv is made with in both stages of docker/Dockerfile.
#   rocelab-python requirements PYPROJECT EXTRA [SKIP...]
#       the build requirements, dependencies and EXTRA's dependencies of PYPROJECT, one a
#       line (so the slow pip layer depends on pyproject.toml only, not on the sources),
#       leaving out the distributions named in SKIP (host-side development tools the
#       image does not run: synthesis, formal, Cython, linters). A SKIP name that matches
#       nothing is an error, so a renamed requirement cannot slip back in unnoticed.
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
  # no .debs or package lists left in the layer (a debootstrap base keeps them: ~120 MB)
  apt-get clean
  rm -rf /var/lib/apt/lists/*
  new_enough "$py" || { echo "rocelab-python: no Python >= 3.11 in this base's apt" >&2; exit 2; }
  ln -sf "$(command -v "$py")" /usr/local/bin/rocelab-python3
  rocelab-python3 --version
  ;;
requirements)
  shift
  rocelab-python3 - "$@" <<'EOF'
import re
import sys
import tomllib


def name(req: str) -> str:
    # PEP 503 normalised distribution name: what comes before any version, extra or marker
    return re.sub(r"[-_.]+", "-", re.match(r"\s*([A-Za-z0-9._-]+)", req).group(1)).lower()


with open(sys.argv[1], "rb") as f:
    doc = tomllib.load(f)
project = doc["project"]
skip = {name(s) for s in sys.argv[3:]}
reqs = (doc["build-system"]["requires"] + project["dependencies"]
        + project["optional-dependencies"][sys.argv[2]])
unknown = skip - {name(r) for r in reqs}
if unknown:
    sys.exit(f"rocelab-python: SKIP names no requirement of {sys.argv[1]}: {' '.join(sorted(unknown))}")
for req in reqs:
    if name(req) not in skip:
        print(req)
EOF
  ;;
*)
  echo "usage: rocelab-python install [--venv] [PKG...] | requirements PYPROJECT EXTRA [SKIP...]" >&2
  exit 2
  ;;
esac

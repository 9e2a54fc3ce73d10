#!/bin/sh
# make docker: build docker/Dockerfile as IMAGE on BASE; with no BASE, the local base
# (make docker-base) when it exists, else p4lang/p4c:latest (needs an image registry).
#   docker/build.sh IMAGE LOCAL_BASE [BASE]
set -eu
image=$1 local_base=$2 base=${3:-}
if [ -z "$base" ]; then
  if docker image inspect "$local_base" >/dev/null 2>&1; then base=$local_base; else base=p4lang/p4c:latest; fi
fi
# pip in the build trusts the host's local CAs too (a TLS-inspecting proxy's): docker/ca/.
rm -f docker/ca/*.crt
cp /usr/local/share/ca-certificates/*.crt docker/ca/ 2>/dev/null || true
start=$(date +%s)
docker build --network host -f docker/Dockerfile --build-arg BASE="$base" -t "$image" .
echo "make docker: $image on $base in $(( $(date +%s) - start )) s," \
     "$(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}')"

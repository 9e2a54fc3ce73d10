#!/bin/sh
# make docker-base: the local base for machines that cannot pull p4lang/p4c.
#   docker/make-base.sh PREFIX NAME
# Debian 12 from debootstrap (Debian's registry), imported as rocelab-debian:bookworm once,
# then docker/base.Dockerfile adds the p4c/BMv2 PREFIX (bin/, lib/, share/p4c/) as NAME.
set -eu
prefix=$1 name=$2
debian=rocelab-debian:bookworm
for tool in bin/p4c-bm2-ss bin/simple_switch_grpc share/p4c/p4include; do
  [ -e "$prefix/$tool" ] || { echo "make docker-base: $prefix/$tool is missing (BMV2_PREFIX=DIR)" >&2; exit 2; }
done
if ! docker image inspect "$debian" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || { echo "make docker-base: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
  mkdir -p build
  dir=$(mktemp -d build/debootstrap.XXXXXX)
  trap 'rm -rf "$dir"' EXIT
  debootstrap --variant=minbase bookworm "$dir/rootfs" http://deb.debian.org/debian
  printf '%s\n' 'deb http://deb.debian.org/debian bookworm main' \
    'deb http://deb.debian.org/debian bookworm-updates main' \
    'deb http://deb.debian.org/debian-security bookworm-security main' \
    > "$dir/rootfs/etc/apt/sources.list"
  rm -rf "$dir"/rootfs/var/cache/apt/archives/*.deb "$dir"/rootfs/var/lib/apt/lists/*
  tar -C "$dir/rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' - "$debian"
fi
docker build --network host -f docker/base.Dockerfile --build-arg DEBIAN="$debian" -t "$name" "$prefix"

# The local base for machines that cannot pull p4lang/p4c (no image registry reachable):
# Debian 12 from debootstrap (imported by docker/make-base.sh) plus a prebuilt p4c + BMv2
# prefix laid out where p4lang/p4c has its tools: /usr/local/bin, /usr/local/lib and
# /usr/local/share/p4c/p4include. Built by `make docker-base`; the build context is the
# prefix (BMV2_PREFIX, e.g. ../shared/refp4: bin/, lib/, share/p4c/).
ARG DEBIAN=rocelab-debian:bookworm
FROM ${DEBIAN}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG DEBIAN_FRONTEND=noninteractive

# What the binaries need at run time: the libraries the prefix's README lists (`ldd ... |
# grep 'not found'` checks below), cpp (p4c runs the C preprocessor on every program) and
# python3 for simple_switch_CLI. Versions are Debian 12's. A debootstrap root keeps the .debs
# apt fetched (no docker-clean hook as in Debian's own images): apt-get clean, same layer.
# hadolint ignore=DL3008
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libabsl20220623 libboost-iostreams1.74.0 \
      libboost-program-options1.74.0 libgmp10 libnanomsg5 libpcap0.8 libthrift-0.17.0 \
      libjsoncpp25 libxxhash0 cpp python3 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

COPY bin/ /usr/local/bin/
COPY lib/ /usr/local/lib/
COPY share/p4c/ /usr/local/share/p4c/

# Some copies of a prefix carry each shared-library symlink as a small text file naming its
# target (lib/libbmpi.so.0 holding "libbmpi.so.0.0.0"): make those links again.
WORKDIR /usr/local/lib
RUN for f in *.so*; do \
      if [ ! -L "$f" ] && [ "$(stat -c %s "$f")" -lt 256 ]; then \
        t=$(cat "$f"); \
        case $t in ''|*[!A-Za-z0-9._+-]*) ;; *) if [ -f "$t" ]; then ln -sfn "$t" "$f"; fi ;; esac; \
      fi; \
    done \
 && ! ldd /usr/local/bin/simple_switch_grpc /usr/local/bin/p4c-bm2-ss | grep 'not found' \
 && cpp --version >/dev/null \
 && p4c-bm2-ss --version \
 && simple_switch_grpc --help >/dev/null
WORKDIR /

# p4c looks for p4include beside its executable (../p4include, ../../p4include) and then in
# the share/p4c of the prefix it was configured with; this prefix was built for another
# folder, so name the folder (p4c's P4C_16_INCLUDE_PATH).
ENV P4C_16_INCLUDE_PATH=/usr/local/share/p4c/p4include

#!/bin/sh
# make docker-compose-check: start each compose switch service on veths made here and run
# tests/targets against it from the host over P4Runtime on 127.0.0.1 (root: veths).
#   docker/check_compose.sh SERVICE KIND [PYTEST_ARGS...]   e.g. switch-p4sim p4sim-grpc
set -eu
service=$1 kind=$2
shift 2
compose=docker-compose
command -v docker-compose >/dev/null || compose="docker compose"
port=${ROCELAB_GRPC_PORT:-9559}
pre=rlc$$
map="" ifs=""
cleanup() {
  $compose -p rocelab -f docker/compose.yaml --profile bmv2 rm -sf "$service" >/dev/null 2>&1 || true
  for i in 1 2 3 4; do ip link del "${pre}t$i" 2>/dev/null || true; done
}
trap cleanup EXIT
for i in 1 2 3 4; do
  ip link add "${pre}t$i" type veth peer name "${pre}s$i"
  for end in t s; do  # no IPv6: the kernel's own frames (RS, MLD) would reach the counters
    echo 1 > "/proc/sys/net/ipv6/conf/$pre$end$i/disable_ipv6"
    ip link set "$pre$end$i" mtu 9000 up
  done
  map="$map${map:+,}$i=${pre}t$i" ifs="$ifs -i $i@${pre}s$i"
done
ROCELAB_SWITCH_PORTS="$ifs" ROCELAB_GRPC_PORT=$port \
  $compose -p rocelab -f docker/compose.yaml --profile bmv2 up -d --no-build "$service"
.venv/bin/python - "$port" <<'PY'  # wait up to 60 s for the switch's gRPC port
import socket, sys, time
for _ in range(120):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()
        break
    except OSError:
        time.sleep(0.5)
else:
    sys.exit("docker/check_compose.sh: the switch never listened")
PY
.venv/bin/python -m pytest tests/targets -q -n 0 -p no:cacheprovider --target "$kind" \
  --grpc-addr "127.0.0.1:$port" --port-map "$map" "$@"

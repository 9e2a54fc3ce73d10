#!/bin/sh
# Run a command with a Docker engine up: use the running one, or (as root) start dockerd for
# the command's duration and stop it after, by the PID it was started with.
#   docker/engine.sh CMD ARGS...        e.g. docker/engine.sh docker build ...
# The engine started here has no bridge, no iptables rules, no IP forwarding and no
# masquerading: containers use the host's network (--network host) or none, so no private
# address range is ever routed off the machine.
set -eu

if docker info >/dev/null 2>&1; then
  exec "$@"
fi
if [ "$(id -u)" != 0 ] || ! command -v dockerd >/dev/null 2>&1; then
  echo "docker/engine.sh: no Docker engine is running and this user cannot start one" \
       "(as root: apt-get install docker.io)" >&2
  exit 2
fi

state=${ROCELAB_DOCKERD_STATE:-build/dockerd}
mkdir -p "$state"
log="$state/dockerd.log"
dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
        --pidfile "$state/dockerd.pid" >"$log" 2>&1 &
pid=$!
stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM

tries=0
until docker info >/dev/null 2>&1; do
  if ! kill -0 "$pid" 2>/dev/null || [ "$tries" -ge 60 ]; then
    echo "docker/engine.sh: dockerd did not start; its log ($log) ends:" >&2
    tail -n 5 "$log" >&2
    exit 2
  fi
  tries=$((tries + 1))
  sleep 0.5
done
echo "docker/engine.sh: started dockerd (pid $pid) for this command; stopped after it" >&2
"$@"

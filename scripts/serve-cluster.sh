#!/usr/bin/env bash
# Runs N `dq4 serve` replicas of one model on loopback ports behind HAProxy (Debian's haproxy):
# least-connections balancing, health checks on /health (a replica that stops answering is taken
# out within a second, one that comes back is put back), streamed responses passed through as
# they come, a request that cannot connect to a replica retried on another.
#
#   scripts/serve-cluster.sh N MODEL_DIR [-- dq4 serve options...]
#
# The balancer listens on 127.0.0.1:$PORT (default 8000), replica i on 127.0.0.1:$PORT+i.
# Environment: PORT, DQ4 (the dq4 binary; default build/dq4), CLUSTER_DIR (logs, haproxy.cfg,
# pids; default a new temporary directory). Once every replica answers /health the script writes
# $CLUSTER_DIR/ready and prints the URL; it runs until SIGINT or SIGTERM, then stops the
# balancer and sends SIGTERM to every replica (each finishes its requests and exits 0).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { echo "usage: $0 N MODEL_DIR [-- dq4 serve options...]" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
replicas=$1
model=$2
shift 2
if [[ $# -gt 0 ]]; then [[ $1 == "--" ]] || usage; shift; fi
[[ $replicas =~ ^[0-9]+$ && $replicas -ge 1 && $replicas -le 64 ]] || { echo "N must be 1 to 64" >&2; exit 2; }
port="${PORT:-8000}"
dq4="${DQ4:-$root/build/dq4}"
dir="${CLUSTER_DIR:-$(mktemp -d -t dq4-cluster.XXXXXX)}"
mkdir -p "$dir"
command -v haproxy >/dev/null || { echo "haproxy not found (scripts/install-deps.sh)" >&2; exit 2; }
[[ -x $dq4 ]] || { echo "$dq4 is not an executable (set DQ4)" >&2; exit 2; }

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -f "$dir/ready"
}
trap stop EXIT
trap 'stop; exit 0' INT TERM

: > "$dir/replica_pids"
for ((i = 1; i <= replicas; i++)); do
  "$dq4" serve "$model" --host 127.0.0.1 --port $((port + i)) "$@" >"$dir/replica$i.log" 2>&1 &
  pids+=($!)
  echo "$!" >> "$dir/replica_pids"
done

# GET /health answered 200 (bash's /dev/tcp: no other client needed).
healthy() {
  local reply
  reply=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 && head -c 12 <&3" 2>/dev/null) || return 1
  [[ $reply == "HTTP/1.1 200" ]]
}

# Every replica must come up (model loaded) before the balancer takes traffic.
for ((i = 1; i <= replicas; i++)); do
  for ((tries = 0; ; tries++)); do
    healthy $((port + i)) && break
    if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
      echo "replica $i exited; its log:" >&2
      cat "$dir/replica$i.log" >&2
      exit 1
    fi
    ((tries < 600)) || { echo "replica $i did not come up in 60 s" >&2; exit 1; }
    sleep 0.1
  done
done

{
  cat <<CFG
global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 10m
    timeout server 10m
    timeout http-request 60s
    # A request that cannot reach its replica goes to another one.
    option redispatch
    retries 2
    # Tokens are written as they come, not gathered into fuller packets.
    option http-no-delay
frontend dq4
    bind 127.0.0.1:$port
    default_backend replicas
backend replicas
    balance leastconn
    option httpchk
    http-check send meth GET uri /health ver HTTP/1.1 hdr Host localhost
    default-server inter 300ms fall 2 rise 2
CFG
  for ((i = 1; i <= replicas; i++)); do
    echo "    server replica$i 127.0.0.1:$((port + i)) check"
  done
} > "$dir/haproxy.cfg"
haproxy -c -q -f "$dir/haproxy.cfg"
haproxy -db -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 &
balancer=$!
pids+=($balancer)
echo "$balancer" > "$dir/haproxy_pid"

for ((tries = 0; ; tries++)); do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
  ((tries < 100)) || { echo "haproxy did not start; its log:" >&2; cat "$dir/haproxy.log" >&2; exit 1; }
  sleep 0.1
done
touch "$dir/ready"
echo "dq4 cluster: $replicas replicas behind http://127.0.0.1:$port (logs in $dir)"
# Replicas may come and go (the balancer routes around them); the cluster lives as long as the
# balancer does.
wait "$balancer" || true
echo "dq4 cluster: haproxy exited; stopping" >&2

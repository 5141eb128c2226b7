#!/usr/bin/env bash
# The whole lmviz cluster on this machine, 127.0.0.1 only, for trying deploy/ out and for tests:
# redis-server, N Streamlit replicas sharing classes through it, nginx in front with sticky
# sessions (deploy/nginx-lmviz.conf.template). Every port is a free one found by binding port 0.
#
#   deploy/local-cluster.sh up       start everything, print the URL
#   deploy/local-cluster.sh status   what runs (exit 0 when all of it runs, 3 otherwise)
#   deploy/local-cluster.sh down     stop exactly what `up` started (its pid files), nothing else
#
# Environment:
#   LMVIZ_CLUSTER_DIR  run folder: generated configs, pid files, logs
#                      (default ${TMPDIR:-/tmp}/lmviz-cluster-<uid>)
#   LMVIZ_REPLICAS     Streamlit replicas (default 2, at most 8)
#   LMVIZ_PYTHON       the Python that has lmviz's requirements (default .venv/bin/python, else python3)
#   LMVIZ_THREADS      torch threads per replica (default 1)
# Each replica gets LMVIZ_REPLICA=a, b, ... (for its logs only) and LMVIZ_REDIS_URL.
# Logs: $LMVIZ_CLUSTER_DIR/{replica-a.log,redis.log,nginx-access.log,nginx-error.log}.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN=${LMVIZ_CLUSTER_DIR:-${TMPDIR:-/tmp}/lmviz-cluster-$(id -u)}
N=${LMVIZ_REPLICAS:-2}
if [ -n "${LMVIZ_PYTHON:-}" ]; then PY=$LMVIZ_PYTHON
elif [ -x "$ROOT/.venv/bin/python" ]; then PY=$ROOT/.venv/bin/python
else PY=python3; fi
NAMES=(a b c d e f g h)

die() { echo "local-cluster: $*" >&2; exit 1; }
log() { echo "local-cluster: $*"; }

# the pid in a pid file when that process is alive and its command line contains $2
live_pid() {
  local f=$1 marker=$2 pid
  [ -f "$f" ] || return 1
  pid=$(tr -dc '0-9' < "$f")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$marker" || return 1
  echo "$pid"
}

# wait until URL $1 answers with a body containing $2 (at most $3 s; gives up early when the
# process $4, if given, has exited)
wait_http() {
  "$PY" - "$1" "$2" "${3:-90}" "${4:-}" <<'PY'
import os, sys, time, urllib.request
url, want, limit, pid = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
end = time.time() + limit
while time.time() < end:
    if pid and not os.path.exists(f"/proc/{pid}"):
        sys.exit(1)
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            if want in r.read().decode():
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.25)
sys.exit(1)
PY
}
wait_redis() {
  "$PY" - "$1" <<'PY'
import socket, sys, time
end = time.time() + 30
while time.time() < end:
    try:
        with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1) as s:
            s.sendall(b"PING\r\n")
            if s.recv(16).startswith(b"+PONG"):
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.1)
sys.exit(1)
PY
}

# n distinct free ports on 127.0.0.1 (all bound to port 0 at once, then released)
free_ports() {
  "$PY" - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

stop_pidfile() {   # stop_pidfile FILE MARKER SIGNAL
  local f=$1 marker=$2 sig=$3 pid i
  if pid=$(live_pid "$f" "$marker"); then
    kill "-$sig" "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
      [ -d "/proc/$pid" ] || break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped $(basename "$f" .pid) (pid $pid)"
  fi
  rm -f "$f"
}

cmd_down() {
  [ -d "$RUN" ] || { log "nothing to stop in $RUN"; return 0; }
  stop_pidfile "$RUN/nginx.pid" "nginx: master" QUIT
  local f
  for f in "$RUN"/replica-*.pid; do
    [ -e "$f" ] && stop_pidfile "$f" "streamlit" TERM
  done
  # --- Ray head: stopped here once the Ray training backend exists (see deploy/README.md) ---
  stop_pidfile "$RUN/redis.pid" "redis-server" TERM   # TERM: Redis saves its data first
  rm -f "$RUN/state"
}

cmd_status() {
  [ -f "$RUN/state" ] || { echo "down (no $RUN/state)"; return 3; }
  # shellcheck disable=SC1091
  . "$RUN/state"
  local ok=0 f name
  if live_pid "$RUN/redis.pid" "redis-server" >/dev/null; then echo "redis    up    127.0.0.1:$REDIS_PORT"
  else echo "redis    DOWN"; ok=3; fi
  for f in "$RUN"/replica-*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid); name=${name#replica-}
    if live_pid "$f" "streamlit" >/dev/null; then echo "replica  up    $name  $(cat "$RUN/replica-$name.addr")"
    else echo "replica  DOWN  $name"; ok=3; fi
  done
  if live_pid "$RUN/nginx.pid" "nginx: master" >/dev/null; then echo "nginx    up    $URL"
  else echo "nginx    DOWN"; ok=3; fi
  echo "ray      not part of the cluster yet (the Ray training backend is being built)"
  return $ok
}

cmd_up() {
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || die "nginx not found (apt-get install nginx)"
  command -v redis-server >/dev/null || die "redis-server not found (apt-get install redis-server)"
  "$PY" -c "import streamlit, redis" 2>/dev/null \
    || die "$PY lacks streamlit or redis (pip install -r requirements.txt -r requirements-cluster.txt)"
  [[ "$N" =~ ^[1-8]$ ]] || die "LMVIZ_REPLICAS must be 1..8"
  if [ -f "$RUN/state" ] && cmd_status >/dev/null; then die "already up (deploy/local-cluster.sh status)"; fi
  mkdir -p "$RUN/tmp"
  chmod 755 "$RUN"
  cmd_down >/dev/null            # leftovers of a half-started cluster
  cd "$ROOT"                     # .streamlit/config.toml is read from the working folder
  # any failure from here on (die included) stops what this run started
  trap 'rc=$?; if [ $rc -ne 0 ]; then echo "local-cluster: start failed, stopping what started" >&2; cmd_down >&2; fi' EXIT

  local ports redis_port nginx_port i name port servers=""
  read -r -a ports <<< "$(free_ports $((N + 2)))"
  redis_port=${ports[0]}; nginx_port=${ports[1]}

  # --- Redis: class state shared by the replicas (data saved in $RUN on shutdown) ---
  redis-server --port "$redis_port" --bind 127.0.0.1 --protected-mode yes --dir "$RUN" \
    --daemonize yes --pidfile "$RUN/redis.pid" --logfile "$RUN/redis.log" \
    --save "300 1" --dbfilename dump.rdb --appendonly no
  wait_redis "$redis_port" || die "redis-server did not answer (see $RUN/redis.log)"
  log "redis on 127.0.0.1:$redis_port"

  # --- Ray head: started here once the Ray training backend exists (LMVIZ_RAY_ADDRESS) ---

  # --- Streamlit replicas ---
  for ((i = 0; i < N; i++)); do
    name=${NAMES[$i]}; port=${ports[$((i + 2))]}
    # one simple command in the background, so that $! is the Streamlit process itself
    LMVIZ_REPLICA=$name LMVIZ_REDIS_URL="redis://127.0.0.1:$redis_port/0" \
      LMVIZ_THREADS=${LMVIZ_THREADS:-1} \
      nohup "$PY" -m streamlit run "$ROOT/app.py" --server.headless=true --server.port="$port" \
        --server.address=127.0.0.1 --browser.gatherUsageStats=false \
        > "$RUN/replica-$name.log" 2>&1 < /dev/null &
    echo $! > "$RUN/replica-$name.pid"
    echo "127.0.0.1:$port" > "$RUN/replica-$name.addr"
    servers+="server 127.0.0.1:$port max_fails=1 fail_timeout=10s;"$'\n    '
  done
  for ((i = 0; i < N; i++)); do
    name=${NAMES[$i]}
    wait_http "http://$(cat "$RUN/replica-$name.addr")/_stcore/health" ok 120 \
      "$(cat "$RUN/replica-$name.pid")" \
      || die "replica $name did not become healthy (see $RUN/replica-$name.log)"
    log "replica $name on $(cat "$RUN/replica-$name.addr")"
  done

  # --- nginx: the generated site file and a small main config, all inside $RUN ---
  "$PY" - "$ROOT/deploy/nginx-lmviz.conf.template" "$RUN/lmviz-site.conf" \
      "127.0.0.1:$nginx_port" "$servers" "$RUN/nginx-access.log" <<'PY'
import sys
src, dst, listen, servers, access = sys.argv[1:]
values = {"LISTEN": listen, "SERVER_NAME": "_", "UPSTREAM_SERVERS": servers.rstrip(),
          "ACCESS_LOG": access}
out = []
for line in open(src).read().splitlines(keepends=True):
    if not line.lstrip().startswith("#"):          # the header comments keep their placeholders
        for k, v in values.items():
            line = line.replace("{{" + k + "}}", v)
    out.append(line)
open(dst, "w").write("".join(out))
PY
  cat > "$RUN/nginx.conf" <<EOF
# generated by deploy/local-cluster.sh up
worker_processes 1;
pid $RUN/nginx.pid;
error_log $RUN/nginx-error.log warn;
events { worker_connections 1024; }
http {
    client_body_temp_path $RUN/tmp/body;
    proxy_temp_path $RUN/tmp/proxy;
    fastcgi_temp_path $RUN/tmp/fastcgi;
    uwsgi_temp_path $RUN/tmp/uwsgi;
    scgi_temp_path $RUN/tmp/scgi;
    include $RUN/lmviz-site.conf;
}
EOF
  nginx -t -q -p "$RUN" -e "$RUN/nginx-error.log" -c "$RUN/nginx.conf" \
    || die "nginx rejected the generated config ($RUN/nginx.conf)"
  nginx -p "$RUN" -e "$RUN/nginx-error.log" -c "$RUN/nginx.conf"
  wait_http "http://127.0.0.1:$nginx_port/_stcore/health" ok 30 || die "nginx did not answer"

  cat > "$RUN/state" <<EOF
URL=http://127.0.0.1:$nginx_port/
NGINX_PORT=$nginx_port
REDIS_PORT=$redis_port
REDIS_URL=redis://127.0.0.1:$redis_port/0
REPLICAS=$N
EOF
  trap - EXIT
  log "up: http://127.0.0.1:$nginx_port/  (run folder $RUN)"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac

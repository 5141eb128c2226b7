#!/usr/bin/env bash
# The whole lmviz cluster on this machine, 127.0.0.1 only, for trying deploy/ out and for tests:
# redis-server, a local Ray head for the trainings, N Streamlit replicas for the room and one for
# the lecturers, sharing classes through Redis and training on Ray, nginx in front with sticky
# sessions and the lecture cookie's map (deploy/nginx-lmviz.conf.template).
# Every port is a free one found by binding port 0.
#
#   deploy/local-cluster.sh up       start everything, print the URL
#   deploy/local-cluster.sh status   what runs (exit 0 when all of it runs, 3 otherwise)
#   deploy/local-cluster.sh down     stop exactly what `up` started (its pid files), nothing else
#
# Environment:
#   LMVIZ_CLUSTER_DIR  run folder: generated configs, pid files, logs
#                      (default ${TMPDIR:-/tmp}/lmviz-cluster-<uid>)
#   LMVIZ_REPLICAS     Streamlit replicas for the room, the students' (default 2, at most 8)
#   LMVIZ_LECTURE_REPLICA  1 (default): one more replica, "lecture", for the lecturers' browsers
#                      (the cookie a presenter link hands out; the room's replicas run with
#                      LMVIZ_ROLE=room); 0: lecturers share the room's replicas
#   LMVIZ_PYTHON       the Python that has lmviz's requirements (default .venv/bin/python, else python3)
#   LMVIZ_THREADS      torch threads per replica (default 1)
#   LMVIZ_RAY          1: a Ray head is required; 0: none (trainings run beside the replicas,
#                      each in a process of its own: LMVIZ_TRAIN_PROCESS, default 1);
#                      default: a Ray head when $LMVIZ_PYTHON has ray, else none (with a note)
#   LMVIZ_RAY_CPUS     CPUs of the local Ray head = concurrent trainings (default 2)
# Each replica gets LMVIZ_REPLICA=a, b, ... or lecture (for its logs only), LMVIZ_REDIS_URL,
# LMVIZ_TRUSTED_PROXIES=127.0.0.1 (nginx's address: the replica believes its X-Forwarded-For) and,
# with Ray, LMVIZ_RAY_ADDRESS (every training of every replica runs on the Ray head, 1 CPU each).
# Logs: $LMVIZ_CLUSTER_DIR/{replica-a.log,redis.log,ray.log,nginx-access.log,nginx-error.log}.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN=${LMVIZ_CLUSTER_DIR:-${TMPDIR:-/tmp}/lmviz-cluster-$(id -u)}
N=${LMVIZ_REPLICAS:-2}
if [ -n "${LMVIZ_PYTHON:-}" ]; then PY=$LMVIZ_PYTHON
elif [ -x "$ROOT/.venv/bin/python" ]; then PY=$ROOT/.venv/bin/python
else PY=python3; fi
NAMES=(a b c d e f g h)
LECTURE=${LMVIZ_LECTURE_REPLICA:-1}

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
  # the Ray head: `ray start --block` was started by `up`; TERM makes it stop the processes it
  # started (GCS, raylet, workers) -- never `ray stop`, which stops every Ray on the machine
  stop_pidfile "$RUN/ray.pid" "ray" TERM
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
  if [ -n "${RAY_ADDRESS:-}" ]; then
    if live_pid "$RUN/ray.pid" "ray" >/dev/null; then echo "ray      up    $RAY_ADDRESS"
    else echo "ray      DOWN"; ok=3; fi
  else
    echo "ray      none  (trainings run in the replicas)"
  fi
  return $ok
}

cmd_up() {
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || die "nginx not found (apt-get install nginx)"
  command -v redis-server >/dev/null || die "redis-server not found (apt-get install redis-server)"
  "$PY" -c "import streamlit, redis" 2>/dev/null \
    || die "$PY lacks streamlit or redis (pip install -r requirements.txt -r requirements-cluster.txt)"
  [[ "$N" =~ ^[1-8]$ ]] || die "LMVIZ_REPLICAS must be 1..8"
  [[ "$LECTURE" =~ ^[01]$ ]] || die "LMVIZ_LECTURE_REPLICA must be 0 or 1"
  if [ -f "$RUN/state" ] && cmd_status >/dev/null; then die "already up (deploy/local-cluster.sh status)"; fi
  mkdir -p "$RUN/tmp"
  chmod 755 "$RUN"
  cmd_down >/dev/null            # leftovers of a half-started cluster
  cd "$ROOT"                     # .streamlit/config.toml is read from the working folder
  # any failure from here on (die included) stops what this run started
  trap 'rc=$?; if [ $rc -ne 0 ]; then echo "local-cluster: start failed, stopping what started" >&2; cmd_down >&2; fi' EXIT

  local ports redis_port nginx_port i name port servers="" ray_address="" want_ray=${LMVIZ_RAY:-auto}
  if [ "$want_ray" = auto ]; then
    if "$PY" -c "import ray" 2>/dev/null; then want_ray=1
    else want_ray=0; log "no Ray head: $PY lacks ray (pip install -r requirements-cluster.txt); trainings run in the replicas"; fi
  fi
  if [ "$want_ray" = 1 ]; then "$PY" -c "import ray" 2>/dev/null || die "LMVIZ_RAY=1 but $PY lacks ray"; fi
  # the replicas: the room's a, b, ... and, with LMVIZ_LECTURE_REPLICA=1, the lecture's own
  local replicas=("${NAMES[@]:0:$N}") role=""
  if [ "$LECTURE" = 1 ]; then replicas+=(lecture); role=room; fi
  local R=${#replicas[@]} lecture_servers=""
  read -r -a ports <<< "$(free_ports $((R + 2 + 9)))"
  # the one upload limit (MB), read by the replicas here and by nginx (deploy/site_conf.py)
  local upload_mb
  upload_mb=$("$PY" -c "import sys; sys.path.insert(0, '$ROOT'); from lmviz.limits import MAX_UPLOAD_MB; print(MAX_UPLOAD_MB)")
  redis_port=${ports[0]}; nginx_port=${ports[1]}

  # --- Redis: class state shared by the replicas, persisted in $RUN: the append-only file
  # (fsync every second) keeps the classes over a crash or kill -9, not only a clean shutdown ---
  redis-server --port "$redis_port" --bind 127.0.0.1 --protected-mode yes --dir "$RUN" \
    --daemonize yes --pidfile "$RUN/redis.pid" --logfile "$RUN/redis.log" \
    --save "300 1" --dbfilename dump.rdb --appendonly yes --appendfsync everysec
  wait_redis "$redis_port" || die "redis-server did not answer (see $RUN/redis.log)"
  log "redis on 127.0.0.1:$redis_port"

  # --- Ray head: the trainings of every replica (LMVIZ_RAY_ADDRESS), 127.0.0.1, free ports ---
  if [ "$want_ray" = 1 ]; then
    local rp=("${ports[@]:$((R + 2)):9}") raybin
    raybin="$(dirname "$PY")/ray"; [ -x "$raybin" ] || raybin=$(command -v ray) || die "the ray command is missing"
    mkdir -p "$RUN/ray"
    # Ray's token authentication: a fresh secret for this cluster, given to the head, the
    # replicas and the checks below (RAY_AUTH_TOKEN_PATH), readable by this user only
    ( umask 077; "$PY" -c "import secrets; print(secrets.token_hex(32))" > "$RUN/ray-auth-token" )
    export RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH="$RUN/ray-auth-token"
    # one simple command in the background, so that $! is `ray start --block` itself
    RAY_USAGE_STATS_ENABLED=0 nohup "$raybin" start --head --block --node-ip-address=127.0.0.1 \
      --port="${rp[0]}" --node-manager-port="${rp[1]}" --object-manager-port="${rp[2]}" \
      --dashboard-agent-listen-port="${rp[4]}" \
      --dashboard-agent-grpc-port="${rp[5]}" --metrics-export-port="${rp[6]}" \
      --runtime-env-agent-port="${rp[7]}" --dashboard-port="${rp[8]}" --include-dashboard=false \
      --num-cpus="${LMVIZ_RAY_CPUS:-2}" --num-gpus=0 --disable-usage-stats --temp-dir="$RUN/ray" \
      > "$RUN/ray.log" 2>&1 < /dev/null &
    echo $! > "$RUN/ray.pid"
    ray_address="127.0.0.1:${rp[0]}"
    # the GCS port answers while `ray start` lives, then a driver sees the head's CPUs
    "$PY" - "${rp[0]}" "$(cat "$RUN/ray.pid")" <<'PY' || die "the Ray head did not start (see $RUN/ray.log)"
import os, socket, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]
end = time.time() + 90
while time.time() < end:
    if not os.path.exists(f"/proc/{pid}"):
        sys.exit(1)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.5)
sys.exit(1)
PY
    timeout 90 "$PY" -c "import ray, sys; ray.init(address='$ray_address', log_to_driver=False); \
sys.exit(0 if ray.cluster_resources().get('CPU', 0) > 0 else 1)" >> "$RUN/ray.log" 2>&1 \
      || die "the Ray head did not accept a driver (see $RUN/ray.log)"
    log "ray head on $ray_address (${LMVIZ_RAY_CPUS:-2} CPUs)"
  fi

  # --- Streamlit replicas ---
  # one class key for all replicas (signed browser ids, keyed addresses: deploy/README.md)
  ( umask 077; "$PY" -c "import secrets; print(secrets.token_hex(32))" > "$RUN/class-key" )
  local class_key
  class_key=$(cat "$RUN/class-key")
  for ((i = 0; i < R; i++)); do
    name=${replicas[$i]}; port=${ports[$((i + 2))]}
    local this_role=$role; [ "$name" = lecture ] && this_role=""
    # one simple command in the background, so that $! is the Streamlit process itself
    LMVIZ_REPLICA=$name LMVIZ_ROLE=$this_role \
      LMVIZ_REDIS_URL="redis://127.0.0.1:$redis_port/0" LMVIZ_CLASS_KEY=$class_key \
      LMVIZ_RAY_ADDRESS=$ray_address LMVIZ_THREADS=${LMVIZ_THREADS:-1} \
      LMVIZ_TRAIN_PROCESS=${LMVIZ_TRAIN_PROCESS:-1} LMVIZ_TRUSTED_PROXIES=127.0.0.1 \
      nohup "$PY" -m streamlit run "$ROOT/serve.py" --server.headless=true --server.port="$port" \
        --server.address=127.0.0.1 --browser.gatherUsageStats=false --server.maxUploadSize="$upload_mb" \
        > "$RUN/replica-$name.log" 2>&1 < /dev/null &
    echo $! > "$RUN/replica-$name.pid"
    echo "127.0.0.1:$port" > "$RUN/replica-$name.addr"
    if [ "$name" = lecture ]; then
      lecture_servers="server 127.0.0.1:$port max_fails=1 fail_timeout=10s;"
    else
      servers+="server 127.0.0.1:$port max_fails=1 fail_timeout=10s;"$'\n    '
    fi
  done
  for name in "${replicas[@]}"; do
    wait_http "http://$(cat "$RUN/replica-$name.addr")/_stcore/health" ok 120 \
      "$(cat "$RUN/replica-$name.pid")" \
      || die "replica $name did not become healthy (see $RUN/replica-$name.log)"
    log "replica $name on $(cat "$RUN/replica-$name.addr")"
  done
  # one headless visit per replica: serve.py started the warm-up (torch import, default model;
  # ui/warmup.py) with the server; the visit also runs app.py once, so the first student's run
  # finds Streamlit's caches and the page scripts ready
  local addrs=()
  for name in "${replicas[@]}"; do addrs+=("$(cat "$RUN/replica-$name.addr")"); done
  if "$PY" "$ROOT/deploy/warm.py" "${addrs[@]}"; then log "replicas warmed"
  else log "warning: a warm-up visit failed (the replicas still serve; see their logs)"; fi

  # --- nginx: the generated site file and a small main config, all inside $RUN ---
  # (nginx's body limit comes from lmviz.limits, the replicas' own upload limit)
  # (and Streamlit's frontend files, with their gzip twins, served by nginx from $RUN/frontend)
  "$PY" "$ROOT/deploy/site_conf.py" frontend "$RUN/frontend" || die "could not copy the frontend files"
  "$PY" "$ROOT/deploy/site_conf.py" "$ROOT/deploy/nginx-lmviz.conf.template" "$RUN/lmviz-site.conf" \
      "127.0.0.1:$nginx_port" "$servers" "$RUN/nginx-access.log" "$RUN/nginx-error.log" "$RUN/frontend" \
      _ "$lecture_servers"            # none: site_conf.py gives lecturers the room's replicas
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
LECTURE_REPLICA=$LECTURE
RAY_ADDRESS=$ray_address
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

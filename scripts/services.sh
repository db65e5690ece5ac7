# Start and stop the loopback services scripts/demo and the bench/ scripts
# need: a throwaway PostgreSQL cluster, redis-server and pacer-kafka-mock.
# Sourced, not run.
# Everything lives under one directory ($PACER_RUN_DIR) that the caller removes.

pacer_free_port() {
  python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

pacer_pg_bin() {
  local v
  for v in 17 16 15 14 13; do
    [ -x "/usr/lib/postgresql/$v/bin/initdb" ] && { echo "/usr/lib/postgresql/$v/bin"; return 0; }
  done
  echo "pacer: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)" >&2
  return 1
}

# As the postgres user when we are root (PostgreSQL refuses to run as root).
pacer_as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pacer_start_postgres DIR [EXTRA_SERVER_OPTIONS]: a new cluster in DIR on a free
# loopback port, database "pacer". Sets PACER_PG (a libpq conninfo) and PACER_PG_DIR.
pacer_start_postgres() {
  local dir=$1 extra=${2:-}
  local bin port
  bin=$(pacer_pg_bin) || return 1
  port=$(pacer_free_port)
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    chown postgres:postgres "$dir"
    chmod a+x "$(dirname "$dir")"  # mktemp -d makes it 0700: the postgres user must pass through
  fi
  pacer_as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 -N >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; return 1; }
  pacer_as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w -t 30 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 $extra" start >/dev/null ||
    { cat "$dir/pg.log" >&2; return 1; }
  pacer_as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres pacer
  PACER_PG_DIR=$dir
  PACER_PG="host=127.0.0.1 port=$port user=postgres dbname=pacer"
  PACER_PG_PORT=$port
}

pacer_stop_postgres() {
  [ -n "${PACER_PG_DIR:-}" ] || return 0
  pacer_as_pg "$(pacer_pg_bin)/pg_ctl" -D "$PACER_PG_DIR/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
  PACER_PG_DIR=
}

# psql against $PACER_PG.
pacer_psql() {
  psql "$PACER_PG" -v ON_ERROR_STOP=1 -qAt "$@"
}

# pacer_start_kafka_mock BIN DIR ARGS...: pacer-kafka-mock in the background.
# Sets PACER_KAFKA (the bootstrap list) and PACER_KAFKA_PID.
pacer_start_kafka_mock() {
  local bin=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  rm -f "$dir/bootstrap"
  "$bin" --bootstrap-file "$dir/bootstrap" "$@" >"$dir/kafka-mock.out" 2>"$dir/kafka-mock.log" &
  PACER_KAFKA_PID=$!
  local i
  for i in $(seq 1 100); do
    [ -s "$dir/bootstrap" ] && break
    kill -0 "$PACER_KAFKA_PID" 2>/dev/null || { cat "$dir/kafka-mock.log" >&2; return 1; }
    sleep 0.1
  done
  [ -s "$dir/bootstrap" ] || { echo "pacer: the Kafka mock did not publish its bootstrap list" >&2; return 1; }
  PACER_KAFKA=$(cat "$dir/bootstrap")
}

pacer_stop_kafka_mock() {
  [ -n "${PACER_KAFKA_PID:-}" ] || return 0
  kill "$PACER_KAFKA_PID" 2>/dev/null || true
  wait "$PACER_KAFKA_PID" 2>/dev/null || true
  PACER_KAFKA_PID=
}

# pacer_start_redis DIR: a redis-server on a free loopback port, nothing saved.
# Sets PACER_REDIS (HOST:PORT) and PACER_REDIS_PID.
pacer_start_redis() {
  local dir=$1 port
  port=$(pacer_free_port)
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$dir" \
    --logfile "$dir/redis.log" >/dev/null 2>&1 &
  PACER_REDIS_PID=$!
  PACER_REDIS=127.0.0.1:$port
  for _ in $(seq 1 100); do
    redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "pacer: redis-server did not answer on port $port" >&2
  cat "$dir/redis.log" >&2 || true
  return 1
}

pacer_stop_redis() {
  [ -n "${PACER_REDIS_PID:-}" ] || return 0
  kill "$PACER_REDIS_PID" 2>/dev/null || true
  wait "$PACER_REDIS_PID" 2>/dev/null || true
  PACER_REDIS_PID=
}

# pacer_free_cluster_port: a free port for a Redis Cluster node: at most 55535, with its cluster
# bus port (10000 higher) free too.
pacer_free_cluster_port() {
  python3 - <<'PY'
import random, socket
for _ in range(1000):
    p = random.randint(20000, 55000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
    except OSError:
        continue
    print(p); break
PY
}

# pacer_start_redis_cluster DIR MASTERS REPLICAS NODE_TIMEOUT_MS: a Redis Cluster of MASTERS
# masters with REPLICAS replicas each (cluster-enabled redis-servers on free loopback ports, in
# DIR/nodeN, joined by redis-cli --cluster create; replicas fail over however long their link
# was down: cluster-replica-validity-factor 0), ready when it returns (cluster_state:ok on
# every node, every replica's link up). Sets PACER_REDIS_CLUSTER (HOST:PORT array) and
# PACER_REDIS_CLUSTER_PIDS (array, same order); pacer_stop_redis_cluster stops them.
pacer_start_redis_cluster() {
  local dir=$1 masters=$2 replicas=$3 timeout=$4 i port n
  PACER_REDIS_CLUSTER=()
  PACER_REDIS_CLUSTER_PIDS=()
  n=$((masters * (1 + replicas)))
  for i in $(seq 1 "$n"); do
    port=$(pacer_free_cluster_port)
    [ -n "$port" ] || { echo "pacer: no free port for a cluster node" >&2; return 1; }
    mkdir -p "$dir/node$i"
    redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$dir/node$i" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "$timeout" \
      --cluster-replica-validity-factor 0 --logfile "$dir/node$i/redis.log" >/dev/null 2>&1 &
    PACER_REDIS_CLUSTER_PIDS+=($!)
    PACER_REDIS_CLUSTER+=("127.0.0.1:$port")
  done
  for n in "${PACER_REDIS_CLUSTER[@]}"; do
    for _ in $(seq 1 100); do redis-cli -p "${n##*:}" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  redis-cli --cluster create "${PACER_REDIS_CLUSTER[@]}" --cluster-replicas "$replicas" --cluster-yes \
    >"$dir/cluster-create.log" 2>&1 || { cat "$dir/cluster-create.log" >&2; return 1; }
  for n in "${PACER_REDIS_CLUSTER[@]}"; do
    for _ in $(seq 1 300); do
      redis-cli -p "${n##*:}" cluster info | grep -q cluster_state:ok &&
        ! redis-cli -p "${n##*:}" info replication | grep -q 'master_link_status:down' && break
      sleep 0.1
    done
    redis-cli -p "${n##*:}" cluster info | grep -q cluster_state:ok ||
      { echo "pacer: redis $n: the cluster is not ok" >&2; return 1; }
  done
}

pacer_stop_redis_cluster() {
  local p
  for p in ${PACER_REDIS_CLUSTER_PIDS[@]+"${PACER_REDIS_CLUSTER_PIDS[@]}"}; do kill -9 "$p" 2>/dev/null || true; done
  for p in ${PACER_REDIS_CLUSTER_PIDS[@]+"${PACER_REDIS_CLUSTER_PIDS[@]}"}; do wait "$p" 2>/dev/null || true; done
  PACER_REDIS_CLUSTER_PIDS=()
}

# pacer_stop_services DIR: stops the Kafka mock, Redis (and a Redis Cluster), PostgreSQL (clears their PIDs), removes DIR (PACER_KEEP: keeps it).
pacer_stop_services() {
  pacer_stop_kafka_mock
  pacer_stop_redis
  pacer_stop_redis_cluster
  pacer_stop_postgres
  if [ -n "${PACER_KEEP:-}" ]; then echo "kept $1"; else rm -rf "$1"; fi
}

# --- for the bench/ scripts ----------------------------------------------------
# pacer_bench_cleanup: a bench's EXIT trap: kill -9 array pids and $PACER_PROVIDER_PID, pacer_stop_services $PACER_RUN_DIR.
pacer_bench_cleanup() {
  local p
  for p in ${pids[@]+"${pids[@]}"} ${PACER_PROVIDER_PID:-}; do kill -9 "$p" 2>/dev/null || true; done
  pacer_stop_services "$PACER_RUN_DIR"
}

# pacer_bench_services BIN MOCK_ARGS...: PostgreSQL, Redis, Kafka mock in $PACER_RUN_DIR, migrate; sets PACER_PG/REDIS/KAFKA(_PID), PACER_POSTGRES.
pacer_bench_services() {
  local bin=$1
  shift
  pacer_start_postgres "$PACER_RUN_DIR/pg" || return 1
  pacer_start_redis "$PACER_RUN_DIR/redis" || return 1
  pacer_start_kafka_mock "$bin/pacer-kafka-mock" "$PACER_RUN_DIR/kafka" "$@" || return 1
  export PACER_POSTGRES=$PACER_PG
  "$bin/pacerd" migrate --postgres "$PACER_PG" >/dev/null
}

# pacer_start_fake_provider PROGRAM DIR ARGS...: PROGRAM --port 0 ARGS, waits for DIR/provider.port; sets PACER_PROVIDER_PORT, _PID.
pacer_start_fake_provider() {
  local program=$1 dir=$2 _
  shift 2
  "$program" --port 0 --port-file "$dir/provider.port" "$@" >"$dir/provider.log" 2>&1 &
  PACER_PROVIDER_PID=$!
  for _ in $(seq 1 100); do
    [ -s "$dir/provider.port" ] && break
    kill -0 "$PACER_PROVIDER_PID" 2>/dev/null || break
    sleep 0.1
  done
  [ -s "$dir/provider.port" ] ||
    { echo "pacer: pacer-fake-provider did not write its port: $(cat "$dir/provider.log")" >&2; return 1; }
  PACER_PROVIDER_PORT=$(cat "$dir/provider.port")
}

# pacer_stop_provider: SIGTERM $PACER_PROVIDER_PID (a fake then writes its record), waits for it, clears PACER_PROVIDER_PID.
pacer_stop_provider() {
  kill -TERM "$PACER_PROVIDER_PID" || return 1
  wait "$PACER_PROVIDER_PID" 2>/dev/null || true
  PACER_PROVIDER_PID=
}

# pacer_stop_workers [--quiet]: SIGTERM every pid in the caller's `pids` (its pacerd workers), wait for each,
# empty `pids`. Says which status a worker exited with when it is not 0, and returns 1 then; --quiet says
# nothing (a run that SIGKILLed one of them on purpose).
pacer_stop_workers() {
  local p rc=0
  for p in ${pids[@]+"${pids[@]}"}; do kill -TERM "$p" 2>/dev/null || true; done
  for p in ${pids[@]+"${pids[@]}"}; do
    wait "$p" 2>/dev/null && continue
    local status=$?
    rc=1
    [ "${1:-}" = --quiet ] || echo "a worker exited with $status"
  done
  pids=()
  return $rc
}

# pacer_fake_provider_epoch DIR: waits for DIR/provider.log's epoch_ms= (its record's time 0); sets PACER_PROVIDER_EPOCH_MS.
pacer_fake_provider_epoch() {
  local _
  for _ in $(seq 1 50); do grep -q 'epoch_ms=' "$1/provider.log" && break; sleep 0.1; done
  PACER_PROVIDER_EPOCH_MS=$(sed -n 's/.*epoch_ms=\([0-9]*\).*/\1/p' "$1/provider.log")
  [ -n "$PACER_PROVIDER_EPOCH_MS" ] || { echo "pacer: no epoch_ms= line in $1/provider.log" >&2; return 1; }
}

# --- for the test scripts under tests/ ---------------------------------------
# start_pacerd_test_services DIR PACERD MOCK ARGS...: PostgreSQL, migrate, MOCK ARGS --die-with-parent; sets PACER_PG, PACER_KAFKA, PACER_POSTGRES.
start_pacerd_test_services() {
  local dir=$1 pacerd=$2 mock=$3
  shift 3
  pacer_start_postgres "$dir/pg" || return 1
  export PACER_POSTGRES=$PACER_PG
  "$pacerd" migrate >/dev/null || return 1
  pacer_start_kafka_mock "$mock" "$dir/kafka" "$@" --die-with-parent
}

# pacer_test_cleanup DIR [PID...]: a test's EXIT trap: SIGTERM and wait for each PID given, pacer_stop_services DIR; sets nothing.
pacer_test_cleanup() {
  local dir=$1 p
  shift
  for p in "$@"; do
    [ -n "$p" ] || continue
    kill "$p" 2>/dev/null && { wait "$p" 2>/dev/null || true; }
  done
  pacer_stop_services "$dir"
}

# pacer_metric_values ADDRESS NAME...: the values of the unlabelled metrics NAME... on pacerd's
# /metrics at ADDRESS (its admin listener), in order on one line, whole numbers, 0 for an absent one.
pacer_metric_values() {
  local address=$1
  shift
  curl -sf "http://$address/metrics" | awk -v names="$*" '{ v[$1] = $2 }
    END { n = split(names, k, " "); for (i = 1; i <= n; i++) printf "%d%s", v[k[i]], (i < n ? " " : "\n") }'
}

# fail MESSAGE: says it, shows the last 30 lines of each file the test named
# in the array PACER_TEST_LOGS, and exits 1.
fail() {
  echo "FAIL: $*" >&2
  local f
  for f in ${PACER_TEST_LOGS[@]+"${PACER_TEST_LOGS[@]}"}; do
    echo "--- $f (last 30 lines)" >&2
    tail -n 30 "$f" >&2 || true
  done
  exit 1
}

# wait_for_line SECONDS FILE REGEX: true as soon as a line of FILE matches
# REGEX (grep -E), false once SECONDS have passed without one.
wait_for_line() {
  local until=$(($(date +%s%N) + $1 * 1000000000))
  while [ "$(date +%s%N)" -lt "$until" ]; do
    grep -qE -- "$3" "$2" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# listening_port FILE PID: the port of a fake provider's "listening 127.0.0.1:PORT" line in
# FILE (its stdout), waiting up to 10 s; fails if PID exits first or no line comes.
listening_port() {
  local port= _
  for _ in $(seq 100); do
    port=$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$1")
    [ -n "$port" ] && { echo "$port"; return 0; }
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "no listening line in $1" >&2
  return 1
}

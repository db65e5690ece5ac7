#!/usr/bin/env bash
# pacerd whose quota is a Redis Cluster counts the frequency caps in that
# cluster (no caps.redis): on its own PostgreSQL, pacer-kafka-mock and a
# three-master Redis Cluster (loopback), delivering over HTTP to
# pacer-fake-provider --record. A campaign cap 2/1h (suppress) and a class cap
# transactional=2/1h, 18 messages each to 6 recipients spread over the
# masters: 12 at the provider and 6 suppressed rows per campaign, judged by
# the provider's record and the ledger; each recipient's key is in the
# cluster with a TTL, and the keys are on more than one master.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
fake_provider=${PACER_FAKE_PROVIDER:?}
daemon_pid=
PACER_PROVIDER_PID=
cleanup() {
  local p
  for p in $daemon_pid $PACER_PROVIDER_PID; do kill -9 "$p" 2>/dev/null || true; done
  pacer_stop_services "$tmp"  # the cluster too
}
trap cleanup EXIT
PACER_TEST_LOGS=("$tmp/pacerd.log")  # fail (scripts/services.sh) shows it
q() { pacer_psql -c "$1"; }
rows() { q "SELECT count(*) FROM deliveries WHERE campaign = '$1' AND status = '$2'"; }
at_provider() { awk -v c="$1" '$2 == c && $4 == 200' "$tmp/requests.txt" | wc -l; }

# Three cluster-enabled redis-servers, joined by redis-cli --cluster create.
pacer_start_redis_cluster "$tmp/cluster" 3 0 5000 || fail "the Redis Cluster did not start"
ports=("${PACER_REDIS_CLUSTER[@]##*:}")

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:2 || fail "services did not start"
export PACER_BROKERS=$PACER_KAFKA
pacer_start_fake_provider "$fake_provider" "$tmp" --record "$tmp/requests.txt" || fail "the fake provider did not start"

"$pacerctl" provider create gw --rate 1000 >/dev/null
"$pacerctl" campaign create capped --rate 100 --provider gw --cap 2/1h --cap-policy suppress >/dev/null
"$pacerctl" campaign create classy --rate 100 --provider gw --class transactional >/dev/null
produce() { "$pacerctl" produce --topic messages "$@" >/dev/null; }
produce --campaign capped --count 18 --recipients 6 --recipient-prefix cap-
produce --campaign classy --count 18 --recipients 6 --recipient-prefix cls-

cat >"$tmp/pacerd.yaml" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
postgres:
  migrate: false
redis:
  nodes: [127.0.0.1:${ports[0]}, 127.0.0.1:${ports[1]}, 127.0.0.1:${ports[2]}]
  cluster: true
priority:
  classes: [critical, transactional, bulk]
  default_class: bulk
caps:
  classes: "transactional=2/1h"
  policy: suppress
sink:
  kind: http
  http:
    url: http://127.0.0.1:$PACER_PROVIDER_PORT/send/{campaign}
YAML
"$pacerd" --config "$tmp/pacerd.yaml" --admin-listen 127.0.0.1:0 --refresh-ms 200 >"$tmp/pacerd.log" 2>&1 &
daemon_pid=$!

# 12 + 12 sent, 6 + 6 suppressed: 36 rows.
for _ in $(seq 1 300); do
  [ "$(q "SELECT count(*) FROM deliveries")" -ge 36 ] && break
  kill -0 "$daemon_pid" 2>/dev/null || fail "pacerd exited"
  sleep 0.1
done
# Then until pacerd's own figures say nothing is left to go out: all 36 read, none
# in the sink or awaiting the ledger, none held in memory. Each message then has
# its one final row, so a later request at the provider could only be a resend.
admin=$(pacer_admin_address "$tmp/pacerd.log") || fail "pacerd did not log its admin address"
figures() { pacer_metric_values "$admin" pacer_records_read_total pacer_unrecorded_messages pacer_buffered_messages; }
for _ in $(seq 1 200); do
  read -r n_read unrecorded buffered < <(figures)
  [ "$n_read" -ge 36 ] && [ "$unrecorded" = 0 ] && [ "$buffered" = 0 ] && break
  sleep 0.1
done
[ "$n_read" -ge 36 ] && [ "$unrecorded" = 0 ] && [ "$buffered" = 0 ] ||
  fail "pacerd never settled: read $n_read, unrecorded $unrecorded, buffered $buffered"
grep -q "event=caps_connected redis=127.0.0.1:${ports[0]} cluster=true" "$tmp/pacerd.log" ||
  fail "the caps did not use the quota's Redis Cluster"
! grep -q "event=caps_in_process" "$tmp/pacerd.log" || fail "the caps were counted in process"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "pacerd exited $? on SIGTERM"
daemon_pid=
pacer_stop_provider  # it writes its record as it exits
PACER_TEST_LOGS+=("$tmp/requests.txt")
for c in capped:campaign:capped classy:class:transactional; do
  id=${c%%:*} scope=${c#*:} prefix=cap-
  [ "$id" = classy ] && prefix=cls-
  [ "$(at_provider "$id")" = 12 ] ||
    fail "$id: $(at_provider "$id") requests at the provider, expected 12 (6 recipients x 2); ledger: $(
      q "SELECT status, reason, count(*) FROM deliveries WHERE campaign = '$id' GROUP BY 1, 2")"
  [ "$(rows "$id" sent)" = 12 ] || fail "$id: $(rows "$id" sent) sent rows, expected 12"
  n=$(q "SELECT count(*) FROM deliveries WHERE campaign = '$id' AND status = 'suppressed' AND reason LIKE '%$scope 2/1h%'")
  [ "$n" = 6 ] || fail "$id: $n suppressed rows naming $scope 2/1h, expected 6: $(q "SELECT status, reason FROM deliveries WHERE campaign = '$id' AND status <> 'sent' LIMIT 2")"
  # Each key in the cluster (-c follows MOVED to the slot's master), with a TTL.
  for r in 0 1 2 3 4 5; do
    key="fc:{$prefix$r}:$scope"
    ttl=$(redis-cli -c -p "${ports[0]}" pttl "$key")
    [ "$ttl" -gt 0 ] && [ "$ttl" -le 3600000 ] || fail "Redis key $key: pttl $ttl, expected a TTL of at most 1 h"
  done
done
# The recipients are on more than one master.
masters_used=0
for port in "${ports[@]}"; do
  [ "$(redis-cli -p "$port" --scan --pattern 'fc:*' | wc -l)" -gt 0 ] && masters_used=$((masters_used + 1))
done
[ "$masters_used" -ge 2 ] || fail "the cap keys are on $masters_used master(s), expected them spread"
echo "pacerd caps on a Redis Cluster: ok (keys on $masters_used masters)"

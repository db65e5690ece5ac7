#!/usr/bin/env bash
# pacerd with sink kind smpp, end to end: a real pacerd on a real PostgreSQL
# and pacer-kafka-mock, sending to pacer-fake-smsc (its own strict
# one-second quota in segments, receipts after a delay). Checked against the
# SMSC's own record of what arrived, not pacer's:
# - every segment of every message arrived once, and the quota in segments
#   was never exceeded in any one-second window;
# - the SMSC answers ESME_RSYSERR on segment 2 of every 2-segment message
#   once: the retry sends segment 2 alone under the same reference, so no
#   part is an orphan and none went before the one ahead of it was accepted;
# - long and UCS-2 texts take one token per segment: the send takes as long
#   as the segments, not the messages, say;
# - an invalid UTF-8 text is a rejected ledger row with the reason;
# - every sent row holds the SMSC's message id and its receipt lands on it.
# - the long messages carry a pacer-expires-at deadline: every one of their
#   segments reached the SMSC with that deadline as its validity_period in
#   SMPP's absolute format; the others with none.
source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
smsc=${PACER_FAKE_SMSC:?}
smsc_pid=
trap 'pacer_test_cleanup "$tmp" "$smsc_pid"' EXIT
# fail (scripts/services.sh) shows these logs.
PACER_TEST_LOGS=("$tmp/pacerd.log")

quota=40  # segments/s at the SMSC, the provider's rate in pacer
"$smsc" --account "pacer:s3cret:$quota" --port-file "$tmp/smsc.port" --receipt-delay-ms 200 \
  --receipt-mix delivered=3,undelivered=1 --segment-fault-rate 1 --record "$tmp/smsc.tsv" --report "$tmp/smsc.json" &
smsc_pid=$!
for _ in $(seq 100); do [ -s "$tmp/smsc.port" ] && break; sleep 0.1; done
[ -s "$tmp/smsc.port" ] || fail "pacer-fake-smsc did not start"

start_pacerd_test_services "$tmp" "$pacerd" "$kafka_mock" --topic messages:1
"$pacerctl" provider create sms --rate "$quota" >/dev/null
"$pacerctl" campaign create promo --rate "$quota" --provider sms >/dev/null
long=$(printf 'x%.0s' $(seq 200))  # 200 GSM characters: 2 segments
deadline_ms=$(($(date +%s%3N) + 600000))
# SMPP's absolute time (YYMMDDhhmmsst00+, UTC) of that deadline, as pacerd must send it.
validity=$(date -u -d "@$((deadline_ms / 1000))" +%y%m%d%H%M%S)$((deadline_ms % 1000 / 100))00+
produce() { kcat -P -b "$PACER_KAFKA" -t messages -K: "$@"; }
seq 1 20 | awk '{ printf "promo:short %d\n", $1 }' | produce -H recipient=+4915112345678  # 20 x 1 segment
seq 1 20 | awk -v t="$long" '{ printf "promo:%d %s\n", $1, t }' |                        # 20 x 2 segments
  produce -H recipient=+4915112345679 -H "pacer-expires-at=$deadline_ms"
{
  seq 1 20 | awk '{ printf "promo:Привет %d\n", $1 }'                # 20 x 1 segment, UCS-2
  printf 'promo:bad \xff text\n'                                    # not UTF-8: rejected
} | produce -H recipient=+4915112345678
segments=80

cat >"$tmp/pacerd.yaml" <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
postgres:
  migrate: false
sink:
  kind: stdout
providers:
  sms:
    sink:
      kind: smpp
      smpp:
        port: $(cat "$tmp/smsc.port")
        system_id: pacer
        password_env: SMSC_PASSWORD
        window: 5
admin:
  listen: 127.0.0.1:0
exit_when_idle_ms: 3000
YAML
start=$(date +%s.%N)
SMSC_PASSWORD=s3cret timeout 120 "$pacerd" --config "$tmp/pacerd.yaml" >"$tmp/pacerd.out" 2>"$tmp/pacerd.log" ||
  fail "pacerd exited $?"
grep -q "s3cret" "$tmp/pacerd.log" "$tmp/pacerd.out" && fail "the SMPP password was logged"
# An SMSC answering at once: the window (5) is never what limits the rate.
grep -q "event=smpp_window_limits" "$tmp/pacerd.log" && fail "a window warning against an SMSC that answers at once"
kill "$smsc_pid"
wait "$smsc_pid" || true
smsc_pid=

# The SMSC's record: one line per segment (ms, account, id, dest, n/m, status, reference, validity).
with_deadline=$(awk -F'\t' -v v="$validity" '$4 ~ /679$/ && $8 == v' "$tmp/smsc.tsv" | wc -l)
[ "$with_deadline" -ge 40 ] || fail "$with_deadline segments arrived with validity_period $validity, expected all 40+"
wrong=$(awk -F'\t' -v v="$validity" '($4 ~ /679$/) != ($8 == v) || ($4 !~ /679$/ && $8 != "-")' "$tmp/smsc.tsv")
[ -z "$wrong" ] || fail "segments with another validity_period than their message's deadline ($validity or none): $wrong"
accepted=$(awk -F'\t' '$6 == "ESME_ROK"' "$tmp/smsc.tsv" | wc -l)
[ "$accepted" = "$segments" ] || fail "the SMSC accepted $accepted segments, expected $segments"
dups=$(awk -F'\t' '$6 == "ESME_ROK" { print $3 }' "$tmp/smsc.tsv" | sort | uniq -d | wc -l)
[ "$dups" = 0 ] || fail "$dups SMSC message ids accepted twice"
max_1s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["accounts"]["pacer"]["max_segments_1s"])' \
  "$tmp/smsc.json")
[ "$max_1s" -le "$quota" ] || fail "$max_1s segments in one second, above the SMSC's $quota"
# Multi-part messages, per concatenation reference, as the SMSC saw them.
concat=$(python3 -c 'import json,sys
c = json.load(open(sys.argv[1]))["accounts"]["pacer"]["concatenated"]
print(c["segment_faults"], c["complete"], c["orphan_parts"], c["parts_out_of_turn"], c["duplicate_parts"])' "$tmp/smsc.json")
[ "$concat" = "20 20 0 0 0" ] || fail "SMSC (segment faults, complete, orphan parts, out of turn, duplicates): $concat"
# The first and last accepted segment: 80 segments at 40/s take about 2 s
# after the first second's burst; counted as messages (61) it would be 1.5 s.
span_ms=$(awk -F'\t' '$6 == "ESME_ROK" { if (min == "" || $1 < min) min = $1; if ($1 > max) max = $1 }
  END { print max - min }' "$tmp/smsc.tsv")
[ "$span_ms" -ge 1000 ] || fail "80 segments at $quota/s went out in $span_ms ms: segments were not counted"

# The ledger.
rows=$(pacer_psql -c "SELECT status, count(*) FROM deliveries GROUP BY 1 ORDER BY 1" | tr '\n' ' ')
[ "$rows" = "rejected|1 sent|60 " ] || fail "ledger: $rows"
retried=$(pacer_psql -c "SELECT count(*) FROM deliveries WHERE status = 'sent' AND attempts = 2")
[ "$retried" = 20 ] || fail "$retried sent rows took two attempts, expected the 20 two-segment messages"
reason=$(pacer_psql -c "SELECT reason FROM deliveries WHERE status = 'rejected'")
case "$reason" in *"not UTF-8 at byte 4"*) ;; *) fail "rejected for: $reason" ;; esac
with_id=$(pacer_psql -c "SELECT count(DISTINCT provider_message_id) FROM deliveries WHERE status = 'sent' AND provider = 'sms'")
[ "$with_id" = 60 ] || fail "$with_id sent rows hold the SMSC's id, expected 60"
# The SMSC's first-segment ids are the ones the ledger holds.
pacer_psql -c "SELECT provider_message_id FROM deliveries WHERE status = 'sent'" | sort >"$tmp/ledger.ids"
awk -F'\t' '$6 == "ESME_ROK" && $5 ~ /^1\// { print $3 }' "$tmp/smsc.tsv" | sort >"$tmp/smsc.ids"
cmp -s "$tmp/ledger.ids" "$tmp/smsc.ids" || fail "ledger ids differ from the SMSC's first-segment ids"
# Receipts: the SMSC's report says how many of each it sent and had acked.
read -r sent_d sent_u acked < <(python3 -c 'import json,sys
a = json.load(open(sys.argv[1]))["accounts"]["pacer"]
print(a["receipts_sent"]["delivered"], a["receipts_sent"]["undelivered"], a["receipts_acked"])' "$tmp/smsc.json")
[ $((sent_d + sent_u)) = 60 ] && [ "$acked" = 60 ] || fail "the SMSC sent $sent_d + $sent_u receipts, $acked acked"
matched=$(pacer_psql -c "SELECT receipt_status, count(*) FROM delivery_receipts WHERE send_status = 'sent'
  GROUP BY 1 ORDER BY 1" | tr '\n' ' ')
[ "$matched" = "delivered|$sent_d undelivered|$sent_u " ] || fail "receipts on rows: $matched (SMSC: $sent_d/$sent_u)"
show=$("$pacerctl" campaign show promo)
grep -Eq "receipts +delivered $sent_d, undelivered $sent_u, expired 0, rejected 0, pending 0" <<<"$show" ||
  fail "pacerctl campaign show: $show"
"$pacerctl" campaign show promo --json | python3 -c 'import json,sys
r = json.load(sys.stdin)["receipts"]
assert r["delivered"] + r["undelivered"] == 60 and r["pending"] == 0, r' || fail "campaign show --json receipts"
top=$("$pacerctl" top --once --width 200)
grep -Eq "DLVRD +UNDLV +PEND" <<<"$top" && grep -Eq "^promo .* $sent_d +$sent_u +0$" <<<"$top" ||
  fail "pacerctl top does not show the receipts: $top"
echo "pacerd over SMPP: all checks passed ($segments segments, max $max_1s in 1 s, span $span_ms ms," \
  "receipts $sent_d delivered $sent_u undelivered, $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s)"

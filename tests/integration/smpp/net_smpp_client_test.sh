#!/usr/bin/env bash
# pacer-fake-smsc against Net::SMPP as the client (label "integration"): a
# refused bind, a bind, a submit_sm asking for a receipt, the receipt
# answered, an unbind; then the fake's record and report must agree.
# Needs PACER_FAKE_SMSC (the binary) and perl with Net::SMPP.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${PACER_FAKE_SMSC:?set PACER_FAKE_SMSC to the pacer-fake-smsc binary}"
work=$(mktemp -d)
smsc_pid=
cleanup() {
  if [ -n "$smsc_pid" ] && kill -0 "$smsc_pid" 2>/dev/null; then kill "$smsc_pid"; wait "$smsc_pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- client:" >&2; cat "$work/client.out" >&2 || true; exit 1; }

"$PACER_FAKE_SMSC" --account pacer:secret --port-file "$work/port" --record "$work/record.tsv" \
  --report "$work/report.json" --receipt-delay-ms 50 >"$work/smsc.log" 2>&1 &
smsc_pid=$!
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || fail "pacer-fake-smsc did not start: $(cat "$work/smsc.log")"

perl "$here/net_smpp_client.pl" "$(cat "$work/port")" >"$work/client.out" 2>"$work/client.err" ||
  fail "client exited non-zero: $(cat "$work/client.err")"
get() { sed -n "s/^$1=//p" "$work/client.out"; }

[ "$(get bad_bind_status)" = 0x0e ] || fail "wrong password not refused with ESME_RINVPASWD"
[ "$(get bind_status)" = 0x00 ] || fail "bind refused"
[ "$(get submit_status)" = 0x00 ] || fail "submit_sm not accepted"
id=$(get message_id)
[ -n "$id" ] || fail "no message_id"
[ "$(get receipt_esm_class)" = 0x04 ] || fail "receipt without the esm_class receipt bit"
[ "$(get receipt_tlv_id)" = "$id" ] || fail "receipted_message_id TLV does not name $id"
[ "$(get receipt_text_id)" = "$id" ] || fail "receipt text id does not name $id"
[ "$(get receipt_stat)" = DELIVRD ] || fail "receipt stat is not DELIVRD"
[ "$(get unbind_status)" = 0x00 ] || fail "unbind not answered"

kill "$smsc_pid"
wait "$smsc_pid" || true
smsc_pid=
line=$(cat "$work/record.tsv")
[ "$(wc -l <"$work/record.tsv")" -eq 1 ] || fail "record should have one line: $line"
[ "$(cut -f2-6 <<<"$line")" = "$(printf 'pacer\t%s\t4915112345678\t1/1\tESME_ROK' "$id")" ] || fail "record line: $line"
perl -MJSON::PP -e '
  local $/; open my $f, "<", $ARGV[0] or die; my $r = decode_json(<$f>)->{accounts}{pacer};
  my %want = (binds => 1, bind_failures => 1, submits => 1, accepted => 1, receipts_acked => 1, receipts_pending => 0);
  for my $k (sort keys %want) { die "report $k=$r->{$k}, want $want{$k}\n" unless $r->{$k} == $want{$k} }
  die "receipts_sent delivered=$r->{receipts_sent}{delivered}\n" unless $r->{receipts_sent}{delivered} == 1;
' "$work/report.json" || fail "report: $(cat "$work/report.json")"
echo "net_smpp_client_test: ok (message $id, receipt DELIVRD)"

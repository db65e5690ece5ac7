# Two pacer-fake-smsc providers for pacerd workers, as the failover and
# prefix-route tests and bench/failover.sh set them up (docs/routes.md).
# Sourced after tests/support/pacerd_test.sh (or with a fail function of its
# own), with smsc (the pacer-fake-smsc program) and quota (segments/s at each
# SMSC, each provider's rate in pacer) set:
#   source "$PACER_SOURCE/tests/integration/smpp/two_smscs.sh"
# Optional, read when a function runs:
#   smscs_dir       where the files go (default: $tmp)
#   smscs_postgres  a PostgreSQL URL for the configuration's postgres.url
#                   (default: none, pacerd takes $PACER_POSTGRES)
# Every SMSC NAME keeps its files in the directory: NAME.port, NAME.tsv (its
# record of submits), NAME.json (its report), NAME.log; it is the provider
# sms-NAME. The account is pacer with the password s3cret (SMSC_PASSWORD).

# smscs_files: the directory of the SMSCs' files and pacerd.yaml.
smscs_files() { echo "${smscs_dir:-${tmp:?}}"; }

# start_smsc NAME [FLAG...]: starts pacer-fake-smsc NAME with the account
# pacer:s3cret:$quota and FLAGs, sets its pid in smsc_NAME, and waits for its port.
start_smsc() {
  local name=$1 dir
  dir=$(smscs_files)
  shift
  "$smsc" --account "pacer:s3cret:$quota" --port-file "$dir/$name.port" --record "$dir/$name.tsv" \
    --report "$dir/$name.json" "$@" >"$dir/$name.log" 2>&1 &
  eval "smsc_$name=$!"
  for _ in $(seq 100); do [ -s "$dir/$name.port" ] && return 0; sleep 0.1; done
  fail "pacer-fake-smsc $name did not start"
}

# smpp_sink NAME: the providers: entry of sms-NAME, its own SMPP sink at SMSC NAME.
smpp_sink() {
  cat <<YAML
  sms-$1:
    sink:
      kind: smpp
      smpp:
        port: $(cat "$(smscs_files)/$1.port")
        system_id: pacer
        password_env: SMSC_PASSWORD
YAML
}

# two_smscs_config GROUP A B [YAML...]: pacerd's configuration, written to
# pacerd.yaml in the directory: the test services, consumer group GROUP, the providers
# sms-A and sms-B on their SMSCs, then each YAML line as given (a third
# provider's `smpp_sink C` first, to have it among the providers).
two_smscs_config() {
  local group=$1 a=$2 b=$3 pg_url=
  shift 3
  [ -z "${smscs_postgres:-}" ] || pg_url="  url: \"$smscs_postgres\""
  {
    cat <<YAML
kafka:
  brokers: [$PACER_KAFKA]
  topics: [messages]
  group: $group
  session_timeout_ms: 6000
postgres:
$pg_url
  migrate: false
redis:
  nodes: [$PACER_REDIS]
sink:
  kind: stdout
providers:
$(smpp_sink "$a")
$(smpp_sink "$b")
YAML
    local line
    for line in "$@"; do printf '%s\n' "$line"; done
  } >"$(smscs_files)/pacerd.yaml"
}

# report NAME EXPR: a figure of SMSC NAME's report (r: the report, a: the pacer account).
report() {
  python3 -c 'import json,sys; r = json.load(open(sys.argv[1])); a = r["accounts"]["pacer"]; print(eval(sys.argv[2]))' \
    "$(smscs_files)/$1.json" "$2"
}

# accepted NAME: the message ids SMSC NAME accepted, sorted.
accepted() { awk -F'\t' '$6 == "ESME_ROK" { print $3 }' "$(smscs_files)/$1.tsv" | sort; }

# check_smsc_quotas NAME...: fails when any SMSC took more than $quota segments in one second.
check_smsc_quotas() {
  local s max_1s
  for s in "$@"; do
    max_1s=$(report "$s" 'a["max_segments_1s"]')
    [ "$max_1s" -le "$quota" ] || fail "sms-$s took $max_1s segments in one second, above its $quota"
  done
}

# smsc_clock_shift_ms A B: add to a time of SMSC B's record to have it on A's
# clock (both reports give their start on the system clock).
smsc_clock_shift_ms() {
  echo $(($(report "$2" 'r["started_unix_ms"]') - $(report "$1" 'r["started_unix_ms"]')))
}

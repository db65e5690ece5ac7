# The opening every pacerd shell test shares. Sourced first, before anything
# else, by a test that ctest runs with PACERD, PACERCTL, PACER_KAFKA_MOCK and
# PACER_SOURCE set:
#   source "${PACER_SOURCE:?}/tests/support/pacerd_test.sh"
# Turns on errexit, nounset and pipefail; sets pacerd, pacerctl and kafka_mock
# (the programs under test); sources scripts/services.sh (fail, wait_for_line,
# the service starters); and makes tmp, a fresh directory the test's EXIT trap
# removes (pacer_test_cleanup or pacer_stop_services do).
set -euo pipefail
pacerd=${PACERD:?}
pacerctl=${PACERCTL:?}
kafka_mock=${PACER_KAFKA_MOCK:?}
source "${PACER_SOURCE:?}/scripts/services.sh"
tmp=$(mktemp -d)

# pacer_admin_address LOG [SECONDS]: the HOST:PORT that pacerd's first
# event=admin_listening line in LOG names, waiting up to SECONDS (30) for it;
# returns 1 and prints nothing when no line comes.
pacer_admin_address() {
  wait_for_line "${2:-30}" "$1" 'event=admin_listening address=' || return 1
  sed -n 's/.*event=admin_listening address=\([^ ]*\).*/\1/p' "$1" | head -n 1
}

#!/usr/bin/env bash
# Graceful shutdown under load, larger than the test run by scripts/test
# (integration.graceful_restart): a real pacerd over HTTP to
# pacer-fake-provider, SIGTERM at random moments and a restart each time,
# then 0 lost and 0 duplicates checked at the provider and in the ledger.
#   bench/graceful_restart.sh [MESSAGES] [CYCLES]      (defaults 50000 and 5; a 150 s claim
#   lease, as the last run sends the slow campaign's rest at 150/s)
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$PACER_ROOT"
pacer_install_packages "${PACER_PACKAGES[@]}" >/dev/null
pacer_build release >/dev/null
bin=$PACER_ROOT/build/release
MESSAGES=${1:-50000} CYCLES=${2:-5} LEASE_S=150 PACERD=$bin/pacerd PACER_KAFKA_MOCK=$bin/pacer-kafka-mock \
  PACER_FAKE_PROVIDER=$bin/pacer-fake-provider PACER_SOURCE=$PACER_ROOT \
  bash tests/integration/pipeline/graceful_restart_test.sh

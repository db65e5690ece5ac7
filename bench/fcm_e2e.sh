#!/usr/bin/env bash
# Push over FCM HTTP v1 end to end, against a strict provider: 4 pacerd
# workers (sink kind fcm, real Redis, real PostgreSQL, the Kafka mock) share
# one pacer-fake-fcm that accepts at most 400 messages:send in any one-second
# sliding window (no burst; 429 with Retry-After: 1 above it), over HTTP/2
# with TLS, with OAuth access tokens that live 60 s (each worker refetches
# them during the run). pacerctl's defaults for every burst; 20,000 messages
# over 2 campaigns at 300/s each, every message to its own device token, so
# the fake's record (one line per accepted request) tells lost from twice.
# The run itself is bench/push_e2e.sh fcm (the same for APNs: push_e2e.sh apns).
#
#   bench/fcm_e2e.sh            (MESSAGES=20000 WORKERS=4 PACER_BENCH_PRESET=release PACER_KEEP=1
#                                PACERD_ARGS="more pacerd flags")
set -euo pipefail
exec "$(dirname "$0")/push_e2e.sh" fcm "$@"

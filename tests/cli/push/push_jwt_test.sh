#!/usr/bin/env bash
# pacer::push's JWTs checked by an independent implementation: Debian's PyJWT
# (python3-jwt, with python3-cryptography) verifies an APNs ES256 provider
# token and an FCM RS256 assertion made by our code, with keys the openssl
# CLI generates now. Debian's /usr/bin/python3 on purpose: the pyenv python
# on PATH does not see Debian's packages.
# Usage: push_jwt_test.sh <push_jwt_sample binary>
set -euo pipefail
sample=$1
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/apns.p8" 2>/dev/null
openssl pkey -in "$work/apns.p8" -pubout -out "$work/apns.pub"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/sa.pem" 2>/dev/null
openssl pkey -in "$work/sa.pem" -pubout -out "$work/sa.pub"
"$py" - "$work/sa.pem" > "$work/sa.json" <<'PY'
import json, sys
print(json.dumps({"type": "service_account", "project_id": "pacer-test",
                  "private_key": open(sys.argv[1]).read(),
                  "client_email": "pacer@pacer-test.iam.gserviceaccount.com",
                  "token_uri": "https://oauth2.googleapis.com/token"}))
PY
now=$(date +%s)

verify() {  # verify <alg> <public key> <jwt> <expected header+claims as JSON>
  "$py" - "$@" <<'PY'
import json, sys, jwt
alg, pub, token, expected = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3], json.loads(sys.argv[4])
header = jwt.get_unverified_header(token)
claims = jwt.decode(token, pub, algorithms=[alg], options={"verify_aud": False})
for k, v in expected["header"].items():
    assert header.get(k) == v, f"header {k}: {header.get(k)!r} != {v!r}"
assert claims == expected["claims"], f"claims {claims} != {expected['claims']}"
print(f"{alg}: verified by PyJWT {jwt.__version__}")
PY
}

apns=$("$sample" apns "$work/apns.p8" TEAM123456 KEY1234567 "$now")
sig=${apns##*.}
[ ${#sig} -eq 86 ] || fail "ES256 signature is ${#sig} base64url characters, not 86 (64 raw bytes)"
verify ES256 "$work/apns.pub" "$apns" \
  "{\"header\":{\"alg\":\"ES256\",\"kid\":\"KEY1234567\"},\"claims\":{\"iss\":\"TEAM123456\",\"iat\":$now}}"

fcm=$("$sample" fcm "$work/sa.json" "$now")
verify RS256 "$work/sa.pub" "$fcm" \
  "{\"header\":{\"alg\":\"RS256\",\"typ\":\"JWT\"},\"claims\":{\"iss\":\"pacer@pacer-test.iam.gserviceaccount.com\",
   \"scope\":\"https://www.googleapis.com/auth/firebase.messaging\",\"aud\":\"https://oauth2.googleapis.com/token\",
   \"iat\":$now,\"exp\":$((now + 3600))}}"

# The checks can fail: a changed signature character (not the last: its low
# bits are padding a decoder may ignore), and the other key.
pos=$((${#apns} - 20))
flipped="${apns:0:pos}$([ "${apns:pos:1}" = A ] && echo B || echo A)${apns:pos+1}"
if verify ES256 "$work/apns.pub" "$flipped" '{"header":{},"claims":{}}' 2>/dev/null; then
  fail "PyJWT accepted a tampered ES256 token"
fi
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 2>/dev/null | openssl pkey -pubout -out "$work/other.pub"
if verify ES256 "$work/other.pub" "$apns" '{"header":{},"claims":{}}' 2>/dev/null; then
  fail "PyJWT accepted the token under another key"
fi
echo "ok: pacer::push JWTs verified by PyJWT"

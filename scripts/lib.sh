# Shared by scripts/test and scripts/demo: install what is missing, build.
# Sourced, not run.

PACER_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian 12 packages the build and the tests need.
PACER_PACKAGES=(
  g++ cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libfmt-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
)
PACER_PACKAGES+=(librdkafka-dev kcat)
# The ledger: libpqxx, and a PostgreSQL server the integration tests start themselves.
PACER_PACKAGES+=(libpqxx-dev postgresql)
# The HTTP sink (libcurl) and pacer-fake-provider (libmicrohttpd: one epoll thread that answers
# in the same turn it reads a request; cpp-httplib's thread per connection took twice the CPU of
# the sink it was benchmarking). iproute2's ss checks the provider's listen backlog in a test.
PACER_PACKAGES+=(libcurl4-openssl-dev libmicrohttpd-dev iproute2)
# The global quota: hiredis, and a Redis server the integration tests start themselves.
PACER_PACKAGES+=(libhiredis-dev libspdlog-dev redis-server redis-tools)
# scripts/demo runs `pacerctl top` in a detached tmux session and prints
# `tmux capture-pane -p` frames of it (it falls back to `top --once` without tmux).
PACER_PACKAGES+=(tmux)
# scripts/graph renders the CMake target graph into docs/architecture.svg with Graphviz.
PACER_PACKAGES+=(graphviz)
# pacerd's /metrics: prometheus-cpp's core library renders the Prometheus text format (its
# TextSerializer escapes label values and writes histograms), so the format is not hand-made. Only
# prometheus::core is linked; the admin listener itself is libmicrohttpd (above).
PACER_PACKAGES+=(prometheus-cpp-dev)
# Quiet hours: Howard Hinnant's date/tz.h (GCC 12's libstdc++ has no std::chrono::locate_zone), built
# by Debian to read the OS tz database, so it needs tzdata (docs/recipient-rules.md).
PACER_PACKAGES+=(libhowardhinnant-date-dev tzdata)

# The console's browser test (tests/integration/console) and bench/console_bench.sh: a real
# headless Chromium (chromium), driven through WebDriver (chromium-driver) from Python
# (python3-selenium), all from Debian, so nothing is downloaded at test time.
PACER_PACKAGES+=(chromium chromium-driver python3-selenium)
# SMPP interoperability tests: Net::SMPP, an SMPP 3.4 implementation written independently of
# Pacer, plays the SMSC for the SMPP sink and the client for pacer-fake-smsc (tests/integration/smpp).
PACER_PACKAGES+=(libnet-smpp-perl)
# APNs and FCM (pacer::push): OpenSSL 3 signs the ES256 / RS256 JWTs (libssl-dev; docs/push.md says
# why not libjwt). The cli.push_jwt test checks those JWTs with PyJWT, an independent implementation
# (python3-jwt, whose ES256/RS256 need python3-cryptography), on keys made by the openssl CLI (openssl).
PACER_PACKAGES+=(libssl-dev openssl python3-jwt python3-cryptography)
# pacer-fake-apns and pacer-fake-fcm (src/fakes/push): nghttp2's server sessions (libnghttp2-dev)
# over OpenSSL 3 TLS with ALPN h2, and their JWT signature checks (libssl-dev). Their integration
# tests (tests/integration/push) talk to them with clients no one here wrote: nghttp and h2load
# (nghttp2-client) and curl --http2 (curl); make the CA, certificates and keys with the openssl
# CLI (openssl); and sign the APNs provider tokens and FCM service-account assertions with PyJWT
# (python3-jwt, whose ES256/RS256 need python3-cryptography), never with Pacer's own code.
PACER_PACKAGES+=(libnghttp2-dev libssl-dev nghttp2-client curl openssl python3-jwt python3-cryptography)

pacer_install_packages() {
  local missing=()
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "pacer: installing ${missing[*]}" >&2
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "pacer: need root (or sudo) to apt-get install ${missing[*]}" >&2; return 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# pacer_build PRESET [TARGET...]: configure and build one CMake preset (only
# TARGETs when given: a bench needs four programs, not the test binaries).
pacer_build() {
  local preset=$1
  shift
  local targets=()
  [ $# -eq 0 ] || targets=(--target "$@")
  cmake --preset "$preset" -S "$PACER_ROOT" >/dev/null
  cmake --build --preset "$preset" -j "$(nproc)" "${targets[@]}"
}

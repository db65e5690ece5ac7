// pacer-fake-fcm: Google's OAuth2 token endpoint and FCM HTTP v1 (HTTP/2
// over TLS) on loopback for tests, the demo and benchmarks. See docs/fake-push.md.
#include "fake_push_cli.h"

int main(int argc, char** argv) {
  CLI::App app{"pacer-fake-fcm: an FCM HTTP v1 and OAuth2 token endpoint stand-in speaking HTTP/2 over TLS"};
  app.set_version_flag("--version", std::string("pacer-fake-fcm ") + PACER_VERSION);
  pacer::fake::FakeFcmOptions o;
  pacer::fake::addCommonPushFlags(app, o.push);
  app.add_option("--sa-public-key", o.sa_public_key_path,
                 "PEM RSA public key (or certificate) of the service account; verifies RS256 assertions")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--sa-email", o.sa_email, "if set, the assertion's iss must equal it");
  app.add_option(
      "--token-url", o.token_url,
      "the assertion's aud must equal it (default https://127.0.0.1:PORT/token or https://localhost:PORT/token)");
  app.add_option("--token-ttl-s", o.token_ttl_s, "expires_in of issued access tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  return pacer::fake::runPushFake(app, argc, argv, "pacer-fake-fcm", [&] { return pacer::fake::makeFakeFcm(o); });
}

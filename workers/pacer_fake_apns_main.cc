// pacer-fake-apns: Apple's push provider API (HTTP/2 over TLS, provider
// tokens) on loopback for tests, the demo and benchmarks. See docs/fake-push.md.
#include "fake_push_cli.h"

int main(int argc, char** argv) {
  CLI::App app{"pacer-fake-apns: an APNs stand-in speaking HTTP/2 over TLS, as strict as Apple's"};
  app.set_version_flag("--version", std::string("pacer-fake-apns ") + PACER_VERSION);
  pacer::fake::FakeApnsOptions o;
  pacer::fake::addCommonPushFlags(app, o.push);
  app.add_option("--auth-key", o.auth_key_path, "PEM EC P-256 public key that verifies provider tokens (ES256)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--key-id", o.key_id, "the provider token's kid must equal this")->required();
  app.add_option("--team-id", o.team_id, "the provider token's iss must equal this")->required();
  app.add_option("--token-max-age-s", o.token_max_age_s, "older iat: 403 ExpiredProviderToken")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400 * 365));
  app.add_option("--token-min-interval-s", o.token_min_interval_s,
                 "a new provider token sooner than this after the last new one: 429 TooManyProviderTokenUpdates")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400 * 365));
  return pacer::fake::runPushFake(app, argc, argv, "pacer-fake-apns", [&] { return pacer::fake::makeFakeApns(o); });
}

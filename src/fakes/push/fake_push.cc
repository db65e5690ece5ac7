// The two fakes assembled: files read, the handler chosen, the server built.
#include "pacer/fakes/fake_push.h"

#include <fstream>
#include <functional>

#include "apns_handler.h"
#include "fcm_handler.h"
#include "push_server.h"

namespace pacer::fake {
namespace {

TokenSet readTokens(const std::string& path) {
  TokenSet tokens;
  if (path.empty()) return tokens;
  std::ifstream in(path);
  if (!in) throw FakePushConfigError("--invalid-tokens " + path + ": cannot read");
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) tokens.insert(line);
  }
  return tokens;
}

void checkCommon(const FakePushOptions& o) {
  if (o.cert_path.empty() || o.key_path.empty()) throw FakePushConfigError("--cert and --key are required");
  if (o.max_concurrent_streams == 0) throw FakePushConfigError("--max-concurrent-streams must be at least 1");
  if (o.fault_rate < 0 || o.fault_rate > 1) throw FakePushConfigError("--fault-rate must be within [0, 1]");
  if (o.throttle_rate < 0 || o.throttle_rate > 1) throw FakePushConfigError("--throttle-rate must be within [0, 1]");
  if (o.latency_ms < 0 || o.retry_after_s < 0) throw FakePushConfigError("--latency-ms and --retry-after must be >= 0");
}

PolicyOptions policyOf(const FakePushOptions& o) {
  if (!o.hot_token.empty() && o.hot_token_rate == 0) throw FakePushConfigError("--hot-token-rate must be at least 1");
  PolicyOptions p;
  p.window = o.window;
  p.invalid_tokens = readTokens(o.invalid_tokens_path);
  p.fault_rate = o.fault_rate;
  p.seed = o.seed;
  p.throttle_rate = o.throttle_rate;
  p.hot_token = o.hot_token;
  p.hot_token_rate = o.hot_token_rate;
  return p;
}

ServerConfig serverOf(const FakePushOptions& o) {
  return ServerConfig{o.listen,     o.cert_path,     o.key_path,    o.max_concurrent_streams,
                      o.latency_ms, o.retry_after_s, o.record_path, o.goaway_after};
}

PublicKey keyFile(const std::string& flag, const std::string& path) {
  if (path.empty()) throw FakePushConfigError(flag + " is required");
  try {
    return loadPublicKeyFile(path);
  } catch (const std::runtime_error& e) {
    throw FakePushConfigError(flag + ": " + e.what());
  }
}

// Reads everything at listen(): a bad file is reported before the port is.
class Provider final : public FakePushProvider {
 public:
  using Build = std::function<std::unique_ptr<PushHandler>()>;
  Provider(FakePushOptions push, Build build) : push_(std::move(push)), build_(std::move(build)) {}
  int listen() override {
    checkCommon(push_);
    server_ = std::make_unique<PushServer>(serverOf(push_), build_());
    return server_->listen();
  }
  void run() override { server_->run(); }

 private:
  FakePushOptions push_;
  Build build_;
  std::unique_ptr<PushServer> server_;
};

}  // namespace

FakePushProviderPtr makeFakeApns(FakeApnsOptions o) {
  return std::make_unique<Provider>(o.push, [o]() -> std::unique_ptr<PushHandler> {
    if (o.key_id.empty() || o.team_id.empty()) throw FakePushConfigError("--key-id and --team-id are required");
    return std::make_unique<ApnsHandler>(keyFile("--auth-key", o.auth_key_path),
                                         ApnsRules{o.key_id, o.team_id, o.token_max_age_s, o.token_min_interval_s},
                                         policyOf(o.push));
  });
}

FakePushProviderPtr makeFakeFcm(FakeFcmOptions o) {
  return std::make_unique<Provider>(o.push, [o]() -> std::unique_ptr<PushHandler> {
    FcmRules rules{o.sa_email, {}, o.token_ttl_s};
    if (!o.token_url.empty()) rules.audiences.push_back(o.token_url);
    return std::make_unique<FcmHandler>(keyFile("--sa-public-key", o.sa_public_key_path), std::move(rules),
                                        policyOf(o.push));
  });
}

}  // namespace pacer::fake

// The FCM access token: the RS256 assertion, the token endpoint's answer and
// when to fetch again (docs/push.md "Credentials").
#include <algorithm>
#include <utility>

#include "pacer/push/credentials.h"

namespace pacer::push {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

constexpr std::int64_t kAssertionLifetimeS = 3600;
// Longer lifetimes are taken as this: no overflow, and a day is far beyond
// what Google grants (3599 s).
constexpr std::int64_t kMaxExpiresInS = 86400;

// Error text from the endpoint, bounded and printable.
std::string printable(const std::string& s) {
  std::string out = s.substr(0, 200);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  }
  return out;
}

std::string failureReason(int status, const nlohmann::json& doc) {
  std::string reason = "HTTP " + std::to_string(status);
  if (doc.is_object() && doc.contains("error")) {
    const auto& e = doc["error"];
    if (e.is_string()) reason += " " + printable(e.get<std::string>());
    if (e.is_object() && e.contains("status") && e["status"].is_string()) {
      reason += " " + printable(e["status"].get<std::string>());
    }
    const auto d = doc.find("error_description");
    if (d != doc.end() && d->is_string()) reason += ": " + printable(d->get<std::string>());
  } else if (status == 200) {
    reason += ": token answer without access_token or a positive expires_in";
  }
  return reason;
}

}  // namespace

OAuthTokenCache::OAuthTokenCache(const ServiceAccount& account, OAuthOptions options)
    : client_email_(account.client_email),
      token_uri_(account.token_uri),
      key_(RsaPrivateKey::fromPem(account.private_key, "service account private_key")),
      options_(options) {
  if (client_email_.empty()) throw PushCredentialError("service account: client_email is empty");
  if (token_uri_.rfind("https://", 0) != 0 && token_uri_.rfind("http://", 0) != 0) {
    throw PushCredentialError("service account: token_uri must be an http(s) URL");
  }
  if (options_.refresh_margin < Nanos{0} || options_.backoff_initial <= Nanos{0} ||
      options_.backoff_max < options_.backoff_initial) {
    throw InvalidError("OAuth options: refresh_margin >= 0 and 0 < backoff_initial <= backoff_max");
  }
}

bool OAuthTokenCache::wantsFetch(WallTime now) const noexcept {
  if (in_flight_ || now < backoff_until_) return false;
  return token_.empty() || now >= refresh_at_;
}

TokenRequest OAuthTokenCache::startFetch(WallTime now) {
  const std::int64_t iat = unixSeconds(now);
  const nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  const nlohmann::json claims = {{"iss", client_email_},
                                 {"scope", kFcmScope},
                                 {"aud", token_uri_},
                                 {"iat", iat},
                                 {"exp", iat + kAssertionLifetimeS}};
  TokenRequest request;
  request.url = token_uri_;
  // The assertion is base64url and dots: nothing to percent-encode.
  request.body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" +
                 signJwtRs256(header, claims, key_);
  in_flight_ = true;
  fetch_started_ = now;
  ++fetches_started_;
  return request;
}

FetchResult OAuthTokenCache::onFetchAnswer(WallTime now, int status, std::string_view body) {
  const WallTime started = in_flight_ ? std::min(fetch_started_, now) : now;
  in_flight_ = false;
  const bool after_401 = std::exchange(refetch_after_401_, false);
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (status == 200 && doc.is_object()) {
    const auto token = doc.find("access_token");
    const auto expires = doc.find("expires_in");
    if (token != doc.end() && token->is_string() && !token->get<std::string>().empty() && expires != doc.end() &&
        expires->is_number() && expires->get<double>() >= 1) {
      const auto lifetime_s = std::min<std::int64_t>(static_cast<std::int64_t>(expires->get<double>()), kMaxExpiresInS);
      const milliseconds lifetime = std::chrono::seconds(lifetime_s);
      token_ = token->get<std::string>();
      expires_at_ = started + lifetime;
      refresh_at_ = expires_at_ - std::min(duration_cast<milliseconds>(options_.refresh_margin), lifetime / 2);
      failures_ = 0;
      backoff_until_ = WallTime{};
      token_after_401_ = after_401;
      if (!after_401) rejected_ = 0;  // this token came from a routine refresh
      return {true, {}};
    }
  }
  failed(now);
  return {false, failureReason(status, doc)};
}

void OAuthTokenCache::onFetchFailed(WallTime now) {
  in_flight_ = false;
  refetch_after_401_ = false;
  failed(now);
}

void OAuthTokenCache::failed(WallTime now) {
  ++failures_;
  backoff_until_ = now + duration_cast<milliseconds>(backoff(failures_));
}

Nanos OAuthTokenCache::backoff(int failures) const noexcept {
  Nanos wait = options_.backoff_initial;
  for (int i = 1; i < failures && wait < options_.backoff_max; ++i) wait *= 2;
  return std::min(wait, options_.backoff_max);
}

bool OAuthTokenCache::usable(WallTime now) const noexcept { return !token_.empty() && now < expires_at_; }

WallTime OAuthTokenCache::nextFetchAt() const noexcept {
  return token_.empty() ? backoff_until_ : std::max(refresh_at_, backoff_until_);
}

CredentialDecision OAuthTokenCache::on401(WallTime now, std::string_view used) {
  using Action = CredentialDecision::Action;
  if (!token_.empty() && used != token_) {
    return usable(now) ? CredentialDecision{Action::kRetryNow, {}} : CredentialDecision{Action::kWaitForToken, {}};
  }
  if (token_.empty()) {
    // Already dropped by an earlier 401 of the same token.
    if (in_flight_ || now >= backoff_until_) return {Action::kWaitForToken, {}};
    return {Action::kPause, backoff_until_};
  }
  token_.clear();
  if (token_after_401_) {
    // The token fetched once more was refused too: the account is bad (key
    // revoked, API disabled). Back off, longer each time, until a token
    // lives to its routine refresh.
    token_after_401_ = false;
    refetch_after_401_ = true;
    ++rejected_;
    backoff_until_ = now + duration_cast<milliseconds>(backoff(rejected_));
    return {Action::kPause, backoff_until_};
  }
  refetch_after_401_ = true;
  backoff_until_ = WallTime{};
  return {Action::kWaitForToken, {}};
}

}  // namespace pacer::push

// APNs: a request per message with the campaign's headers and the provider
// token; 403 ExpiredProviderToken renews the token (never twice in 20 min),
// 403 InvalidProviderToken holds every message until a new token may be made.
#include <fmt/format.h>
#include <strings.h>

#include "codecs.h"
#include "pacer/push/apns.h"
#include "pacer/sinks/http_sink.h"

namespace pacer::sink {
namespace {

class ApnsCodec final : public HttpCodec {
 public:
  ApnsCodec(const PushSinkOptions& o, push::EcPrivateKey key, std::map<std::string, push::ApnsOptions> per_campaign,
            LogFn log)
      : base_(o.apns_url),
        defaults_(o.apns),
        per_campaign_(std::move(per_campaign)),
        jwt_(push::ApnsJwtOptions{o.apns_team_id, o.apns_key_id, std::chrono::minutes(o.apns_token_refresh)},
             std::move(key)),
        log_(std::move(log)) {}

  bool ready(WallTime now, std::string& why) override {
    if (now < refused_until_) {
      why = fmt::format(
          "apns: the provider token was refused ({}); check sink.apns.key_id, team_id and key_file; "
          "messages wait, next token in {} s",
          refused_reason_, std::chrono::duration_cast<std::chrono::seconds>(refused_until_ - now).count());
      return false;
    }
    if (!jwt_.usable(now)) {
      why = "apns: the provider token expired early and APNs allows no new one yet (20 min apart); messages wait";
      return false;
    }
    return true;
  }

  bool ownRequest(WallTime, HttpRequest&) override { return false; }
  void ownAnswer(int, std::string_view, WallTime) override {}

  bool build(const Message& m, WallTime now, HttpRequest& out, SendResult& refused) override {
    const auto it = per_campaign_.find(m.campaign);
    const push::ApnsOptions& options = it != per_campaign_.end() ? it->second : defaults_;
    push::BuiltRequest b = push::buildApnsRequest(m, options, jwt_.token(now));
    if (!b.ok) {
      refused.outcome = SendOutcome::kPermanent;
      refused.reason = std::move(b.reason);
      return false;
    }
    toHttpRequest(base_, std::move(b.request), out);
    return true;
  }

  SendResult classify(int status, std::string_view body, const HeaderLookup& header, const HttpRequest& sent,
                      WallTime now) override {
    const auto retry_after = retryAfterValue(header("retry-after"), unixSeconds(now));
    push::PushVerdict v = push::classifyApnsAnswer(status, body, retry_after, header("apns-id"));
    if (v.refresh_credential) {
      // A late answer to a request with an older token renews nothing.
      const push::CredentialDecision d = jwt_.onExpiredProviderToken(now, credentialOf(sent));
      if (d.action == push::CredentialDecision::Action::kPause && log_)
        log_("apns: ExpiredProviderToken for a token younger than 20 min; messages wait for the next one");
    }
    if (v.credential_failure) {
      refused_until_ =
          jwt_.issuedAt() + std::chrono::duration_cast<std::chrono::milliseconds>(push::kApnsMinTokenInterval);
      refused_reason_ = v.result.reason;
    }
    return std::move(v.result);
  }

 private:
  std::string base_;
  push::ApnsOptions defaults_;
  std::map<std::string, push::ApnsOptions> per_campaign_;
  push::ApnsJwtCache jwt_;
  LogFn log_;
  WallTime refused_until_{};
  std::string refused_reason_;
};

}  // namespace

std::unique_ptr<HttpCodec> makeApnsCodec(const PushSinkOptions& o, push::EcPrivateKey key,
                                         std::map<std::string, push::ApnsOptions> per_campaign, LogFn log) {
  return std::make_unique<ApnsCodec>(o, std::move(key), std::move(per_campaign), std::move(log));
}

std::string_view credentialOf(const HttpRequest& sent) {
  for (const std::string& line : sent.headers) {
    if (line.size() < 15 || strncasecmp(line.c_str(), "authorization: ", 15) != 0) continue;
    const std::string_view value = std::string_view(line).substr(15);
    const auto space = value.find(' ');
    return space == std::string_view::npos ? value : value.substr(space + 1);
  }
  return {};
}

void toHttpRequest(const std::string& base, push::PushRequest&& in, HttpRequest& out) {
  out.url.assign(base);
  out.url.append(in.path);
  out.headers.clear();
  out.headers.emplace_back("content-type: application/json");
  for (auto& [name, value] : in.headers) out.headers.push_back(name + ": " + value);
  out.body = std::move(in.body);
}

}  // namespace pacer::sink

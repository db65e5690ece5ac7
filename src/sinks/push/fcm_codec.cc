// FCM HTTP v1: messages go with the cached OAuth 2.0 access token; the
// codec's own request fetches it (an RS256 assertion to the account's
// token_uri) ahead of expiry, and a 401 fetches it once more.
#include <fmt/format.h>

#include "codecs.h"
#include "pacer/push/fcm.h"
#include "pacer/sinks/http_sink.h"

namespace pacer::sink {
namespace {

class FcmCodec final : public HttpCodec {
 public:
  FcmCodec(const PushSinkOptions& o, const push::ServiceAccount& account, std::string project_id, LogFn log)
      : base_(o.fcm_url), project_id_(std::move(project_id)), cache_(account), log_(std::move(log)) {
    push::fcmPath(project_id_);  // throws InvalidError for an unusable project id
  }

  bool ready(WallTime now, std::string& why) override {
    if (cache_.usable(now)) return true;
    why = last_failure_.empty() ? "fcm: waiting for an access token"
                                : fmt::format("fcm: no access token ({}); messages wait", last_failure_);
    return false;
  }

  bool ownRequest(WallTime now, HttpRequest& out) override {
    if (!cache_.wantsFetch(now)) return false;
    push::TokenRequest t = cache_.startFetch(now);
    out.url = std::move(t.url);
    out.headers.assign({"content-type: " + t.content_type});
    out.body = std::move(t.body);
    return true;
  }

  void ownAnswer(int status, std::string_view body, WallTime now) override {
    if (status == 0) {
      cache_.onFetchFailed(now);
      last_failure_ = fmt::format("token endpoint unreachable: {}", body);
    } else if (push::FetchResult r = cache_.onFetchAnswer(now, status, body); !r.ok) {
      last_failure_ = std::move(r.reason);
    } else {
      last_failure_.clear();
      return;
    }
    if (log_) log_(fmt::format("fcm: access token fetch failed: {}", last_failure_));
  }

  bool build(const Message& m, WallTime now, HttpRequest& out, SendResult& refused) override {
    push::BuiltRequest built =
        push::buildFcmRequest(m, project_id_, cache_.accessToken(),
                              std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count());
    if (!built.ok) {
      refused.outcome = SendOutcome::kPermanent;
      refused.reason = std::move(built.reason);
      return false;
    }
    toHttpRequest(base_, std::move(built.request), out);
    return true;
  }

  SendResult classify(int status, std::string_view body, const HeaderLookup& header, const HttpRequest& sent,
                      WallTime now) override {
    const auto retry_after = retryAfterValue(header("retry-after"), unixSeconds(now));
    push::PushVerdict v = push::classifyFcmAnswer(status, body, retry_after);
    if (v.refresh_credential) cache_.on401(now, credentialOf(sent));
    return std::move(v.result);
  }

 private:
  std::string base_;
  std::string project_id_;
  push::OAuthTokenCache cache_;
  LogFn log_;
  std::string last_failure_;
};

}  // namespace

std::unique_ptr<HttpCodec> makeFcmCodec(const PushSinkOptions& o, const push::ServiceAccount& account,
                                        std::string project_id, LogFn log) {
  return std::make_unique<FcmCodec>(o, account, std::move(project_id), std::move(log));
}

}  // namespace pacer::sink

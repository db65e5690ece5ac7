// The two push codecs (private to pacer::sink_push): each turns messages
// into its provider's requests and the provider's answers into outcomes,
// and keeps its credential fresh. See pacer/sinks/http_codec.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "pacer/push/credentials.h"
#include "pacer/sinks/http_codec.h"
#include "pacer/sinks/push_sink.h"

namespace pacer::sink {

using LogFn = std::function<void(std::string_view)>;

std::unique_ptr<HttpCodec> makeApnsCodec(const PushSinkOptions& o, push::EcPrivateKey key,
                                         std::map<std::string, push::ApnsOptions> per_campaign, LogFn log);
std::unique_ptr<HttpCodec> makeFcmCodec(const PushSinkOptions& o, const push::ServiceAccount& account,
                                        std::string project_id, LogFn log);

// Copies a built request into the sink's: the URL from `base` and the path,
// "name: value" header lines, content-type application/json.
void toHttpRequest(const std::string& base, push::PushRequest&& in, HttpRequest& out);

// The credential a request carried: its "authorization" header's value
// after the scheme ("bearer <jwt>", "Bearer <token>"); empty if none.
std::string_view credentialOf(const HttpRequest& sent);

}  // namespace pacer::sink

// The push sinks' factories: read the credential files, resolve each
// campaign's APNs headers, and put a codec on the chosen transport (h2:
// nghttp2 over OpenSSL; curl: the HTTP sink's libcurl multi).
#include "pacer/sinks/push_sink.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "codecs.h"
#include "h2_sink.h"
#include "pacer/error.h"
#include "pacer/push/jwt.h"
#include "pacer/sinks/http_sink.h"

namespace pacer::sink {
namespace {

std::string readSecretFile(const std::string& path, const char* key) {
  if (path.empty()) throw InvalidError(fmt::format("{}: required", key));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidError(fmt::format("{}: cannot read '{}'", key, path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::int64_t headerInt(const std::string& value, const std::string& campaign, const std::string& name) {
  std::size_t used = 0;
  std::int64_t n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size())
    throw InvalidError(
        fmt::format("sink.apns.campaign_headers: {}/{}: expected an integer, got '{}'", campaign, name, value));
  return n;
}

SinkInterfacePtr transport(const PushSinkOptions& o, const std::string& url, std::size_t max_in_flight,
                           std::shared_ptr<HttpCodec> codec, std::function<void(std::string_view)> log) {
  if (o.connections == 0 || o.connections > 64) throw InvalidError("sink.push.connections: expected 1 to 64");
  if (o.max_streams == 0) throw InvalidError("sink.push.max_streams: expected at least 1");
  if (url.rfind("https://", 0) != 0 && o.transport == PushTransport::kH2)
    throw InvalidError(fmt::format("the push url must start with https:// (HTTP/2 over TLS), got '{}'", url));
  if (o.transport == PushTransport::kH2) {
    H2SinkOptions h;
    h.max_in_flight = max_in_flight;
    h.connections = o.connections;
    h.max_streams = o.max_streams;
    h.ca_file = o.ca_file;
    h.verify_tls = o.verify_tls;
    h.timeout = o.timeout;
    h.codec = std::move(codec);
    h.log = std::move(log);
    return makeH2PushSink(std::move(h));
  }
  HttpSinkOptions h;
  h.url = url;
  h.max_in_flight = max_in_flight;
  h.max_connections = o.connections;
  h.max_streams = o.max_streams;
  h.ca_file = o.ca_file;
  h.verify_tls = o.verify_tls;
  h.total_timeout = o.timeout;
  h.http2 = true;
  h.codec = std::move(codec);
  h.log = std::move(log);
  return makeHttpSink(std::move(h));
}

}  // namespace

push::ApnsOptions apnsOptionsFor(const push::ApnsOptions& base, const std::string& campaign,
                                 const std::map<std::string, std::string>& headers) {
  push::ApnsOptions o = base;
  for (const auto& [name, value] : headers) {
    if (name == "apns-topic") {
      o.topic = value;
    } else if (name == "apns-push-type") {
      o.push_type = value;
    } else if (name == "apns-priority") {
      o.priority = static_cast<int>(headerInt(value, campaign, name));
    } else if (name == "apns-expiration") {
      o.expiration = headerInt(value, campaign, name);
    } else if (name == "apns-collapse-id") {
      o.collapse_id = value;
    } else {
      throw InvalidError(
          fmt::format("sink.apns.campaign_headers: {}/{}: not one of apns-topic, apns-push-type, apns-priority, "
                      "apns-expiration, apns-collapse-id",
                      campaign, name));
    }
  }
  try {
    push::validateApnsOptions(o);
  } catch (const InvalidError& e) {
    throw InvalidError(fmt::format("sink.apns{}: {}", campaign.empty() ? "" : " campaign " + campaign, e.what()));
  }
  return o;
}

SinkInterfacePtr makeApnsSink(const PushSinkOptions& o, std::size_t max_in_flight,
                              std::function<void(std::string_view)> log) {
  if (o.apns.topic.empty()) throw InvalidError("sink.apns.topic: required (the app's bundle id)");
  const push::ApnsOptions defaults = apnsOptionsFor(o.apns, "", {});
  std::map<std::string, push::ApnsOptions> per_campaign;
  for (const auto& [campaign, headers] : o.apns_campaign_headers)
    per_campaign[campaign] = apnsOptionsFor(defaults, campaign, headers);
  push::EcPrivateKey key = [&] {
    try {
      return push::EcPrivateKey::fromPem(readSecretFile(o.apns_key_file, "sink.apns.key_file"), "APNs key");
    } catch (const push::PushCredentialError& e) {
      throw InvalidError(fmt::format("sink.apns.key_file: {}", e.what()));
    }
  }();
  PushSinkOptions checked = o;
  checked.apns = defaults;
  std::shared_ptr<HttpCodec> codec = makeApnsCodec(checked, std::move(key), std::move(per_campaign), log);
  return transport(o, o.apns_url, max_in_flight, std::move(codec), std::move(log));
}

SinkInterfacePtr makeFcmSink(const PushSinkOptions& o, std::size_t max_in_flight,
                             std::function<void(std::string_view)> log) {
  push::ServiceAccount account;
  try {
    account = push::parseServiceAccount(readSecretFile(o.fcm_service_account_file, "sink.fcm.service_account_file"));
  } catch (const push::PushCredentialError& e) {
    throw InvalidError(fmt::format("sink.fcm.service_account_file: {}", e.what()));
  }
  std::string project = o.fcm_project_id.empty() ? account.project_id : o.fcm_project_id;
  if (project.empty()) throw InvalidError("sink.fcm.project_id: required (the account names no project_id)");
  std::shared_ptr<HttpCodec> codec = makeFcmCodec(o, account, std::move(project), log);
  return transport(o, o.fcm_url, max_in_flight, std::move(codec), std::move(log));
}

}  // namespace pacer::sink

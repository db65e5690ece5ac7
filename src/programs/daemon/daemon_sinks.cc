// pacerd's sinks: the default one and, with providers.<id>.sink, a routing
// sink in front of it and the providers' own.
#include <fmt/format.h>

#include <cstdlib>
#include <set>

#include "daemon_parts.h"
#include "pacer/sinks/kafka_sink.h"
#include "pacer/sinks/smpp_sink.h"
#include "pacer/smpp/text.h"

namespace pacer::worker {
namespace {

SinkInterfacePtr makeHttp(const ProviderSinkOptions& o, const std::string& where) {
  sink::HttpSinkOptions h = o.http;
  h.max_in_flight = o.sink_in_flight;
  try {
    return sink::makeHttpSink(h);
  } catch (const InvalidError& e) {
    throw DaemonConfigError(fmt::format("{} http: {}", where, e.what()));
  }
}

SinkInterfacePtr makeKafka(const ProviderSinkOptions& o, const std::string& default_brokers, const std::string& where) {
  sink::KafkaSinkOptions k;
  k.brokers = o.sink_brokers.empty() ? default_brokers : o.sink_brokers;
  k.topic = o.sink_topic;
  k.max_in_flight = o.sink_in_flight;
  try {
    return sink::makeKafkaSink(k);
  } catch (const InvalidError& e) {
    throw DaemonConfigError(where == "sink" ? std::string(e.what()) : fmt::format("{}: {}", where, e.what()));
  }
}

// The password comes from the environment variable the configuration names
// (never from the file, never logged). `provider` goes into each receipt
// (empty for the default sink: its receipts match by the SMSC's id alone).
SinkInterfacePtr makeSmpp(const ProviderSinkOptions& o, const std::string& provider, const std::string& where,
                          const logging::LoggerPtr& log, std::vector<SmppSinkRef>* refs) {
  sink::SmppSinkOptions s = o.smpp;
  const char* password = std::getenv(o.smpp_password_env.c_str());
  if (!password)
    throw DaemonConfigError(
        fmt::format("{}.smpp.password_env: the environment variable {} (the bind password) is not set", where,
                    o.smpp_password_env));
  s.password = password;
  s.provider = provider;
  s.log = [log, where](std::string_view line) { log->info("event=smpp sink={} {}", where, line); };
  try {
    std::unique_ptr<sink::SmppSinkInterface> made = sink::makeSmppSink(std::move(s));
    if (refs) refs->push_back(SmppSinkRef{where, provider, made.get(), o.smpp.window, o.smpp.binds});
    return made;
  } catch (const InvalidError& e) {
    throw DaemonConfigError(fmt::format("{} smpp: {}", where, e.what()));
  }
}

// APNs or FCM: the credential is read here, so a missing key file stops
// pacerd at start with the key named (exit 2), not at the first message.
SinkInterfacePtr makePush(const ProviderSinkOptions& o, const std::string& where, const logging::LoggerPtr& log) {
  auto note = [log, where, kind = o.sink](std::string_view line) {
    log->warn("event=push_waiting sink={} kind={} {}", where, kind, line);
  };
  try {
    return o.sink == "apns" ? sink::makeApnsSink(o.push, o.sink_in_flight, note)
                            : sink::makeFcmSink(o.push, o.sink_in_flight, note);
  } catch (const InvalidError& e) {
    throw DaemonConfigError(where == "sink" ? std::string(e.what()) : fmt::format("{}: {}", where, e.what()));
  }
}

// One sink; `where` names it in errors ("sink", "providers.sms.sink").
SinkInterfacePtr makeOneSink(const ProviderSinkOptions& o, const std::string& default_brokers, const std::string& where,
                             const std::string& provider, const logging::LoggerPtr& log,
                             std::vector<SmppSinkRef>* smpp) {
  if (o.sink == "stdout") return makeStdoutSink(stdout, o.sink_in_flight);
  if (o.sink == "null") return makeNullSink(o.sink_in_flight);
  if (o.sink == "http") return makeHttp(o, where);
  if (o.sink == "kafka") return makeKafka(o, default_brokers, where);
  if (o.sink == "smpp") return makeSmpp(o, provider, where, log, smpp);
  if (o.sink == "apns" || o.sink == "fcm") return makePush(o, where, log);
  throw DaemonConfigError(
      fmt::format("{}: '{}' is not one of stdout, null, http, kafka, smpp, apns, fcm", where, o.sink));
}

class SegmentCost final : public MessageCostInterface {
 public:
  SegmentCost(bool default_is_smpp, std::set<std::string, std::less<>> smpp, std::set<std::string, std::less<>> other)
      : default_is_smpp_(default_is_smpp), smpp_(std::move(smpp)), other_(std::move(other)) {}

  MessageCost cost(const Message& m, std::string_view provider) const override {
    const bool own = !provider.empty() && (smpp_.count(provider) || other_.count(provider));
    if (own ? !smpp_.count(provider) : !default_is_smpp_) return MessageCost{};
    const smpp::SegmentCount n = smpp::countSegments(m.payload);
    switch (n.error) {
      case smpp::TextError::kNone: return MessageCost{static_cast<std::uint32_t>(n.segments), {}};
      case smpp::TextError::kInvalidUtf8:
        return MessageCost{0, fmt::format("text is not UTF-8 at byte {}", n.bad_offset)};
      default:
        return MessageCost{0, fmt::format("text needs {} segments, more than {}", n.segments, smpp::kMaxSegments)};
    }
  }

 private:
  bool default_is_smpp_;
  std::set<std::string, std::less<>> smpp_, other_;
};

}  // namespace

SinkInterfacePtr makeSink(const DaemonOptions& o, sink::ProviderOfCampaign provider_of, const logging::LoggerPtr& log,
                          std::vector<SmppSinkRef>* smpp) {
  SinkInterfacePtr main = makeOneSink(defaultSinkOptions(o), o.brokers, "sink", "", log, smpp);
  if (o.provider_sinks.empty()) return main;
  std::map<std::string, SinkInterfacePtr, std::less<>> by_provider;
  for (const auto& [id, ps] : o.provider_sinks)
    by_provider[id] = makeOneSink(ps, o.brokers, fmt::format("providers.{}.sink", id), id, log, smpp);
  return sink::makeRoutingSink(std::move(main), std::move(by_provider), std::move(provider_of));
}

std::unique_ptr<MessageCostInterface> makeMessageCost(const DaemonOptions& o) {
  std::set<std::string, std::less<>> smpp, other;
  for (const auto& [id, ps] : o.provider_sinks) (ps.sink == "smpp" ? smpp : other).insert(id);
  if (o.sink != "smpp" && smpp.empty()) return nullptr;
  return std::make_unique<SegmentCost>(o.sink == "smpp", std::move(smpp), std::move(other));
}

}  // namespace pacer::worker

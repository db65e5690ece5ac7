// pacerd's sinks: the default one and, with providers.<id>.sink, a routing
// sink in front of it and the providers' own. Each is made by its kind in
// the sink registry (pacer/sinks/sink_registry.h); nothing here names a sink.
#include <fmt/format.h>

#include <set>

#include "daemon_parts.h"
#include "pacer/sinks/sink_registry.h"
#include "pacer/smpp/text.h"

namespace pacer::worker {
namespace {

// One sink; `where` names it in errors ("sink", "providers.sms.sink").
SinkInterfacePtr makeOneSink(const ProviderSinkOptions& o, const std::string& default_brokers, const std::string& where,
                             const std::string& provider, const logging::LoggerPtr& log,
                             std::vector<SmppSinkRef>* smpp) {
  const sink::SinkKind* kind = sink::findSinkKind(o.sink);
  if (!kind) throw DaemonConfigError(fmt::format("{}: '{}' is not one of {}", where, o.sink, sink::sinkKindNames()));
  auto info = [log](std::string_view line) { log->info("{}", line); };
  auto warn = [log](std::string_view line) { log->warn("{}", line); };
  const sink::SinkBuild build{o, where, provider, default_brokers, info, warn};
  SinkInterfacePtr made;
  try {
    made = kind->make(build);
  } catch (const InvalidError& e) {  // its message names `where` and the setting
    throw DaemonConfigError(e.what());
  }
  // The SMPP window watch (daemon_smpp.cc) follows every SMPP session, whatever made it.
  if (const auto* session = dynamic_cast<const sink::SmppSinkInterface*>(made.get()); session && smpp)
    smpp->push_back(SmppSinkRef{where, provider, session, o.smpp.window, o.smpp.binds});
  return made;
}

bool countsSegments(const std::string& kind) {
  const sink::SinkKind* k = sink::findSinkKind(kind);
  return k && k->counts_segments;
}

// Segments are counted for sinks whose kind says so (SMPP): `smpp` holds
// the providers with such a sink of their own, `other` the rest with one.
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
  for (const auto& [id, ps] : o.provider_sinks) (countsSegments(ps.sink) ? smpp : other).insert(id);
  if (!countsSegments(o.sink) && smpp.empty()) return nullptr;
  return std::make_unique<SegmentCost>(countsSegments(o.sink), std::move(smpp), std::move(other));
}

}  // namespace pacer::worker

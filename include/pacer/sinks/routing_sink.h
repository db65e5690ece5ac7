// A sink that sends each message through the sink of the provider the worker
// chose for it (Message::provider, set under failover), else of its
// campaign's provider (pacerd's `providers.<id>.sink`), and every other message through the
// default sink. Tickets pass through unchanged, so every submitted message
// comes back from poll() exactly once, from whichever sink took it. Receipts
// come from every sink's pollReceipts(); receiptsRecorded() goes to every
// sink, and each acknowledges only the handles it made.
//
// Thread-safety: none; one owner thread, like the sinks it routes to.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "pacer/sink.h"

namespace pacer::sink {

// The provider of a campaign ("" when it has none or is unknown). Called once
// per submitted message: it must not allocate (a lookup in the caller's table).
using ProviderOfCampaign = std::function<std::string_view(std::string_view campaign)>;

// `by_provider` maps a provider id to its sink; `fallback` takes the rest.
// maxInFlight() is the sum over all sinks; a submit() to a provider's sink
// that is full returns false (the caller tries again after a poll()).
SinkInterfacePtr makeRoutingSink(SinkInterfacePtr fallback,
                                 std::map<std::string, SinkInterfacePtr, std::less<>> by_provider,
                                 ProviderOfCampaign provider_of);

}  // namespace pacer::sink

// The outcome events' keys: events.* (docs/configuration.md "Outcome events").
#include "config_keys.h"

namespace pacer::config::detail {

std::vector<Key> eventsKeys() {
  return {
      {"events.topic", Shape::kScalar, "--events-topic", FlagForm::kValue, false, false,
       "publish every ledger change to this Kafka topic (an outbox in the ledger's transaction); empty: off",
       [](const Raw& r, Ctx& c) { c.o.events_topic = asString(r); }},
      {"events.brokers", Shape::kList, "--events-brokers", FlagForm::kValue, false, false,
       "the events topic's bootstrap servers (HOST:PORT,...); empty: --brokers",
       [](const Raw& r, Ctx& c) {
         std::string joined;
         for (const std::string& b : asList(r)) joined += (joined.empty() ? "" : ",") + b;
         c.o.events_brokers = joined;
       }},
      {"events.worker_id", Shape::kScalar, "--events-worker-id", FlagForm::kValue, false, false,
       "this worker's name on its outbox rows, the same across restarts and unique per worker; empty: the host name",
       [](const Raw& r, Ctx& c) { c.o.events_worker_id = asString(r); }},
      {"events.batch", Shape::kScalar, "--events-batch", FlagForm::kValue, false, false,
       "outbox rows per read, produce and cursor update (default 1000)",
       [](const Raw& r, Ctx& c) { c.o.events_batch = static_cast<std::size_t>(asInt(r, 1, 100000)); }},
      {"events.in_flight", Shape::kScalar, "--events-in-flight", FlagForm::kValue, false, false,
       "batches produced while earlier ones wait for their acknowledgements, at most (default 4)",
       [](const Raw& r, Ctx& c) { c.o.events_in_flight = static_cast<std::size_t>(asInt(r, 1, 100)); }},
      {"events.poll_ms", Shape::kScalar, "--events-poll-ms", FlagForm::kValue, false, false,
       "an empty outbox is read again after this (default 20)",
       [](const Raw& r, Ctx& c) { c.o.events_poll = ms(asInt(r, 1, 60000)); }},
      {"events.prune_interval_ms", Shape::kScalar, "--events-prune-ms", FlagForm::kValue, false, false,
       "published outbox rows (at or below the worker's cursor) are deleted in bulk this often (default 5000)",
       [](const Raw& r, Ctx& c) { c.o.events_prune_interval = ms(asInt(r, 1, 3600000)); }},
      // Secret: it may hold sasl.password or ssl.key.password.
      {"events.properties", Shape::kMap, "--events-kafka", FlagForm::kRepeat, true, false,
       "any other producer property of the events topic, KEY=VALUE (repeatable)",
       [](const Raw& r, Ctx& c) {
         for (const auto& [k, v] : asMap(r)) c.o.events_kafka[k] = v;
       }},
  };
}

}  // namespace pacer::config::detail

namespace pacer::config::detail {

std::vector<Key> callbacksKeys() {
  return {
      {"callbacks.enabled", Shape::kScalar, "--no-callbacks", FlagForm::kSetFalse, false, false,
       "do not POST outcome events to campaigns' callback URLs (docs/callbacks.md); their rows are not written",
       [](const Raw& r, Ctx& c) { c.o.callbacks = asBool(r); }},
      {"callbacks.queue", Shape::kScalar, "--callbacks-queue", FlagForm::kValue, false, false,
       "callback events held in memory at most; the rest wait in the outbox (default 1000)",
       [](const Raw& r, Ctx& c) { c.o.callbacks_queue = static_cast<std::size_t>(asInt(r, 1, 1000000)); }},
      {"callbacks.concurrency", Shape::kScalar, "--callbacks-concurrency", FlagForm::kValue, false, false,
       "callback POSTs in flight at once, at most (default 8)",
       [](const Raw& r, Ctx& c) { c.o.callbacks_concurrency = static_cast<std::size_t>(asInt(r, 1, 1000)); }},
      {"callbacks.max_attempts", Shape::kScalar, "--callbacks-max-attempts", FlagForm::kValue, false, false,
       "POSTs per event, the first included, before it is given up on (default 5)",
       [](const Raw& r, Ctx& c) { c.o.callbacks_max_attempts = static_cast<int>(asInt(r, 1, 100)); }},
      {"callbacks.timeout_ms", Shape::kScalar, "--callbacks-timeout-ms", FlagForm::kValue, false, false,
       "one callback POST, connecting included (default 5000)",
       [](const Raw& r, Ctx& c) { c.o.callbacks_timeout = ms(asInt(r, 1, 600000)); }},
      {"callbacks.backoff_ms", Shape::kScalar, "--callbacks-backoff-ms", FlagForm::kValue, false, false,
       "wait before the second POST of an event; it doubles each retry (default 1000)",
       [](const Raw& r, Ctx& c) { c.o.callbacks_backoff = ms(asInt(r, 0, 3600000)); }},
      {"callbacks.max_backoff_ms", Shape::kScalar, "--callbacks-max-backoff-ms", FlagForm::kValue, false, false,
       "the longest wait between two POSTs of an event (default 60000)",
       [](const Raw& r, Ctx& c) { c.o.callbacks_max_backoff = ms(asInt(r, 0, 3600000)); }},
  };
}

}  // namespace pacer::config::detail

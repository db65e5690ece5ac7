// The worker's dead-token guard for the push sinks, limits.dead_token_*
// (docs/push.md). The push sinks' own keys are in src/sinks/push/push_keys.cc.
#include "config_keys.h"

namespace pacer::config::detail {

std::vector<Key> deadTokenKeys() {
  return {
      {"limits.dead_token_guard", Shape::kScalar, "--dead-token-guard", FlagForm::kValue, false, false,
       "stop marking push tokens dead while too many answers call them dead, on or off (default on)",
       [](const Raw& r, Ctx& c) { c.o.worker.dead_token_guard.enabled = asBool(r, "on or off"); }},
      {"limits.dead_token_threshold", Shape::kScalar, "--dead-token-threshold", FlagForm::kValue, false, false,
       "the guard holds above this share of a provider's answers calling a token dead, in (0, 1] (default 0.33)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.dead_token_guard.threshold = asDouble(
             r, [](double v) { return v > 0.0 && v <= 1.0; }, "a number above 0 and at most 1");
       }},
      {"limits.dead_token_window_s", Shape::kScalar, "--dead-token-window-s", FlagForm::kValue, false, false,
       "the guard's sliding window of answers, seconds (default 60)",
       [](const Raw& r, Ctx& c) { c.o.worker.dead_token_guard.window = std::chrono::seconds(asInt(r, 1, 3600)); }},
      {"limits.dead_token_min_answers", Shape::kScalar, "--dead-token-min-answers", FlagForm::kValue, false, false,
       "answers in the guard's window before it judges (default 50)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.dead_token_guard.min_answers = static_cast<std::uint32_t>(asInt(r, 1, 1'000'000));
       }},
      {"limits.dead_token_pause_s", Shape::kScalar, "--dead-token-pause-s", FlagForm::kValue, false, false,
       "the provider pauses this long from each dead verdict the guard holds (default 30)",
       [](const Raw& r, Ctx& c) { c.o.worker.dead_token_guard.pause = std::chrono::seconds(asInt(r, 1, 3600)); }},
  };
}

}  // namespace pacer::config::detail

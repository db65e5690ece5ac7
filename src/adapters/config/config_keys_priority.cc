// Priority classes: priority.* (docs/recipient-rules.md, "Priority classes").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "config_keys.h"

namespace pacer::config::detail {

namespace {

bool fraction(double v) { return v >= 0.0 && v <= 0.5; }

// Class names: 1-64 bytes of [A-Za-z0-9_-], distinct, at most kMaxPriorityRanks.
std::vector<std::string> classList(const Raw& r) {
  std::vector<std::string> names = asList(r);
  if (names.empty()) fail(r, "at least one class name");
  if (names.size() > kMaxPriorityRanks) fail(r, fmt::format("at most {} classes", kMaxPriorityRanks));
  std::set<std::string> seen;
  for (const std::string& n : names) {
    const bool ok = !n.empty() && n.size() <= 64 && n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
    if (!ok) fail(r, "class names of 1-64 letters, digits, '_' or '-'");
    if (!seen.insert(n).second) fail(r, "distinct class names");
  }
  return names;
}

}  // namespace

std::vector<Key> priorityKeys() {
  return {
      {"priority.classes", Shape::kList, "--priority-class", FlagForm::kRepeat, false, false,
       "priority classes, highest first (default critical, transactional, bulk)",
       [](const Raw& r, Ctx& c) { c.o.worker.priority_classes = classList(r); }},
      {"priority.default_class", Shape::kScalar, "--default-class", FlagForm::kValue, false, false,
       "the class of a campaign that names none (default bulk; must be one of priority.classes)",
       [](const Raw& r, Ctx& c) { c.o.worker.default_class = asNonEmpty(r); }},
      {"priority.floor", Shape::kScalar, "--priority-floor", FlagForm::kValue, false, false,
       "share of a provider's rate kept for each lower class asking, 0 to 0.5 (default 0.05)",
       [](const Raw& r, Ctx& c) {
         c.o.worker.lease.priority.floor = asDouble(r, fraction, "a number from 0 to 0.5");
       }},
      {"priority.lower_lookahead_ms", Shape::kScalar, "--priority-lower-lookahead-ms", FlagForm::kValue, false, false,
       "while a higher class asks, a lower one may be granted this far ahead of the provider's tokens (default 50)",
       [](const Raw& r, Ctx& c) { c.o.worker.lease.priority.lower_lookahead = ms(asInt(r, 0, 10'000)); }},
      {"priority.top_lookahead_ms", Shape::kScalar, "--priority-top-lookahead-ms", FlagForm::kValue, false, false,
       "with other classes about, the highest asking class is granted at most this far ahead (default 250)",
       [](const Raw& r, Ctx& c) { c.o.worker.lease.priority.top_lookahead = ms(asInt(r, 0, 10'000)); }},
  };
}

// The default class must be one of the classes, whichever source gave either.
void checkPriority(const DaemonOptions& o) {
  for (const std::string& n : o.worker.priority_classes)
    if (n == o.worker.default_class) return;
  throw ConfigError(fmt::format("priority.default_class: '{}' is not one of priority.classes ({})",
                                o.worker.default_class, fmt::join(o.worker.priority_classes, ", ")));
}

}  // namespace pacer::config::detail

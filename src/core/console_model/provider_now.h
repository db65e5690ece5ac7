// Small pieces the console model's files share (private to the library).
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <type_traits>

#include "pacer/console/console_model.h"
#include "pacer/validation.h"

namespace pacer::console::detail {

template <typename T>
Json orNull(const std::optional<T>& v) {
  if constexpr (std::is_floating_point_v<T>) {
    // NaN or Infinity (a row written past the checks) by name: null would read as unlimited.
    if (v && !std::isfinite(*v)) return Json(validation::numberText(*v));
  }
  return v ? Json(*v) : Json(nullptr);
}

inline Json textOrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

// The rate a provider's campaigns share now: the shared effective rate, else
// this worker's view of it, else the configured one.
inline std::optional<double> providerRateNow(const ProviderView& p) {
  if (p.shared_effective) return p.shared_effective;
  if (p.worker && p.worker->effective) return p.worker->effective;
  return p.row.limit.rate;
}

inline bool providerPaused(const ProviderView& p) { return p.shared_paused_s > 0 || (p.worker && p.worker->paused); }

inline bool circuitOpen(const ProviderView& p) { return p.worker && p.worker->circuit_open; }

}  // namespace pacer::console::detail

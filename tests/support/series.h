// Helpers for checking send series in tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace pacer::testing {

// The largest sum of `width` consecutive bins.
template <typename T>
std::uint64_t maxWindowSum(const std::vector<T>& bins, std::size_t width) {
  std::uint64_t sum = 0;
  std::uint64_t best = 0;
  for (std::size_t i = 0; i < bins.size(); ++i) {
    sum += bins[i];
    if (i >= width) sum -= bins[i - width];
    best = std::max(best, sum);
  }
  return best;
}

// Jain's fairness index: (sum x)^2 / (n * sum x^2); 1 is perfectly fair.
inline double jain(const std::vector<double>& x) {
  const double s = std::accumulate(x.begin(), x.end(), 0.0);
  double sq = 0;
  for (double v : x) sq += v * v;
  return sq == 0 ? 1.0 : s * s / (static_cast<double>(x.size()) * sq);
}

}  // namespace pacer::testing

// The only code in Pacer that reads the real clock.
#include "pacer/time.h"

namespace pacer {
namespace {

class SteadyTimeSource final : public TimeSource {
 public:
  MonoTime now() const noexcept override {
    return std::chrono::time_point_cast<Nanos>(std::chrono::steady_clock::now());
  }
};

}  // namespace

TimeSourcePtr makeSteadyTimeSource() { return std::make_unique<SteadyTimeSource>(); }

}  // namespace pacer

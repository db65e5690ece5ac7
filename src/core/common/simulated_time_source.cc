#include "pacer/time.h"

namespace pacer {

void SimulatedTimeSource::advance(Nanos d) noexcept { now_ += d; }
void SimulatedTimeSource::set(MonoTime t) noexcept { now_ = t; }

}  // namespace pacer

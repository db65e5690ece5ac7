// Keeps a worker's campaigns and providers in step with PostgreSQL: a full
// re-read every refresh interval, and each change pacerctl or the console
// announces on the control channel (LISTEN pacer_control) applied within a
// loop turn. Each row stands alone: one that fails its checks is skipped,
// named once in the log (event=row_skipped) and counted, its last good version
// stays in force, and one never loaded is held (WorkerCore::holdCampaign);
// the others load. A lost LISTEN connection is reopened with backoff, and
// everything is re-read after it (notices sent meanwhile are gone).
//
// Not thread-safe: the daemon loop owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pacer/logging/logging.h"
#include "pacer/time.h"
#include "pacer/worker.h"

namespace pacer::control {

struct ControlFeedOptions {
  std::string postgres;                              // libpq conninfo
  std::chrono::milliseconds refresh_interval{1000};  // a full re-read at least this often
  std::chrono::milliseconds tick{5};                 // the loop's tick (the small-burst warning)
  // How often this worker marks completed the campaigns whose total is
  // reached (PgDirectory::completeFinished); 0: never.
  std::chrono::milliseconds complete_interval{10000};
};

class ControlFeed {
 public:
  // `core` and `clock` must outlive it. `on_campaign` is told of every
  // campaign applied (the routing sink's campaign -> provider map).
  ControlFeed(ControlFeedOptions options, WorkerCore& core, const TimeSource& clock, logging::LoggerPtr log,
              std::function<void(const CampaignInfo&)> on_campaign);
  ~ControlFeed();
  ControlFeed(const ControlFeed&) = delete;
  ControlFeed& operator=(const ControlFeed&) = delete;

  // LISTEN, then the first full read (in that order: a change committed in
  // between is both read and announced, never neither).
  void start(MonoTime now);
  // Once per loop turn: notices that arrived, a re-read when due or owed.
  void poll(MonoTime now);
  // A full re-read now; false if PostgreSQL did not answer.
  bool refresh(MonoTime now);
  // A record for a campaign the core does not know: re-read (at most every
  // 200 ms), in case it was created just before its messages.
  void unknownCampaign(MonoTime now);
  void setRefreshInterval(std::chrono::milliseconds interval) noexcept;

  bool listening() const;
  std::size_t invalidRows() const noexcept;    // rows failing their checks now
  std::uint64_t rowsSkipped() const noexcept;  // every time a refresh or a notice skipped one
  // Every campaign as the table has it now (the summary's send_rate); empty
  // if PostgreSQL does not answer.
  std::vector<CampaignInfo> campaigns();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::control

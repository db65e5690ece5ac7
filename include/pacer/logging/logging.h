// pacerd's one logger: spdlog, one line per event on stderr (or any FILE*),
// as text or JSON. Lines are "<UTC time>Z <LEVEL> event=<name> key=value ...":
// the message of every call is the event and its fields, so that text and
// JSON carry the same content and operators can grep either.
//
//   text:  2026-11-24T19:53:30Z WARN event=row_skipped kind=campaign id=x reason="..."
//   json:  {"time":"2026-11-24T19:53:30Z","level":"warn","event":"row_skipped","message":"event=row_skipped ..."}
//
// Thread-safe (spdlog's mutex sinks).
#pragma once

#include <spdlog/logger.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "pacer/error.h"
#include "pacer/log_limiter.h"
#include "pacer/time.h"

namespace pacer::logging {

enum class Format { kText, kJson };

// "text" or "json"; throws InvalidError otherwise.
Format parseFormat(std::string_view text);

using LoggerPtr = std::shared_ptr<spdlog::logger>;

// A logger writing to `out` (not owned; flushed after every line); with a
// null `out`, one that writes nothing.
LoggerPtr makeLogger(std::FILE* out, Format format, const std::string& name = "pacer");

// Warnings that can repeat per event (a flood of failures): at most one line
// per key per interval, the next line saying how many were held back
// (" suppressed=N"). Not thread-safe: one per thread.
class LimitedLog {
 public:
  LimitedLog(LoggerPtr log, Nanos interval) : log_(std::move(log)), limiter_(interval) {}

  // Writes `line` at `level` unless a line of `key` was written within the
  // interval; returns whether it was written.
  bool write(spdlog::level::level_enum level, std::string_view key, const std::string& line, MonoTime now);

 private:
  LoggerPtr log_;
  LogLimiter limiter_;
};

}  // namespace pacer::logging

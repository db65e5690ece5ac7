#include "pacer/logging/logging.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/base_sink.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pacer::logging {
namespace {

const char* levelName(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace: return "TRACE";
    case spdlog::level::debug: return "DEBUG";
    case spdlog::level::info: return "INFO";
    case spdlog::level::warn: return "WARN";
    case spdlog::level::err: return "ERROR";
    case spdlog::level::critical: return "CRITICAL";
    default: return "INFO";
  }
}

std::string timeText(const spdlog::log_clock::time_point& t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", std::chrono::floor<std::chrono::seconds>(t));
}

// One event, one line: library error texts carry newlines and tabs.
std::string oneLine(std::string_view text) {
  std::string s(text);
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

class TextFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string line = fmt::format("{} {} {}\n", timeText(msg.time), levelName(msg.level),
                                         oneLine(std::string_view(msg.payload.data(), msg.payload.size())));
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<TextFormatter>(); }
};

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string message = oneLine(std::string_view(msg.payload.data(), msg.payload.size()));
    nlohmann::json j;
    j["time"] = timeText(msg.time);
    std::string level = levelName(msg.level);
    std::transform(level.begin(), level.end(), level.begin(), [](unsigned char c) { return std::tolower(c); });
    j["level"] = level;
    if (message.rfind("event=", 0) == 0) j["event"] = message.substr(6, message.find(' ') - 6);
    j["message"] = message;
    const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

// Writes to a FILE* it does not own, flushing each line (a crash loses none).
class FileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit FileSink(std::FILE* out) : out_(out) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    std::fwrite(buf.data(), 1, buf.size(), out_);
    std::fflush(out_);
  }
  void flush_() override { std::fflush(out_); }

 private:
  std::FILE* out_;
};

}  // namespace

Format parseFormat(std::string_view text) {
  if (text == "text") return Format::kText;
  if (text == "json") return Format::kJson;
  throw InvalidError(fmt::format("log format '{}': expected text or json", text));
}

LoggerPtr makeLogger(std::FILE* out, Format format, const std::string& name) {
  if (out == nullptr) {  // no log wanted (tests): a logger that writes nothing
    auto quiet = std::make_shared<spdlog::logger>(name);
    quiet->set_level(spdlog::level::off);
    return quiet;
  }
  auto sink = std::make_shared<FileSink>(out);
  if (format == Format::kJson)
    sink->set_formatter(std::make_unique<JsonFormatter>());
  else
    sink->set_formatter(std::make_unique<TextFormatter>());
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  logger->set_level(spdlog::level::info);
  return logger;
}

bool LimitedLog::write(spdlog::level::level_enum level, std::string_view key, const std::string& line, MonoTime now) {
  const std::optional<std::uint64_t> held = limiter_.admit(key, now);
  if (!held) return false;
  if (*held > 0)
    log_->log(level, "{} suppressed={}", line, *held);
  else
    log_->log(level, "{}", line);
  return true;
}

}  // namespace pacer::logging

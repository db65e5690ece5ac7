#include "pacer/fakes/mock_cluster.h"
#include "pacer/error.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace pacer::kafka_mock {
namespace {

constexpr std::int32_t kMaxPartitions = 10000;
constexpr int kMaxBrokers = 64;
constexpr std::size_t kMaxTopicName = 249;

bool legalTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

TopicSpec parseTopicSpec(std::string_view spec) {
  const std::string quoted = "topic '" + std::string(spec) + "'";
  const std::size_t colon = spec.rfind(':');
  if (colon == std::string_view::npos) throw MockConfigError(quoted + ": expected NAME:PARTITIONS");
  const std::string_view name = spec.substr(0, colon);
  const std::string_view count = spec.substr(colon + 1);
  if (name.empty() || name.size() > kMaxTopicName || name == "." || name == "..")
    throw MockConfigError(quoted + ": the name must be 1 to 249 characters and not '.' or '..'");
  for (const char c : name)
    if (!legalTopicChar(c)) throw MockConfigError(quoted + ": the name may hold only A-Z a-z 0-9 . _ -");
  std::int32_t partitions = 0;
  const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), partitions);
  if (count.empty() || ec != std::errc() || end != count.data() + count.size() || partitions < 1 ||
      partitions > kMaxPartitions)
    throw MockConfigError(quoted + ": PARTITIONS must be a whole number from 1 to " + std::to_string(kMaxPartitions));
  return TopicSpec{std::string(name), partitions};
}

struct MockCluster::Handles {
  rd_kafka_t* rk = nullptr;
  rd_kafka_mock_cluster_t* cluster = nullptr;
};

MockCluster::MockCluster(int brokers) : handles_(std::make_unique<Handles>()), brokers_(brokers) {
  if (brokers < 1 || brokers > kMaxBrokers)
    throw MockConfigError("--brokers must be from 1 to " + std::to_string(kMaxBrokers) + ", got " +
                          std::to_string(brokers));
  // The mock needs a client handle to live in; a producer with nothing to
  // send is the lightest one.
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::array<char, 512> err{};
  if (rd_kafka_conf_set(conf, "log_level", "3", err.data(), err.size()) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    throw Error(ErrorKind::kUnavailable, std::string("rdkafka config: ") + err.data());
  }
  handles_->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err.data(), err.size());
  if (handles_->rk == nullptr) {
    rd_kafka_conf_destroy(conf);  // not taken on failure
    throw Error(ErrorKind::kUnavailable, std::string("rd_kafka_new: ") + err.data());
  }
  handles_->cluster = rd_kafka_mock_cluster_new(handles_->rk, brokers);
  if (handles_->cluster == nullptr) {
    rd_kafka_destroy(handles_->rk);
    throw Error(ErrorKind::kUnavailable, "rd_kafka_mock_cluster_new failed (" + std::to_string(brokers) + " brokers)");
  }
}

MockCluster::~MockCluster() {
  rd_kafka_mock_cluster_destroy(handles_->cluster);
  rd_kafka_destroy(handles_->rk);
}

void MockCluster::createTopic(const TopicSpec& topic) {
  const rd_kafka_resp_err_t e =
      rd_kafka_mock_topic_create(handles_->cluster, topic.name.c_str(), topic.partitions, brokers_);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw Error(ErrorKind::kUnavailable, "cannot create topic '" + topic.name + "': " + rd_kafka_err2str(e));
}

std::string MockCluster::bootstraps() const { return rd_kafka_mock_cluster_bootstraps(handles_->cluster); }

void writeFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) throw Error(ErrorKind::kUnavailable, "cannot write " + tmp + ": " + std::strerror(errno));
  const std::string line = content + "\n";
  const bool written = std::fwrite(line.data(), 1, line.size(), f) == line.size();
  const bool flushed = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int saved = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !flushed || !closed) {
    std::remove(tmp.c_str());
    throw Error(ErrorKind::kUnavailable, "cannot write " + tmp + ": " + std::strerror(saved));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error(ErrorKind::kUnavailable, "cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
  }
}

}  // namespace pacer::kafka_mock

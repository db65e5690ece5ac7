// librdkafka's mock cluster (an in-process Kafka that speaks the real protocol
// over loopback TCP) behind a small class, for pacer-kafka-mock and tests.
#pragma once

#include "pacer/error.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pacer::kafka_mock {

// A topic to create: "NAME:PARTITIONS".
struct TopicSpec {
  std::string name;
  std::int32_t partitions = 1;
};

// A bad option (topic spec, broker count); the message
// says which and why.
class MockConfigError : public InvalidError {
 public:
  using InvalidError::InvalidError;
};

// Parses "NAME:PARTITIONS" (PARTITIONS 1..100000, NAME a legal Kafka topic
// name: 1..249 of [A-Za-z0-9._-], not "." or ".."). Throws MockConfigError.
TopicSpec parseTopicSpec(std::string_view spec);

// A running mock cluster; its brokers listen on random loopback ports until
// the object is destroyed.
// Thread-safety: createTopic() and bootstraps() may be called from any one
// thread at a time; the brokers run on librdkafka's own threads.
class MockCluster {
 public:
  // Starts `brokers` (1..64) brokers. Throws MockConfigError for a bad count,
  // std::runtime_error if librdkafka cannot start them.
  explicit MockCluster(int brokers);
  ~MockCluster();
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  // Creates `topic`, its partitions led by the brokers in turn. (The 2.0.2
  // mock replicates every partition on every broker.) Throws
  // std::runtime_error when the mock refuses (e.g. the topic exists).
  void createTopic(const TopicSpec& topic);

  // "127.0.0.1:P1,127.0.0.1:P2,..." for bootstrap.servers.
  std::string bootstraps() const;
  int brokers() const { return brokers_; }

 private:
  struct Handles;
  std::unique_ptr<Handles> handles_;
  int brokers_;
};

// Writes `content` plus a newline to `path` atomically: a temporary file in
// the same directory, then rename(). Throws std::runtime_error with errno text.
void writeFileAtomically(const std::string& path, const std::string& content);

}  // namespace pacer::kafka_mock

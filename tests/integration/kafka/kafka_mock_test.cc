// pacer-kafka-mock as clients see it: librdkafka producers and consumer
// groups, kcat, and committing out-of-order work through OffsetTracker.
#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pacer/offset_tracker.h"
#include "support/kafka_test_producer.h"
#include "support/kafka_mock_process.h"

namespace pacer {
namespace {

using testing::KafkaMockOptions;
using testing::KafkaMockProcess;
using testing::runProcess;
using Clock = std::chrono::steady_clock;

constexpr auto kConsumeLimit = std::chrono::seconds(30);

KafkaMockOptions options(int brokers, std::vector<std::string> topics) {
  KafkaMockOptions o;
  o.brokers = brokers;
  o.topics = std::move(topics);
  return o;
}

std::unique_ptr<RdKafka::Conf> makeConf(const std::map<std::string, std::string>& settings) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  for (const auto& [k, v] : settings)
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK) ADD_FAILURE() << k << "=" << v << ": " << err;
  return conf;
}

// A record as a consumer saw it.
struct Seen {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string key;
  std::string id;  // the message-id header
  std::string value;
};

// Produces `count` records to `topic`: record i goes to partition i % partitions
// with key "campaign-<i % 5>", header message-id "m-<i>" and value "payload-<i>".
void produce(const std::string& bootstraps, const std::string& topic, int partitions, int count) {
  std::vector<pacer::testing::TestRecord> records;
  for (int i = 0; i < count; ++i)
    records.push_back({i % partitions, "campaign-" + std::to_string(i % 5), "m-" + std::to_string(i),
                       "payload-" + std::to_string(i)});
  ASSERT_NO_FATAL_FAILURE(pacer::testing::produceRecords(bootstraps, topic, records));
}

std::unique_ptr<RdKafka::KafkaConsumer> makeConsumer(const std::string& bootstraps, const std::string& group) {
  auto conf = makeConf({{"bootstrap.servers", bootstraps},
                        {"group.id", group},
                        {"enable.auto.commit", "false"},
                        {"enable.auto.offset.store", "false"},
                        {"auto.offset.reset", "earliest"},
                        {"session.timeout.ms", "6000"},  // the mock needs > 3000; a rejoin waits this minus 1 s
                        {"enable.partition.eof", "true"}});
  std::string err;
  std::unique_ptr<RdKafka::KafkaConsumer> c(RdKafka::KafkaConsumer::create(conf.get(), err));
  EXPECT_NE(c, nullptr) << err;
  return c;
}

// Consumes until every one of `partitions` partitions has reported its end
// (after at least `at_least` records), or kConsumeLimit passes.
std::vector<Seen> consumeToEnd(RdKafka::KafkaConsumer& c, int partitions, std::size_t at_least) {
  std::vector<Seen> seen;
  std::set<std::int32_t> at_end;
  const auto deadline = Clock::now() + kConsumeLimit;
  while (Clock::now() < deadline && (static_cast<int>(at_end.size()) < partitions || seen.size() < at_least)) {
    std::unique_ptr<RdKafka::Message> m(c.consume(100));
    if (m->err() == RdKafka::ERR__PARTITION_EOF) {
      at_end.insert(m->partition());
    } else if (m->err() == RdKafka::ERR_NO_ERROR) {
      at_end.erase(m->partition());
      Seen s{m->partition(), m->offset(), m->key() ? *m->key() : "", "",
             std::string(static_cast<const char*>(m->payload()), m->len())};
      if (RdKafka::Headers* h = m->headers()) {
        const RdKafka::Headers::Header id = h->get_last("message-id");
        if (id.err() == RdKafka::ERR_NO_ERROR) s.id.assign(static_cast<const char*>(id.value()), id.value_size());
      }
      seen.push_back(std::move(s));
    } else if (m->err() != RdKafka::ERR__TIMED_OUT) {
      ADD_FAILURE() << "consume: " << m->errstr();
    }
  }
  EXPECT_EQ(static_cast<int>(at_end.size()), partitions) << "not every partition reached its end in time";
  return seen;
}

std::vector<RdKafka::TopicPartition*> toPartitions(const std::vector<PartitionCommit>& commits) {
  std::vector<RdKafka::TopicPartition*> out;
  for (const PartitionCommit& c : commits)
    out.push_back(RdKafka::TopicPartition::create(c.partition.topic, c.partition.partition, c.offset));
  return out;
}

void freePartitions(std::vector<RdKafka::TopicPartition*>& v) { RdKafka::TopicPartition::destroy(v); }

TEST(KafkaMockProcess, PublishesOneBootstrapListInTheFileAndOnStdout) {
  KafkaMockProcess mock(options(3, {"orders:2"}));
  EXPECT_EQ(mock.bootstraps(), mock.stdoutLine());
  std::stringstream list(mock.bootstraps());
  int brokers = 0;
  for (std::string entry; std::getline(list, entry, ',');) {
    EXPECT_EQ(entry.rfind("127.0.0.1:", 0), 0u) << entry;  // loopback only
    ++brokers;
  }
  EXPECT_EQ(brokers, 3);
}

TEST(KafkaMockProcess, ExitsZeroOnSigtermAndLeavesNoTemporaryFile) {
  KafkaMockProcess mock(options(1, {"orders:1"}));
  EXPECT_EQ(mock.stop(), 0) << mock.stderrText();
  std::string listing;
  ASSERT_EQ(runProcess({"ls", "-A", mock.dir()}, listing), 0);
  EXPECT_EQ(listing, "bootstrap\nstderr.log\n");
}

TEST(KafkaMockProcess, RefusesBadArgumentsWithAReasonAndANonZeroExit) {
  const std::string bin = testing::defaultKafkaMockBinary();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--topic", "x:0"}, "PARTITIONS"},  {{"--topic", "x"}, "NAME:PARTITIONS"}, {{"--topic", "x:abc"}, "PARTITIONS"},
      {{"--topic", "bad name:1"}, "name"}, {{"--brokers", "0"}, "--brokers"},     {{"--no-such-flag"}, "no-such-flag"},
  };
  for (const auto& [args, reason] : cases) {
    std::vector<std::string> argv{bin};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    EXPECT_NE(runProcess(argv, output), 0) << args[0];
    EXPECT_NE(output.find(reason), std::string::npos) << "output: " << output;
  }
}

TEST(KafkaMockProcess, TheFixtureReportsAMockThatDiesAtStart) {
  try {
    KafkaMockProcess mock(options(1, {"x:0"}));
    FAIL() << "started a mock with a 0-partition topic";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exited before publishing"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("PARTITIONS"), std::string::npos) << e.what();
  }
}

// ctest killing a hung test binary must not leave mocks behind: the fixture
// passes --die-with-parent. Here the starter is a shell that exits at once.
TEST(KafkaMockProcess, DieWithParentEndsTheMockWhenItsStarterExits) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/pacer-orphan-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string script = "'" + testing::defaultKafkaMockBinary() + "' --die-with-parent --bootstrap-file " + dir +
                             "/b >/dev/null 2>&1 & p=$!; while [ ! -s " + dir + "/b ]; do :; done; echo $p";
  std::string out;
  ASSERT_EQ(runProcess({"sh", "-c", script}, out), 0) << out;
  const int pid = std::stoi(out);
  // A pidfd turns readable when the process ends; ESRCH: already gone.
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  bool ended = fd < 0 && errno == ESRCH;
  if (fd >= 0) {
    pollfd p{fd, POLLIN, 0};
    ended = ::poll(&p, 1, 5000) == 1;
    ::close(fd);
  }
  if (!ended) ::kill(pid, SIGKILL);
  EXPECT_TRUE(ended) << "pacer-kafka-mock " << pid << " outlived its parent";
  std::filesystem::remove_all(dir);
}

TEST(KafkaMockKcat, ListsBrokersAndTopicsWithTheirPartitions) {
  KafkaMockProcess mock(options(2, {"campaigns:5", "dead-letters:1"}));
  std::string out;
  ASSERT_EQ(runProcess({"kcat", "-b", mock.bootstraps(), "-L", "-J", "-m", "10"}, out), 0) << out;
  const nlohmann::json meta = nlohmann::json::parse(out);
  EXPECT_EQ(meta.at("brokers").size(), 2u);
  std::map<std::string, std::size_t> partitions;
  for (const auto& t : meta.at("topics")) partitions[t.at("topic").get<std::string>()] = t.at("partitions").size();
  EXPECT_EQ(partitions["campaigns"], 5u);
  EXPECT_EQ(partitions["dead-letters"], 1u);
}

TEST(KafkaMockKcat, ProducesAndConsumesKeyedRecordsWithHeaders) {
  KafkaMockProcess mock(options(1, {"campaigns:2"}));
  std::string out;
  ASSERT_EQ(runProcess({"kcat", "-b", mock.bootstraps(), "-P", "-t", "campaigns", "-K", ":", "-H", "message-id=k"}, out,
                       "c1:hello\nc2:world\nc1:again\n"),
            0)
      << out;
  ASSERT_EQ(runProcess({"kcat", "-b", mock.bootstraps(), "-C", "-t", "campaigns", "-e", "-q", "-f", "%k|%s|%h\n"}, out),
            0)
      << out;
  std::multiset<std::string> lines;
  std::stringstream in(out);
  for (std::string l; std::getline(in, l);) lines.insert(l);
  EXPECT_EQ(lines,
            (std::multiset<std::string>{"c1|hello|message-id=k", "c2|world|message-id=k", "c1|again|message-id=k"}));
}

// The pipeline's commit rule end to end: a consumer finishes all but one
// message per partition, out of order, commits what OffsetTracker allows, and
// closes; a second consumer in the group resumes exactly at the hole.
TEST(KafkaMockConsumerGroup, ResumesFromTheOffsetTrackerCommitWithNothingMissing) {
  constexpr int kPartitions = 3;
  constexpr int kCount = 300;         // 100 per partition
  constexpr std::int64_t kHole = 40;  // per partition, the message left unfinished
  const std::string topic = "orders";
  KafkaMockProcess mock(options(1, {topic + ":" + std::to_string(kPartitions)}));
  ASSERT_NO_FATAL_FAILURE(produce(mock.bootstraps(), topic, kPartitions, kCount));

  OffsetTracker tracker;
  std::set<std::string> finished_ids;  // finished by the first consumer below its commit
  {
    auto first = makeConsumer(mock.bootstraps(), "pacer-resume");
    ASSERT_EQ(first->subscribe({topic}), RdKafka::ERR_NO_ERROR);
    const std::vector<Seen> seen = consumeToEnd(*first, kPartitions, kCount);
    ASSERT_EQ(seen.size(), static_cast<std::size_t>(kCount));
    for (const Seen& s : seen) {
      ASSERT_TRUE(tracker.add(topic, s.partition, s.offset));
      const int i = std::stoi(s.id.substr(2));
      EXPECT_EQ(s.key, "campaign-" + std::to_string(i % 5));
      EXPECT_EQ(s.value, "payload-" + std::to_string(i));
      EXPECT_EQ(s.partition, i % kPartitions);
    }
    // Finish out of order, all but the hole in each partition.
    std::vector<Seen> order = seen;
    std::shuffle(order.begin(), order.end(), std::mt19937(7));
    for (const Seen& s : order) {
      if (s.offset == kHole) continue;
      ASSERT_TRUE(tracker.finish(topic, s.partition, s.offset));
      if (s.offset < kHole) finished_ids.insert(s.id);
    }
    const std::vector<PartitionCommit> commits = tracker.commits();
    ASSERT_EQ(commits.size(), static_cast<std::size_t>(kPartitions));
    for (const PartitionCommit& c : commits) EXPECT_EQ(c.offset, kHole);

    std::vector<RdKafka::TopicPartition*> offsets = toPartitions(commits);
    ASSERT_EQ(first->offsets_store(offsets), RdKafka::ERR_NO_ERROR);
    freePartitions(offsets);
    ASSERT_EQ(first->commitSync(), RdKafka::ERR_NO_ERROR);

    std::vector<RdKafka::TopicPartition*> committed = toPartitions(commits);
    ASSERT_EQ(first->committed(committed, 10000), RdKafka::ERR_NO_ERROR);
    for (const RdKafka::TopicPartition* p : committed) EXPECT_EQ(p->offset(), kHole) << "partition " << p->partition();
    freePartitions(committed);
    ASSERT_EQ(first->close(), RdKafka::ERR_NO_ERROR);
  }
  tracker.revokeAll();

  auto second = makeConsumer(mock.bootstraps(), "pacer-resume");
  ASSERT_EQ(second->subscribe({topic}), RdKafka::ERR_NO_ERROR);
  const std::size_t expected = static_cast<std::size_t>(kCount) - kPartitions * kHole;
  const std::vector<Seen> resumed = consumeToEnd(*second, kPartitions, expected);
  second->close();

  std::map<std::int32_t, std::int64_t> first_offset;
  int below_commit = 0;  // duplicates of committed work: must be 0
  std::set<std::pair<std::int32_t, std::int64_t>> distinct;
  std::set<std::string> all_ids = finished_ids;
  for (const Seen& s : resumed) {
    if (!first_offset.count(s.partition)) first_offset[s.partition] = s.offset;
    if (s.offset < kHole) ++below_commit;
    distinct.insert({s.partition, s.offset});
    all_ids.insert(s.id);
  }
  EXPECT_EQ(below_commit, 0);
  EXPECT_EQ(resumed.size(), expected);
  EXPECT_EQ(distinct.size(), expected) << "a record was delivered twice to the second consumer";
  for (int p = 0; p < kPartitions; ++p) EXPECT_EQ(first_offset[p], kHole) << "partition " << p;
  EXPECT_EQ(all_ids.size(), static_cast<std::size_t>(kCount)) << "missing messages";
}

// Two members of one group split the partitions, and between them read
// every message (re-reads after a rebalance are allowed: nothing is committed).
TEST(KafkaMockConsumerGroup, TwoConsumersSplitThePartitionsWithNothingMissing) {
  constexpr int kPartitions = 4;
  constexpr int kCount = 400;
  const std::string topic = "campaigns";
  KafkaMockProcess mock(options(1, {topic + ":" + std::to_string(kPartitions)}));
  ASSERT_NO_FATAL_FAILURE(produce(mock.bootstraps(), topic, kPartitions, kCount));

  std::vector<std::unique_ptr<RdKafka::KafkaConsumer>> members;
  for (int i = 0; i < 2; ++i) {
    members.push_back(makeConsumer(mock.bootstraps(), "pacer-split"));
    ASSERT_EQ(members.back()->subscribe({topic}), RdKafka::ERR_NO_ERROR);
  }
  std::set<std::pair<std::int32_t, std::int64_t>> distinct;
  std::vector<std::set<std::int32_t>> assigned(members.size());
  std::vector<int> received(members.size(), 0);
  const auto split = [&] {
    std::set<std::int32_t> all;
    for (std::size_t i = 0; i < members.size(); ++i) {
      std::vector<RdKafka::TopicPartition*> a;
      members[i]->assignment(a);
      assigned[i].clear();
      for (const RdKafka::TopicPartition* p : a) assigned[i].insert(p->partition());
      RdKafka::TopicPartition::destroy(a);
      if (assigned[i].empty()) return false;
      all.insert(assigned[i].begin(), assigned[i].end());
    }
    return static_cast<int>(all.size()) == kPartitions;
  };
  const auto deadline = Clock::now() + kConsumeLimit;
  while (Clock::now() < deadline &&
         (distinct.size() < static_cast<std::size_t>(kCount) || received[0] == 0 || received[1] == 0 || !split())) {
    for (std::size_t i = 0; i < members.size(); ++i) {
      std::unique_ptr<RdKafka::Message> m(members[i]->consume(20));
      if (m->err() == RdKafka::ERR_NO_ERROR) {
        distinct.insert({m->partition(), m->offset()});
        ++received[i];
      }
    }
  }
  for (auto& c : members) c->close();
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kCount)) << "missing messages";
  ASSERT_EQ(assigned.size(), 2u);
  EXPECT_EQ(assigned[0].size(), 2u);
  EXPECT_EQ(assigned[1].size(), 2u);
  for (const std::int32_t p : assigned[0]) EXPECT_EQ(assigned[1].count(p), 0u) << "partition " << p << " in both";
  EXPECT_GT(received[0], 0);
  EXPECT_GT(received[1], 0);
}

}  // namespace
}  // namespace pacer

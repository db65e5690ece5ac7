// pacer-kafka-mock: librdkafka's mock Kafka cluster as a process, for tests,
// benchmarks and scripts/demo. Prints the bootstrap list on stdout (one line),
// optionally writes it to a file, and runs until SIGTERM or SIGINT.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "pacer/fakes/mock_cluster.h"

int main(int argc, char** argv) {
  CLI::App app{
      "pacer-kafka-mock: librdkafka's mock Kafka cluster on loopback; prints its bootstrap list and runs until "
      "SIGTERM/SIGINT"};
  app.set_version_flag("--version", std::string("pacer-kafka-mock ") + PACER_VERSION);
  int brokers = 1;
  std::vector<std::string> topic_specs;
  std::string bootstrap_file;
  bool die_with_parent = false;
  app.add_option("--brokers", brokers, "number of brokers (1-64)")->capture_default_str();
  app.add_option("--topic", topic_specs, "create topic NAME with PARTITIONS partitions (NAME:PARTITIONS, repeatable)")
      ->type_name("NAME:PARTITIONS");
  app.add_option("--bootstrap-file", bootstrap_file, "write the bootstrap list here (atomically) once ready");
  app.add_flag("--die-with-parent", die_with_parent,
               "exit (as on SIGTERM) when the process that started this one exits; for test fixtures");
  CLI11_PARSE(app, argc, argv);
  const pid_t parent = ::getppid();

  // Blocked before librdkafka starts its threads, so they inherit the mask and
  // only sigwait() below sees the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Nobody may be reading stdout any more; a failed write must not kill the mock.
  std::signal(SIGPIPE, SIG_IGN);
  if (die_with_parent) {
    // A test runner killed by a timeout cannot clean up: the kernel sends
    // SIGTERM instead. Checked after arming, in case the parent is already gone.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) return 0;
  }

  try {
    std::vector<pacer::kafka_mock::TopicSpec> topics;
    for (const std::string& spec : topic_specs) topics.push_back(pacer::kafka_mock::parseTopicSpec(spec));

    pacer::kafka_mock::MockCluster cluster(brokers);
    for (const auto& topic : topics) cluster.createTopic(topic);
    const std::string bootstraps = cluster.bootstraps();
    if (!bootstrap_file.empty()) pacer::kafka_mock::writeFileAtomically(bootstrap_file, bootstraps);
    fmt::print("{}\n", bootstraps);
    std::fflush(stdout);

    int sig = 0;
    sigwait(&signals, &sig);
    return 0;
  } catch (const pacer::kafka_mock::MockConfigError& e) {
    fmt::print(stderr, "pacer-kafka-mock: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pacer-kafka-mock: {}\n", e.what());
    return 1;
  }
}

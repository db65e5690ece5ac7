// pacer-fake-provider: a provider HTTP API stand-in on loopback for tests and
// benchmarks. See README "pacer-fake-provider".
#include <chrono>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include "pacer/fakes/fake_provider.h"

int main(int argc, char** argv) {
  CLI::App app{"pacer-fake-provider: a provider API stand-in that records every request"};
  app.set_version_flag("--version", std::string("pacer-fake-provider ") + PACER_VERSION);
  pacer::fake::FakeProviderOptions o;
  std::string port_file, report_file, record_file;
  int threads = 1;
  app.add_option("--host", o.host, "address to listen on")->capture_default_str();
  app.add_option("--port", o.port, "port; 0 picks a free one")->capture_default_str()->check(CLI::Range(0, 65535));
  app.add_option("--port-file", port_file, "write the port here once listening");
  app.add_option("--quota", o.quota_per_s, "requests/s accepted; above it 429 (0: no quota)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--quota-burst", o.quota_burst, "quota burst (0: one second of quota)")->check(CLI::NonNegativeNumber);
  app.add_option("--retry-after", o.retry_after_s, "Retry-After seconds sent with 429")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--retry-after-date", o.retry_after_as_date, "send Retry-After as an HTTP-date");
  app.add_option("--latency-ms", o.latency_ms, "added to every request")->check(CLI::NonNegativeNumber);
  app.add_option("--window", o.window_per_s,
                 "strict sliding window: at most this many requests accepted in any 1 s, the rest 429 (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--fail-rate", o.fail_rate, "fraction of requests answered --fail-status")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--fail-status", o.fail_status,
                 "the status of --fail-rate's answers (503 goes without Retry-After; 429 is a throttle at random, "
                 "whatever the rate, with --retry-after)")
      ->capture_default_str()
      ->check(CLI::IsMember({429, 500, 502, 503, 504}));
  app.add_option("--close-rate", o.close_rate, "fraction of connections dropped mid-response")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  // One event loop serves every connection now; the flag stays so that
  // scripts written for the thread-per-connection server still run.
  app.add_option("--threads", threads, "ignored (one event loop serves every connection)")->check(CLI::Range(1, 4096));
  app.add_option("--report", report_file, "write the per-campaign report (JSON) here on exit");
  app.add_option("--record", record_file, "write one line per request here on exit");
  CLI11_PARSE(app, argc, argv);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the server's thread starts

  try {
    // The record's times count from here: say when that was on the wall
    // clock, so a bench can set them against other clocks (Kafka timestamps).
    const auto epoch_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
    pacer::fake::FakeProvider provider(o);
    const int port = provider.start();
    if (!port_file.empty()) {
      const std::string tmp = port_file + ".tmp";
      std::ofstream(tmp) << port << "\n";
      std::rename(tmp.c_str(), port_file.c_str());
    }
    fmt::print("pacer-fake-provider listening on {}:{} (record times from epoch_ms={})\n", o.host, port, epoch_ms);
    std::fflush(stdout);
    int sig = 0;
    sigwait(&signals, &sig);
    provider.stop();
    if (!report_file.empty()) std::ofstream(report_file) << provider.report().dump(2) << "\n";
    if (!record_file.empty()) provider.writeRecord(record_file);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pacer-fake-provider: {}\n", e.what());
    return 1;
  }
}

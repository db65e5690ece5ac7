// The command line both fake push providers share: common flags, exit
// codes (2 for a bad flag or an unusable flag value), the ready line.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "pacer/fakes/fake_push.h"

namespace pacer::fake {

inline void addCommonPushFlags(CLI::App& app, FakePushOptions& o) {
  app.add_option("--listen", o.listen, "IPv4 HOST:PORT to listen on; port 0 picks a free one")->capture_default_str();
  app.add_option("--cert", o.cert_path, "PEM server certificate (chain)")->required()->check(CLI::ExistingFile);
  app.add_option("--key", o.key_path, "PEM private key of --cert")->required()->check(CLI::ExistingFile);
  app.add_option("--max-concurrent-streams", o.max_concurrent_streams,
                 "SETTINGS_MAX_CONCURRENT_STREAMS; streams beyond it get RST_STREAM REFUSED_STREAM")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u));
  app.add_option("--window", o.window, "accepted requests in any 1 s sliding window, no burst; 0: no limit")
      ->capture_default_str();
  app.add_option("--retry-after", o.retry_after_s, "retry-after (seconds) on the window's 429 answers")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400));
  app.add_option("--invalid-tokens", o.invalid_tokens_path, "file of device tokens (one a line) answered unregistered")
      ->check(CLI::ExistingFile);
  app.add_option("--hot-token", o.hot_token,
                 "a device token that gets at most --hot-token-rate notifications a second; above it a per-token 429 "
                 "(APNs TooManyRequests, no retry-after)");
  app.add_option("--hot-token-rate", o.hot_token_rate, "notifications a second the --hot-token gets")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u));
  app.add_option("--fault-rate", o.fault_rate, "fraction of requests answered 500 or 503")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--throttle-rate", o.throttle_rate,
                 "fraction of otherwise good requests answered 429 at random, whatever the rate (no retry-after)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--latency-ms", o.latency_ms, "delay every answer this long")->check(CLI::Range(0, 600000));
  app.add_option("--goaway-after", o.goaway_after,
                 "end each connection gracefully (GOAWAY naming that stream) after this many requests; 0: never")
      ->capture_default_str();
  app.add_option("--record", o.record_path, "append one JSON line per accepted request (flushed on exit, SIGUSR1)");
  app.add_option("--seed", o.seed, "random seed (faults, ids)")->capture_default_str();
}

// Parses, listens, prints "listening HOST:PORT", serves until SIGTERM/SIGINT.
template <typename Make>
int runPushFake(CLI::App& app, int argc, char** argv, const char* name, Make make) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    (void)app.exit(e);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    auto provider = make();
    const int port = provider->listen();
    const std::string listen = app.get_option("--listen")->as<std::string>();
    fmt::print("listening {}:{}\n", listen.substr(0, listen.rfind(':')), port);
    std::fflush(stdout);
    provider->run();
    return 0;
  } catch (const FakePushConfigError& e) {
    fmt::print(stderr, "{}: {}\n", name, e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", name, e.what());
    return 1;
  }
}

}  // namespace pacer::fake

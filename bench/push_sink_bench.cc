// The APNs sink's throughput: N notifications as fast as the sink keeps
// them in flight, over HTTP/2 with TLS and a real ES256 provider token,
// against pacer-fake-apns in another process (bench/push_sink_bench.sh).
//   push_sink_bench URL KEY_FILE KEY_ID TEAM_ID CA_FILE [messages] [in_flight] [connections] [streams] [transport]
// transport: h2 (default) or curl (sink.push.transport).
// Prints one JSON line: messages, seconds, notifications/s, CPU of this
// process per 1,000 notifications, outcomes.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "pacer/sinks/push_sink.h"

namespace {

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: push_sink_bench URL KEY_FILE KEY_ID TEAM_ID CA_FILE [messages] [in_flight] [connections] "
                 "[streams] [h2|curl]\n");
    return 2;
  }
  pacer::sink::PushSinkOptions o;
  o.apns_url = argv[1];
  o.apns_key_file = argv[2];
  o.apns_key_id = argv[3];
  o.apns_team_id = argv[4];
  o.ca_file = argv[5];
  o.apns.topic = "com.example.bench";
  const std::size_t total = argc > 6 ? std::stoul(argv[6]) : 200000;
  const std::size_t in_flight = argc > 7 ? std::stoul(argv[7]) : 200;
  o.connections = argc > 8 ? std::stoul(argv[8]) : 1;
  o.max_streams = argc > 9 ? std::stoul(argv[9]) : 1000;
  const std::string transport = argc > 10 ? argv[10] : "h2";
  o.transport = transport == "curl" ? pacer::sink::PushTransport::kCurl : pacer::sink::PushTransport::kH2;
  auto sink = pacer::sink::makeApnsSink(o, in_flight, [](std::string_view line) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  });

  pacer::Message m;
  m.campaign = "bench";
  m.recipient = std::string(64, 'a');
  m.payload = R"({"aps":{"alert":"Your order has shipped"}})";
  std::vector<pacer::SendResult> done;
  std::size_t submitted = 0, delivered = 0, other = 0;
  const double cpu0 = cpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  while (delivered + other < total) {
    while (submitted < total) {
      m.id = fmt::format("bench-{}", submitted);
      if (!sink->submit(m, submitted)) break;
      ++submitted;
    }
    sink->wait(std::chrono::milliseconds(10));
    done.clear();
    sink->poll(done);
    for (const auto& r : done) {
      if (r.outcome == pacer::SendOutcome::kDelivered) {
        ++delivered;
      } else if (++other <= 5) {
        std::fprintf(stderr, "not delivered: %s (%s)\n", r.reason.c_str(), pacer::outcomeName(r.outcome));
      }
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(120)) break;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = cpuSeconds() - cpu0;
  fmt::print(
      "{{\"transport\": \"{}\", \"messages\": {}, \"in_flight\": {}, \"connections\": {}, \"max_streams\": {}, \"seconds\": {:.3f}, "
      "\"notifications_per_s\": {:.0f}, \"cpu_s\": {:.3f}, \"cpu_ms_per_1000\": {:.2f}, \"delivered\": {}, "
      "\"not_delivered\": {}}}\n",
      transport, total, in_flight, o.connections, o.max_streams, secs, static_cast<double>(delivered + other) / secs, cpu,
      cpu * 1e6 / static_cast<double>(delivered + other), delivered, other);
  return other == 0 && delivered == total ? 0 : 1;
}

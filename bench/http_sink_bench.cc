// HTTP sink throughput: N requests as fast as the sink can keep them in
// flight, against a provider at URL (pacer-fake-provider in another process).
//   http_sink_bench URL [requests] [max_in_flight]
// Prints one JSON line: requests, seconds, requests/s, outcomes.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pacer/sinks/http_sink.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: http_sink_bench URL [requests] [max_in_flight]\n");
    return 2;
  }
  pacer::sink::HttpSinkOptions o;
  o.url = argv[1];
  const std::size_t total = argc > 2 ? std::stoul(argv[2]) : 100000;
  o.max_in_flight = argc > 3 ? std::stoul(argv[3]) : 64;
  auto sink = pacer::sink::makeHttpSink(o);

  pacer::Message m;
  m.campaign = "bench";
  m.recipient = "+15550100";
  m.payload = R"({"to":"+15550100","text":"Your code is 123456"})";
  std::vector<pacer::SendResult> done;
  std::size_t submitted = 0, delivered = 0, other = 0;
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
    for (const auto& r : done) (r.outcome == pacer::SendOutcome::kDelivered ? delivered : other)++;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{{\"requests\": {}, \"max_in_flight\": {}, \"seconds\": {:.3f}, \"requests_per_s\": {:.0f}, "
             "\"delivered\": {}, \"not_delivered\": {}}}\n",
             total, o.max_in_flight, secs, static_cast<double>(total) / secs, delivered, other);
  return other == 0 ? 0 : 1;
}

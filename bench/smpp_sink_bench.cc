// SMPP sink throughput: N messages (single-segment unless asked) through one
// sink against an SMSC at 127.0.0.1:PORT (pacer-fake-smsc in another process,
// so its CPU is not counted here), as fast as the window allows.
//   smpp_sink_bench PORT [messages] [window] [binds] [receipts: 0|1] [segments: 1-255]
// Prints one JSON line: messages, seconds, submit_sm/s, this process's CPU
// (getrusage: user + system) in total and per 1,000 submit_sm.
// Stops by itself after 120 s whatever happened.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "pacer/sinks/smpp_sink.h"

namespace {

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: smpp_sink_bench PORT [messages] [window] [binds] [receipts 0|1] [segments]\n");
    return 2;
  }
  pacer::sink::SmppSinkOptions o;
  o.port = std::stoi(argv[1]);
  const std::size_t total = argc > 2 ? std::stoul(argv[2]) : 100000;
  o.window = argc > 3 ? std::stoul(argv[3]) : 100;
  o.binds = argc > 4 ? std::stoul(argv[4]) : 1;
  const bool receipts = argc > 5 && std::string(argv[5]) == "1";
  const std::size_t segments = argc > 6 ? std::stoul(argv[6]) : 1;
  o.system_id = "bench";
  o.password = "bench";
  o.submit.receipts = receipts ? pacer::smpp::ReceiptRequest::kFirst : pacer::smpp::ReceiptRequest::kNone;
  auto sink = pacer::sink::makeSmppSink(o);

  pacer::Message m;
  m.campaign = "bench";
  m.recipient = "+4915112345678";
  m.payload = segments <= 1 ? "Your code is 123456" : std::string(153 * segments - 3, 'x');
  std::vector<pacer::SendResult> done;
  std::vector<pacer::DeliveryReceipt> got;
  std::size_t submitted = 0, delivered = 0, other = 0, receipt_count = 0;
  // Warm up: one message, so the bind is not in the measurement.
  sink->submit(m, 0);
  while (done.empty()) {
    sink->wait(std::chrono::milliseconds(10));
    sink->poll(done);
  }
  done.clear();
  const auto start = std::chrono::steady_clock::now();
  const auto give_up = start + std::chrono::seconds(120);
  const double cpu0 = cpuSeconds();
  while ((delivered + other < total || (receipts && receipt_count < total)) &&
         std::chrono::steady_clock::now() < give_up) {
    while (submitted < total && sink->submit(m, submitted + 1)) ++submitted;
    sink->wait(std::chrono::milliseconds(10));
    done.clear();
    sink->poll(done);
    for (const auto& r : done) (r.outcome == pacer::SendOutcome::kDelivered ? delivered : other)++;
    got.clear();
    sink->pollReceipts(got);
    sink->receiptsRecorded(got);  // no ledger here: answered as soon as read, as after a write
    receipt_count += got.size();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = cpuSeconds() - cpu0;
  const auto pdus = static_cast<double>((delivered + other) * std::max<std::size_t>(segments, 1));
  fmt::print(
      "{{\"messages\": {}, \"segments\": {}, \"window\": {}, \"binds\": {}, \"receipts\": {}, \"seconds\": {:.3f}, "
      "\"submit_sm_per_s\": {:.0f}, \"cpu_s\": {:.3f}, \"cpu_ms_per_1000_submit_sm\": {:.1f}, "
      "\"delivered\": {}, \"not_delivered\": {}}}\n",
      total, std::max<std::size_t>(segments, 1), o.window, o.binds, receipt_count, secs, pdus / secs, cpu,
      cpu * 1e6 / pdus, delivered, other);
  return other == 0 && delivered == total ? 0 : 1;
}

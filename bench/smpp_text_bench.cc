// The per-message costs the daemon pays for SMPP text: countSegments (the
// quota asks it for every message) and encodeText + buildSubmits (the sink,
// once per message). Google Benchmark; run by hand:
//   build/release/bench/smpp_text_bench
#include <benchmark/benchmark.h>

#include <string>

#include "pacer/smpp/submit.h"
#include "pacer/smpp/text.h"

namespace {

const std::string kGsm160 = std::string(150, 'a') + " {euro} \u20AC";  // 1 segment, with escapes
const std::string kGsm3 = std::string(400, 'b');                       // 3 segments
const std::string kUcs2 =
    "\u041F\u0440\u0438\u0432\u0435\u0442 \U0001F600 " + std::string(100, 'c');  // UCS-2, 2 segments

void BM_CountSegments(benchmark::State& state, const std::string& text) {
  for (auto _ : state) benchmark::DoNotOptimize(pacer::smpp::countSegments(text));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

void BM_BuildSubmits(benchmark::State& state, const std::string& text) {
  pacer::smpp::SubmitOptions o;
  pacer::smpp::EncodedText scratch;
  std::vector<pacer::smpp::Pdu> pdus;
  std::size_t n = 0;
  std::string reason;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pacer::smpp::buildSubmits(o, "4915112345678", text, 1, scratch, pdus, n, reason));
  }
}

BENCHMARK_CAPTURE(BM_CountSegments, gsm_1_segment, kGsm160);
BENCHMARK_CAPTURE(BM_CountSegments, gsm_3_segments, kGsm3);
BENCHMARK_CAPTURE(BM_CountSegments, ucs2_2_segments, kUcs2);
BENCHMARK_CAPTURE(BM_BuildSubmits, gsm_1_segment, kGsm160);
BENCHMARK_CAPTURE(BM_BuildSubmits, gsm_3_segments, kGsm3);
BENCHMARK_CAPTURE(BM_BuildSubmits, ucs2_2_segments, kUcs2);

}  // namespace

BENCHMARK_MAIN();

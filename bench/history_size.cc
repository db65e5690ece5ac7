// The console's history document (/api/v1/history) after an hour of many
// campaigns: the pure model (pacer::console::Histories) fed one refresh a
// second on a simulated clock, as the console's refresher does while a page
// watches, then the document's size as served plain and gzip-encoded (zlib
// level 6, as the console's answer). Results in bench/RESULTS-console.md.
//
//   history_size [CAMPAIGNS=1000] [SECONDS=3600] [PROVIDERS=10]
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pacer/console/console_model.h"

namespace {

std::size_t gzipSize(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const std::size_t n = out.size() - z.avail_out;
  deflateEnd(&z);
  return rc == Z_STREAM_END ? n : 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pacer::console;
  const int campaigns = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 3600;
  const int providers = argc > 3 ? std::atoi(argv[3]) : 10;
  std::vector<CampaignView> cs(static_cast<std::size_t>(campaigns));
  for (int i = 0; i < campaigns; ++i) {
    CampaignView& c = cs[static_cast<std::size_t>(i)];
    c.row.id = "campaign-" + std::to_string(i);
    c.row.state = "active";
    c.row.limit.rate = 50.0 + i % 20 * 10;
    c.row.provider = "provider-" + std::to_string(i % providers);
    c.top.id = c.row.id;
  }
  std::vector<ProviderView> ps(static_cast<std::size_t>(providers));
  for (int i = 0; i < providers; ++i) {
    ProviderView& p = ps[static_cast<std::size_t>(i)];
    p.row.id = "provider-" + std::to_string(i);
    p.row.limit.rate = 5000;
    p.worker = ProviderView::Worker{};
  }
  Histories h;
  const double start = 1795500000;  // a fixed epoch: the simulated clock
  const auto began = std::chrono::steady_clock::now();
  for (int s = 0; s < seconds; ++s) {
    // Achieved rates that move: a few percent of noise around 90% of the configured rate.
    for (int i = 0; i < campaigns; ++i) {
      CampaignView& c = cs[static_cast<std::size_t>(i)];
      c.top.achieved = *c.row.limit.rate * (0.9 + 0.05 * std::sin(0.01 * s + i));
    }
    for (int i = 0; i < providers; ++i) {
      ProviderView& p = ps[static_cast<std::size_t>(i)];
      p.worker->throttled += static_cast<std::uint64_t>((s + i) % 7 == 0);
      p.worker->server_errors += static_cast<std::uint64_t>((s * 3 + i) % 11 == 0);
      p.shared_effective = 4000 + 500 * std::sin(0.002 * s + i);
    }
    h.add(start + s, cs, ps);
  }
  const double fed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const auto t0 = std::chrono::steady_clock::now();
  const std::string doc = h.json().dump();
  const double dump_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const Json j = Json::parse(doc);
  std::printf(
      "history after %d s of %d campaigns and %d providers, one refresh a second (simulated clock):\n"
      "  document %zu bytes (%.1f KB), gzip-encoded %zu bytes (%.1f KB); step %.0f s; %zu campaigns in it, %zu left "
      "out\n"
      "  feeding %d refreshes took %.2f s; building the document %.1f ms\n",
      seconds, campaigns, providers, doc.size(), doc.size() / 1024.0, gzipSize(doc), gzipSize(doc) / 1024.0,
      j["step_s"].get<double>(), j["campaigns"].size(), j["campaigns_left_out"].get<std::size_t>(), seconds, fed_s,
      dump_ms);
  return 0;
}

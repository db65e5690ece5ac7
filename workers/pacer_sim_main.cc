// pacer-sim SCENARIO [--bins] [--out FILE] [--summary]
// Runs the real scheduler and limiters on a simulated clock; writes JSON.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "pacer/sim/report.h"
#include "pacer/sim/scenario.h"
#include "pacer/sim/simulator.h"
#include "pacer/time.h"

int main(int argc, char** argv) {
  CLI::App app{"pacer-sim: run Pacer's scheduler and limiters on simulated time and report what was sent"};
  app.set_version_flag("--version", std::string("pacer-sim ") + PACER_VERSION);
  std::string scenario_path;
  std::string out_path;
  bool bins = false;
  bool summary = false;
  app.add_option("scenario", scenario_path, "scenario file (YAML or JSON)")->required();
  app.add_flag("--bins", bins, "also report sends per tick in \"bins\"");
  app.add_option("--out", out_path, "write the JSON here instead of stdout");
  app.add_flag("--summary", summary, "print a table for people on stdout (the JSON then needs --out)");
  CLI11_PARSE(app, argc, argv);

  try {
    const pacer::sim::Scenario scenario = pacer::sim::loadScenario(scenario_path);
    const auto clock = pacer::makeSteadyTimeSource();
    const pacer::MonoTime started = clock->now();
    const pacer::sim::SimResult result = pacer::sim::simulate(scenario, bins);
    const double wall_ms = std::chrono::duration<double, std::milli>(clock->now() - started).count();

    if (!out_path.empty()) {
      std::FILE* f = std::fopen(out_path.c_str(), "w");
      if (f == nullptr) {
        fmt::print(stderr, "pacer-sim: cannot write {}\n", out_path);
        return 1;
      }
      pacer::sim::writeJson(f, result, bins, wall_ms);
      if (std::fclose(f) != 0) {
        fmt::print(stderr, "pacer-sim: writing {} failed\n", out_path);
        return 1;
      }
    } else if (!summary) {
      pacer::sim::writeJson(stdout, result, bins, wall_ms);
    }
    if (summary) {
      fmt::print("{}", pacer::sim::summaryTable(scenario, result));
      fmt::print("simulated {:g} s in {:.0f} ms of wall time\n", scenario.duration_s, wall_ms);
    }
    return 0;
  } catch (const pacer::sim::ScenarioError& e) {
    fmt::print(stderr, "pacer-sim: invalid scenario: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pacer-sim: {}\n", e.what());
    return 1;
  }
}

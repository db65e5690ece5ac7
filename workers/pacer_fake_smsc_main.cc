// pacer-fake-smsc: an SMPP 3.4 SMSC stand-in on loopback for tests, the demo
// and benchmarks. See docs/smpp.md "pacer-fake-smsc".
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "pacer/fakes/fake_smsc.h"

namespace {

// "name:password[:quota]"
pacer::fake::FakeSmscAccount parseAccount(const std::string& spec) {
  pacer::fake::FakeSmscAccount a;
  const auto c1 = spec.find(':');
  if (c1 == std::string::npos || c1 == 0) throw CLI::ValidationError("--account", "expected name:password[:quota]");
  a.system_id = spec.substr(0, c1);
  const auto c2 = spec.find(':', c1 + 1);
  a.password = spec.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  if (c2 != std::string::npos) {
    try {
      a.quota_per_s = std::stoi(spec.substr(c2 + 1));
    } catch (const std::exception&) {
      throw CLI::ValidationError("--account", "quota must be a whole number of segments per second");
    }
    if (a.quota_per_s < 0) throw CLI::ValidationError("--account", "quota must not be negative");
  }
  if (a.system_id.size() > 15 || a.password.size() > 8)
    throw CLI::ValidationError("--account", "system_id at most 15 characters, password at most 8");
  return a;
}

// "delivered=0.9,undelivered=0.05,expired=0.05,rejected=0"
void parseMix(const std::string& spec, pacer::fake::FakeSmscOptions& o) {
  o.mix_delivered = o.mix_undelivered = o.mix_expired = o.mix_rejected = 0;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw CLI::ValidationError("--receipt-mix", "expected status=weight,...");
    const std::string key = item.substr(0, eq);
    double w = 0;
    try {
      w = std::stod(item.substr(eq + 1));
    } catch (const std::exception&) {
      throw CLI::ValidationError("--receipt-mix", "weight of " + key + " is not a number");
    }
    if (w < 0) throw CLI::ValidationError("--receipt-mix", "weights must not be negative");
    if (key == "delivered")
      o.mix_delivered = w;
    else if (key == "undelivered")
      o.mix_undelivered = w;
    else if (key == "expired")
      o.mix_expired = w;
    else if (key == "rejected")
      o.mix_rejected = w;
    else
      throw CLI::ValidationError("--receipt-mix", "unknown status " + key);
  }
}

// The ways the SMSC misbehaves on purpose: error rates, random throttles,
// an outage, faults in the middle of multi-part messages.
void addFaultOptions(CLI::App& app, pacer::fake::FakeSmscOptions& o) {
  app.add_option("--permanent-rate", o.permanent_rate, "fraction answered --permanent-status")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--permanent-status", o.permanent_status, "command_status of those (default 0x0B ESME_RINVDSTADR)");
  app.add_option("--transient-rate", o.transient_rate, "fraction answered --transient-status")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--transient-status", o.transient_status, "command_status of those (default 0x08 ESME_RSYSERR)");
  app.add_option("--throttle-rate", o.throttle_rate,
                 "fraction answered ESME_RTHROTTLED at random, whatever the rate (throttle noise)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--outage-at-ms", o.outage_at_ms,
                 "this long after the first submit_sm, drop every connection and refuse binds for --outage-ms")
      ->check(CLI::Range(0, 86400000));
  app.add_option("--outage-ms", o.outage_ms, "how long binds are refused (ESME_RBINDFAIL) after the outage starts")
      ->check(CLI::Range(0, 86400000));
  app.add_option("--segment-fault-rate", o.segment_fault_rate,
                 "fraction of multi-part messages with one segment answered --segment-fault-status")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--segment-fault-part", o.segment_fault_part, "which segment; 0: a random one of 2..m")
      ->capture_default_str()
      ->check(CLI::Range(0, 255));
  app.add_option("--segment-fault-times", o.segment_fault_times,
                 "how many times that segment is so answered; 0: every time")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--segment-fault-status", o.segment_fault_status,
                 "command_status of that segment (default 0x08 ESME_RSYSERR)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pacer-fake-smsc: an SMPP 3.4 SMSC stand-in that records every segment it receives"};
  app.set_version_flag("--version", std::string("pacer-fake-smsc ") + PACER_VERSION);
  pacer::fake::FakeSmscOptions o;
  std::vector<std::string> accounts;
  std::string port_file, report_file, mix;
  bool no_tlvs = false;
  app.add_option("--host", o.host, "IPv4 address to listen on")->capture_default_str();
  app.add_option("--port", o.port, "port; 0 picks a free one")->capture_default_str()->check(CLI::Range(0, 65535));
  app.add_option("--port-file", port_file, "write the port here once listening");
  app.add_option("--account", accounts, "name:password[:quota] (quota: accepted segments per 1 s; repeatable)")
      ->required();
  app.add_option("--window", o.window, "unanswered submit_sm per bind; beyond it ESME_RTHROTTLED")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--response-delay-ms", o.response_delay_ms, "delay before each submit_sm_resp")
      ->check(CLI::Range(0, 600000));
  addFaultOptions(app, o);
  app.add_option("--receipt-delay-ms", o.receipt_delay_ms, "delay from an accepted submit to its receipt")
      ->check(CLI::Range(0, 86400000));
  app.add_option("--receipt-mix", mix, "receipt outcomes: delivered=W,undelivered=W,expired=W,rejected=W");
  app.add_flag("--no-receipt-tlvs", no_tlvs, "receipts carry only the text, no receipted_message_id/message_state");
  app.add_flag("--receipt-ids-decimal", o.receipt_ids_decimal,
               "receipts name the message id in decimal (submit_sm_resp gives it in hex)");
  app.add_option("--record", o.record_path, "one line per segment received, written as it goes");
  app.add_option("--report", report_file, "write the per-account report (JSON) here on exit");
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    for (const auto& a : accounts) o.accounts.push_back(parseAccount(a));
    if (!mix.empty()) parseMix(mix, o);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  }
  o.receipt_tlvs = !no_tlvs;

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the server's thread starts

  try {
    pacer::fake::FakeSmsc smsc(o);
    const int port = smsc.start();
    if (!port_file.empty()) {
      const std::string tmp = port_file + ".tmp";
      std::ofstream(tmp) << port << "\n";
      std::rename(tmp.c_str(), port_file.c_str());
    }
    fmt::print("pacer-fake-smsc listening on {}:{}\n", o.host, port);
    std::fflush(stdout);
    int sig = 0;
    sigwait(&signals, &sig);
    smsc.stop();
    if (!report_file.empty()) std::ofstream(report_file) << smsc.report().dump(2) << "\n";
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pacer-fake-smsc: {}\n", e.what());
    return 1;
  }
}

// sink.smpp's carrier settings: from the file, the environment and real
// command-line flags into the SMPP sink's options, and every bad value
// refused with its key named.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "pacer/config/pacerd_config.h"
#include "support/thrown.h"

namespace pacer::config {
namespace {

Sources fromText(const std::string& yaml, std::map<std::string, std::string> env = {}, FlagValues flags = {}) {
  Sources s;
  s.file = "pacerd.yaml";
  s.text = yaml;
  s.getenv = [env = std::move(env)](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  s.flags = std::move(flags);
  return s;
}

std::string errorOf(const Sources& s) {
  return test_support::thrownBy<ConfigError>([&] { load(s); });
}

// `args` parsed by pacerd's own flags.
FlagValues parsedFlags(std::vector<std::string> args) {
  CLI::App app;
  FlagValues out;
  addFlags(app, out);
  args.insert(args.begin(), "pacerd");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return out;
}

TEST(SmppConfig, DefaultsLetTheSenderDecideItsTonAndNpi) {
  const Config c = load(Sources{});
  const smpp::SubmitOptions& s = c.options.smpp.submit;
  EXPECT_EQ(s.source_addr_ton, std::nullopt);
  EXPECT_EQ(s.source_addr_npi, std::nullopt);
  EXPECT_EQ(s.dest_addr_ton, 1);
  EXPECT_EQ(s.dest_addr_npi, 1);
  EXPECT_EQ(s.service_type, "");
  EXPECT_EQ(s.validity_period, "");
  EXPECT_EQ(s.priority_flag, 0);
  EXPECT_EQ(c.options.smpp.receipt_ids, smpp::IdConvention::kAsIs);
  EXPECT_EQ(c.options.smpp.window, 10u);
  EXPECT_EQ(c.options.smpp.binds, 1u);
}

TEST(SmppConfig, FileValuesReachTheSubmitOptions) {
  const Config c = load(fromText(R"(
sink:
  kind: smpp
  smpp:
    source_addr: ACME
    source_addr_ton: 0
    source_addr_npi: 1
    dest_addr_ton: 2
    dest_addr_npi: 8
    service_type: CMT
    validity_period: 000002000000000R
    priority_flag: 3
    receipt_ids: hex-decimal
    window: 50
    binds: 4
)"));
  const smpp::SubmitOptions& s = c.options.smpp.submit;
  EXPECT_EQ(s.source_addr_ton, 0);
  EXPECT_EQ(s.source_addr_npi, 1);
  EXPECT_EQ(s.dest_addr_ton, 2);
  EXPECT_EQ(s.dest_addr_npi, 8);
  EXPECT_EQ(s.service_type, "CMT");
  EXPECT_EQ(s.validity_period, "000002000000000R");
  EXPECT_EQ(s.priority_flag, 3);
  EXPECT_EQ(c.options.smpp.receipt_ids, smpp::IdConvention::kHexThenDecimal);
  EXPECT_EQ(c.options.smpp.window, 50u);
  EXPECT_EQ(c.options.smpp.binds, 4u);
}

TEST(SmppConfig, AutoGoesBackToTheImpliedTonAndNpi) {
  const Config c = load(fromText("sink:\n  smpp:\n    source_addr_ton: auto\n    source_addr_npi: auto\n", {},
                                 FlagValues{{"sink.smpp.source_addr_ton", {"5"}}}));
  EXPECT_EQ(c.options.smpp.submit.source_addr_ton, 5);  // the flag wins over the file
  EXPECT_EQ(c.options.smpp.submit.source_addr_npi, std::nullopt);
}

TEST(SmppConfig, EnvironmentAndRealFlagsSetThem) {
  const Config c =
      load(fromText("", {{"PACER_SINK_SMPP_SERVICE_TYPE", "WAP"}, {"PACER_SINK_SMPP_RECEIPT_IDS", "auto"}},
                    parsedFlags({"--smpp-source-addr-ton", "1", "--smpp-source-addr-npi", "1", "--smpp-dest-addr-ton",
                                 "0", "--smpp-dest-addr-npi", "0", "--smpp-validity-period", "000000010000000R",
                                 "--smpp-priority-flag", "1", "--smpp-window", "40", "--smpp-binds", "2"})));
  const smpp::SubmitOptions& s = c.options.smpp.submit;
  EXPECT_EQ(s.service_type, "WAP");
  EXPECT_EQ(c.options.smpp.receipt_ids, smpp::IdConvention::kAuto);
  EXPECT_EQ(s.source_addr_ton, 1);
  EXPECT_EQ(s.source_addr_npi, 1);
  EXPECT_EQ(s.dest_addr_ton, 0);
  EXPECT_EQ(s.dest_addr_npi, 0);
  EXPECT_EQ(s.validity_period, "000000010000000R");
  EXPECT_EQ(s.priority_flag, 1);
  EXPECT_EQ(c.options.smpp.window, 40u);
  EXPECT_EQ(c.options.smpp.binds, 2u);
}

TEST(SmppConfig, AProvidersSinkHasItsOwnCarrierSettings) {
  const Config c = load(fromText(R"(
sink:
  smpp: {source_addr: ACME, window: 10}
providers:
  sms:
    sink:
      kind: smpp
      smpp: {source_addr: "+4930123", source_addr_ton: 1, window: 100, binds: 3, receipt_ids: decimal-hex}
)"));
  const sink::SmppSinkOptions& p = c.options.provider_sinks.at("sms").smpp;
  EXPECT_EQ(p.submit.source_addr, "+4930123");
  EXPECT_EQ(p.submit.source_addr_ton, 1);
  EXPECT_EQ(p.window, 100u);
  EXPECT_EQ(p.binds, 3u);
  EXPECT_EQ(p.receipt_ids, smpp::IdConvention::kDecimalThenHex);
  EXPECT_EQ(c.options.smpp.window, 10u);
  EXPECT_EQ(c.options.smpp.receipt_ids, smpp::IdConvention::kAsIs);
}

TEST(SmppConfig, BadValuesNameTheKeyAndWhatWasExpected) {
  const auto error = [](const std::string& key, const std::string& value) {
    return errorOf(fromText("sink:\n  smpp:\n    " + key + ": \"" + value + "\"\n"));
  };
  EXPECT_EQ(error("source_addr_ton", "7"),
            "pacerd.yaml:3:5: sink.smpp.source_addr_ton: expected auto or an integer from 0 to 6, got \"7\"");
  EXPECT_EQ(error("source_addr_npi", "2"),
            "pacerd.yaml:3:5: sink.smpp.source_addr_npi: expected auto, 0, 1, 3, 4, 6, 8, 9, 10, 14 or 18, got \"2\"");
  EXPECT_EQ(error("dest_addr_ton", "-1"),
            "pacerd.yaml:3:5: sink.smpp.dest_addr_ton: expected an integer from 0 to 6, got \"-1\"");
  EXPECT_EQ(error("dest_addr_npi", "e164"),
            "pacerd.yaml:3:5: sink.smpp.dest_addr_npi: expected 0, 1, 3, 4, 6, 8, 9, 10, 14 or 18, got \"e164\"");
  EXPECT_EQ(error("service_type", "TOOLONG"),
            "pacerd.yaml:3:5: sink.smpp.service_type: expected at most 5 printable ASCII characters, got \"TOOLONG\"");
  EXPECT_EQ(error("priority_flag", "4"),
            "pacerd.yaml:3:5: sink.smpp.priority_flag: expected an integer from 0 to 3, got \"4\"");
  EXPECT_EQ(
      error("receipt_ids", "hex"),
      "pacerd.yaml:3:5: sink.smpp.receipt_ids: expected one of as-is, hex-decimal, decimal-hex, auto, got \"hex\"");
  EXPECT_EQ(error("source_addr", "ABCDEFGHIJKLMNOPQRSTU"),
            "pacerd.yaml:3:5: sink.smpp.source_addr: expected at most 20 characters, got \"ABCDEFGHIJKLMNOPQRSTU\"");
  const std::string validity = error("validity_period", "48h");
  EXPECT_EQ(validity,
            "pacerd.yaml:3:5: sink.smpp.validity_period: expected SMPP's relative time YYMMDDhhmmss000R, e.g. "
            "000002000000000R for 2 days (not 15 digits and R), got \"48h\"");
  EXPECT_NE(error("validity_period", "000000240000000R").find("hours 00-23"), std::string::npos);
  EXPECT_NE(error("validity_period", "000000000000000R").find("zero"), std::string::npos);
}

TEST(SmppConfig, ABadFlagNamesTheFlag) {
  EXPECT_EQ(errorOf(fromText("", {}, parsedFlags({"--smpp-priority-flag", "9"}))),
            "--smpp-priority-flag: sink.smpp.priority_flag: expected an integer from 0 to 3, got \"9\"");
}

}  // namespace
}  // namespace pacer::config

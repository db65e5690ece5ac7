// A sink's own keys, declared by its folder (pacer/sinks/sink_keys.h), are
// keys of pacerd: read from the file, PACER_* and flags, checked with errors
// naming the key, and set on the default sink's and a provider's settings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <string>

#include "pacer/config/pacerd_config.h"
#include "pacer/sinks/sink_registry.h"
#include "support/thrown.h"

namespace pacer::config {
namespace {

Sources fromText(const std::string& yaml, FlagValues flags = {},
                 std::function<const char*(const char*)> getenv = nullptr) {
  Sources s;
  s.file = "pacerd.yaml";
  s.text = yaml;
  s.flags = std::move(flags);
  s.getenv = std::move(getenv);
  return s;
}

std::string errorOf(const Sources& s) {
  return test_support::thrownBy<ConfigError>([&] { load(s); });
}

TEST(SinkKeys, EveryKeyASinkDeclaresIsAKeyOfPacerdWithItsFlag) {
  const std::vector<std::string> paths = keyPaths();
  CLI::App app;
  FlagValues flags;
  addFlags(app, flags);
  ASSERT_FALSE(sink::sinkKeys().empty());
  for (const sink::SinkKey& k : sink::sinkKeys()) {
    EXPECT_EQ(std::count(paths.begin(), paths.end(), k.path), 1) << k.path;
    EXPECT_FALSE(isLive(k.path)) << k.path << ": a sink is made once, at start";
    if (k.flag) {
      EXPECT_NO_THROW(app.get_option(k.flag)) << k.flag;
    }
  }
  // The kinds of one folder share their keys: each is in the table once.
  EXPECT_EQ(std::count(paths.begin(), paths.end(), "sink.push.transport"), 1);
}

TEST(SinkKeys, ADeclaredKeyReachesTheDefaultSinksAndAProvidersSettings) {
  const std::map<std::string, std::string> env{{"PACER_SINK_SMPP_BINDS", "3"},
                                               {"PACER_PROVIDERS_SMS_SINK_HTTP_TIMEOUT_MS", "750"}};
  const Config c =
      load(fromText("sink:\n  kind: smpp\n  smpp:\n    window: 50\n"
                    "providers:\n  sms:\n    sink:\n      kind: http\n      http:\n"
                    "        url: http://sms/{recipient}\n        method: PUT\n",
                    FlagValues{{"sink.smpp.receipts", {"all"}}}, [&env](const char* name) -> const char* {
                      auto it = env.find(name);
                      return it == env.end() ? nullptr : it->second.c_str();
                    }));
  EXPECT_EQ(c.options.smpp.window, 50u);                                  // the file
  EXPECT_EQ(c.options.smpp.binds, 3u);                                    // the environment
  EXPECT_EQ(c.options.smpp.submit.receipts, smpp::ReceiptRequest::kAll);  // a flag
  const sink::SinkSettings& sms = c.options.provider_sinks.at("sms");
  EXPECT_EQ(sms.http.url, "http://sms/{recipient}");
  EXPECT_EQ(sms.http.method, "PUT");
  EXPECT_EQ(sms.http.total_timeout, std::chrono::milliseconds(750));
  EXPECT_EQ(sms.smpp.window, 50u) << "a provider's sink starts from the default sink's settings";
  EXPECT_EQ(c.options.http.method, "POST") << "the provider's key is its own";
  EXPECT_EQ(c.values.at("sink.smpp.window"), "s:50");  // what the reload check compares
}

TEST(SinkKeys, ABadValueOfADeclaredKeyIsAnErrorNamingTheKey) {
  EXPECT_EQ(errorOf(fromText("sink:\n  http:\n    timeout_ms: 0\n")),
            "pacerd.yaml:3:5: sink.http.timeout_ms: expected an integer >= 1, got \"0\"");
  EXPECT_EQ(errorOf(fromText("sink:\n  smpp:\n    port: 70000\n")),
            "pacerd.yaml:3:5: sink.smpp.port: expected an integer from 1 to 65535, got \"70000\"");
  EXPECT_EQ(errorOf(fromText("providers:\n  p:\n    sink:\n      push:\n        transport: spdy\n")),
            "pacerd.yaml:5:9: providers.p.sink.push.transport: expected h2 or curl, got \"spdy\"");
  EXPECT_EQ(errorOf(fromText("", FlagValues{{"sink.kafka.brokers", {"a:1"}}, {"sink.smpp.window", {"x"}}})),
            "--smpp-window: sink.smpp.window: expected an integer >= 1, got \"x\"");
}

void writeFile(const std::string& path, const char* text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(text, f);
  std::fclose(f);
}

TEST(SinkKeys, AFileMapFillsTheKeyItIsForAndAProvidersSinkDropsTheDefaultsSecrets) {
  const std::string file = ::testing::TempDir() + "sink_keys_test_header";
  const std::string yaml =
      "sink:\n  http:\n    headers:\n      X-A: a\n    header_files:\n      Authorization: " + file +
      "\nproviders:\n  sms:\n    sink:\n      in_flight: 5\n";
  writeFile(file, "Bearer from-file\n");
  const Config c = load(fromText(yaml));
  const std::vector<std::pair<std::string, std::string>> headers{{"X-A", "a"}, {"Authorization", "Bearer from-file"}};
  EXPECT_EQ(c.options.http.headers, headers);
  EXPECT_TRUE(c.options.provider_sinks.at("sms").http.headers.empty());
  EXPECT_EQ(c.options.provider_sinks.at("sms").sink_in_flight, 5u);

  // A rotated file is a change that needs a restart, though no key's value changed.
  writeFile(file, "Bearer rotated\n");
  const Config rotated = load(fromText(yaml));
  std::remove(file.c_str());
  EXPECT_EQ(rotated.options.http.headers[1].second, "Bearer rotated");
  EXPECT_EQ(planReload(c, rotated).needs_restart, (std::vector<std::string>{"sink.http.header_files (contents)"}));
}

}  // namespace
}  // namespace pacer::config

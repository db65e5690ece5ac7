// sink.push.transport: h2 by default, curl when asked, from the file or the
// flag, and anything else refused with the key named.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "pacer/config/pacerd_config.h"
#include "support/thrown.h"

namespace pacer::config {
namespace {

Sources fromText(const std::string& yaml, FlagValues flags = {}) {
  Sources s;
  s.file = "pacerd.yaml";
  s.text = yaml;
  s.getenv = [](const char*) -> const char* { return nullptr; };
  s.flags = std::move(flags);
  return s;
}

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

TEST(PushConfig, TheTransportIsH2ByDefault) {
  EXPECT_EQ(load(Sources{}).options.push.transport, sink::PushTransport::kH2);
}

TEST(PushConfig, CurlFromTheFileOrTheFlag) {
  EXPECT_EQ(load(fromText("sink:\n  push:\n    transport: curl\n")).options.push.transport,
            sink::PushTransport::kCurl);
  EXPECT_EQ(load(fromText("", parsedFlags({"--push-transport", "curl"}))).options.push.transport,
            sink::PushTransport::kCurl);
  EXPECT_EQ(load(fromText("sink:\n  push:\n    transport: curl\n", parsedFlags({"--push-transport", "h2"})))
                .options.push.transport,
            sink::PushTransport::kH2);
}

TEST(PushConfig, AnUnknownTransportNamesTheKey) {
  const std::string error = test_support::thrownBy<ConfigError>(
      [] { load(fromText("sink:\n  push:\n    transport: http3\n")); });
  EXPECT_NE(error.find("sink.push.transport: expected h2 or curl"), std::string::npos) << error;
}

}  // namespace
}  // namespace pacer::config

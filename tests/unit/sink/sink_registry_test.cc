// The sink registry: the kinds pacerd offers, in --help's order, and each
// factory's errors naming where the sink stands in the configuration.
#include "pacer/sinks/sink_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pacer/error.h"

namespace pacer::sink {
namespace {

std::string errorOf(const SinkSettings& s, const std::string& where) {
  const SinkKind* kind = findSinkKind(s.sink);
  if (!kind) return "no kind " + s.sink;
  try {
    kind->make(SinkBuild{s, where, "", "127.0.0.1:9", {}, {}});
  } catch (const InvalidError& e) {
    return e.what();
  }
  return "";
}

TEST(SinkRegistry, OffersEveryKindOnceInHelpOrder) {
  EXPECT_EQ(sinkKindNames(), "stdout, null, http, kafka, smpp, apns, fcm");
  std::set<std::string> names;
  for (const SinkKind& k : sinkKinds()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_NE(k.make, nullptr) << k.name;
    EXPECT_EQ(findSinkKind(k.name), &k);
  }
  EXPECT_EQ(findSinkKind("bogus"), nullptr);
  EXPECT_EQ(findSinkKind(""), nullptr);
}

TEST(SinkRegistry, OnlySmppCountsSegments) {
  for (const SinkKind& k : sinkKinds()) EXPECT_EQ(k.counts_segments, std::string(k.name) == "smpp") << k.name;
}

TEST(SinkRegistry, FactoryTakesTheSettingsInFlightLimit) {
  SinkSettings s;
  s.sink = "null";
  s.sink_in_flight = 7;
  SinkInterfacePtr made = findSinkKind("null")->make(SinkBuild{s, "sink", "", "", {}, {}});
  ASSERT_NE(made, nullptr);
  EXPECT_EQ(made->maxInFlight(), 7u);
}

TEST(SinkRegistry, HttpAndSmppErrorsNameWhereAndProtocol) {
  SinkSettings http;
  http.sink = "http";
  http.http.url = "ftp://example.invalid/";
  EXPECT_EQ(errorOf(http, "providers.sms.sink").rfind("providers.sms.sink http: sink url must start with", 0), 0u)
      << errorOf(http, "providers.sms.sink");

  SinkSettings smpp;
  smpp.sink = "smpp";
  smpp.smpp_password_env = "PACER_SINK_REGISTRY_TEST_UNSET";
  ::unsetenv(smpp.smpp_password_env.c_str());
  EXPECT_EQ(errorOf(smpp, "sink"),
            "sink.smpp.password_env: the environment variable PACER_SINK_REGISTRY_TEST_UNSET (the bind password) is "
            "not set");
}

TEST(SinkRegistry, KafkaAndPushErrorsArePrefixedOnlyForAProvidersSink) {
  SinkSettings kafka;
  kafka.sink = "kafka";  // no topic
  EXPECT_EQ(errorOf(kafka, "sink"), "kafka sink: the outbound topic is empty");
  EXPECT_EQ(errorOf(kafka, "providers.k.sink"), "providers.k.sink: kafka sink: the outbound topic is empty");

  SinkSettings apns;
  apns.sink = "apns";  // no topic
  EXPECT_EQ(errorOf(apns, "sink"), "sink.apns.topic: required (the app's bundle id)");
  EXPECT_EQ(errorOf(apns, "providers.p.sink"), "providers.p.sink: sink.apns.topic: required (the app's bundle id)");
}

// A sink's settings in a struct of its own folder (SinkSettings::own).
struct ScratchOptions {
  std::string ident = "pacer";
  int facility = 1;
};

TEST(SinkRegistry, ASinksOwnSettingsStartAtTheirDefaultsAndTravelWithTheSettings) {
  SinkSettings d;
  const SinkSettings& read = d;
  EXPECT_EQ(read.own<ScratchOptions>().ident, "pacer");  // never set: the struct's defaults
  d.own<ScratchOptions>().facility = 7;
  SinkSettings provider = d;  // a provider's sink starts from the default's settings
  provider.own<ScratchOptions>().ident = "sms";
  EXPECT_EQ(read.own<ScratchOptions>().facility, 7);
  EXPECT_EQ(read.own<ScratchOptions>().ident, "pacer") << "a copy's change stays in the copy";
  EXPECT_EQ(std::as_const(provider).own<ScratchOptions>().ident, "sms");
  EXPECT_EQ(std::as_const(provider).own<ScratchOptions>().facility, 7);
}

TEST(SinkRegistry, KeysAreTheKindsOwnInTheirOrderEachOnce) {
  std::vector<std::string> paths;
  for (const SinkKey& k : sinkKeys()) paths.emplace_back(k.path);
  std::set<std::string> unique(paths.begin(), paths.end());
  EXPECT_EQ(unique.size(), paths.size());
  for (const SinkKey& k : findSinkKind("http")->keys) EXPECT_EQ(std::string(k.path).rfind("sink.http.", 0), 0u) << k.path;
  EXPECT_TRUE(findSinkKind("stdout")->keys.empty());
  for (const SinkKey& k : sinkKeys()) {
    EXPECT_NE(k.apply, nullptr) << k.path;
    if (!k.files_for) continue;
    // The key a file map fills is a map of the same registry.
    const auto target = std::find_if(sinkKeys().begin(), sinkKeys().end(),
                                     [&k](const SinkKey& t) { return std::string_view(t.path) == k.files_for; });
    ASSERT_NE(target, sinkKeys().end()) << k.path << " fills " << k.files_for;
    EXPECT_EQ(target->shape, KeyShape::kMap) << k.files_for;
    EXPECT_EQ(k.shape, KeyShape::kMap) << k.path;
  }
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), "sink.http.url");
  EXPECT_EQ(paths.back(), "sink.push.timeout_ms");
}

}  // namespace
}  // namespace pacer::sink

#include "pacer/config/pacerd_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "pacer/conninfo.h"
#include "support/thrown.h"

namespace pacer::config {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A fake environment for one test.
struct Env {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> getter() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

Sources fromText(const std::string& yaml, const Env* env = nullptr, FlagValues flags = {}) {
  Sources s;
  s.file = "pacerd.yaml";
  s.text = yaml;
  if (env) s.getenv = env->getter();
  s.flags = std::move(flags);
  return s;
}

// The message of the ConfigError that loading `s` throws.
std::string errorOf(const Sources& s) {
  return test_support::thrownBy<ConfigError>([&] { load(s); });
}

// A file in the temporary directory, removed when the test ends.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text)
      : path_(std::filesystem::temp_directory_path() /
              ("pacerd_config_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
               "_" + name)) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(PacerdConfig, EmptySourcesGiveTheBuiltInDefaults) {
  const Config c = load(Sources{});
  const worker::DaemonOptions d;
  EXPECT_EQ(c.options.group, d.group);
  EXPECT_EQ(c.options.tick, d.tick);
  EXPECT_EQ(c.options.worker.retry.max_attempts, d.worker.retry.max_attempts);
  EXPECT_EQ(c.options.admin_listen, "127.0.0.1:9464");
  EXPECT_TRUE(c.values.empty());
}

TEST(PacerdConfig, TheExampleFileLoadsAndDocumentsEveryKey) {
  Sources s;
  s.file = PACER_EXAMPLE_CONFIG;
  const Config c = load(s);
  EXPECT_EQ(c.options.brokers, "127.0.0.1:9092");
  EXPECT_EQ(c.options.topics, std::vector<std::string>{"messages"});
  // The example sets every key to its default: the same options as none.
  const worker::DaemonOptions d;
  EXPECT_EQ(c.options.tick, d.tick);
  EXPECT_EQ(c.options.worker.max_buffered_bytes, d.worker.max_buffered_bytes);
  EXPECT_EQ(c.options.worker.adaptive.decrease, d.worker.adaptive.decrease);
  EXPECT_EQ(c.options.worker.dead_token_guard.threshold, d.worker.dead_token_guard.threshold);
  EXPECT_EQ(c.options.worker.dead_token_guard.min_answers, d.worker.dead_token_guard.min_answers);
  EXPECT_EQ(c.options.parking, d.parking);
  EXPECT_EQ(c.options.shutdown_deadline, d.shutdown_deadline);
  // Every key of the table appears in it, so a new key cannot go undocumented.
  const YAML::Node root = YAML::LoadFile(PACER_EXAMPLE_CONFIG);
  for (const std::string& path : keyPaths()) {
    YAML::Node n = YAML::Clone(root);
    std::size_t from = 0;
    bool found = true;
    while (found) {
      const std::size_t dot = path.find('.', from);
      const std::string part = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
      found = n.IsMap() && n[part].IsDefined();
      if (found) n = n[part];
      if (dot == std::string::npos) break;
      from = dot + 1;
    }
    EXPECT_TRUE(found) << path << " is not in config/pacerd.example.yaml";
  }
}

TEST(PacerdConfig, FileValuesReachTheOptions) {
  const Config c = load(fromText(R"(
kafka:
  brokers: [a:1, b:2]
  topics: [t1, t2]
  properties: {fetch.wait.max.ms: "50"}
scheduler:
  tick_ms: 7
limits:
  adaptive_decrease: 0.25
ledger:
  parking: off
  park_keep_s: 2.5
redis:
  nodes: [127.0.0.1:6379]
  degraded: stop
sink:
  kind: http
  http:
    headers: {Authorization: Bearer x}
)"));
  EXPECT_EQ(c.options.brokers, "a:1,b:2");
  EXPECT_EQ(c.options.topics, (std::vector<std::string>{"t1", "t2"}));
  EXPECT_EQ(c.options.kafka.at("fetch.wait.max.ms"), "50");
  EXPECT_EQ(c.options.tick, std::chrono::milliseconds(7));
  EXPECT_EQ(c.options.worker.lease.tick, std::chrono::milliseconds(7));
  EXPECT_DOUBLE_EQ(c.options.worker.adaptive.decrease, 0.25);
  EXPECT_FALSE(c.options.parking);
  EXPECT_EQ(c.options.worker.park_keep_for, std::chrono::milliseconds(2500));
  EXPECT_EQ(c.options.worker.degraded, DegradedMode::kStop);
  EXPECT_EQ(c.options.sink, "http");
  ASSERT_EQ(c.options.http.headers.size(), 1u);
  EXPECT_EQ(c.options.http.headers[0].second, "Bearer x");
}

TEST(PacerdConfig, ConsoleControlsAreOffUnlessTurnedOn) {
  EXPECT_FALSE(load(fromText("")).options.admin_console_controls) << "read-only by default";
  EXPECT_TRUE(load(fromText("admin:\n  console_controls: on\n")).options.admin_console_controls);
  Env env{{{"PACER_ADMIN_CONSOLE_CONTROLS", "true"}}};
  EXPECT_TRUE(load(fromText("admin:\n  console_controls: off\n", &env)).options.admin_console_controls);
  EXPECT_FALSE(load(fromText("", &env, {{"admin.console_controls", {"off"}}})).options.admin_console_controls)
      << "a flag wins over the environment";
  EXPECT_EQ(errorOf(fromText("admin:\n  console_controls: sometimes\n")),
            "pacerd.yaml:2:3: admin.console_controls: expected on or off, got \"sometimes\"");
}

TEST(PacerdConfig, ListenerHardeningKeysReachTheOptions) {
  const worker::DaemonOptions d = load(fromText("")).options;
  EXPECT_TRUE(d.admin_allowed_hosts.empty()) << "IP literals and localhost only";
  EXPECT_FALSE(d.admin_reads_need_token);
  EXPECT_TRUE(d.admin_scrape_token.empty());
  const worker::DaemonOptions o = load(fromText("admin:\n  allowed_hosts: [pacer.internal, metrics.example]\n"
                                                "  reads_need_token: on\n  scrape_token: s3cret\n"))
                                      .options;
  EXPECT_EQ(o.admin_allowed_hosts, (std::vector<std::string>{"pacer.internal", "metrics.example"}));
  EXPECT_TRUE(o.admin_reads_need_token);
  EXPECT_EQ(o.admin_scrape_token, "s3cret");
  Env env{{{"PACER_ADMIN_SCRAPE_TOKEN", "from-env"}}};
  EXPECT_EQ(load(fromText("", &env)).options.admin_scrape_token, "from-env");
  EXPECT_EQ(errorOf(fromText("admin:\n  reads_need_token: maybe\n")),
            "pacerd.yaml:2:3: admin.reads_need_token: expected on or off, got \"maybe\"");
}

TEST(PacerdConfig, WrongTypeNamesFileLineColumnKeyAndExpectation) {
  const std::string e = errorOf(fromText("kafka:\n  group: g\nscheduler:\n  tick_ms: fast\n"));
  EXPECT_EQ(e, "pacerd.yaml:4:3: scheduler.tick_ms: expected an integer >= 1, got \"fast\"");
}

TEST(PacerdConfig, ListWhereAScalarBelongsIsRefused) {
  const std::string e = errorOf(fromText("limits:\n  max_attempts: [1, 2]\n"));
  EXPECT_EQ(e, "pacerd.yaml:2:3: limits.max_attempts: expected an integer >= 1, got a list");
}

TEST(PacerdConfig, OutOfRangeValuesAreRefusedWithTheRange) {
  EXPECT_EQ(errorOf(fromText("limits:\n  adaptive_decrease: 1\n")),
            "pacerd.yaml:2:3: limits.adaptive_decrease: expected a number above 0 and below 1, got \"1\"");
  EXPECT_EQ(errorOf(fromText("sink:\n  in_flight: 0\n")),
            "pacerd.yaml:2:3: sink.in_flight: expected an integer >= 1, got \"0\"");
  EXPECT_EQ(errorOf(fromText("kafka:\n  assignment: sticky\n")),
            "pacerd.yaml:2:3: kafka.assignment: expected one of range, roundrobin, cooperative-sticky, got \"sticky\"");
  EXPECT_EQ(errorOf(fromText("redis:\n  nodes: [localhost]\n")),
            "pacerd.yaml:2:3: redis.nodes: expected HOST:PORT, got \"localhost\"");
  EXPECT_EQ(errorOf(fromText("ledger:\n  parking: maybe\n")),
            "pacerd.yaml:2:3: ledger.parking: expected on or off, got \"maybe\"");
}

TEST(PacerdConfig, CapsKeysReachTheWorkerAndNameTheKeyWhenWrong) {
  const Config c = load(fromText(
      "caps:\n  redis: 127.0.0.1:6390\n  classes: \"bulk=3/24h, transactional=10/1h\"\n  policy: defer\n"
      "  batch: 500\n"));
  EXPECT_EQ(c.options.caps_redis, "127.0.0.1:6390");
  ASSERT_EQ(c.options.worker.class_caps.size(), 2u);
  EXPECT_EQ(c.options.worker.class_caps[0].first, "bulk");
  EXPECT_EQ(c.options.worker.class_caps[0].second, (FrequencyCapRule{3, std::chrono::hours(24)}));
  EXPECT_EQ(c.options.worker.class_caps[1].first, "transactional");
  EXPECT_EQ(c.options.worker.class_cap_policy, CapPolicy::kDefer);
  EXPECT_EQ(c.options.worker.cap_batch, 500u);
  EXPECT_EQ(load(fromText("caps:\n  redis: none\n")).options.caps_redis, "none");
  EXPECT_FALSE(c.options.caps_cluster);
  EXPECT_TRUE(load(fromText("caps:\n  redis: 127.0.0.1:7000\n  cluster: true\n")).options.caps_cluster);
  EXPECT_THAT(errorOf(fromText("caps:\n  classes: bulk=3/fortnight\n")),
              HasSubstr("pacerd.yaml:2:3: caps.classes: expected CLASS=CAP entries"));
  EXPECT_THAT(errorOf(fromText("caps:\n  classes: bulk\n")), HasSubstr("caps.classes: expected CLASS=CAP"));
  EXPECT_THAT(errorOf(fromText("caps:\n  classes: bulk=1/1h,bulk=2/1h\n")), HasSubstr("named twice"));
  EXPECT_THAT(errorOf(fromText("caps:\n  policy: drop\n")),
              HasSubstr("caps.policy: expected one of suppress, defer, got \"drop\""));
  EXPECT_THAT(errorOf(fromText("caps:\n  redis: localhost\n")), HasSubstr("caps.redis: expected HOST:PORT"));
}

TEST(PacerdConfig, UnknownKeyIsAnErrorWithASuggestion) {
  EXPECT_EQ(errorOf(fromText("scheduler:\n  tick_msec: 5\n")),
            "pacerd.yaml:2:3: scheduler.tick_msec: unknown key (did you mean scheduler.tick_ms?)");
  EXPECT_EQ(errorOf(fromText("sheduler:\n  tick_ms: 5\n")),
            "pacerd.yaml:1:1: sheduler: unknown key (did you mean scheduler?)");
  // A key in the wrong section: pointed at where it lives.
  EXPECT_EQ(errorOf(fromText("tick_ms: 5\n")),
            "pacerd.yaml:1:1: tick_ms: unknown key (did you mean scheduler.tick_ms?)");
  EXPECT_EQ(errorOf(fromText("kafka:\n  zzzzzz: 1\n")), "pacerd.yaml:2:3: kafka.zzzzzz: unknown key");
}

TEST(PacerdConfig, SyntaxErrorGivesTheLine) {
  const std::string e = errorOf(fromText("kafka:\n  group: [unclosed\nscheduler:\n  tick_ms: 5\n"));
  EXPECT_THAT(e, HasSubstr("pacerd.yaml:"));
  EXPECT_THAT(e, HasSubstr("YAML syntax error"));
  // The line yaml-cpp reports: where the flow sequence turned out not to close.
  EXPECT_THAT(e, ::testing::ContainsRegex("pacerd.yaml:[2-4]:[0-9]+: YAML syntax error"));
}

TEST(PacerdConfig, ASectionThatIsNotAMapIsRefused) {
  EXPECT_EQ(errorOf(fromText("kafka: 5\n")), "pacerd.yaml:1:1: kafka: expected a section (a map of keys)");
}

TEST(PacerdConfig, BadEnvironmentOverrideNamesTheVariable) {
  Env env;
  env.vars["PACER_SCHEDULER_TICK_MS"] = "soon";
  EXPECT_EQ(errorOf(fromText("", &env)),
            "PACER_SCHEDULER_TICK_MS: scheduler.tick_ms: expected an integer >= 1, got \"soon\"");
  Env bad_map;
  bad_map.vars["PACER_KAFKA_PROPERTIES"] = "a=1,nokey";
  EXPECT_EQ(errorOf(fromText("", &bad_map)),
            "PACER_KAFKA_PROPERTIES: kafka.properties: expected NAME=VALUE");  // secret: what was given is not echoed
}

TEST(PacerdConfig, BadFlagNamesTheFlag) {
  FlagValues flags{{"scheduler.tick_ms", {"0"}}};
  EXPECT_EQ(errorOf(fromText("", nullptr, flags)), "--tick-ms: scheduler.tick_ms: expected an integer >= 1, got \"0\"");
}

TEST(PacerdConfig, DeadTokenGuardKeysReachTheWorker) {
  const Config c =
      load(fromText("limits:\n  dead_token_guard: off\n  dead_token_threshold: 0.5\n  dead_token_window_s: 120\n"
                    "  dead_token_min_answers: 200\n  dead_token_pause_s: 5\n"));
  const DeadTokenGuardOptions& g = c.options.worker.dead_token_guard;
  EXPECT_FALSE(g.enabled);
  EXPECT_EQ(g.threshold, 0.5);
  EXPECT_EQ(g.window, std::chrono::seconds(120));
  EXPECT_EQ(g.min_answers, 200u);
  EXPECT_EQ(g.pause, std::chrono::seconds(5));
  EXPECT_EQ(errorOf(fromText("limits:\n  dead_token_threshold: 0\n")),
            "pacerd.yaml:2:3: limits.dead_token_threshold: expected a number above 0 and at most 1, got \"0\"");
}

TEST(PacerdConfig, EventsKeysReachTheOptionsAndInFlightIsBounded) {
  const Config c = load(
      fromText("events:\n  topic: outcomes\n  batch: 500\n  in_flight: 8\n  poll_ms: 50\n  prune_interval_ms: 250\n"));
  EXPECT_EQ(c.options.events_topic, "outcomes");
  EXPECT_EQ(c.options.events_batch, 500u);
  EXPECT_EQ(c.options.events_in_flight, 8u);
  EXPECT_EQ(c.options.events_poll, std::chrono::milliseconds(50));
  EXPECT_EQ(c.options.events_prune_interval, std::chrono::milliseconds(250));
  EXPECT_EQ(load(fromText("events:\n  topic: t\n")).options.events_in_flight, 4u);
  EXPECT_EQ(load(fromText("events:\n  topic: t\n")).options.events_prune_interval, std::chrono::milliseconds(5000));
  EXPECT_NE(errorOf(fromText("events:\n  in_flight: 0\n")).find("events.in_flight"), std::string::npos);
}

TEST(PacerdConfig, CallbacksKeysReachTheOptionsWithTheirDefaultsAndBounds) {
  const Config d = load(fromText(""));
  EXPECT_TRUE(d.options.callbacks);
  EXPECT_EQ(d.options.callbacks_queue, 1000u);
  EXPECT_EQ(d.options.callbacks_concurrency, 8u);
  EXPECT_EQ(d.options.callbacks_max_attempts, 5);
  EXPECT_EQ(d.options.callbacks_timeout, std::chrono::milliseconds(5000));
  const Config c = load(fromText("callbacks:\n  enabled: false\n  queue: 10\n  concurrency: 2\n  max_attempts: 3\n"
                                 "  timeout_ms: 250\n  backoff_ms: 20\n  max_backoff_ms: 400\n"));
  EXPECT_FALSE(c.options.callbacks);
  EXPECT_EQ(c.options.callbacks_queue, 10u);
  EXPECT_EQ(c.options.callbacks_concurrency, 2u);
  EXPECT_EQ(c.options.callbacks_max_attempts, 3);
  EXPECT_EQ(c.options.callbacks_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(c.options.callbacks_backoff, std::chrono::milliseconds(20));
  EXPECT_EQ(c.options.callbacks_max_backoff, std::chrono::milliseconds(400));
  EXPECT_NE(errorOf(fromText("callbacks:\n  queue: 0\n")).find("callbacks.queue"), std::string::npos);
  EXPECT_NE(errorOf(fromText("callbacks:\n  max_attempts: 0\n")).find("callbacks.max_attempts"), std::string::npos);
}

TEST(PacerdConfig, EnvironmentNamesFollowThePath) {
  EXPECT_EQ(envName("kafka.brokers"), "PACER_KAFKA_BROKERS");
  EXPECT_EQ(envName("sink.http.timeout_ms"), "PACER_SINK_HTTP_TIMEOUT_MS");
  EXPECT_EQ(envName("shutdown_deadline_ms"), "PACER_SHUTDOWN_DEADLINE_MS");
}

TEST(PacerdConfig, FileLosesToEnvironmentWhichLosesToFlags) {
  const std::string yaml = "scheduler:\n  tick_ms: 7\nlimits:\n  max_attempts: 3\nkafka:\n  brokers: [file:1]\n";
  Env env;
  env.vars["PACER_LIMITS_MAX_ATTEMPTS"] = "4";
  env.vars["PACER_KAFKA_BROKERS"] = "env:1,env:2";
  FlagValues flags{{"kafka.brokers", {"flag:1"}}};
  const Config c = load(fromText(yaml, &env, flags));
  EXPECT_EQ(c.options.tick, std::chrono::milliseconds(7));  // file only
  EXPECT_EQ(c.options.worker.retry.max_attempts, 4);        // env over file
  EXPECT_EQ(c.options.brokers, "flag:1");                   // flag over env and file
  const Config env_only = load(fromText(yaml, &env));
  EXPECT_EQ(env_only.options.brokers, "env:1,env:2");  // lists are comma-separated
}

TEST(PacerdConfig, MapsMergeByEntryAcrossSources) {
  Env env;
  env.vars["PACER_KAFKA_PROPERTIES"] = "b=env,c=env";
  FlagValues flags{{"kafka.properties", {"c=flag"}}};
  const Config c = load(fromText("kafka:\n  properties: {a: file, b: file}\n", &env, flags));
  EXPECT_EQ(c.options.kafka.at("a"), "file");
  EXPECT_EQ(c.options.kafka.at("b"), "env");
  EXPECT_EQ(c.options.kafka.at("c"), "flag");
}

TEST(PacerdConfig, PacerPostgresStillStandsForTheUrl) {
  Env env;
  env.vars["PACER_POSTGRES"] = "host=old";
  EXPECT_EQ(load(fromText("", &env)).options.postgres, "host=old");
  env.vars["PACER_POSTGRES_URL"] = "host=new";
  EXPECT_EQ(load(fromText("", &env)).options.postgres, "host=new");
}

TEST(PacerdConfig, SecretsComeFromFilesWithTheTrailingNewlineTrimmed) {
  const TempFile pw_file("pw", "s3cret pass'word\n"), token_file("token", "tok-123\n"),
      auth_file("auth", "Bearer abc\r\n");
  const std::string pw = pw_file.path(), token = token_file.path(), auth = auth_file.path();
  const Config c = load(fromText("postgres:\n  url: \"host=db user=pacer\"\n  password_file: " + pw +
                                 "\nadmin:\n  token_file: " + token +
                                 "\nsink:\n  http:\n    header_files: {Authorization: " + auth + "}\n"));
  EXPECT_EQ(c.options.postgres, "host=db user=pacer password='s3cret pass\\'word'");
  EXPECT_EQ(redactConninfo(c.options.postgres).find("s3cret"), std::string::npos);
  EXPECT_EQ(c.options.admin_token, "tok-123");
  ASSERT_EQ(c.options.http.headers.size(), 1u);
  EXPECT_EQ(c.options.http.headers[0], (std::pair<std::string, std::string>{"Authorization", "Bearer abc"}));
}

TEST(PacerdConfig, APasswordJoinsAUrlAsAQueryParameter) {
  Env env;
  env.vars["PACER_POSTGRES_PASSWORD"] = "p@ss word";
  const Config c = load(fromText("postgres:\n  url: postgresql://pacer@db/pacer\n", &env));
  EXPECT_EQ(c.options.postgres, "postgresql://pacer@db/pacer?password=p%40ss%20word");
  EXPECT_EQ(redactConninfo(c.options.postgres).find("p%40ss"), std::string::npos);
}

TEST(PacerdConfig, TheEnvironmentOverridesASecretFileOfTheFile) {
  const TempFile token_file("token", "from-file\n");
  const std::string token = token_file.path();
  Env env;
  env.vars["PACER_ADMIN_TOKEN"] = "from-env";
  EXPECT_EQ(load(fromText("admin:\n  token_file: " + token + "\n", &env)).options.admin_token, "from-env");
  EXPECT_THAT(errorOf(fromText("admin:\n  token: a\n  token_file: " + token + "\n")),
              HasSubstr("admin.token and admin.token_file: give one of them, not both"));
}

TEST(PacerdConfig, SecretValuesNeverAppearInErrors) {
  // A header without '=', a token of the wrong shape, an unparsable conninfo
  // with a password, a missing secret file: the message names the key only.
  Env env;
  env.vars["PACER_SINK_HTTP_HEADERS"] = "Bearer-TOPSECRET";
  std::string e = errorOf(fromText("", &env));
  EXPECT_THAT(e, HasSubstr("PACER_SINK_HTTP_HEADERS: sink.http.headers: expected NAME=VALUE"));
  EXPECT_THAT(e, Not(HasSubstr("TOPSECRET")));

  FlagValues flags{{"sink.http.headers", {"TOPSECRET"}}};
  e = errorOf(fromText("", nullptr, flags));
  EXPECT_THAT(e, HasSubstr("--http-header: sink.http.headers: expected NAME=VALUE"));
  EXPECT_THAT(e, Not(HasSubstr("TOPSECRET")));

  e = errorOf(fromText("admin:\n  token: [TOPSECRET]\n"));
  EXPECT_THAT(e, HasSubstr("pacerd.yaml:2:3: admin.token: expected a string"));
  EXPECT_THAT(e, Not(HasSubstr("TOPSECRET")));

  e = errorOf(fromText("postgres:\n  url: {password: TOPSECRET}\n"));
  EXPECT_THAT(e, HasSubstr("pacerd.yaml:2:3: postgres.url: expected a string"));
  EXPECT_THAT(e, Not(HasSubstr("TOPSECRET")));

  e =
      errorOf(fromText("sink:\n  http:\n    headers: {Authorization: TOPSECRET}\n    header_files: {Authorization: "
                       "/nonexistent/TOKENFILE}\n"));
  EXPECT_THAT(e, HasSubstr("sink.http.headers and sink.http.header_files both give Authorization"));
  EXPECT_THAT(e, Not(HasSubstr("TOPSECRET")));
}

TEST(PacerdConfig, AMissingSecretFileIsRefusedWithItsPath) {
  EXPECT_THAT(errorOf(fromText("postgres:\n  password_file: /nonexistent/pw\n")),
              HasSubstr("pacerd.yaml:2:3: postgres.password_file: cannot read \"/nonexistent/pw\""));
}

TEST(PacerdConfig, CrossKeyChecksStay) {
  EXPECT_EQ(errorOf(fromText("redis:\n  cluster: true\n")),
            "redis.cluster: give the cluster's nodes (redis.nodes, --redis HOST:PORT)");
}

TEST(PacerdConfig, AnEmptyValueKeepsTheDefault) {
  const Config c = load(fromText("scheduler:\n  tick_ms:\nlogging:\n"));
  EXPECT_EQ(c.options.tick, worker::DaemonOptions{}.tick);
}

TEST(PacerdConfig, SinkKindNullIsTheNullSinkThoughYamlReadsItAsNoValue) {
  EXPECT_EQ(load(fromText("sink:\n  kind: null\n")).options.sink, "null");
  EXPECT_EQ(load(fromText("sink:\n  kind: \"null\"\n")).options.sink, "null");
}

TEST(PacerdConfig, AProvidersSinkOverridesTheDefaultSinkKeyByKey) {
  const TempFile auth_file("auth", "Bearer sms\n");
  const std::string auth = auth_file.path();
  Env env;
  env.vars["PACER_PROVIDERS_SMS_GW_SINK_HTTP_TIMEOUT_MS"] = "750";
  const Config c = load(fromText(R"(
sink:
  kind: http
  in_flight: 100
  http:
    url: http://default/{recipient}
    headers: {X-Team: growth, Authorization: Bearer default}
providers:
  sms-gw:
    sink:
      in_flight: 20
      http:
        url: http://sms/{recipient}
        header_files: {Authorization: )" +
                                     auth + R"(}
  push:
    sink:
      kind: kafka
      kafka: {topic: push-out}
)",
                                 &env));
  EXPECT_EQ(c.options.sink, "http");
  EXPECT_EQ(c.options.http.url, "http://default/{recipient}");
  ASSERT_EQ(c.options.provider_sinks.size(), 2u);
  const worker::ProviderSinkOptions& sms = c.options.provider_sinks.at("sms-gw");
  EXPECT_EQ(sms.sink, "http");  // from the default sink
  EXPECT_EQ(sms.sink_in_flight, 20u);
  EXPECT_EQ(sms.http.url, "http://sms/{recipient}");
  EXPECT_EQ(sms.http.total_timeout, std::chrono::milliseconds(750));  // the provider's environment variable
  const std::vector<std::pair<std::string, std::string>> headers{{"Authorization", "Bearer sms"}};
  EXPECT_EQ(sms.http.headers, headers) << "only its own headers: the default's carry another host's credentials";
  const worker::ProviderSinkOptions& push = c.options.provider_sinks.at("push");
  EXPECT_EQ(push.sink, "kafka");
  EXPECT_EQ(push.sink_topic, "push-out");
  EXPECT_EQ(push.sink_in_flight, 100u);
}

TEST(PacerdConfig, AProvidersSinkErrorsNameTheProviderKey) {
  EXPECT_EQ(errorOf(fromText("providers:\n  sms:\n    sink:\n      in_flight: none\n")),
            "pacerd.yaml:4:7: providers.sms.sink.in_flight: expected an integer >= 1, got \"none\"");
  EXPECT_EQ(errorOf(fromText("providers:\n  sms:\n    sink:\n      kindd: http\n")),
            "pacerd.yaml:4:7: providers.sms.sink.kindd: unknown key (did you mean providers.sms.sink.kind?)");
  EXPECT_EQ(errorOf(fromText("providers:\n  sms:\n    tick_ms: 5\n")),
            "pacerd.yaml:3:5: providers.sms.tick_ms: unknown key");
  EXPECT_EQ(errorOf(fromText("providers:\n  sms: 5\n")),
            "pacerd.yaml:2:3: providers.sms: expected a section with a sink section");
  EXPECT_EQ(errorOf(fromText("provider:\n  sms: {}\n")),
            "pacerd.yaml:1:1: provider: unknown key (did you mean providers?)");
}

TEST(PacerdConfig, AChangedProviderSinkNeedsARestart) {
  const Config before = load(fromText("providers:\n  sms:\n    sink:\n      in_flight: 5\n"));
  const Config after = load(fromText("providers:\n  sms:\n    sink:\n      in_flight: 6\n  push:\n    sink: {}\n"));
  const ReloadPlan plan = planReload(before, after);
  EXPECT_TRUE(plan.changed.empty());
  EXPECT_EQ(plan.needs_restart, (std::vector<std::string>{"providers.push", "providers.sms.sink.in_flight"}));
  EXPECT_EQ(plan.config.options.provider_sinks.size(), 1u);
}

TEST(PacerdConfig, ReloadAppliesLiveKeysAndKeepsTheOthers) {
  const Config before =
      load(fromText("kafka:\n  brokers: [a:1]\nlimits:\n  max_attempts: 3\nscheduler:\n  tick_ms: 5\n"));
  const Config after = load(
      fromText("kafka:\n  brokers: [b:1]\nlimits:\n  max_attempts: 9\n  adaptive_floor: 3\nscheduler:\n  tick_ms: 20\n"
               "logging:\n  stats_interval_ms: 100\n"));
  const ReloadPlan plan = planReload(before, after);
  EXPECT_EQ(plan.changed,
            (std::vector<std::string>{"limits.max_attempts", "limits.adaptive_floor", "logging.stats_interval_ms"}));
  EXPECT_EQ(plan.needs_restart, (std::vector<std::string>{"kafka.brokers", "scheduler.tick_ms"}));
  EXPECT_EQ(plan.config.options.worker.retry.max_attempts, 9);
  EXPECT_DOUBLE_EQ(plan.config.options.worker.adaptive.floor, 3);
  EXPECT_EQ(plan.config.options.stats_interval, std::chrono::milliseconds(100));
  EXPECT_EQ(plan.config.options.brokers, "a:1");
  EXPECT_EQ(plan.config.options.tick, std::chrono::milliseconds(5));
  // Reloading the same again: the live keys are now current; the restart ones are said again.
  const ReloadPlan again = planReload(plan.config, after);
  EXPECT_TRUE(again.changed.empty());
  EXPECT_EQ(again.needs_restart, (std::vector<std::string>{"kafka.brokers", "scheduler.tick_ms"}));
}

// A secret file rotated under the same path: the reload says it needs a
// restart (its contents are compared by fingerprint, never kept in clear).
TEST(PacerdConfig, ARotatedSecretFileNeedsARestartAndIsNotKeptInClear) {
  const std::string yaml = "admin:\n  token_file: ";
  std::optional<TempFile> token_file;
  token_file.emplace("token", "first-token\n");
  const Config before = load(fromText(yaml + token_file->path() + "\n"));
  token_file.emplace("token", "second-token\n");
  const Config after = load(fromText(yaml + token_file->path() + "\n"));
  EXPECT_EQ(after.options.admin_token, "second-token");
  const ReloadPlan plan = planReload(before, after);
  EXPECT_EQ(plan.needs_restart, (std::vector<std::string>{"admin.token_file (contents)"}));
  for (const auto& [key, value] : after.values) EXPECT_EQ(value.find("second-token"), std::string::npos) << key;
  EXPECT_TRUE(planReload(after, after).needs_restart.empty()) << "the same contents: nothing to say";
}

TEST(PacerdConfig, LiveKeysAreTheDocumentedOnes) {
  std::vector<std::string> live;
  for (const std::string& k : keyPaths())
    if (isLive(k)) live.push_back(k);
  EXPECT_EQ(live,
            (std::vector<std::string>{"limits.max_attempts", "limits.max_throttled", "limits.max_age_s",
                                      "limits.adaptive_decrease", "limits.adaptive_hold_fraction",
                                      "limits.adaptive_probe_s", "limits.adaptive_floor", "limits.latency_threshold_ms", "ledger.commit_interval_ms", "ledger.refresh_ms",
                                      "logging.stats_interval_ms", "shutdown_deadline_ms", "summary_file"}));
}

}  // namespace
}  // namespace pacer::config

namespace pacer::config {
namespace {

// The admin listener takes port 0 (any free port: tests, several workers on a
// host) and "off"; a port that is not one is still refused.
TEST(PacerdConfig, AdminListenTakesPortZeroAndOff) {
  EXPECT_EQ(load(fromText("admin:\n  listen: 127.0.0.1:0\n")).options.admin_listen, "127.0.0.1:0");
  EXPECT_EQ(load(fromText("admin:\n  listen: \"[::1]:9464\"\n")).options.admin_listen, "[::1]:9464");
  EXPECT_EQ(load(fromText("admin:\n  listen: \"off\"\n")).options.admin_listen, "off");
  EXPECT_THAT(errorOf(fromText("admin:\n  listen: 127.0.0.1:70000\n")), HasSubstr("admin.listen"));
  EXPECT_THAT(errorOf(fromText("admin:\n  listen: 9464\n")), HasSubstr("admin.listen"));
}

}  // namespace
}  // namespace pacer::config

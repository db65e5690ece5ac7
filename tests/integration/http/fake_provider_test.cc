// pacer-fake-provider's own behaviour, over real HTTP on loopback: what tests
// and benchmarks rely on when they use it as a provider stand-in.
#include "pacer/fakes/fake_provider.h"

#include <curl/curl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace pacer::fake {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct Answer {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  std::string retry_after;
};

std::size_t collectBody(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// One request on a connection of its own, as curl(1) would send it.
Answer request(int port, const std::string& method, const std::string& path, const std::vector<std::string>& headers = {},
               const std::string& body = "") {
  Answer a;
  CURL* e = curl_easy_init();
  curl_slist* list = nullptr;
  for (const std::string& h : headers) list = curl_slist_append(list, h.c_str());
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + path;
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!body.empty() || method == "POST") {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collectBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &a.body);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  a.code = curl_easy_perform(e);
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &a.status);
  curl_header* h = nullptr;
  if (curl_easy_header(e, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK) a.retry_after = h->value;
  curl_slist_free_all(list);
  curl_easy_cleanup(e);
  return a;
}

Answer send(int port, const std::string& campaign, const std::string& key, std::vector<std::string> headers = {}) {
  if (!campaign.empty()) headers.push_back("Pacer-Campaign: " + campaign);
  if (!key.empty()) headers.push_back("Idempotency-Key: " + key);
  return request(port, "POST", "/v1/send", headers, "{\"text\":\"hi\"}");
}

class FakeProviderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  int start(FakeProviderOptions o = {}) {
    provider_ = std::make_unique<FakeProvider>(o);
    return provider_->start();
  }

  std::unique_ptr<FakeProvider> provider_;
};

TEST_F(FakeProviderTest, ReportCountsRequestsKeysAndDuplicatesPerCampaignOverHttp) {
  const int port = start();
  EXPECT_EQ(send(port, "a", "k1").status, 200);
  EXPECT_EQ(send(port, "a", "k1").status, 200);  // accepted twice: a duplicate
  EXPECT_EQ(send(port, "a", "k2").status, 200);
  EXPECT_EQ(send(port, "", "k3").status, 200);
  const Answer r = request(port, "GET", "/report");
  ASSERT_EQ(r.status, 200);
  const auto report = nlohmann::json::parse(r.body);
  EXPECT_EQ(report["a"]["requests"], 3);
  EXPECT_EQ(report["a"]["accepted"], 3);
  EXPECT_EQ(report["a"]["distinct_keys"], 2);
  EXPECT_EQ(report["a"]["duplicates"], 1);
  EXPECT_EQ(report["a"]["max_requests_1s"], 3);
  EXPECT_EQ(report["(none)"]["requests"], 1);
  EXPECT_EQ(report["(all)"]["requests"], 4);
  EXPECT_EQ(report["(all)"]["max_accepted_1s"], 4);
  EXPECT_EQ(provider_->report(), report);
}

TEST_F(FakeProviderTest, QuotaAnswersTooManyRequestsWithRetryAfterSeconds) {
  FakeProviderOptions o;
  o.quota_per_s = 0.001;  // nothing refills during the test
  o.quota_burst = 2;
  o.retry_after_s = 7;
  const int port = start(o);
  EXPECT_EQ(send(port, "a", "1").status, 200);
  EXPECT_EQ(send(port, "a", "2").status, 200);
  const Answer throttled = send(port, "a", "3");
  EXPECT_EQ(throttled.status, 429);
  EXPECT_EQ(throttled.retry_after, "7");
  const auto report = provider_->report();
  EXPECT_EQ(report["a"]["requests"], 3);
  EXPECT_EQ(report["a"]["accepted"], 2);
}

TEST_F(FakeProviderTest, RetryAfterCanBeAnHttpDate) {
  FakeProviderOptions o;
  o.quota_per_s = 0.001;
  o.quota_burst = 1;
  o.retry_after_s = 30;
  o.retry_after_as_date = true;
  const int port = start(o);
  EXPECT_EQ(send(port, "a", "1").status, 200);
  const Answer throttled = send(port, "a", "2");
  EXPECT_EQ(throttled.status, 429);
  EXPECT_TRUE(std::regex_match(throttled.retry_after,
                               std::regex(R"([A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT)")))
      << throttled.retry_after;
  const std::time_t at = curl_getdate(throttled.retry_after.c_str(), nullptr);
  EXPECT_GE(at - std::time(nullptr), 28);
  EXPECT_LE(at - std::time(nullptr), 32);
}

TEST_F(FakeProviderTest, AdminQuotaChangesTheQuotaWhileRunningFromAQueryOrAForm) {
  const int port = start();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(send(port, "a", std::to_string(i)).status, 200);
  ASSERT_EQ(request(port, "POST", "/admin/quota?rate=0.001&burst=1").status, 200);
  EXPECT_EQ(send(port, "a", "q1").status, 200);
  EXPECT_EQ(send(port, "a", "q2").status, 429);
  // As bench/provider_e2e.sh posts it: curl -d "rate=...&burst=..."
  ASSERT_EQ(request(port, "POST", "/admin/quota", {"Content-Type: application/x-www-form-urlencoded"},
                    "rate=1000&burst=1000")
                .status,
            200);
  // Time passing on purpose: the fake's bucket refills on its own clock (about
  // 50 tokens at the new rate), which the test cannot move.
  std::this_thread::sleep_for(milliseconds(50));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(send(port, "a", "f" + std::to_string(i)).status, 200);
  ASSERT_EQ(request(port, "POST", "/admin/quota", {"Content-Type: application/x-www-form-urlencoded"}, "rate=0").status,
            200);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(send(port, "a", "n" + std::to_string(i)).status, 200);  // no quota
}

TEST_F(FakeProviderTest, AddedLatencyDoesNotHoldUpOtherRequests) {
  const int port = start();
  const auto started = Clock::now();
  Answer slow;
  std::thread waiting([&] { slow = send(port, "slow", "s1", {"X-Fake-Latency-Ms: 1500"}); });
  // Lets the slow request reach the fake first; the fake does not say when a
  // request arrived (its report counts answered ones), so this is a window.
  std::this_thread::sleep_for(milliseconds(100));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(send(port, "fast", std::to_string(i)).status, 200);
  const auto fast_done = Clock::now() - started;
  waiting.join();
  const auto slow_done = Clock::now() - started;
  EXPECT_LT(fast_done, milliseconds(1400));  // all twenty went while the slow one waited
  EXPECT_EQ(slow.status, 200);
  EXPECT_GE(slow_done, milliseconds(1500));
}

TEST_F(FakeProviderTest, ConfiguredLatencyDelaysEveryRequestAndTheyWaitTogether) {
  FakeProviderOptions o;
  o.latency_ms = 300;
  const int port = start(o);
  const auto started = Clock::now();
  std::vector<std::thread> clients;
  std::vector<long> statuses(8);
  for (int i = 0; i < 8; ++i) clients.emplace_back([&, i] { statuses[i] = send(port, "a", std::to_string(i)).status; });
  for (auto& t : clients) t.join();
  const auto elapsed = Clock::now() - started;
  for (long s : statuses) EXPECT_EQ(s, 200);
  EXPECT_GE(elapsed, milliseconds(300));
  EXPECT_LT(elapsed, milliseconds(8 * 300));  // not one after the other
}

TEST_F(FakeProviderTest, FailRateAnswersAboutThatFractionWithServerErrors) {
  FakeProviderOptions o;
  o.fail_rate = 0.3;
  o.seed = 7;
  const int port = start(o);
  int errors = 0;
  for (int i = 0; i < 300; ++i) {
    const Answer a = send(port, "a", std::to_string(i));
    ASSERT_TRUE(a.status == 200 || a.status == 500) << a.status;
    errors += a.status == 500;
  }
  // Binomial(300, 0.3): mean 90, standard deviation about 8.
  EXPECT_GE(errors, 60);
  EXPECT_LE(errors, 120);
  EXPECT_EQ(provider_->report()["a"]["accepted"], 300 - errors);
}

TEST_F(FakeProviderTest, CloseRateDropsConnectionsMidResponse) {
  FakeProviderOptions o;
  o.close_rate = 0.5;
  o.seed = 3;
  const int port = start(o);
  int dropped = 0;
  for (int i = 0; i < 40; ++i) {
    const Answer a = send(port, "a", std::to_string(i));
    if (a.code != CURLE_OK) {
      ++dropped;
      EXPECT_EQ(a.code, CURLE_PARTIAL_FILE) << curl_easy_strerror(a.code);  // headers came, the body did not
    } else {
      EXPECT_EQ(a.status, 200);
    }
  }
  EXPECT_GE(dropped, 8);
  EXPECT_LE(dropped, 32);
  EXPECT_EQ(provider_->report()["a"]["accepted"], 40 - dropped);
  EXPECT_EQ(send(port, "b", "x", {"X-Fake-Close: 1"}).code, CURLE_PARTIAL_FILE);
}

TEST_F(FakeProviderTest, RecordHasOneLinePerRequestWithTimeCampaignKeyStatusAndDeadline) {
  const int port = start();
  EXPECT_EQ(send(port, "promo", "key-1", {"Pacer-Expires-At: 2026-11-26T15:30:00.250Z"}).status, 200);
  EXPECT_EQ(send(port, "", "", {"X-Fake-Status: 503"}).status, 503);
  EXPECT_EQ(send(port, "promo", "key-2", {"X-Fake-Close: 1"}).code, CURLE_PARTIAL_FILE);
  const auto path = std::filesystem::temp_directory_path() / ("fake_provider_record_" + std::to_string(::getpid()));
  provider_->writeRecord(path.string());
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::filesystem::remove(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], ::testing::MatchesRegex(R"([0-9]+\.[0-9]{3} promo key-1 200 2026-11-26T15:30:00\.250Z)"));
  EXPECT_THAT(lines[1], ::testing::MatchesRegex(R"([0-9]+\.[0-9]{3} - - 503 -)"));
  EXPECT_THAT(lines[2], ::testing::MatchesRegex(R"([0-9]+\.[0-9]{3} promo key-2 0 -)"));  // 0: dropped
}

TEST_F(FakeProviderTest, ListensWithABacklogOf1024) {
  const int port = start();
  // ss shows a listening socket's backlog as its Send-Q.
  const std::string cmd = "ss -Hltn 'sport = :" + std::to_string(port) + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ASSERT_EQ(::pclose(p), 0) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(^LISTEN +[0-9]+ +1024 )"))) << out;
}

TEST_F(FakeProviderTest, StopsWhileARequestWaitsOnItsLatency) {
  const int port = start();
  Answer waiting;
  std::thread client([&] { waiting = send(port, "a", "k", {"X-Fake-Latency-Ms: 5000"}); });
  // Lets the request start its wait; as above, the fake cannot say when it did.
  std::this_thread::sleep_for(milliseconds(200));
  const auto started = Clock::now();
  provider_->stop();
  client.join();
  EXPECT_LT(Clock::now() - started, milliseconds(3000));  // the waiting request did not hold stop() up
  EXPECT_EQ(request(port, "GET", "/report").code, CURLE_COULDNT_CONNECT);  // nobody listens any more
}

}  // namespace
}  // namespace pacer::fake

// Pacer's SMPP sink against Net::SMPP (Debian's libnet-smpp-perl) as the
// SMSC: an SMPP implementation written independently of this project, so
// the codec is checked against more than itself (label "integration").
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "pacer/sinks/smpp_sink.h"
#include "pacer/smpp/submit.h"

namespace pacer::sink {
namespace {

using namespace std::chrono_literals;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs net_smpp_smsc.pl; kills it (if still there) when destroyed.
class PerlSmsc {
 public:
  PerlSmsc() : dir_(::testing::TempDir() + "net_smpp_" + std::to_string(::getpid())) {
    ::mkdir(dir_.c_str(), 0700);
    port_file_ = dir_ + "/port";
    log_file_ = dir_ + "/smsc.log";
    std::remove(port_file_.c_str());
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execlp("perl", "perl", PACER_NET_SMPP_SMSC_PL, port_file_.c_str(), log_file_.c_str(), nullptr);
      ::_exit(127);
    }
  }
  ~PerlSmsc() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // The port it listens on, once it says so (0 after 10 s).
  int port() const {
    for (int i = 0; i < 200; ++i) {
      const std::string p = slurp(port_file_);
      if (!p.empty()) return std::stoi(p);
      std::this_thread::sleep_for(50ms);  // waiting for another process to start, not for time to pass
    }
    return 0;
  }
  // Waits up to 10 s for the script to end by itself; true if it did, with exit code 0.
  bool exitedCleanly() {
    for (int i = 0; i < 200 && !exited_; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
      }
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  std::string log() const { return slurp(log_file_); }

 private:
  std::string dir_, port_file_, log_file_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

Message msg(std::string id, std::string to, std::string text) {
  Message m;
  m.id = std::move(id);
  m.campaign = "c1";
  m.recipient = std::move(to);
  m.payload = std::move(text);
  return m;
}

TEST(NetSmppSmsc, SinkDeliversAndReadsTheirReceipts) {
  PerlSmsc smsc;
  const int port = smsc.port();
  ASSERT_GT(port, 0) << "net_smpp_smsc.pl did not start (is libnet-smpp-perl installed?)";
  SmppSinkOptions o;
  o.port = port;
  o.system_id = "pacer";
  o.password = "secret";
  o.submit.source_addr = "Pacer";
  o.submit.source_addr_ton = 5;
  o.submit.source_addr_npi = 0;
  o.seed = 3;
  std::string validity;  // m2's deadline as SMPP's absolute time
  {
    auto sink = makeSmppSink(o);
    ASSERT_TRUE(sink->submit(msg("m1", "+4915112345678", "Hello {Net::SMPP}"), 1));
    Message second = msg("m2", "4915112345679", "second");
    second.expires_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch() + std::chrono::hours(1))
                               .count();
    validity = smpp::absoluteTime(second.expires_at_ms);
    ASSERT_TRUE(sink->submit(second, 2));
    std::vector<SendResult> results;
    std::vector<DeliveryReceipt> receipts;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline && (results.size() < 2 || receipts.size() < 2)) {
      sink->poll(results);
      sink->pollReceipts(receipts);
      sink->wait(20ms);
    }
    ASSERT_EQ(results.size(), 2u) << smsc.log();
    std::sort(results.begin(), results.end(), [](const auto& a, const auto& b) { return a.ticket < b.ticket; });
    EXPECT_EQ(results[0].outcome, SendOutcome::kDelivered) << results[0].reason;
    EXPECT_EQ(results[1].outcome, SendOutcome::kDelivered) << results[1].reason;
    std::set<std::string> ids = {results[0].provider_message_id, results[1].provider_message_id};
    EXPECT_EQ(ids, (std::set<std::string>{"perl-0001", "perl-0002"}));
    ASSERT_EQ(receipts.size(), 2u) << smsc.log();
    std::sort(receipts.begin(), receipts.end(),
              [](const auto& a, const auto& b) { return a.provider_message_id < b.provider_message_id; });
    EXPECT_EQ(receipts[0].provider_message_id, "perl-0001");  // from the TLVs
    EXPECT_EQ(receipts[0].status, ReceiptStatus::kDelivered);
    EXPECT_EQ(receipts[1].provider_message_id, "perl-0002");  // from the text alone
    EXPECT_EQ(receipts[1].status, ReceiptStatus::kUndelivered);
    EXPECT_EQ(receipts[1].error_code, "034");
    EXPECT_EQ(receipts[1].done_at_ms, 1795534260000);
    // Not answered until recorded: a while of polling writes no deliver_sm_resp.
    const auto quiet_until = std::chrono::steady_clock::now() + 300ms;
    while (std::chrono::steady_clock::now() < quiet_until) {
      sink->poll(results);
      sink->pollReceipts(receipts);
      sink->wait(20ms);
    }
    EXPECT_EQ(smsc.log().find("deliver_sm_resp"), std::string::npos) << smsc.log();
    sink->receiptsRecorded(receipts);  // as the worker does once the ledger has them
  }  // the sink unbinds as it goes; the script ends on the unbind
  ASSERT_TRUE(smsc.exitedCleanly()) << smsc.log();
  const std::string log = smsc.log();
  EXPECT_NE(log.find("bind system_id=pacer version=34 ok=1"), std::string::npos) << log;
  // What Net::SMPP decoded from our submit_sm: GSM 03.38 with the escape for the braces.
  EXPECT_NE(log.find("submit_sm dest=4915112345678 ton=1 npi=1 source=Pacer dc=0 regdel=1 "
                     "text=Hello \x1b(Net::SMPP\x1b)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("submit_sm dest=4915112345679"), std::string::npos) << log;
  // m2's deadline, as Net::SMPP read validity_period; m1 had none (the SMSC's default).
  ASSERT_EQ(validity.size(), 16u);
  EXPECT_NE(log.find("text=second validity=" + validity + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("validity=\n"), std::string::npos) << log;
  // Both receipts answered with deliver_sm_resp, status 0.
  std::size_t answered = 0;
  for (std::size_t at = 0; (at = log.find("deliver_sm_resp seq=", at)) != std::string::npos; ++at)
    answered += log.compare(log.find("status=", at), 9, "status=0\n") == 0;
  EXPECT_EQ(answered, 2u) << log;
  EXPECT_NE(log.find("unbind"), std::string::npos) << log;
}

}  // namespace
}  // namespace pacer::sink

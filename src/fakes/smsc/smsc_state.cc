#include "smsc_state.h"

#include <cstdlib>
#include <ctime>
#include <stdexcept>

#include "pacer/smpp/receipt.h"

namespace pacer::fake {
namespace {

constexpr const char* kStat[4] = {"DELIVRD", "UNDELIV", "EXPIRED", "REJECTD"};
constexpr std::uint8_t kState[4] = {smpp::state::kDelivered, smpp::state::kUndeliverable, smpp::state::kExpired,
                                    smpp::state::kRejected};
constexpr const char* kStatusKey[4] = {"delivered", "undelivered", "expired", "rejected"};

std::string smppDateNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%y%m%d%H%M", &tm);
  return buf;
}

}  // namespace

void segmentOf(const smpp::Pdu& p, int& n, int& m) {
  int reference = 0;
  segmentOf(p, n, m, reference);
}

void segmentOf(const smpp::Pdu& p, int& n, int& m, int& reference) {
  n = m = 1;
  reference = -1;
  const std::string& sm = p.short_message;
  if ((p.esm_class & smpp::kEsmClassUdhi) != 0 && sm.size() >= 6) {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(sm[i]); };
    if (b(1) == 0x00 && b(2) == 3) {
      reference = b(3), m = b(4), n = b(5);
    } else if (sm.size() >= 7 && b(1) == 0x08 && b(2) == 4) {
      reference = b(3) << 8 | b(4), m = b(5), n = b(6);
    }
    return;
  }
  if (p.sar_total_segments && p.sar_segment_seqnum) {
    m = *p.sar_total_segments, n = *p.sar_segment_seqnum;
    reference = p.sar_msg_ref_num ? *p.sar_msg_ref_num : 0;
  }
}

SmscState::SmscState(const FakeSmscOptions& options) : options_(options), rng_(options.seed) {
  for (const auto& a : options_.accounts) accounts_.push_back(AccountState{a, {}});
  if (!options_.record_path.empty()) {
    record_ = std::fopen(options_.record_path.c_str(), "w");
    if (record_ == nullptr) throw std::runtime_error("cannot open record file " + options_.record_path);
  }
}

SmscState::~SmscState() {
  if (record_ != nullptr) std::fclose(record_);
}

void SmscState::flushRecord() {
  if (record_ != nullptr) std::fflush(record_);
}

bool SmscState::outageDue(Clock::time_point now) {
  if (options_.outage_at_ms < 0 || outage_started_ || !first_submit_) return false;
  if (now - *first_submit_ < std::chrono::milliseconds(options_.outage_at_ms)) return false;
  outage_started_ = now;
  refuse_until_ = now + std::chrono::milliseconds(options_.outage_ms);
  return true;
}

int SmscState::authenticate(const smpp::Pdu& bind, std::uint32_t& status, Clock::time_point now) {
  for (std::size_t i = 0; i < accounts_.size(); ++i) {
    if (accounts_[i].config.system_id != bind.system_id) continue;
    if (now < refuse_until_) {
      ++accounts_[i].binds_refused;
      status = smpp::status::kBindFail;
      return -1;
    }
    if (accounts_[i].config.password != bind.password) {
      ++accounts_[i].bind_failures;
      status = smpp::status::kInvPaswd;
      return -1;
    }
    ++accounts_[i].binds;
    status = 0;
    return static_cast<int>(i);
  }
  status = smpp::status::kBindFail;
  return -1;
}

int SmscState::pickOutcome() {
  const double w[4] = {options_.mix_delivered, options_.mix_undelivered, options_.mix_expired, options_.mix_rejected};
  const double total = w[0] + w[1] + w[2] + w[3];
  if (total <= 0) return 0;
  double x = std::uniform_real_distribution<double>(0, total)(rng_);
  for (int i = 0; i < 4; ++i) {
    if (x < w[i]) return i;
    x -= w[i];
  }
  return 0;
}

std::uint32_t SmscState::submit(std::size_t account, const smpp::Pdu& pdu, bool window_full, Clock::time_point now,
                                std::string& message_id, std::int64_t* part) {
  AccountState& a = accounts_[account];
  ++a.submits;
  if (!first_submit_) first_submit_ = now;
  message_id.clear();
  int n = 1, m = 1, reference = -1;
  segmentOf(pdu, n, m, reference);
  ConcatMessage* cm = m > 1 && n >= 1 && n <= m ? arrive(account, pdu, n, m, reference) : nullptr;
  if (part != nullptr) *part = cm != nullptr ? static_cast<std::int64_t>(cm - concat_.data()) * 256 + (n - 1) : -1;
  std::uint32_t st = 0;
  while (!a.accepted_log.empty() && now - a.accepted_log.front() >= std::chrono::seconds(1)) a.accepted_log.pop_front();
  std::uniform_real_distribution<double> u(0, 1);
  if (window_full) {
    ++a.window_exceeded, ++a.throttled, st = smpp::status::kThrottled;
  } else if (a.config.quota_per_s > 0 && a.accepted_log.size() >= static_cast<std::size_t>(a.config.quota_per_s)) {
    ++a.throttled, st = smpp::status::kThrottled;
  } else if (cm != nullptr && cm->fault_part == n &&
             (options_.segment_fault_times <= 0 || cm->faults < options_.segment_fault_times)) {
    ++cm->faults;
    ++a.segment_faults, st = options_.segment_fault_status;
  } else if (options_.throttle_rate > 0 && u(rng_) < options_.throttle_rate) {
    ++a.throttled, ++a.throttled_random, st = smpp::status::kThrottled;
  } else if (options_.permanent_rate > 0 && u(rng_) < options_.permanent_rate) {
    ++a.errors_permanent, st = options_.permanent_status;
  } else if (options_.transient_rate > 0 && u(rng_) < options_.transient_rate) {
    ++a.errors_transient, st = options_.transient_status;
  }
  if (st == 0) {
    ++a.accepted;
    a.accepted_log.push_back(now);
    a.max_segments_1s = std::max<std::uint64_t>(a.max_segments_1s, a.accepted_log.size());
    char buf[24];
    std::snprintf(buf, sizeof buf, "%010llx", static_cast<unsigned long long>(++next_id_));
    message_id = buf;
    if ((pdu.registered_delivery & 0x03) != 0) {
      receipts_.push_back({now + std::chrono::milliseconds(options_.receipt_delay_ms), account, message_id,
                           pdu.destination_addr, pdu.source_addr, pickOutcome(), smppDateNow()});
    }
    if (cm != nullptr) accept(*cm, n, message_id);
  }
  record(now, a.config.system_id, message_id, pdu, st);
  return st;
}

// The record of the message this part belongs to, opened by its first part
// to arrive (which also decides whether one of its parts gets the segment
// fault). A part arriving while one before it has not been answered
// ESME_ROK is out of turn: a client that sends it may leave it orphaned.
ConcatMessage* SmscState::arrive(std::size_t account, const smpp::Pdu& pdu, int n, int m, int reference) {
  const std::string key = std::to_string(account) + '\t' + pdu.destination_addr + '\t' + std::to_string(reference) +
                          '\t' + std::to_string(m);
  auto it = open_concat_.find(key);
  if (it == open_concat_.end()) {
    ConcatMessage& cm = concat_.emplace_back();
    cm.account = account;
    cm.destination = pdu.destination_addr;
    cm.reference = reference;
    cm.total = m;
    cm.ids.resize(static_cast<std::size_t>(m));
    cm.answered.resize(static_cast<std::size_t>(m));
    if (options_.segment_fault_rate > 0 &&
        std::uniform_real_distribution<double>(0, 1)(rng_) < options_.segment_fault_rate)
      cm.fault_part = options_.segment_fault_part > 0 ? options_.segment_fault_part
                                                      : std::uniform_int_distribution<int>(2, m)(rng_);
    ++accounts_[account].concat_messages;
    it = open_concat_.emplace(key, concat_.size() - 1).first;
  }
  ConcatMessage& cm = concat_[it->second];
  for (int j = 0; j < n - 1; ++j) {
    if (cm.ids[static_cast<std::size_t>(j)].empty() || !cm.answered[static_cast<std::size_t>(j)]) {
      ++accounts_[account].parts_out_of_turn;
      break;
    }
  }
  return &cm;
}

void SmscState::accept(ConcatMessage& cm, int n, const std::string& id) {
  std::string& slot = cm.ids[static_cast<std::size_t>(n - 1)];
  if (!slot.empty()) {
    ++accounts_[cm.account].duplicate_parts;  // the handset gets this part twice
  } else {
    ++cm.accepted;
  }
  slot = id;
  if (!cm.complete()) return;
  ++accounts_[cm.account].concat_complete;
  open_concat_.erase(std::to_string(cm.account) + '\t' + cm.destination + '\t' + std::to_string(cm.reference) + '\t' +
                     std::to_string(cm.total));
}

void SmscState::answered(std::int64_t handle, std::uint32_t status) {
  if (handle < 0 || status != 0) return;
  const auto index = static_cast<std::size_t>(handle / 256);
  const auto part = static_cast<std::size_t>(handle % 256);
  if (index < concat_.size() && part < concat_[index].answered.size()) concat_[index].answered[part] = 1;
}

// Orphan parts: accepted parts of messages that never completed (the
// handset shows them alone, or never).
nlohmann::json SmscState::concatReport(std::size_t account) const {
  const AccountState& a = accounts_[account];
  std::uint64_t incomplete = 0, orphan_parts = 0;
  for (const ConcatMessage& cm : concat_) {
    if (cm.account != account || cm.complete()) continue;
    ++incomplete;
    orphan_parts += cm.accepted;
  }
  return {{"messages", a.concat_messages},
          {"complete", a.concat_complete},
          {"incomplete", incomplete},
          {"orphan_parts", orphan_parts},
          {"duplicate_parts", a.duplicate_parts},
          {"parts_out_of_turn", a.parts_out_of_turn},
          {"segment_faults", a.segment_faults}};
}

void SmscState::record(Clock::time_point now, const std::string& account, const std::string& id, const smpp::Pdu& pdu,
                       std::uint32_t status) {
  if (record_ == nullptr) return;
  int n = 1, m = 1, reference = -1;
  segmentOf(pdu, n, m, reference);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_).count();
  const std::string ref = reference >= 0 ? std::to_string(reference) : "-";
  const char* validity = pdu.validity_period.empty() ? "-" : pdu.validity_period.c_str();
  std::fprintf(record_, "%lld\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", static_cast<long long>(ms), account.c_str(),
               id.empty() ? "-" : id.c_str(), pdu.destination_addr.c_str(), n, m,
               smpp::commandStatusName(status).c_str(), ref.c_str(), validity);
}

smpp::Pdu SmscState::receiptPdu(const PendingReceipt& r) const {
  smpp::Pdu p;
  p.command_id = smpp::cmd::kDeliverSm;
  p.source_addr_ton = 1;
  p.source_addr_npi = 1;
  p.source_addr = r.source;
  p.destination_addr = r.destination;
  p.esm_class = smpp::kEsmClassReceipt;
  const bool ok = r.outcome == 0;
  const std::string id =
      options_.receipt_ids_decimal ? std::to_string(std::strtoull(r.message_id.c_str(), nullptr, 16)) : r.message_id;
  p.short_message = "id:" + id + " sub:001 dlvrd:" + (ok ? "001" : "000") + " submit date:" + r.submit_date +
                    " done date:" + smppDateNow() + " stat:" + kStat[r.outcome] + " err:" + (ok ? "000" : "001") +
                    " text:";
  if (options_.receipt_tlvs) {
    p.receipted_message_id = id;
    p.message_state = kState[r.outcome];
  }
  return p;
}

nlohmann::json SmscState::report() const {
  nlohmann::json out = nlohmann::json::object();
  for (const AccountState& a : accounts_) {
    nlohmann::json sent = nlohmann::json::object();
    for (int i = 0; i < 4; ++i) sent[kStatusKey[i]] = a.receipts_sent[i];
    std::uint64_t pending = 0;
    for (const auto& r : receipts_) pending += &accounts_[r.account] == &a ? 1 : 0;
    out[a.config.system_id] = {{"binds", a.binds},
                               {"bind_failures", a.bind_failures},
                               {"submits", a.submits},
                               {"accepted", a.accepted},
                               {"throttled", a.throttled},
                               {"throttled_random", a.throttled_random},
                               {"binds_refused", a.binds_refused},
                               {"window_exceeded", a.window_exceeded},
                               {"errors_permanent", a.errors_permanent},
                               {"errors_transient", a.errors_transient},
                               {"max_segments_1s", a.max_segments_1s},
                               {"receipts_sent", sent},
                               {"receipts_acked", a.receipts_acked},
                               {"receipts_resent", a.receipts_resent},
                               {"receipts_pending", pending},
                               {"concatenated", concatReport(static_cast<std::size_t>(&a - accounts_.data()))}};
  }
  nlohmann::json r = {{"accounts", out}, {"started_unix_ms", start_unix_ms_}};
  if (outage_started_)
    r["outage_started_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(*outage_started_ - start_).count();
  return r;
}

}  // namespace pacer::fake

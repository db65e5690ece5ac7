#include "pacer/smpp/submit.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace pacer::smpp {
namespace {

// Higher is graver.
int gravity(SendOutcome o) {
  switch (o) {
    case SendOutcome::kDelivered: return 0;
    case SendOutcome::kFault: return 1;
    case SendOutcome::kThrottled: return 2;
    case SendOutcome::kPermanent:
    case SendOutcome::kInvalidToken: return 3;
  }
  return 1;
}

// The sender as sent: its TON/NPI (given, else implied by the address) and
// the address without a '+' when the TON says international.
struct Source {
  AddressType type;
  std::string_view addr;
};
Source sourceOf(const SubmitOptions& o) {
  const AddressType implied = sourceAddressType(o.source_addr);
  Source s{{o.source_addr_ton.value_or(implied.ton), o.source_addr_npi.value_or(implied.npi)}, o.source_addr};
  if (s.type.ton == ton::kInternational && !s.addr.empty() && s.addr.front() == '+') s.addr.remove_prefix(1);
  return s;
}

bool isDigits(std::string_view s) noexcept {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int twoDigits(std::string_view v, std::size_t at) noexcept { return (v[at] - '0') * 10 + (v[at + 1] - '0'); }

void fillCommon(const SubmitOptions& o, const Source& source, std::string_view dest, Pdu& p) {
  p.clear();
  p.command_id = cmd::kSubmitSm;
  p.service_type = o.service_type;
  p.source_addr_ton = source.type.ton;
  p.source_addr_npi = source.type.npi;
  p.source_addr.assign(source.addr);
  p.dest_addr_ton = o.dest_addr_ton;
  p.dest_addr_npi = o.dest_addr_npi;
  p.destination_addr.assign(dest);
  p.priority_flag = o.priority_flag;
  p.validity_period = o.validity_period;
}

}  // namespace

bool isDefinedNpi(std::uint8_t v) noexcept {
  constexpr std::uint8_t kDefined[] = {0, 1, 3, 4, 6, 8, 9, 10, 14, 18};
  return std::find(std::begin(kDefined), std::end(kDefined), v) != std::end(kDefined);
}

AddressType sourceAddressType(std::string_view a) noexcept {
  if (a.empty()) return {ton::kUnknown, npi::kUnknown};
  const bool plus = a.front() == '+';
  const std::string_view digits = plus ? a.substr(1) : a;
  if (!isDigits(digits)) return {ton::kAlphanumeric, npi::kUnknown};
  if (plus) return {ton::kInternational, npi::kE164};
  if (digits.front() == '0') return {ton::kNational, npi::kE164};
  if (digits.size() <= 8) return {ton::kNetworkSpecific, npi::kUnknown};
  return {ton::kInternational, npi::kE164};
}

const char* validityPeriodError(std::string_view v) noexcept {
  if (v.empty()) return nullptr;
  if (v.size() != 16 || v.back() != 'R' || !isDigits(v.substr(0, 15))) return "not 15 digits and R";
  if (v.substr(12, 3) != "000") return "a relative time ends in 000R";
  if (twoDigits(v, 2) > 11 || twoDigits(v, 4) > 30 || twoDigits(v, 6) > 23 || twoDigits(v, 8) > 59 ||
      twoDigits(v, 10) > 59)
    return "months 00-11, days 00-30, hours 00-23, minutes and seconds 00-59";
  if (v.substr(0, 12) == "000000000000") return "zero would expire every message at once";
  return nullptr;
}

std::string absoluteTime(std::int64_t epoch_ms) {
  using namespace std::chrono;
  const sys_time<milliseconds> at{milliseconds{epoch_ms}};
  const auto day = floor<days>(at);
  const year_month_day ymd{day};
  const int year = static_cast<int>(ymd.year());
  if (year < 2000 || year > 2099) return {};
  const hh_mm_ss<milliseconds> hms{at - day};
  char buf[32];  // 16 and the NUL; room the compiler cannot rule out for ints
  std::snprintf(buf, sizeof buf, "%02d%02u%02u%02d%02d%02d%01d00+", year % 100, static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                static_cast<int>(hms.subseconds().count() / 100));
  return buf;
}

std::int64_t relativeMillis(std::string_view v) noexcept {
  if (v.empty() || validityPeriodError(v) != nullptr) return 0;
  constexpr std::int64_t kDay = 86'400;
  const std::int64_t secs = twoDigits(v, 0) * 365 * kDay + twoDigits(v, 2) * 30 * kDay + twoDigits(v, 4) * kDay +
                            twoDigits(v, 6) * 3600 + twoDigits(v, 8) * 60 + twoDigits(v, 10);
  return secs * 1000;
}

std::string validityFor(std::string_view configured, std::int64_t expires_at_ms, std::int64_t now_ms) {
  if (expires_at_ms <= 0) return std::string(configured);
  const std::int64_t by_config = relativeMillis(configured);
  if (by_config > 0 && now_ms + by_config <= expires_at_ms) return std::string(configured);
  std::string absolute = absoluteTime(expires_at_ms);
  return absolute.empty() ? std::string(configured) : absolute;
}

const char* buildErrorName(BuildError e) noexcept {
  switch (e) {
    case BuildError::kNone: return "none";
    case BuildError::kNoRecipient: return "no_recipient";
    case BuildError::kBadRecipient: return "bad_recipient";
    case BuildError::kInvalidUtf8: return "invalid_utf8";
    case BuildError::kTooLong: return "too_long";
    case BuildError::kBadOptions: return "bad_options";
  }
  return "unknown";
}

BuildError buildSubmits(const SubmitOptions& o, std::string_view recipient, std::string_view text,
                        std::uint16_t reference, EncodedText& scratch, std::vector<Pdu>& out, std::size_t& count,
                        std::string& reason) {
  count = 0;
  if (!recipient.empty() && recipient.front() == '+') recipient.remove_prefix(1);
  if (recipient.empty()) return reason = "no recipient (destination address)", BuildError::kNoRecipient;
  if (recipient.size() + 1 > limit::kAddress || recipient.find('\0') != std::string_view::npos)
    return reason = "recipient is not an SMPP address (at most 20 octets)", BuildError::kBadRecipient;
  if (o.source_addr.size() + 1 > limit::kAddress || o.service_type.size() + 1 > limit::kServiceType ||
      validityPeriodError(o.validity_period) != nullptr || o.priority_flag > 3)
    return reason = "source address, service type, validity period or priority flag not usable",
           BuildError::kBadOptions;
  const Source source = sourceOf(o);
  std::size_t bad = 0;
  const TextError te = encodeText(text, scratch, &bad);
  if (te == TextError::kInvalidUtf8)
    return reason = "text is not UTF-8 at byte " + std::to_string(bad), BuildError::kInvalidUtf8;
  if (te == TextError::kTooLong) return reason = "text needs more than 255 segments", BuildError::kTooLong;
  const std::size_t n = scratch.count;
  if (out.size() < n) out.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    Pdu& p = out[k];
    fillCommon(o, source, recipient, p);
    p.data_coding = static_cast<std::uint8_t>(scratch.coding);
    const bool ask = o.receipts == ReceiptRequest::kAll || (o.receipts == ReceiptRequest::kFirst && k == 0);
    p.registered_delivery = ask ? 1 : 0;
    if (n > 1 && o.concatenation == Concatenation::kUdh) {
      p.esm_class = kEsmClassUdhi;
      const char udh[6] = {
          5, 0, 3, static_cast<char>(reference & 0xFF), static_cast<char>(n), static_cast<char>(k + 1)};
      p.short_message.assign(udh, sizeof udh);
    } else if (n > 1) {
      p.sar_msg_ref_num = reference;
      p.sar_total_segments = static_cast<std::uint8_t>(n);
      p.sar_segment_seqnum = static_cast<std::uint8_t>(k + 1);
    }
    p.short_message.append(scratch.segments[k]);
  }
  count = n;
  return BuildError::kNone;
}

void SegmentTally::begin(std::size_t segments) {
  segments_ = segments;
  state_.assign(segments, SegmentState::kPending);
  ids_.resize(segments);
  for (std::string& id : ids_) id.clear();  // keeps their storage
  cursor_ = out_ = accepted_ = 0;
  failed_ = refused_ = false;
  worst_ = SendOutcome::kDelivered;
  status_ = 0;
  reason_.clear();
}

void SegmentTally::restore(const std::vector<std::string>& accepted_ids) {
  for (std::size_t i = 0; i < accepted_ids.size() && i < state_.size(); ++i) {
    if (accepted_ids[i].empty() || state_[i] != SegmentState::kPending) continue;
    state_[i] = SegmentState::kAccepted;
    ids_[i] = accepted_ids[i];
    ++accepted_;
  }
  while (cursor_ < segments_ && state_[cursor_] == SegmentState::kAccepted) ++cursor_;
}

std::size_t SegmentTally::next() const {
  if (failed_ || out_ > 0 || cursor_ >= segments_) return kNone;
  return cursor_;
}

void SegmentTally::sent(std::size_t index) {
  if (index >= state_.size() || state_[index] != SegmentState::kPending) return;
  state_[index] = SegmentState::kOut;
  ++out_;
}

void SegmentTally::done(std::size_t index, SendOutcome outcome, std::uint32_t status, std::string_view message_id,
                        std::string_view reason) {
  if (index >= state_.size()) return;
  if (state_[index] == SegmentState::kOut) --out_;
  if (outcome == SendOutcome::kDelivered) {
    if (state_[index] != SegmentState::kAccepted) ++accepted_;
    state_[index] = SegmentState::kAccepted;
    ids_[index].assign(message_id);
    while (cursor_ < segments_ && state_[cursor_] == SegmentState::kAccepted) ++cursor_;
    return;
  }
  const bool refused = outcome == SendOutcome::kPermanent || outcome == SendOutcome::kInvalidToken;
  state_[index] = refused ? SegmentState::kRefused : SegmentState::kFailed;
  refused_ = refused_ || refused;
  failed_ = true;
  if (gravity(outcome) > gravity(worst_)) {
    worst_ = outcome;
    status_ = status;
    reason_.assign(reason);
    if (segments_ > 1) reason_ += " (segment " + std::to_string(index + 1) + "/" + std::to_string(segments_) + ")";
  }
}

bool SegmentTally::resumable() const { return finished() && failed_ && !refused_ && segments_ > 1; }

std::string acceptedSummary(const std::vector<std::string>& accepted_ids) {
  std::string numbers, ids;
  std::size_t n = 0;
  for (std::size_t i = 0; i < accepted_ids.size(); ++i) {
    if (accepted_ids[i].empty()) continue;
    const char* sep = n++ == 0 ? "" : ",";
    numbers += sep + std::to_string(i + 1);
    ids += sep + accepted_ids[i];
  }
  if (n == 0) return {};
  const bool one = n == 1;
  return std::string(one ? "segment " : "segments ") + numbers + " of " + std::to_string(accepted_ids.size()) +
         " accepted, " + (one ? "id " : "ids ") + ids;
}

SendResult SegmentTally::result(std::uint64_t ticket) const {
  SendResult r;
  r.ticket = ticket;
  r.outcome = worst_;
  r.status = static_cast<int>(status_);
  if (worst_ == SendOutcome::kDelivered) {
    r.provider_message_id = segments_ > 0 ? ids_[0] : std::string();
    return r;
  }
  r.reason = reason_;
  if (accepted_ > 0) r.reason += "; " + acceptedSummary(ids_);
  // The first segment's id even so, when the SMSC holds it: its receipt then
  // joins the message's row, whatever becomes of the rest.
  if (segments_ > 0 && !ids_[0].empty()) r.provider_message_id = ids_[0];
  return r;
}

}  // namespace pacer::smpp

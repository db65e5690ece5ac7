// The SMPP sink's carrier settings: sink.smpp.* keys for what goes into
// every submit_sm (TON/NPI, service_type, validity_period, priority_flag)
// and how the SMSC writes message ids (docs/smpp.md "Carrier settings").
// The rest of sink.smpp is in config_keys.cc.
#include <fmt/format.h>

#include <algorithm>

#include "config_keys.h"
#include "pacer/smpp/message_id.h"
#include "pacer/smpp/submit.h"

namespace pacer::config::detail {
namespace {

// A TON or NPI: a small number among `ok`; `expected` says which.
std::uint8_t asCode(const Raw& r, bool (*ok)(std::uint8_t), const char* expected) {
  const std::string v = trim(asString(r));
  const bool digits = !v.empty() && v.size() <= 2 && v.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || !ok(static_cast<std::uint8_t>(std::stoi(v)))) fail(r, expected);
  return static_cast<std::uint8_t>(std::stoi(v));
}

bool isTon(std::uint8_t v) { return v <= smpp::ton::kMax; }

// nullopt for "auto": implied by the sender.
std::optional<std::uint8_t> autoOr(const Raw& r, bool (*ok)(std::uint8_t), const char* expected) {
  if (trim(asString(r)) == "auto") return std::nullopt;
  return asCode(r, ok, expected);
}

}  // namespace

std::vector<Key> smppCarrierKeys() {
  return {
      {"sink.smpp.source_addr_ton", Shape::kScalar, "--smpp-source-addr-ton", FlagForm::kValue, false, false,
       "sink smpp: the sender's TON, 0-6, or auto: 5 for a name, 1 for +digits or 9+ digits, 2 for a leading 0, "
       "3 for a short code (default auto)",
       [](const Raw& r, Ctx& c) {
         c.o.smpp.submit.source_addr_ton = autoOr(r, isTon, "auto or an integer from 0 to 6");
       }},
      {"sink.smpp.source_addr_npi", Shape::kScalar, "--smpp-source-addr-npi", FlagForm::kValue, false, false,
       "sink smpp: the sender's NPI, or auto: 0 for a name or short code, else 1 (E.164) (default auto)",
       [](const Raw& r, Ctx& c) {
         c.o.smpp.submit.source_addr_npi = autoOr(r, smpp::isDefinedNpi, "auto, 0, 1, 3, 4, 6, 8, 9, 10, 14 or 18");
       }},
      {"sink.smpp.dest_addr_ton", Shape::kScalar, "--smpp-dest-addr-ton", FlagForm::kValue, false, false,
       "sink smpp: the recipient's TON, 0-6 (default 1, international)",
       [](const Raw& r, Ctx& c) { c.o.smpp.submit.dest_addr_ton = asCode(r, isTon, "an integer from 0 to 6"); }},
      {"sink.smpp.dest_addr_npi", Shape::kScalar, "--smpp-dest-addr-npi", FlagForm::kValue, false, false,
       "sink smpp: the recipient's NPI (default 1, E.164)",
       [](const Raw& r, Ctx& c) {
         c.o.smpp.submit.dest_addr_npi = asCode(r, smpp::isDefinedNpi, "0, 1, 3, 4, 6, 8, 9, 10, 14 or 18");
       }},
      {"sink.smpp.service_type", Shape::kScalar, "--smpp-service-type", FlagForm::kValue, false, false,
       "sink smpp: submit_sm service_type, at most 5 characters (default empty: the SMSC's default)",
       [](const Raw& r, Ctx& c) {
         const std::string v = asString(r);
         const bool printable = std::all_of(v.begin(), v.end(), [](char ch) { return ch > ' ' && ch < 0x7F; });
         if (v.size() > 5 || !printable) fail(r, "at most 5 printable ASCII characters");
         c.o.smpp.submit.service_type = v;
       }},
      {"sink.smpp.validity_period", Shape::kScalar, "--smpp-validity-period", FlagForm::kValue, false, false,
       "sink smpp: how long the SMSC keeps trying, SMPP relative time YYMMDDhhmmss000R, e.g. 000002000000000R "
       "for 2 days (default empty: the SMSC's default)",
       [](const Raw& r, Ctx& c) {
         const std::string v = trim(asString(r));
         if (const char* why = smpp::validityPeriodError(v))
           fail(r, fmt::format("SMPP's relative time YYMMDDhhmmss000R, e.g. 000002000000000R for 2 days ({})", why));
         c.o.smpp.submit.validity_period = v;
       }},
      {"sink.smpp.priority_flag", Shape::kScalar, "--smpp-priority-flag", FlagForm::kValue, false, false,
       "sink smpp: submit_sm priority_flag, 0-3 (default 0)",
       [](const Raw& r, Ctx& c) { c.o.smpp.submit.priority_flag = static_cast<std::uint8_t>(asInt(r, 0, 3)); }},
      {"sink.smpp.receipt_ids", Shape::kScalar, "--smpp-receipt-ids", FlagForm::kValue, false, false,
       "sink smpp: how the SMSC writes message ids in submit_sm_resp and in receipts: as-is, hex-decimal, "
       "decimal-hex or auto (default as-is)",
       [](const Raw& r, Ctx& c) {
         const std::string v = asChoice(r, {"as-is", "hex-decimal", "decimal-hex", "auto"});
         c.o.smpp.receipt_ids = *smpp::parseIdConvention(v);
       }},
  };
}

}  // namespace pacer::config::detail

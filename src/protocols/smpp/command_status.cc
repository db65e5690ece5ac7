// The command_status table (docs/smpp.md "command_status classes"). A code is
// permanent only when sending the same message again must fail the same way:
// its address, length, coding or flags are wrong. Codes about the session
// (not bound, already bound, bad command length from our own encoder) and
// the SMSC's own trouble are faults: the message retries with backoff and
// the circuit breaker sees them. Unknown and vendor codes are faults too, so
// a code we have never seen costs a retry, not a message.
#include <cstdio>

#include "pacer/smpp/receipt.h"

namespace pacer::smpp {
namespace {

struct Row {
  std::uint32_t code;
  const char* name;
  SendOutcome outcome;
};

constexpr SendOutcome kOk = SendOutcome::kDelivered;
constexpr SendOutcome kThr = SendOutcome::kThrottled;
constexpr SendOutcome kPerm = SendOutcome::kPermanent;
constexpr SendOutcome kFlt = SendOutcome::kFault;

constexpr Row kTable[] = {
    {0x00, "ESME_ROK", kOk},
    {0x01, "ESME_RINVMSGLEN", kPerm},
    {0x02, "ESME_RINVCMDLEN", kFlt},
    {0x03, "ESME_RINVCMDID", kFlt},
    {0x04, "ESME_RINVBNDSTS", kFlt},
    {0x05, "ESME_RALYBND", kFlt},
    {0x06, "ESME_RINVPRTFLG", kPerm},
    {0x07, "ESME_RINVREGDLVFLG", kPerm},
    {0x08, "ESME_RSYSERR", kFlt},
    {0x0A, "ESME_RINVSRCADR", kPerm},
    {0x0B, "ESME_RINVDSTADR", kPerm},
    {0x0C, "ESME_RINVMSGID", kFlt},
    {0x0D, "ESME_RBINDFAIL", kFlt},
    {0x0E, "ESME_RINVPASWD", kFlt},
    {0x0F, "ESME_RINVSYSID", kFlt},
    {0x11, "ESME_RCANCELFAIL", kFlt},
    {0x13, "ESME_RREPLACEFAIL", kFlt},
    {0x14, "ESME_RMSGQFUL", kThr},
    {0x15, "ESME_RINVSERTYP", kPerm},
    {0x33, "ESME_RINVNUMDESTS", kPerm},
    {0x34, "ESME_RINVDLNAME", kPerm},
    {0x40, "ESME_RINVDESTFLAG", kPerm},
    {0x42, "ESME_RINVSUBREP", kPerm},
    {0x43, "ESME_RINVESMCLASS", kPerm},
    {0x44, "ESME_RCNTSUBDL", kPerm},
    {0x45, "ESME_RSUBMITFAIL", kFlt},
    {0x48, "ESME_RINVSRCTON", kPerm},
    {0x49, "ESME_RINVSRCNPI", kPerm},
    {0x50, "ESME_RINVDSTTON", kPerm},
    {0x51, "ESME_RINVDSTNPI", kPerm},
    {0x53, "ESME_RINVSYSTYP", kFlt},
    {0x54, "ESME_RINVREPFLAG", kPerm},
    {0x55, "ESME_RINVNUMMSGS", kPerm},
    {0x58, "ESME_RTHROTTLED", kThr},
    {0x61, "ESME_RINVSCHED", kPerm},
    {0x62, "ESME_RINVEXPIRY", kPerm},
    {0x63, "ESME_RINVDFTMSGID", kPerm},
    {0x64, "ESME_RX_T_APPN", kFlt},
    {0x65, "ESME_RX_P_APPN", kPerm},
    {0x66, "ESME_RX_R_APPN", kPerm},
    {0x67, "ESME_RQUERYFAIL", kFlt},
    {0xC0, "ESME_RINVOPTPARSTREAM", kPerm},
    {0xC1, "ESME_ROPTPARNOTALLWD", kPerm},
    {0xC2, "ESME_RINVPARLEN", kPerm},
    {0xC3, "ESME_RMISSINGOPTPARAM", kPerm},
    {0xC4, "ESME_RINVOPTPARAMVAL", kPerm},
    {0xFE, "ESME_RDELIVERYFAILURE", kFlt},
    {0xFF, "ESME_RUNKNOWNERR", kFlt},
    {0x104, "ESME_RINVDCS", kPerm},
};

const Row* find(std::uint32_t code) noexcept {
  for (const Row& r : kTable)
    if (r.code == code) return &r;
  return nullptr;
}

}  // namespace

SendOutcome classifyCommandStatus(std::uint32_t command_status) noexcept {
  const Row* r = find(command_status);
  return r != nullptr ? r->outcome : SendOutcome::kFault;
}

std::string commandStatusName(std::uint32_t command_status) {
  if (const Row* r = find(command_status)) return r->name;
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", command_status);
  return buf;
}

}  // namespace pacer::smpp

#include "pacer/smpp/pdu.h"

#include <cstdio>
#include <cstring>

namespace pacer::smpp {
namespace {

// A bounds-checked cursor over one PDU's octets. Every read checks what is
// left first; a failed read sets `error` once and every later read fails too,
// so decoders can read a whole layout and check once at the end.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}

  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }
  bool ok() const { return error_ == DecodeError::kNone; }
  DecodeError error() const { return error_; }
  void fail(DecodeError e) {
    if (error_ == DecodeError::kNone) error_ = e;
  }

  std::uint8_t u8() {
    if (!ok() || left() < 1) return fail(DecodeError::kTruncatedBody), 0;
    return *p_++;
  }
  std::uint16_t u16() {
    if (!ok() || left() < 2) return fail(DecodeError::kTruncatedBody), 0;
    const std::uint16_t v = static_cast<std::uint16_t>((p_[0] << 8) | p_[1]);
    p_ += 2;
    return v;
  }
  std::uint32_t u32() {
    if (!ok() || left() < 4) return fail(DecodeError::kTruncatedBody), 0;
    const std::uint32_t v = (std::uint32_t{p_[0]} << 24) | (std::uint32_t{p_[1]} << 16) | (std::uint32_t{p_[2]} << 8) |
                            std::uint32_t{p_[3]};
    p_ += 4;
    return v;
  }
  // A C-Octet string of at most `max` octets, NUL included.
  void cstring(std::string& out, std::size_t max) {
    out.clear();
    if (!ok()) return;
    const std::size_t scan = left() < max ? left() : max;
    const void* nul = std::memchr(p_, 0, scan);
    if (nul == nullptr) return fail(scan < max ? DecodeError::kTruncatedBody : DecodeError::kUnterminatedString);
    const auto n = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - p_);
    out.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n + 1;
  }
  void octets(std::string& out, std::size_t n) {
    out.clear();
    if (!ok() || left() < n) return fail(DecodeError::kTruncatedBody);
    out.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  DecodeError error_ = DecodeError::kNone;
};

// Reads one known TLV's value, or skips an unknown one.
void readTlv(Reader& r, std::uint16_t t, std::uint16_t len, Pdu& out) {
  auto fixed = [&](std::size_t want) {
    if (len != want) r.fail(DecodeError::kBadTlvLength);
    return r.ok();
  };
  std::string skipped;
  switch (t) {
    case tag::kScInterfaceVersion:
      if (fixed(1)) out.sc_interface_version = r.u8();
      break;
    case tag::kSarMsgRefNum:
      if (fixed(2)) out.sar_msg_ref_num = r.u16();
      break;
    case tag::kSarTotalSegments:
      if (fixed(1)) out.sar_total_segments = r.u8();
      break;
    case tag::kSarSegmentSeqnum:
      if (fixed(1)) out.sar_segment_seqnum = r.u8();
      break;
    case tag::kMessageState:
      if (fixed(1)) out.message_state = r.u8();
      break;
    case tag::kNetworkErrorCode:
      if (fixed(3)) r.octets(out.network_error_code.emplace(), 3);
      break;
    case tag::kReceiptedMessageId: {
      if (len > limit::kMessageId) {
        r.fail(DecodeError::kBadTlvLength);
        break;
      }
      std::string& id = out.receipted_message_id.emplace();
      r.octets(id, len);
      // A C-Octet string by the spec; some SMSCs leave the NUL out.
      while (!id.empty() && id.back() == '\0') id.pop_back();
      if (id.find('\0') != std::string::npos) r.fail(DecodeError::kBadTlvLength);
      break;
    }
    case tag::kMessagePayload: r.octets(out.message_payload.emplace(), len); break;
    default:
      r.octets(skipped, len);  // unknown: skipped, as section 3.2.5 asks
      break;
  }
}

void readTlvs(Reader& r, Pdu& out) {
  while (r.ok() && r.left() > 0) {
    if (r.left() < 4) return r.fail(DecodeError::kBadTlv);
    const std::uint16_t t = r.u16();
    const std::uint16_t len = r.u16();
    if (len > r.left()) return r.fail(DecodeError::kBadTlv);
    readTlv(r, t, len, out);
  }
}

void readBind(Reader& r, Pdu& out) {
  r.cstring(out.system_id, limit::kSystemId);
  r.cstring(out.password, limit::kPassword);
  r.cstring(out.system_type, limit::kSystemType);
  out.interface_version = r.u8();
  out.addr_ton = r.u8();
  out.addr_npi = r.u8();
  r.cstring(out.address_range, limit::kAddressRange);
}

void readSm(Reader& r, Pdu& out) {
  r.cstring(out.service_type, limit::kServiceType);
  out.source_addr_ton = r.u8();
  out.source_addr_npi = r.u8();
  r.cstring(out.source_addr, limit::kAddress);
  out.dest_addr_ton = r.u8();
  out.dest_addr_npi = r.u8();
  r.cstring(out.destination_addr, limit::kAddress);
  out.esm_class = r.u8();
  out.protocol_id = r.u8();
  out.priority_flag = r.u8();
  r.cstring(out.schedule_delivery_time, limit::kTime);
  r.cstring(out.validity_period, limit::kTime);
  out.registered_delivery = r.u8();
  out.replace_if_present_flag = r.u8();
  out.data_coding = r.u8();
  out.sm_default_msg_id = r.u8();
  const std::uint8_t sm_length = r.u8();
  if (!r.ok()) return;
  if (sm_length > limit::kShortMessage || sm_length > r.left()) return r.fail(DecodeError::kBadShortMessage);
  r.octets(out.short_message, sm_length);
  readTlvs(r, out);
}

// Reads the body of `out.command_id` from `r`.
void readBody(Reader& r, Pdu& out) {
  switch (out.command_id) {
    case cmd::kBindReceiver:
    case cmd::kBindTransmitter:
    case cmd::kBindTransceiver:
      readBind(r, out);
      if (r.ok() && r.left() > 0) r.fail(DecodeError::kTrailingBytes);
      return;
    case cmd::kBindReceiverResp:
    case cmd::kBindTransmitterResp:
    case cmd::kBindTransceiverResp:
    case cmd::kSubmitSmResp:
    case cmd::kDeliverSmResp: {
      // An error answer may come without its body (section 5.1.3).
      if (r.left() == 0 && out.command_status != 0) return;
      std::string& s = out.command_id == cmd::kSubmitSmResp || out.command_id == cmd::kDeliverSmResp ? out.message_id
                                                                                                     : out.system_id;
      r.cstring(s, out.command_id == cmd::kSubmitSmResp    ? limit::kMessageId
                   : out.command_id == cmd::kDeliverSmResp ? limit::kMessageId
                                                           : limit::kSystemId);
      readTlvs(r, out);
      return;
    }
    case cmd::kSubmitSm:
    case cmd::kDeliverSm: readSm(r, out); return;
    case cmd::kEnquireLink:
    case cmd::kEnquireLinkResp:
    case cmd::kUnbind:
    case cmd::kUnbindResp:
    case cmd::kGenericNack:
      if (r.left() > 0) r.fail(DecodeError::kTrailingBytes);
      return;
    default: r.fail(DecodeError::kUnknownCommand);
  }
}

void putU8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
void putU16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xFF));
}
void putU32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

// Collects the first error while writing, like Reader.
struct Writer {
  std::string& out;
  EncodeError error = EncodeError::kNone;

  void cstring(const std::string& s, std::size_t max) {
    if (s.size() + 1 > max || s.find('\0') != std::string::npos) {
      if (error == EncodeError::kNone) error = EncodeError::kFieldTooLong;
      return;
    }
    out.append(s);
    out.push_back('\0');
  }
  void tlv(std::uint16_t t, std::string_view value) {
    if (value.size() > 0xFFFF) {
      if (error == EncodeError::kNone) error = EncodeError::kTlvTooLong;
      return;
    }
    putU16(out, t);
    putU16(out, static_cast<std::uint16_t>(value.size()));
    out.append(value);
  }
  void tlvU8(std::uint16_t t, const std::optional<std::uint8_t>& v) {
    if (!v) return;
    putU16(out, t);
    putU16(out, 1);
    putU8(out, *v);
  }
};

void writeTlvs(Writer& w, const Pdu& p) {
  w.tlvU8(tag::kScInterfaceVersion, p.sc_interface_version);
  if (p.sar_msg_ref_num) {
    putU16(w.out, tag::kSarMsgRefNum);
    putU16(w.out, 2);
    putU16(w.out, *p.sar_msg_ref_num);
  }
  w.tlvU8(tag::kSarTotalSegments, p.sar_total_segments);
  w.tlvU8(tag::kSarSegmentSeqnum, p.sar_segment_seqnum);
  if (p.receipted_message_id) {
    if (p.receipted_message_id->size() + 1 > limit::kMessageId) w.error = EncodeError::kFieldTooLong;
    std::string v = *p.receipted_message_id;
    v.push_back('\0');
    w.tlv(tag::kReceiptedMessageId, v);
  }
  w.tlvU8(tag::kMessageState, p.message_state);
  if (p.network_error_code) w.tlv(tag::kNetworkErrorCode, *p.network_error_code);
  if (p.message_payload) w.tlv(tag::kMessagePayload, *p.message_payload);
}

void writeSm(Writer& w, const Pdu& p) {
  w.cstring(p.service_type, limit::kServiceType);
  putU8(w.out, p.source_addr_ton);
  putU8(w.out, p.source_addr_npi);
  w.cstring(p.source_addr, limit::kAddress);
  putU8(w.out, p.dest_addr_ton);
  putU8(w.out, p.dest_addr_npi);
  w.cstring(p.destination_addr, limit::kAddress);
  putU8(w.out, p.esm_class);
  putU8(w.out, p.protocol_id);
  putU8(w.out, p.priority_flag);
  w.cstring(p.schedule_delivery_time, limit::kTime);
  w.cstring(p.validity_period, limit::kTime);
  putU8(w.out, p.registered_delivery);
  putU8(w.out, p.replace_if_present_flag);
  putU8(w.out, p.data_coding);
  putU8(w.out, p.sm_default_msg_id);
  if (p.short_message.size() > limit::kShortMessage) {
    w.error = EncodeError::kShortMessageTooLong;
    return;
  }
  putU8(w.out, static_cast<std::uint8_t>(p.short_message.size()));
  w.out.append(p.short_message);
  writeTlvs(w, p);
}

void writeBody(Writer& w, const Pdu& p) {
  switch (p.command_id) {
    case cmd::kBindReceiver:
    case cmd::kBindTransmitter:
    case cmd::kBindTransceiver:
      w.cstring(p.system_id, limit::kSystemId);
      w.cstring(p.password, limit::kPassword);
      w.cstring(p.system_type, limit::kSystemType);
      putU8(w.out, p.interface_version);
      putU8(w.out, p.addr_ton);
      putU8(w.out, p.addr_npi);
      w.cstring(p.address_range, limit::kAddressRange);
      return;
    case cmd::kBindReceiverResp:
    case cmd::kBindTransmitterResp:
    case cmd::kBindTransceiverResp:
      w.cstring(p.system_id, limit::kSystemId);
      writeTlvs(w, p);
      return;
    case cmd::kSubmitSmResp:
    case cmd::kDeliverSmResp: w.cstring(p.message_id, limit::kMessageId); return;
    case cmd::kSubmitSm:
    case cmd::kDeliverSm: writeSm(w, p); return;
    case cmd::kEnquireLink:
    case cmd::kEnquireLinkResp:
    case cmd::kUnbind:
    case cmd::kUnbindResp:
    case cmd::kGenericNack: return;
    default: w.error = EncodeError::kUnknownCommand;
  }
}

}  // namespace

void Pdu::clear() noexcept {
  command_id = command_status = sequence_number = 0;
  for (std::string* s : {&system_id, &password, &system_type, &address_range, &service_type, &source_addr,
                         &destination_addr, &schedule_delivery_time, &validity_period, &short_message, &message_id})
    s->clear();
  interface_version = 0x34;
  addr_ton = addr_npi = source_addr_ton = source_addr_npi = dest_addr_ton = dest_addr_npi = 0;
  esm_class = protocol_id = priority_flag = registered_delivery = replace_if_present_flag = 0;
  data_coding = sm_default_msg_id = 0;
  sc_interface_version.reset();
  sar_msg_ref_num.reset();
  sar_total_segments.reset();
  sar_segment_seqnum.reset();
  receipted_message_id.reset();
  message_state.reset();
  network_error_code.reset();
  message_payload.reset();
}

DecodeError decode(const std::uint8_t* data, std::size_t size, Pdu& out) noexcept {
  out.clear();
  if (data == nullptr || size < kHeaderLength) return DecodeError::kTooShort;
  Reader r(data, size);
  const std::uint32_t length = r.u32();
  out.command_id = r.u32();
  out.command_status = r.u32();
  out.sequence_number = r.u32();
  if (length < kHeaderLength) return DecodeError::kTooShort;
  if (length > kMaxPduLength) return DecodeError::kTooLong;
  if (length != size) return DecodeError::kLengthMismatch;
  readBody(r, out);
  return r.error();
}

EncodeError encode(const Pdu& pdu, std::string& out) {
  const std::size_t start = out.size();
  Writer w{out};
  putU32(out, 0);  // command_length, patched below
  putU32(out, pdu.command_id);
  putU32(out, pdu.command_status);
  putU32(out, pdu.sequence_number);
  writeBody(w, pdu);
  if (w.error != EncodeError::kNone) {
    out.resize(start);
    return w.error;
  }
  const auto length = static_cast<std::uint32_t>(out.size() - start);
  for (int i = 0; i < 4; ++i) out[start + i] = static_cast<char>((length >> (24 - 8 * i)) & 0xFF);
  return EncodeError::kNone;
}

Pdu makeHeaderOnly(std::uint32_t command_id, std::uint32_t sequence_number, std::uint32_t status) {
  Pdu p;
  p.command_id = command_id;
  p.sequence_number = sequence_number;
  p.command_status = status;
  return p;
}

const char* decodeErrorName(DecodeError e) noexcept {
  switch (e) {
    case DecodeError::kNone: return "none";
    case DecodeError::kTooShort: return "too_short";
    case DecodeError::kTooLong: return "too_long";
    case DecodeError::kLengthMismatch: return "length_mismatch";
    case DecodeError::kUnknownCommand: return "unknown_command";
    case DecodeError::kTruncatedBody: return "truncated_body";
    case DecodeError::kUnterminatedString: return "unterminated_string";
    case DecodeError::kBadShortMessage: return "bad_short_message";
    case DecodeError::kBadTlv: return "bad_tlv";
    case DecodeError::kBadTlvLength: return "bad_tlv_length";
    case DecodeError::kTrailingBytes: return "trailing_bytes";
  }
  return "unknown";
}

const char* encodeErrorName(EncodeError e) noexcept {
  switch (e) {
    case EncodeError::kNone: return "none";
    case EncodeError::kUnknownCommand: return "unknown_command";
    case EncodeError::kFieldTooLong: return "field_too_long";
    case EncodeError::kShortMessageTooLong: return "short_message_too_long";
    case EncodeError::kTlvTooLong: return "tlv_too_long";
  }
  return "unknown";
}

std::string commandName(std::uint32_t id) {
  switch (id) {
    case cmd::kGenericNack: return "generic_nack";
    case cmd::kBindReceiver: return "bind_receiver";
    case cmd::kBindReceiverResp: return "bind_receiver_resp";
    case cmd::kBindTransmitter: return "bind_transmitter";
    case cmd::kBindTransmitterResp: return "bind_transmitter_resp";
    case cmd::kSubmitSm: return "submit_sm";
    case cmd::kSubmitSmResp: return "submit_sm_resp";
    case cmd::kDeliverSm: return "deliver_sm";
    case cmd::kDeliverSmResp: return "deliver_sm_resp";
    case cmd::kUnbind: return "unbind";
    case cmd::kUnbindResp: return "unbind_resp";
    case cmd::kBindTransceiver: return "bind_transceiver";
    case cmd::kBindTransceiverResp: return "bind_transceiver_resp";
    case cmd::kEnquireLink: return "enquire_link";
    case cmd::kEnquireLinkResp: return "enquire_link_resp";
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", id);
  return buf;
}

}  // namespace pacer::smpp

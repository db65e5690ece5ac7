// SMS text: UTF-8 in, GSM 03.38 septets or UCS-2 out, cut into segments.
// Pure and allocation-free where it is called per message (countSegments).
//
// Rules (docs/smpp.md "Encoding and segments"):
// - GSM 03.38 default alphabet with its extension table (escape 0x1B) when
//   every character has a GSM form; an extension character costs 2 septets.
//   Septets travel unpacked, one per octet, with data_coding 0x00 (the SMSC
//   packs them for the air interface).
// - UCS-2 (big-endian UTF-16, data_coding 0x08) otherwise; characters beyond
//   the BMP take a surrogate pair (2 code units).
// - One segment: up to 160 septets / 70 code units. More: segments of up to
//   153 septets / 67 code units (the room a concatenation header leaves),
//   never splitting an escape pair or a surrogate pair. At most 255 segments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pacer::smpp {

enum class TextCoding : std::uint8_t { kGsm7 = 0x00, kUcs2 = 0x08 };

enum class TextError {
  kNone,
  kInvalidUtf8,  // not well-formed UTF-8 (overlong, surrogate, past U+10FFFF, truncated)
  kTooLong,      // needs more than kMaxSegments segments
};
const char* textErrorName(TextError e) noexcept;

inline constexpr std::size_t kMaxSegments = 255;
inline constexpr std::size_t kGsmSingle = 160;
inline constexpr std::size_t kGsmPart = 153;
inline constexpr std::size_t kUcs2Single = 70;
inline constexpr std::size_t kUcs2Part = 67;

struct SegmentCount {
  TextError error = TextError::kNone;
  TextCoding coding = TextCoding::kGsm7;
  std::size_t segments = 0;    // 1 for the empty text
  std::size_t units = 0;       // septets (GSM) or UTF-16 code units (UCS-2) in the whole text
  std::size_t bad_offset = 0;  // kInvalidUtf8: the byte offset of the first bad sequence
};

// How many segments `utf8` needs (what the quota charges). One pass, no
// allocation. kTooLong still reports the count it would need.
SegmentCount countSegments(std::string_view utf8) noexcept;

// A text cut into segments, each segment's octets ready for short_message
// (without any concatenation header).
struct EncodedText {
  TextCoding coding = TextCoding::kGsm7;
  std::vector<std::string> segments;  // reused between calls: keeps capacity
  std::size_t count = 0;              // segments in use: segments[0 .. count)
};

// Encodes and cuts `utf8`. On error `out.count` is 0 and `bad_offset`
// (when given) receives the offset of the first invalid byte.
TextError encodeText(std::string_view utf8, EncodedText& out, std::size_t* bad_offset = nullptr);

// The reverse, for tests and the fake SMSC: octets of one coding to UTF-8.
// GSM septets above 0x7F, a lone escape, or an odd UCS-2 length give false.
bool decodeText(TextCoding coding, std::string_view octets, std::string& utf8);

// Whether the code point has a GSM 03.38 form, and its cost in septets (0: none).
std::size_t gsmCost(char32_t cp) noexcept;

// Decodes one UTF-8 sequence at s[i]; returns its length (0: invalid) and
// the code point in `cp`.
std::size_t decodeUtf8(std::string_view s, std::size_t i, char32_t& cp) noexcept;

}  // namespace pacer::smpp

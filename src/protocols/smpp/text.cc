#include "pacer/smpp/text.h"

#include <array>

namespace pacer::smpp {
namespace {

// GSM 03.38 default alphabet: septet -> Unicode (3GPP TS 23.038, 6.2.1).
// 0x1B is the escape to the extension table; it has no character of its own.
constexpr std::array<char16_t, 128> kGsmDefault = {
    u'@',      u'\u00A3', u'$',      u'\u00A5', u'\u00E8', u'\u00E9', u'\u00F9', u'\u00EC',  // 0x00
    u'\u00F2', u'\u00C7', u'\n',     u'\u00D8', u'\u00F8', u'\r',     u'\u00C5', u'\u00E5',  // 0x08
    u'\u0394', u'_',      u'\u03A6', u'\u0393', u'\u039B', u'\u03A9', u'\u03A0', u'\u03A8',  // 0x10
    u'\u03A3', u'\u0398', u'\u039E', 0xFFFF,    u'\u00C6', u'\u00E6', u'\u00DF', u'\u00C9',  // 0x18
    u' ',      u'!',      u'"',      u'#',      u'\u00A4', u'%',      u'&',      u'\'',      // 0x20
    u'(',      u')',      u'*',      u'+',      u',',      u'-',      u'.',      u'/',       // 0x28
    u'0',      u'1',      u'2',      u'3',      u'4',      u'5',      u'6',      u'7',       // 0x30
    u'8',      u'9',      u':',      u';',      u'<',      u'=',      u'>',      u'?',       // 0x38
    u'\u00A1', u'A',      u'B',      u'C',      u'D',      u'E',      u'F',      u'G',       // 0x40
    u'H',      u'I',      u'J',      u'K',      u'L',      u'M',      u'N',      u'O',       // 0x48
    u'P',      u'Q',      u'R',      u'S',      u'T',      u'U',      u'V',      u'W',       // 0x50
    u'X',      u'Y',      u'Z',      u'\u00C4', u'\u00D6', u'\u00D1', u'\u00DC', u'\u00A7',  // 0x58
    u'\u00BF', u'a',      u'b',      u'c',      u'd',      u'e',      u'f',      u'g',       // 0x60
    u'h',      u'i',      u'j',      u'k',      u'l',      u'm',      u'n',      u'o',       // 0x68
    u'p',      u'q',      u'r',      u's',      u't',      u'u',      u'v',      u'w',       // 0x70
    u'x',      u'y',      u'z',      u'\u00E4', u'\u00F6', u'\u00F1', u'\u00FC', u'\u00E0',  // 0x78
};

// The extension table: the septet after 0x1B, and its character.
struct Ext {
  std::uint8_t septet;
  char16_t cp;
};
constexpr std::array<Ext, 10> kGsmExtension = {{{0x0A, u'\f'},
                                                {0x14, u'^'},
                                                {0x28, u'{'},
                                                {0x29, u'}'},
                                                {0x2F, u'\\'},
                                                {0x3C, u'['},
                                                {0x3D, u'~'},
                                                {0x3E, u']'},
                                                {0x40, u'|'},
                                                {0x65, u'\u20AC'}}};

constexpr std::uint8_t kEscape = 0x1B;
constexpr std::uint16_t kNone = 0xFFFF;
constexpr std::uint16_t kExtFlag = 0x100;

// Unicode below U+0100 -> septet, septet|kExtFlag, or kNone: the common case
// is one table load.
constexpr std::array<std::uint16_t, 256> makeLatinTable() {
  std::array<std::uint16_t, 256> t{};
  for (auto& v : t) v = kNone;
  for (std::size_t s = 0; s < kGsmDefault.size(); ++s)
    if (kGsmDefault[s] < 0x100) t[kGsmDefault[s]] = static_cast<std::uint16_t>(s);
  for (const Ext& e : kGsmExtension)
    if (e.cp < 0x100) t[e.cp] = static_cast<std::uint16_t>(e.septet | kExtFlag);
  return t;
}
constexpr std::array<std::uint16_t, 256> kLatin = makeLatinTable();

// Code point -> septet (| kExtFlag for the extension table), or kNone.
std::uint16_t gsmSeptet(char32_t cp) noexcept {
  if (cp < 0x100) return kLatin[cp];
  if (cp == 0x20AC) return 0x65 | kExtFlag;
  if (cp >= 0x393 && cp <= 0x3A9) {  // the Greek capitals the default alphabet has
    for (std::size_t s = 0x10; s <= 0x1A; ++s)
      if (kGsmDefault[s] == cp) return static_cast<std::uint16_t>(s);
  }
  return kNone;
}

std::size_t utf16Units(char32_t cp) noexcept { return cp > 0xFFFF ? 2 : 1; }

void appendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void appendUnit(std::string& out, std::uint16_t u) {
  out.push_back(static_cast<char>(u >> 8));
  out.push_back(static_cast<char>(u & 0xFF));
}

void appendCodePoint(std::string& out, TextCoding coding, char32_t cp) {
  if (coding == TextCoding::kGsm7) {
    const std::uint16_t s = gsmSeptet(cp);
    if (s & kExtFlag) out.push_back(static_cast<char>(kEscape));
    out.push_back(static_cast<char>(s & 0x7F));
  } else if (cp > 0xFFFF) {
    const char32_t v = cp - 0x10000;
    appendUnit(out, static_cast<std::uint16_t>(0xD800 | (v >> 10)));
    appendUnit(out, static_cast<std::uint16_t>(0xDC00 | (v & 0x3FF)));
  } else {
    appendUnit(out, static_cast<std::uint16_t>(cp));
  }
}

}  // namespace

std::size_t gsmCost(char32_t cp) noexcept {
  const std::uint16_t s = gsmSeptet(cp);
  return s == kNone ? 0 : (s & kExtFlag) ? 2 : 1;
}

std::size_t decodeUtf8(std::string_view s, std::size_t i, char32_t& cp) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const std::size_t left = s.size() - i;
  const unsigned char c = b(0);
  std::size_t n = 0;
  char32_t min = 0;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (left < n) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

SegmentCount countSegments(std::string_view utf8) noexcept {
  SegmentCount r;
  bool gsm = true;
  std::size_t septets = 0, gsm_parts = 1, gsm_fill = 0;
  std::size_t units = 0, ucs_parts = 1, ucs_fill = 0;
  for (std::size_t i = 0; i < utf8.size();) {
    char32_t cp = 0;
    const std::size_t n = decodeUtf8(utf8, i, cp);
    if (n == 0) {
      r.error = TextError::kInvalidUtf8;
      r.bad_offset = i;
      r.segments = 0;
      return r;
    }
    i += n;
    // Greedy filling of multi-part segments, for both codings at once: a
    // character that does not fit whole starts the next segment, so escape
    // and surrogate pairs are never split.
    if (gsm) {
      const std::size_t cost = gsmCost(cp);
      if (cost == 0) {
        gsm = false;
      } else {
        septets += cost;
        if (gsm_fill + cost > kGsmPart) ++gsm_parts, gsm_fill = 0;
        gsm_fill += cost;
      }
    }
    const std::size_t u = utf16Units(cp);
    units += u;
    if (ucs_fill + u > kUcs2Part) ++ucs_parts, ucs_fill = 0;
    ucs_fill += u;
  }
  if (gsm) {
    r.coding = TextCoding::kGsm7;
    r.units = septets;
    r.segments = septets <= kGsmSingle ? 1 : gsm_parts;
  } else {
    r.coding = TextCoding::kUcs2;
    r.units = units;
    r.segments = units <= kUcs2Single ? 1 : ucs_parts;
  }
  if (r.segments > kMaxSegments) r.error = TextError::kTooLong;
  return r;
}

TextError encodeText(std::string_view utf8, EncodedText& out, std::size_t* bad_offset) {
  out.count = 0;
  const SegmentCount c = countSegments(utf8);
  if (c.error != TextError::kNone) {
    if (bad_offset != nullptr) *bad_offset = c.bad_offset;
    return c.error;
  }
  out.coding = c.coding;
  if (out.segments.size() < c.segments) out.segments.resize(c.segments);
  for (std::size_t k = 0; k < c.segments; ++k) out.segments[k].clear();
  const bool gsm = c.coding == TextCoding::kGsm7;
  const std::size_t limit = c.segments == 1 ? (gsm ? kGsmSingle : kUcs2Single) : (gsm ? kGsmPart : kUcs2Part);
  std::size_t seg = 0, fill = 0;
  for (std::size_t i = 0; i < utf8.size();) {
    char32_t cp = 0;
    i += decodeUtf8(utf8, i, cp);  // valid: checked by countSegments
    const std::size_t cost = gsm ? gsmCost(cp) : utf16Units(cp);
    if (fill + cost > limit) ++seg, fill = 0;
    fill += cost;
    appendCodePoint(out.segments[seg], c.coding, cp);
  }
  out.count = c.segments;
  return TextError::kNone;
}

bool decodeText(TextCoding coding, std::string_view octets, std::string& utf8) {
  utf8.clear();
  if (coding == TextCoding::kGsm7) {
    for (std::size_t i = 0; i < octets.size(); ++i) {
      const auto s = static_cast<std::uint8_t>(octets[i]);
      if (s > 0x7F) return false;
      if (s != kEscape) {
        appendUtf8(utf8, kGsmDefault[s]);
        continue;
      }
      if (++i == octets.size()) return false;
      const auto e = static_cast<std::uint8_t>(octets[i]);
      bool found = false;
      for (const Ext& x : kGsmExtension)
        if (x.septet == e) appendUtf8(utf8, x.cp), found = true;
      if (!found) return false;
    }
    return true;
  }
  if (octets.size() % 2 != 0) return false;
  for (std::size_t i = 0; i < octets.size(); i += 2) {
    const auto unit = [&](std::size_t k) {
      return static_cast<char32_t>((static_cast<std::uint8_t>(octets[k]) << 8) |
                                   static_cast<std::uint8_t>(octets[k + 1]));
    };
    char32_t u = unit(i);
    if (u >= 0xDC00 && u <= 0xDFFF) return false;
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (i + 4 > octets.size()) return false;
      const char32_t lo = unit(i + 2);
      if (lo < 0xDC00 || lo > 0xDFFF) return false;
      u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
      i += 2;
    }
    appendUtf8(utf8, u);
  }
  return true;
}

const char* textErrorName(TextError e) noexcept {
  switch (e) {
    case TextError::kNone: return "none";
    case TextError::kInvalidUtf8: return "invalid_utf8";
    case TextError::kTooLong: return "too_long";
  }
  return "unknown";
}

}  // namespace pacer::smpp

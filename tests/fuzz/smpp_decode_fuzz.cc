// libFuzzer target for the SMPP decoder and framer (issue 14): any bytes,
// as one PDU and as a stream. Build with Clang:
//   cmake -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DPACER_BUILD_FUZZ=ON -DPACER_BUILD_BENCH=OFF
//   cmake --build build/fuzz --target smpp_decode_fuzz && build/fuzz/tests/fuzz/smpp_decode_fuzz -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <string>

#include "pacer/smpp/framer.h"
#include "pacer/smpp/pdu.h"
#include "pacer/smpp/receipt.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pacer::smpp::Pdu pdu;
  if (pacer::smpp::decode(data, size, pdu) == pacer::smpp::DecodeError::kNone) {
    // What decodes must encode again (or be refused with a typed error) and parse as a receipt.
    std::string out;
    (void)pacer::smpp::encode(pdu, out);
    (void)pacer::smpp::parseReceipt(pdu);
  }
  pacer::smpp::Framer framer;
  framer.append(data, size);
  std::string_view frame;
  while (framer.next(frame) == pacer::smpp::Framer::Next::kPdu) (void)pacer::smpp::decode(frame, pdu);
  return 0;
}

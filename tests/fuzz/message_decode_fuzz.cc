// libFuzzer target for the Kafka message contract: any key, headers and
// value decode to a usable message or to a reason, never a crash, and a
// decoded message is well-formed (usable id and campaign).
#include <cstdlib>

#include "fuzz_input.h"
#include "pacer/message.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pacer::fuzz::Input in(data, size);
  pacer::RawMessage raw;
  raw.position = pacer::Position{"t", static_cast<std::int32_t>(in.byte() % 8), static_cast<std::int64_t>(in.number(4))};
  const std::uint8_t flags = in.byte();
  if (flags & 1) raw.key = in.text();
  const int headers = in.byte() % 6;
  for (int i = 0; i < headers; ++i) {
    std::string name = (flags & 2) ? in.text(16) : (i % 2 ? "recipient" : "message-id");
    if (in.byte() & 1)
      raw.headers.emplace_back(std::move(name), in.text());
    else
      raw.headers.emplace_back(std::move(name), std::nullopt);
  }
  raw.value = in.rest();
  pacer::DecodeOptions options;
  options.max_message_bytes = (flags & 4) ? 64 : 1 << 20;
  const pacer::Decoded d = pacer::decodeMessage(std::move(raw), options);
  if (d.message) {
    if (!pacer::usableText(d.message->id) || !pacer::usableText(d.message->campaign)) std::abort();
  } else if (d.reason.empty()) {
    std::abort();  // a refusal always says why
  }
  return 0;
}

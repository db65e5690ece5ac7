// libFuzzer target for pacerd's configuration: any text as the YAML file
// loads or is refused with a ConfigError that says where, never another
// exception or a crash.
#include <cstdlib>
#include <string>

#include "pacer/config/pacerd_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pacer::config::Sources s;
  s.file = "fuzz.yaml";
  s.text = std::string(reinterpret_cast<const char*>(data), size);
  s.getenv = [](const char*) -> const char* { return nullptr; };
  try {
    (void)pacer::config::load(s);
  } catch (const pacer::config::ConfigError& e) {
    if (std::string(e.what()).empty()) std::abort();
  }
  return 0;
}

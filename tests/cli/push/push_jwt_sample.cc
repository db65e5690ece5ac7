// Prints a JWT made by pacer::push, for an independent verifier (PyJWT in
// push_jwt_test.sh):
//   push_jwt_sample apns <key.p8> <team_id> <key_id> <unix seconds>
//       the APNs provider token ApnsJwtCache sends at that time
//   push_jwt_sample fcm <service-account.json> <unix seconds>
//       the RS256 assertion of the token request OAuthTokenCache sends
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "pacer/push/credentials.h"

namespace {

std::string readFile(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw pacer::InvalidError(std::string("cannot read ") + path);
  return text.str();
}

pacer::WallTime at(const char* unix_seconds) { return pacer::WallTime{std::chrono::seconds(std::stoll(unix_seconds))}; }

}  // namespace

int main(int argc, char** argv) {
  using namespace pacer::push;
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "apns" && argc == 6) {
      ApnsJwtCache cache({argv[3], argv[4]}, EcPrivateKey::fromPem(readFile(argv[2]), "APNs key"));
      std::cout << cache.token(at(argv[5])) << "\n";
      return 0;
    }
    if (mode == "fcm" && argc == 4) {
      OAuthTokenCache cache(parseServiceAccount(readFile(argv[2])));
      const std::string body = cache.startFetch(at(argv[3])).body;
      std::cout << body.substr(body.find("&assertion=") + 11) << "\n";
      return 0;
    }
    std::cerr << "usage: push_jwt_sample apns <key.p8> <team_id> <key_id> <unix s>\n"
                 "       push_jwt_sample fcm <service-account.json> <unix s>\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "push_jwt_sample: " << e.what() << "\n";
    return 1;
  }
}

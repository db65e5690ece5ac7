// A Google service-account JSON file, read without ever echoing its values:
// nlohmann's parse errors quote the text they stopped at, which could be the
// private key, so they are not passed on.
#include "pacer/push/credentials.h"

namespace pacer::push {
namespace {

constexpr std::string_view kDefaultTokenUri = "https://oauth2.googleapis.com/token";

std::string field(const nlohmann::json& doc, const char* name, bool required) {
  const auto it = doc.find(name);
  if (it == doc.end()) {
    if (required) throw PushCredentialError(std::string("service account: no \"") + name + "\" field");
    return {};
  }
  if (!it->is_string() || it->get<std::string>().empty()) {
    throw PushCredentialError(std::string("service account: \"") + name + "\" must be a non-empty string");
  }
  return it->get<std::string>();
}

}  // namespace

ServiceAccount parseServiceAccount(std::string_view json_text) {
  const nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) throw PushCredentialError("service account: the file is not valid JSON");
  if (!doc.is_object()) throw PushCredentialError("service account: the file is not a JSON object");
  const auto type = doc.find("type");
  if (type != doc.end() && (!type->is_string() || type->get<std::string>() != "service_account")) {
    throw PushCredentialError("service account: \"type\" is not \"service_account\" (a user or other credential?)");
  }
  ServiceAccount account;
  account.client_email = field(doc, "client_email", true);
  account.private_key = field(doc, "private_key", true);
  account.project_id = field(doc, "project_id", true);
  account.token_uri = field(doc, "token_uri", false);
  if (account.token_uri.empty()) account.token_uri = kDefaultTokenUri;
  return account;
}

}  // namespace pacer::push

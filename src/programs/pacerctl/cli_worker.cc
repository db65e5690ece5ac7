// pacerctl worker status|drain|reload: a running pacerd through its admin
// listener (/readyz, POST /admin/drain, POST /admin/reload), with the token
// from PACER_ADMIN_TOKEN. A refused token says so, not "unreachable".
#include <curl/curl.h>
#include <fmt/format.h>

#include "cli_parts.h"

namespace pacer::control::cli {
namespace {

struct WorkerArgs {
  std::optional<std::string> admin;  // HOST:PORT of pacerd's admin listener
  int timeout_ms = 5000;
};

std::size_t collect(char* data, std::size_t size, std::size_t n, void* to) {
  static_cast<std::string*>(to)->append(data, size * n);
  return size * n;
}

}  // namespace

Answer call(const std::string& address, const std::string& path, bool post, const std::string& token, int timeout_ms) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw UnreachableError("cannot start an HTTP client (libcurl)");
  const std::string url = fmt::format("http://{}{}", address, path);
  Answer a;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &a.body);
  if (post) curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, "");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(nullptr, curl_slist_free_all);
  if (!token.empty()) {
    headers.reset(curl_slist_append(nullptr, fmt::format("Authorization: Bearer {}", token).c_str()));
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  }
  const CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK)
    throw UnreachableError(
        fmt::format("cannot reach pacerd's admin listener at {}: {}; check --admin (or "
                    "PACER_ADMIN) and that pacerd runs with admin.listen there",
                    address, curl_easy_strerror(rc)));
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &a.status);
  return a;
}

namespace {

std::string addressOf(const Session& s, const WorkerArgs& wa) {
  const std::string address = wa.admin ? *wa.admin : s.env.admin.value_or("127.0.0.1:9464");
  if (address.empty() || address.find('/') != std::string::npos || address.find(':') == std::string::npos)
    throw InvalidValueError(fmt::format("--admin '{}': give HOST:PORT of pacerd's admin listener", address));
  if (wa.timeout_ms < 1) throw InvalidValueError("--timeout-ms: must be at least 1");
  return address;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// POST /admin/<what>: 401 and 403 mean the token, not the worker.
void control(Session& s, const WorkerArgs& wa, const char* what) {
  const std::string address = addressOf(s, wa);
  const std::string token = s.env.admin_token.value_or("");
  const Answer a = call(address, fmt::format("/admin/{}", what), true, token, wa.timeout_ms);
  if (a.status == 401 || a.status == 403)
    throw UnauthorizedError(fmt::format("unauthorized: check PACER_ADMIN_TOKEN (pacerd at {} answered {}{})", address,
                                        a.status, token.empty() ? "; PACER_ADMIN_TOKEN is not set" : ""));
  if (a.status != 200)
    throw ControlError(ExitCode::kRefused,
                       fmt::format("pacerd at {} answered {}: {}", address, a.status, trimmed(a.body)),
                       ErrorKind::kRejected);
  if (s.json) return s.emit(Json{{"worker", address}, {"action", what}, {"status", a.status}});
  s.out << fmt::format("pacerd at {}: {}\n", address, trimmed(a.body));
}

// GET /readyz: ready or not, and why.
void status(Session& s, const WorkerArgs& wa) {
  const std::string address = addressOf(s, wa);
  const Answer a = call(address, "/readyz", false, "", wa.timeout_ms);
  if (s.json) return s.emit(Json{{"worker", address}, {"ready", a.status == 200}, {"detail", trimmed(a.body)}});
  s.out << fmt::format("pacerd at {}: {} ({})\n", address, a.status == 200 ? "ready" : "not ready", trimmed(a.body));
  if (a.status != 200)
    throw ControlError(ExitCode::kRefused, fmt::format("pacerd at {} is not ready", address), ErrorKind::kUnavailable);
}

}  // namespace

void addWorkerCommands(CLI::App& app, Session& s, Commands& commands) {
  auto wa = std::make_shared<WorkerArgs>();  // lives as long as the commands
  CLI::App* worker = app.add_subcommand("worker", "a running pacerd: readiness, drain, reload (its admin listener)");
  worker->require_subcommand(1);
  cli::optionalText(worker, "--admin", wa->admin,
                    "HOST:PORT of pacerd's admin listener (default: $PACER_ADMIN, else 127.0.0.1:9464)");
  worker->add_option("--timeout-ms", wa->timeout_ms, "wait this long for an answer")->capture_default_str();
  commands[worker->add_subcommand("status", "is it ready (GET /readyz)")] = [&s, wa] { status(s, *wa); };
  commands[worker->add_subcommand(
      "drain", "stop it as on SIGTERM: finish in-flight work, commit, exit (needs PACER_ADMIN_TOKEN)")] = [&s, wa] {
    control(s, *wa, "drain");
  };
  commands[worker->add_subcommand("reload", "re-read its configuration as on SIGHUP (needs PACER_ADMIN_TOKEN)")] =
      [&s, wa] { control(s, *wa, "reload"); };
}

}  // namespace pacer::control::cli

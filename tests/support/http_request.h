// One HTTP request through libcurl's easy interface, for integration tests
// that talk to a listener on loopback (link CURL::libcurl). Header-only.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <string>

namespace pacer::testing {

struct HttpAnswer {
  long status = 0;  // 0: no answer (refused, timed out)
  std::string body;
  double seconds = 0;  // from the call to the last byte
};

struct HttpAsk {
  std::string body;           // sent with POST (empty: an empty body)
  std::string authorization;  // the Authorization header's value; empty: none
  long timeout_ms = 3000;     // the whole request
  std::string host;           // the Host header; empty: from the URL
};

namespace detail {
inline std::size_t appendTo(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}
}  // namespace detail

// Sends `method` to `url` and waits for the answer (at most ask.timeout_ms).
inline HttpAnswer httpRequest(const std::string& method, const std::string& url, const HttpAsk& ask = {}) {
  HttpAnswer a;
  CURL* c = curl_easy_init();
  curl_slist* headers = nullptr;
  if (!ask.authorization.empty())
    headers = curl_slist_append(headers, ("Authorization: " + ask.authorization).c_str());
  if (!ask.host.empty()) headers = curl_slist_append(headers, ("Host: " + ask.host).c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, ask.body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(ask.body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, detail::appendTo);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ask.timeout_ms);
  const auto t0 = std::chrono::steady_clock::now();
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  return a;
}

}  // namespace pacer::testing

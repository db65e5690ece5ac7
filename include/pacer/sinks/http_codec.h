// What a provider protocol spoken over HTTP (APNs, FCM HTTP v1) adds to the
// HTTP sink: the request for each message, the meaning of each answer, and
// the credential it needs. The sink owns the transport (libcurl's multi
// handle, HTTP/2 streams, TLS); a codec owns the protocol and never does I/O.
// Thread-safety: called only from the sink's owner thread. `now` is the
// wall clock (the sink reads it; a codec never does), for credential
// lifetimes and HTTP-date Retry-After values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/message.h"
#include "pacer/sink.h"
#include "pacer/wall_time.h"

namespace pacer::sink {

// One request, reused from message to message (the sink keeps its buffers).
struct HttpRequest {
  std::string url;                   // absolute: scheme, host, port, path
  std::vector<std::string> headers;  // "Name: value"; values may be secret and are never logged
  std::string body;
  void clear() {
    url.clear();
    headers.clear();
    body.clear();
  }
};

// Reads one header of an answer by name (case-insensitive); empty when absent.
using HeaderLookup = std::function<std::string_view(const char* name)>;

class HttpCodec {
 public:
  virtual ~HttpCodec() = default;
  // Whether requests may go now (a usable credential). When false, `why`
  // says what is missing; the sink then takes no message, so messages wait
  // in the worker, and the codec's own request (below) still goes.
  virtual bool ready(WallTime now, std::string& why) = 0;
  // A request the codec needs for itself (an OAuth2 access token), when one
  // is due and none is in flight; false otherwise.
  virtual bool ownRequest(WallTime now, HttpRequest& out) = 0;
  // The answer to that request; status 0 for a transport error (`body` then says which).
  virtual void ownAnswer(int status, std::string_view body, WallTime now) = 0;
  // Fills `out` for message `m`. False when the message itself cannot go
  // (an unusable device token, a payload that is not a JSON object), with
  // `refused` saying why (kPermanent or kInvalidToken).
  virtual bool build(const Message& m, WallTime now, HttpRequest& out, SendResult& refused) = 0;
  // What an answer to `sent` means. `body` holds at most the first
  // kCodecBodyBytes. May change the codec's own state (a credential the
  // provider refused is renewed before the next request; `sent` says which
  // credential that request carried, so a late answer to an old one renews
  // nothing).
  virtual SendResult classify(int status, std::string_view body, const HeaderLookup& header, const HttpRequest& sent,
                              WallTime now) = 0;
};
using HttpCodecPtr = std::unique_ptr<HttpCodec>;

inline constexpr std::size_t kCodecBodyBytes = 16 * 1024;

}  // namespace pacer::sink

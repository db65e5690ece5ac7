// EventHub's insides, shared by event_hub.cc and the listener
// (admin_listener.cc), which suspends and resumes the streams' connections.
// Private to src/admin.
#pragma once

#include <microhttpd.h>

#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "pacer/admin/admin_server.h"

namespace pacer::admin {

struct EventHub::Impl {
  struct Stream {
    MHD_Connection* connection = nullptr;
    std::shared_ptr<const std::string> frame;  // being sent
    std::size_t offset = 0;
    std::uint64_t seq = 0;  // of `frame`; 0: the prelude
    bool suspended = false;
    bool console = false;  // asked by a console page (?client=console)
  };

  mutable std::mutex mutex;
  std::shared_ptr<const std::string> frame;
  std::uint64_t seq = 0;
  bool closed = false;
  std::list<Stream*> streams;
  std::size_t others = 0;  // streams not asked by a console page
  // Sent first on every stream: the client's reconnection delay.
  std::shared_ptr<const std::string> prelude = std::make_shared<const std::string>("retry: 3000\n\n");

  // A new stream for `c`, or null when closed, when `max` are open, or when
  // it is not a console's and `others_max` streams not of consoles are open
  // (the rest are kept for console pages).
  Stream* open(MHD_Connection* c, std::size_t max, bool console, std::size_t others_max) {
    std::lock_guard<std::mutex> lock(mutex);
    if (closed || streams.size() >= max || (!console && others >= others_max)) return nullptr;
    auto* s = new Stream{c, prelude, 0, 0, false, console};
    streams.push_back(s);
    if (!console) ++others;
    return s;
  }

  // libmicrohttpd asks for bytes of `s`: the rest of its frame, else the
  // newest frame, else nothing now (suspended until publish()).
  ssize_t read(Stream& s, char* buf, std::size_t max) {
    std::lock_guard<std::mutex> lock(mutex);
    if (closed) return MHD_CONTENT_READER_END_OF_STREAM;
    if (s.offset >= s.frame->size() && frame && s.seq != seq) {
      s.frame = frame;
      s.seq = seq;
      s.offset = 0;
    }
    if (s.offset < s.frame->size()) {
      const std::size_t n = std::min(max, s.frame->size() - s.offset);
      std::memcpy(buf, s.frame->data() + s.offset, n);
      s.offset += n;
      return static_cast<ssize_t>(n);
    }
    s.suspended = true;
    MHD_suspend_connection(s.connection);
    return 0;
  }

  void release(Stream* s) {
    std::lock_guard<std::mutex> lock(mutex);
    streams.remove(s);
    if (!s->console) --others;
    delete s;
  }

  // Every waiting stream goes on (to the new frame, or to its end when closed).
  void wakeAllLocked() {
    for (Stream* s : streams)
      if (s->suspended) {
        s->suspended = false;
        MHD_resume_connection(s->connection);
      }
  }

  void close() {
    std::lock_guard<std::mutex> lock(mutex);
    closed = true;
    wakeAllLocked();
  }
};

}  // namespace pacer::admin

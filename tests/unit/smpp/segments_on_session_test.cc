// A multi-segment message through a real EsmeSession on simulated time,
// driven the way the sink drives it: each message's next segment goes when
// SegmentTally::next() names one and the window has room. The SMSC is played
// by hand. Checks that a message's segment k+1 never goes before segment k
// was answered ESME_ROK, that other messages fill the window meanwhile, and
// that after any failure (error status, response timeout, lost connection,
// generic_nack) the retry sends only the missing segments, under the same
// concatenation reference, also on a new session.
#include <gtest/gtest.h>

#include <map>

#include "pacer/smpp/framer.h"
#include "pacer/smpp/session.h"
#include "pacer/smpp/submit.h"

namespace pacer::smpp {
namespace {

using namespace std::chrono_literals;

MonoTime at(Nanos t) { return monoAt(t); }

// One message as the sink holds it.
struct Message {
  std::vector<Pdu> pdus;
  std::size_t count = 0;
  SegmentTally tally;
};

// What the SMSC saw of one submit_sm.
struct Seen {
  std::uint32_t seq;
  int reference, total, part;  // from the UDH
};

class SmppSegmentsOnSessionTest : public ::testing::Test {
 protected:
  SmppSegmentsOnSessionTest() : session_(options()) {}

  static SessionOptions options() {
    SessionOptions o;
    o.system_id = "pacer";
    o.window = 4;
    o.response_timeout = 5s;
    return o;
  }

  // Builds message `m` of `segments` segments under `reference`, resuming
  // from `held` (per segment: the id the SMSC accepted it under, or empty).
  void build(int m, std::size_t segments, std::uint16_t reference, const std::vector<std::string>& held = {}) {
    Message& msg = messages_[m];
    EncodedText scratch;
    std::string reason;
    ASSERT_EQ(buildSubmits({}, "4915112345678", std::string(153 * segments - 10, 'a'), reference, scratch, msg.pdus,
                           msg.count, reason),
              BuildError::kNone);
    ASSERT_EQ(msg.count, segments);
    msg.tally.begin(segments);
    if (!held.empty()) msg.tally.restore(held);
  }

  void bind(Nanos t) {
    session_.reset();
    session_.start(at(t));
    const auto w = written();
    ASSERT_EQ(w.size(), 1u);
    feed(makeHeaderOnly(cmd::kBindTransceiverResp, w[0].sequence_number), t);
    ASSERT_EQ(session_.state(), SessionState::kBound);
  }

  // The sink's dispatch: every message, oldest first, sends its next
  // segment if it may and the window has room.
  void pump(Nanos t) {
    for (auto& [m, msg] : messages_) {
      const std::size_t k = msg.tally.next();
      if (k == SegmentTally::kNone || !session_.canSubmit()) continue;
      ASSERT_EQ(session_.submit(msg.pdus[k], static_cast<std::uint64_t>(m) << 8 | k, at(t)), EncodeError::kNone);
      msg.tally.sent(k);
    }
  }

  // The submit_sm the session wrote since the last call, as the SMSC sees them.
  std::vector<Pdu> written() {
    std::vector<Pdu> out;
    Framer f;
    f.append(session_.output());
    session_.consumeOutput(session_.output().size());
    std::string_view frame;
    while (f.next(frame) == Framer::Next::kPdu) {
      Pdu p;
      EXPECT_EQ(decode(frame, p), DecodeError::kNone);
      out.push_back(p);
    }
    return out;
  }
  std::vector<Seen> submits() {
    std::vector<Seen> out;
    for (const Pdu& p : written()) {
      if (p.command_id != cmd::kSubmitSm) continue;
      const auto b = [&](std::size_t i) { return static_cast<int>(static_cast<unsigned char>(p.short_message[i])); };
      out.push_back({p.sequence_number, b(3), b(4), b(5)});
    }
    return out;
  }

  void feed(const Pdu& p, Nanos t) {
    std::string wire;
    ASSERT_EQ(encode(p, wire), EncodeError::kNone);
    session_.onBytes(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size(), at(t));
    route();
  }
  void answer(const Seen& s, std::uint32_t status, Nanos t) {
    Pdu r = makeHeaderOnly(cmd::kSubmitSmResp, s.seq, status);
    if (status == 0) r.message_id = "r" + std::to_string(s.reference) + "p" + std::to_string(s.part);
    feed(r, t);
  }
  // kSubmitDone events to their message's tally, as the sink's segmentDone.
  void route() {
    for (const SessionEvent& e : session_.events()) {
      if (e.kind != SessionEvent::Kind::kSubmitDone) continue;
      messages_[static_cast<int>(e.tag >> 8)].tally.done(e.tag & 0xFF, e.outcome, e.status, e.message_id, e.reason);
    }
    session_.events().clear();
  }

  EsmeSession session_;
  std::map<int, Message> messages_;
};

TEST_F(SmppSegmentsOnSessionTest, ASegmentGoesOnlyAfterThePreviousWasAcceptedWhileOthersFillTheWindow) {
  bind(0s);
  build(1, 3, 7);
  build(2, 3, 8);
  pump(0s);
  auto s = submits();
  ASSERT_EQ(s.size(), 2u);  // one segment of each, though the window has room for four
  EXPECT_EQ(s[0].reference, 7);
  EXPECT_EQ(s[0].part, 1);
  EXPECT_EQ(s[1].reference, 8);
  EXPECT_EQ(s[1].part, 1);
  pump(1ms);
  EXPECT_TRUE(submits().empty());  // nothing more until an answer
  answer(s[0], 0, 2ms);
  pump(2ms);
  auto next = submits();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].reference, 7);
  EXPECT_EQ(next[0].part, 2);
}

TEST_F(SmppSegmentsOnSessionTest, SysErrOnSegmentTwoSendsNoSegmentThreeAndTheRetryOnlyTheRest) {
  bind(0s);
  build(1, 3, 9);
  pump(0s);
  auto s = submits();
  ASSERT_EQ(s.size(), 1u);
  answer(s[0], 0, 1ms);
  pump(1ms);
  s = submits();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].part, 2);
  answer(s[0], status::kSysErr, 2ms);
  pump(2ms);
  EXPECT_TRUE(submits().empty());  // segment 3 does not follow a failed segment 2
  Message& m = messages_[1];
  ASSERT_TRUE(m.tally.finished());
  ASSERT_TRUE(m.tally.resumable());
  const SendResult r = m.tally.result(1);
  EXPECT_EQ(r.outcome, SendOutcome::kFault);
  EXPECT_EQ(r.reason, "submit_sm_resp ESME_RSYSERR (segment 2/3); segment 1 of 3 accepted, id r9p1");

  // The worker's retry: the same reference, only segments 2 and 3, in turn.
  const std::vector<std::string> held = m.tally.acceptedIds();
  messages_.clear();
  build(1, 3, 9, held);
  pump(10ms);
  s = submits();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].reference, 9);
  EXPECT_EQ(s[0].part, 2);
  answer(s[0], 0, 11ms);
  pump(11ms);
  s = submits();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].reference, 9);
  EXPECT_EQ(s[0].part, 3);
  answer(s[0], 0, 12ms);
  ASSERT_TRUE(messages_[1].tally.finished());
  const SendResult done = messages_[1].tally.result(1);
  EXPECT_EQ(done.outcome, SendOutcome::kDelivered) << done.reason;
  EXPECT_EQ(done.provider_message_id, "r9p1");
}

// Segment 2 of 3 goes and then: no answer within response_timeout, the
// connection drops, or the SMSC answers generic_nack. Each is a fault; the
// retry (on a new session for the lost connection) sends segments 2 and 3
// only, with the first attempt's reference.
TEST_F(SmppSegmentsOnSessionTest, AfterATimeoutALostConnectionOrAGenericNackTheRetryResumes) {
  for (int how = 0; how < 3; ++how) {
    SCOPED_TRACE(how);
    messages_.clear();
    bind(0s);
    build(1, 3, 42);
    pump(0s);
    answer(submits().at(0), 0, 1ms);
    pump(1ms);
    const auto s = submits();
    ASSERT_EQ(s.size(), 1u);
    ASSERT_EQ(s[0].part, 2);
    if (how == 0) {
      session_.tick(at(1ms + 5s));
      route();
    } else if (how == 1) {
      session_.connectionLost("closed by the SMSC", at(2ms));
      route();
    } else {
      feed(makeHeaderOnly(cmd::kGenericNack, s[0].seq, status::kSysErr), 2ms);
    }
    Message& m = messages_[1];
    ASSERT_TRUE(m.tally.finished());
    EXPECT_EQ(m.tally.result(1).outcome, SendOutcome::kFault);
    ASSERT_TRUE(m.tally.resumable());
    const std::vector<std::string> held = m.tally.acceptedIds();
    EXPECT_EQ(held, (std::vector<std::string>{"r42p1", "", ""}));

    messages_.clear();
    bind(10s);  // a new session: after the lost connection, a reconnect
    build(1, 3, 42, held);
    std::vector<int> parts;
    for (Nanos t = 10s; !messages_[1].tally.finished(); t += 1ms) {
      pump(t);
      for (const Seen& x : submits()) {
        EXPECT_EQ(x.reference, 42);
        parts.push_back(x.part);
        answer(x, 0, t);
      }
    }
    EXPECT_EQ(parts, (std::vector<int>{2, 3}));
    EXPECT_EQ(messages_[1].tally.result(1).outcome, SendOutcome::kDelivered);
    EXPECT_EQ(messages_[1].tally.result(1).provider_message_id, "r42p1");
  }
}

// Many messages through a window of four with random answers: no segment is
// ever sent while an earlier one of its message is unanswered or failed, and
// the window stays full while there is work.
TEST_F(SmppSegmentsOnSessionTest, NoSegmentEverOvertakesAnUnacceptedOneOfItsMessage) {
  bind(0s);
  for (int m = 0; m < 40; ++m) build(m, 2 + static_cast<std::size_t>(m % 3), static_cast<std::uint16_t>(m));
  std::map<int, int> accepted_upto;  // reference -> highest part accepted, all before it accepted too
  std::vector<Seen> out;
  unsigned rng = 12345;
  Nanos t = 0s;
  for (int round = 0; round < 400; ++round, t += 1ms) {
    pump(t);
    for (const Seen& x : submits()) {
      EXPECT_EQ(x.part, accepted_upto[x.reference] + 1) << "message " << x.reference << " part " << x.part;
      out.push_back(x);
    }
    if (out.empty()) break;
    if (session_.canSubmit()) {  // room left: only because no message has a segment that may go
      for (auto& [m, msg] : messages_) EXPECT_EQ(msg.tally.next(), SegmentTally::kNone) << m;
    }
    const std::size_t pick = (rng = rng * 1103515245 + 12345) % out.size();
    const Seen x = out[pick];
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(pick));
    const bool fail = (rng >> 8) % 5 == 0;
    answer(x, fail ? status::kSysErr : 0, t);
    if (!fail) accepted_upto[x.reference] = x.part;
  }
  for (auto& [m, msg] : messages_) EXPECT_TRUE(msg.tally.finished()) << m;
}

}  // namespace
}  // namespace pacer::smpp

// The ESME session driven by hand: bytes in, bytes out, time as an argument.
#include "pacer/smpp/session.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "hex.h"

namespace pacer::smpp {
namespace {

using namespace std::chrono_literals;
using testing::hex;

MonoTime at(Nanos t) { return monoAt(t); }

// Plays the SMSC: reads what the session wrote, answers with PDUs.
class SmppSessionTest : public ::testing::Test {
 protected:
  SmppSessionTest() : session_(options()) {}

  static SessionOptions options() {
    SessionOptions o;
    o.system_id = "pacer";
    o.password = "secret";
    o.window = 2;
    o.enquire_link_interval = 30s;
    o.response_timeout = 5s;
    return o;
  }

  // Every PDU the session wrote since the last call.
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

  void feed(const Pdu& p, Nanos t) {
    std::string wire;
    ASSERT_EQ(encode(p, wire), EncodeError::kNone);
    session_.onBytes(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size(), at(t));
  }

  void bind(Nanos t = 0s) {
    session_.start(at(t));
    const auto w = written();
    ASSERT_EQ(w.size(), 1u);
    Pdu resp = makeHeaderOnly(cmd::kBindTransceiverResp, w[0].sequence_number);
    resp.system_id = "SMSC";
    feed(resp, t);
    ASSERT_EQ(session_.state(), SessionState::kBound);
    session_.events().clear();
  }

  std::uint32_t submit(std::uint64_t tag, Nanos t) {
    Pdu p;
    p.destination_addr = "123";
    p.short_message = "hi";
    EXPECT_EQ(session_.submit(p, tag, at(t)), EncodeError::kNone);
    return p.sequence_number;
  }

  Pdu submitResp(std::uint32_t seq, std::uint32_t st, std::string id) {
    Pdu r = makeHeaderOnly(cmd::kSubmitSmResp, seq, st);
    r.message_id = std::move(id);
    return r;
  }

  EsmeSession session_;
};

TEST_F(SmppSessionTest, BindsWithItsCredentials) {
  session_.start(at(0s));
  EXPECT_EQ(session_.state(), SessionState::kBinding);
  const auto w = written();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].command_id, cmd::kBindTransceiver);
  EXPECT_EQ(w[0].system_id, "pacer");
  EXPECT_EQ(w[0].password, "secret");
  EXPECT_EQ(w[0].interface_version, 0x34);
  EXPECT_FALSE(session_.canSubmit());
  feed(makeHeaderOnly(cmd::kBindTransceiverResp, w[0].sequence_number), 1s);
  EXPECT_EQ(session_.state(), SessionState::kBound);
  ASSERT_EQ(session_.events().size(), 1u);
  EXPECT_EQ(session_.events()[0].kind, SessionEvent::Kind::kBound);
}

TEST_F(SmppSessionTest, RefusedBindClosesWithTheStatus) {
  session_.start(at(0s));
  const auto w = written();
  feed(makeHeaderOnly(cmd::kBindTransceiverResp, w[0].sequence_number, 0x0E), 1s);
  EXPECT_EQ(session_.state(), SessionState::kClosed);
  ASSERT_EQ(session_.events().size(), 1u);
  EXPECT_EQ(session_.events()[0].kind, SessionEvent::Kind::kClosed);
  EXPECT_EQ(session_.events()[0].status, 0x0Eu);
  EXPECT_EQ(session_.events()[0].reason, "bind refused: ESME_RINVPASWD");
  EXPECT_EQ(session_.events()[0].reason.find("secret"), std::string::npos);
}

TEST_F(SmppSessionTest, UnansweredBindTimesOut) {
  session_.start(at(0s));
  session_.tick(at(4s));
  EXPECT_EQ(session_.state(), SessionState::kBinding);
  EXPECT_EQ(session_.nextDeadline(), at(5s));
  session_.tick(at(5s));
  EXPECT_EQ(session_.state(), SessionState::kClosed);
  EXPECT_EQ(session_.events().back().reason, "bind_transceiver response timeout");
}

TEST_F(SmppSessionTest, WindowLimitsOutstandingSubmitsAndAnswersSettleThem) {
  bind();
  EXPECT_EQ(session_.windowRoom(), 2u);
  const auto s1 = submit(11, 1s);
  const auto s2 = submit(12, 1s);
  EXPECT_NE(s1, s2);
  EXPECT_FALSE(session_.canSubmit());
  EXPECT_EQ(written().size(), 2u);
  feed(submitResp(s2, 0x58, ""), 2s);
  feed(submitResp(s1, 0, "m-1"), 2s);
  EXPECT_EQ(session_.windowRoom(), 2u);
  auto& ev = session_.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].tag, 12u);
  EXPECT_EQ(ev[0].outcome, SendOutcome::kThrottled);
  EXPECT_EQ(ev[0].reason, "submit_sm_resp ESME_RTHROTTLED");
  EXPECT_EQ(ev[1].tag, 11u);
  EXPECT_EQ(ev[1].outcome, SendOutcome::kDelivered);
  EXPECT_EQ(ev[1].message_id, "m-1");
}

TEST_F(SmppSessionTest, UnansweredSubmitBecomesAFaultAndItsLateAnswerIsIgnored) {
  bind();
  const auto s1 = submit(5, 1s);
  session_.tick(at(5s));
  EXPECT_TRUE(session_.events().empty());
  session_.tick(at(6s));
  ASSERT_EQ(session_.events().size(), 1u);
  EXPECT_EQ(session_.events()[0].outcome, SendOutcome::kFault);
  EXPECT_EQ(session_.events()[0].reason, "response timeout");
  EXPECT_EQ(session_.windowRoom(), 2u);
  session_.events().clear();
  // The link is probed at once ...
  auto w = written();
  ASSERT_EQ(w.size(), 2u);  // the submit, then the probe
  EXPECT_EQ(w[1].command_id, cmd::kEnquireLink);
  feed(makeHeaderOnly(cmd::kEnquireLinkResp, w[1].sequence_number), 6s);
  EXPECT_EQ(session_.state(), SessionState::kBound);  // ... and it answered: the session stays
  feed(submitResp(s1, 0, "late"), 7s);
  ASSERT_EQ(session_.events().size(), 1u);
  EXPECT_EQ(session_.events()[0].kind, SessionEvent::Kind::kProtocolError);
  EXPECT_EQ(session_.state(), SessionState::kBound);
}

TEST_F(SmppSessionTest, ProbeAfterASubmitTimeoutClosesADeadLink) {
  bind();
  submit(1, 0s);
  session_.tick(at(5s));  // the submit expires, the probe goes out
  session_.tick(at(9s));
  EXPECT_EQ(session_.state(), SessionState::kBound);
  session_.tick(at(10s));  // the probe expires: the link is dead
  EXPECT_EQ(session_.state(), SessionState::kClosed);
  EXPECT_EQ(session_.events().back().reason, "enquire_link response timeout");
}

TEST_F(SmppSessionTest, EnquireLinkWhenQuietAndClosesWhenUnanswered) {
  bind(0s);
  written();
  submit(1, 0s);
  written();
  feed(submitResp(1 + 1, 0, "x"), 1s);  // seq 1 was the bind; the submit got 2
  session_.events().clear();
  EXPECT_EQ(session_.nextDeadline(), at(31s));
  session_.tick(at(30s));
  EXPECT_TRUE(written().empty());
  session_.tick(at(31s));
  auto w = written();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].command_id, cmd::kEnquireLink);
  const auto s = submit(9, 32s);
  session_.tick(at(36s));
  EXPECT_EQ(session_.state(), SessionState::kClosed);
  auto& ev = session_.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, SessionEvent::Kind::kSubmitDone);
  EXPECT_EQ(ev[0].tag, 9u);
  EXPECT_EQ(ev[0].outcome, SendOutcome::kFault);
  EXPECT_EQ(ev[1].kind, SessionEvent::Kind::kClosed);
  EXPECT_EQ(ev[1].reason, "enquire_link response timeout");
  (void)s;
}

TEST_F(SmppSessionTest, AnsweredEnquireLinkKeepsTheSession) {
  bind(0s);
  session_.tick(at(30s));
  auto w = written();
  ASSERT_EQ(w.size(), 1u);
  feed(makeHeaderOnly(cmd::kEnquireLinkResp, w[0].sequence_number), 31s);
  session_.tick(at(40s));
  EXPECT_EQ(session_.state(), SessionState::kBound);
  EXPECT_EQ(session_.nextDeadline(), at(61s));
}

TEST_F(SmppSessionTest, AnswersSmscRequests) {
  bind();
  feed(makeHeaderOnly(cmd::kEnquireLink, 500), 1s);
  Pdu dlr;
  dlr.command_id = cmd::kDeliverSm;
  dlr.sequence_number = 501;
  dlr.esm_class = kEsmClassReceipt;
  dlr.short_message = "id:m-1 sub:001 dlvrd:001 submit date:2611241530 done date:2611241531 stat:DELIVRD err:000";
  feed(dlr, 1s);
  dlr.esm_class = 0;  // a mobile-originated message: answered, not a receipt
  dlr.sequence_number = 502;
  feed(dlr, 1s);
  const std::string data_sm = hex("00000010 00000103 00000000 000001f7");  // data_sm seq 503: not handled, refused
  session_.onBytes(reinterpret_cast<const std::uint8_t*>(data_sm.data()), data_sm.size(), at(1s));
  // Everything is answered at once but the receipt, which waits for answerDeliver().
  const auto w = written();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].command_id, cmd::kEnquireLinkResp);
  EXPECT_EQ(w[0].sequence_number, 500u);
  EXPECT_EQ(w[1].command_id, cmd::kDeliverSmResp);
  EXPECT_EQ(w[1].sequence_number, 502u);
  EXPECT_EQ(w[1].command_status, 0u);
  EXPECT_EQ(w[2].command_id, cmd::kGenericNack);
  EXPECT_EQ(w[2].command_status, status::kInvCmdId);
  auto& ev = session_.events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].kind, SessionEvent::Kind::kReceipt);
  EXPECT_EQ(ev[0].receipt.message_id, "m-1");
  EXPECT_EQ(ev[0].receipt.status, ReceiptStatus::kDelivered);
  EXPECT_EQ(ev[0].sequence, 501u);
  EXPECT_EQ(ev[1].kind, SessionEvent::Kind::kMessage);
  EXPECT_EQ(ev[2].kind, SessionEvent::Kind::kProtocolError);
}

Pdu receiptPdu(std::uint32_t seq, const std::string& id) {
  Pdu dlr;
  dlr.command_id = cmd::kDeliverSm;
  dlr.sequence_number = seq;
  dlr.esm_class = kEsmClassReceipt;
  dlr.short_message =
      "id:" + id + " sub:001 dlvrd:001 submit date:2611241530 done date:2611241531 stat:DELIVRD err:000";
  return dlr;
}

// The SMSC forgets a receipt once it has its deliver_sm_resp: that answer
// must wait until the owner has the receipt in the ledger.
TEST_F(SmppSessionTest, AReceiptIsAnsweredOnlyWhenTheOwnerSaysItIsRecordedAndOnlyOnce) {
  bind();
  feed(receiptPdu(601, "m-1"), 1s);
  feed(receiptPdu(602, "m-2"), 1s);
  EXPECT_TRUE(written().empty()) << "no deliver_sm_resp before answerDeliver";
  session_.tick(at(20s));  // time alone answers nothing (the enquire_link is not due yet)
  EXPECT_TRUE(written().empty());
  ASSERT_EQ(session_.events().size(), 2u);
  EXPECT_EQ(session_.events()[1].sequence, 602u);
  EXPECT_EQ(session_.unansweredReceipts(), 2u);

  EXPECT_FALSE(session_.answerDeliver(999)) << "no such receipt";
  EXPECT_TRUE(written().empty());
  ASSERT_TRUE(session_.answerDeliver(602));  // out of order is fine
  auto w = written();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].command_id, cmd::kDeliverSmResp);
  EXPECT_EQ(w[0].sequence_number, 602u);
  EXPECT_EQ(w[0].command_status, status::kOk);
  EXPECT_FALSE(session_.answerDeliver(602)) << "answered once";
  EXPECT_TRUE(written().empty());
  EXPECT_EQ(session_.unansweredReceipts(), 1u);
  ASSERT_TRUE(session_.answerDeliver(601));
  w = written();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].sequence_number, 601u);
  EXPECT_EQ(session_.unansweredReceipts(), 0u);
}

TEST_F(SmppSessionTest, NonReceiptsAndReceiptsWithoutAnIdAreAnsweredAtOnce) {
  bind();
  Pdu mo;
  mo.command_id = cmd::kDeliverSm;
  mo.sequence_number = 700;
  mo.short_message = "a reply from a handset";
  feed(mo, 1s);
  Pdu no_id = receiptPdu(701, "x");
  no_id.short_message = "sub:001 dlvrd:001 stat:DELIVRD";  // nothing could ever match it
  feed(no_id, 1s);
  const auto w = written();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].command_id, cmd::kDeliverSmResp);
  EXPECT_EQ(w[0].sequence_number, 700u);
  EXPECT_EQ(w[1].command_id, cmd::kDeliverSmResp);
  EXPECT_EQ(w[1].sequence_number, 701u);
  EXPECT_EQ(session_.unansweredReceipts(), 0u);
  ASSERT_EQ(session_.events().size(), 2u);
  EXPECT_EQ(session_.events()[0].kind, SessionEvent::Kind::kMessage);
  EXPECT_EQ(session_.events()[1].kind, SessionEvent::Kind::kProtocolError);
}

// After the connection is gone the SMSC sends the receipt again on the next
// bind, under a sequence number of that session: the old one answers nothing.
TEST_F(SmppSessionTest, AReceiptOfAnEndedSessionIsNeverAnswered) {
  bind();
  feed(receiptPdu(5, "m-1"), 1s);
  session_.connectionLost("reset by peer", at(2s));
  EXPECT_FALSE(session_.answerDeliver(5));
  EXPECT_EQ(session_.unansweredReceipts(), 0u);
  session_.reset();
  bind(3s);
  EXPECT_FALSE(session_.answerDeliver(5)) << "5 belonged to the last session";
  EXPECT_TRUE(written().empty());
  feed(receiptPdu(5, "m-1"), 4s);  // the SMSC's own numbering may start over
  EXPECT_TRUE(written().empty());
  ASSERT_TRUE(session_.answerDeliver(5));
  const auto w = written();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].sequence_number, 5u);

  // An unbind from the SMSC ends the session too: its receipts stay unanswered.
  feed(receiptPdu(6, "m-2"), 5s);
  feed(makeHeaderOnly(cmd::kUnbind, 7), 5s);
  EXPECT_FALSE(session_.answerDeliver(6));
  const auto after = written();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].command_id, cmd::kUnbindResp);
}

// While our own unbind waits for its answer the session can still answer.
TEST_F(SmppSessionTest, AReceiptIsStillAnsweredWhileUnbinding) {
  bind();
  feed(receiptPdu(9, "m-1"), 1s);
  session_.unbind(at(2s));
  written();
  ASSERT_EQ(session_.state(), SessionState::kUnbinding);
  ASSERT_TRUE(session_.answerDeliver(9));
  const auto w = written();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].command_id, cmd::kDeliverSmResp);
}

TEST_F(SmppSessionTest, DeliverSmRespBytes) {
  bind();
  Pdu dlr;
  dlr.command_id = cmd::kDeliverSm;
  dlr.sequence_number = 0x1f5;
  feed(dlr, 1s);
  // length 17, deliver_sm_resp, ESME_ROK, the same sequence number, message_id "" (one NUL).
  EXPECT_EQ(testing::toHex(session_.output()), testing::toHex(hex("00000011 80000005 00000000 000001f5 00")));
}

TEST_F(SmppSessionTest, MalformedDeliverSmIsStillAnswered) {
  bind();
  // deliver_sm, seq 77, with a body cut after service_type.
  const std::string bad = hex("00000011 00000005 00000000 0000004d 00");
  session_.onBytes(reinterpret_cast<const std::uint8_t*>(bad.data()), bad.size(), at(1s));
  const auto w = written();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].command_id, cmd::kDeliverSmResp);
  EXPECT_EQ(w[0].sequence_number, 77u);
  EXPECT_EQ(w[0].command_status, status::kRxPAppn);
  EXPECT_EQ(session_.state(), SessionState::kBound);
}

TEST_F(SmppSessionTest, GenericNackFailsThatSubmit) {
  bind();
  const auto s = submit(3, 1s);
  feed(makeHeaderOnly(cmd::kGenericNack, s, status::kInvCmdLen), 2s);
  ASSERT_EQ(session_.events().size(), 1u);
  EXPECT_EQ(session_.events()[0].outcome, SendOutcome::kFault);
  EXPECT_EQ(session_.events()[0].reason, "generic_nack ESME_RINVCMDLEN for submit_sm");
}

TEST_F(SmppSessionTest, UnbindFromSmscAnswersAndFailsOutstanding) {
  bind();
  submit(1, 1s);
  submit(2, 1s);
  written();
  feed(makeHeaderOnly(cmd::kUnbind, 900), 2s);
  const auto w = written();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].command_id, cmd::kUnbindResp);
  EXPECT_EQ(w[0].sequence_number, 900u);
  EXPECT_EQ(session_.state(), SessionState::kClosed);
  auto& ev = session_.events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].outcome, SendOutcome::kFault);
  EXPECT_EQ(ev[1].outcome, SendOutcome::kFault);
  EXPECT_EQ(ev[2].kind, SessionEvent::Kind::kClosed);
  EXPECT_EQ(ev[2].reason, "unbind from SMSC");
}

TEST_F(SmppSessionTest, LostConnectionReturnsEveryOutstandingSubmit) {
  bind();
  submit(1, 1s);
  submit(2, 1s);
  session_.connectionLost("reset by peer", at(2s));
  auto& ev = session_.events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].reason, "connection lost: reset by peer");
  EXPECT_EQ(ev[0].outcome, SendOutcome::kFault);
  EXPECT_EQ(ev[0].tag + ev[1].tag, 3u);
  EXPECT_TRUE(session_.output().empty());
  session_.reset();
  EXPECT_EQ(session_.state(), SessionState::kIdle);
  EXPECT_EQ(session_.outstandingSubmits(), 0u);
}

TEST_F(SmppSessionTest, OwnUnbindEndsAfterUnbindResp) {
  bind();
  session_.unbind(at(1s));
  EXPECT_EQ(session_.state(), SessionState::kUnbinding);
  const auto w = written();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].command_id, cmd::kUnbind);
  feed(makeHeaderOnly(cmd::kUnbindResp, w[0].sequence_number), 2s);
  EXPECT_EQ(session_.state(), SessionState::kClosed);
}

TEST_F(SmppSessionTest, GarbageLengthClosesTheSession) {
  bind();
  const std::string bad = hex("ffffffff 00000004 00000000 00000001");
  session_.onBytes(reinterpret_cast<const std::uint8_t*>(bad.data()), bad.size(), at(1s));
  EXPECT_EQ(session_.state(), SessionState::kClosed);
  EXPECT_EQ(session_.events().back().reason, "framing error: bad command_length");
}

TEST(SmppReconnect, DelayDoublesUpToTheCapWithJitter) {
  EXPECT_EQ(reconnectDelay(0, 1s, 30s, 0.0), 500ms);
  EXPECT_EQ(reconnectDelay(0, 1s, 30s, 1.0), 1s);
  EXPECT_EQ(reconnectDelay(3, 1s, 30s, 1.0), 8s);
  EXPECT_EQ(reconnectDelay(10, 1s, 30s, 1.0), 30s);
  EXPECT_EQ(reconnectDelay(10, 1s, 30s, 0.0), 15s);
  EXPECT_EQ(reconnectDelay(200, 1s, 30s, 0.5), 22500ms);
}

}  // namespace
}  // namespace pacer::smpp

namespace pacer::smpp {
namespace {

// Random SMSC behaviour over simulated time: answers of every kind, in any
// order, late answers, generic_nacks, SMSC unbinds and dropped connections.
// Every submitted tag must come back exactly once, and the window must hold.
TEST(SmppSessionProperty, EverySubmitComesBackExactlyOnce) {
  std::mt19937 rng(1414);
  SessionOptions o;
  o.system_id = "p";
  o.window = 5;
  o.response_timeout = 3s;
  o.enquire_link_interval = 10s;
  EsmeSession s(o);
  std::map<std::uint64_t, int> returned;
  std::uint64_t next_tag = 1;
  std::vector<std::uint32_t> open_seqs;  // submits the "SMSC" has not answered
  Nanos t = 0s;
  auto feed = [&](const Pdu& p) {
    std::string wire;
    ASSERT_EQ(encode(p, wire), EncodeError::kNone);
    s.onBytes(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size(), monoAt(t));
  };
  auto drain = [&] {
    Framer f;
    f.append(s.output());
    s.consumeOutput(s.output().size());
    std::string_view frame;
    Pdu p;
    while (f.next(frame) == Framer::Next::kPdu) {
      ASSERT_EQ(decode(frame, p), DecodeError::kNone);
      if (p.command_id == cmd::kBindTransceiver) feed(makeHeaderOnly(cmd::kBindTransceiverResp, p.sequence_number));
      if (p.command_id == cmd::kSubmitSm) open_seqs.push_back(p.sequence_number);
      if (p.command_id == cmd::kEnquireLink) feed(makeHeaderOnly(cmd::kEnquireLinkResp, p.sequence_number));
    }
    for (const SessionEvent& e : s.events())
      if (e.kind == SessionEvent::Kind::kSubmitDone) ++returned[e.tag];
    s.events().clear();
  };
  for (int step = 0; step < 20000; ++step) {
    if (s.state() == SessionState::kIdle || s.state() == SessionState::kClosed) {
      s.reset();
      open_seqs.clear();
      s.start(monoAt(t));
    }
    const int action = static_cast<int>(rng() % 100);
    if (action < 40 && s.canSubmit()) {
      Pdu p;
      p.destination_addr = "1";
      ASSERT_EQ(s.submit(p, next_tag++, monoAt(t)), EncodeError::kNone);
    } else if (action < 75 && !open_seqs.empty()) {
      const std::size_t i = rng() % open_seqs.size();
      const std::uint32_t seq = open_seqs[i];
      open_seqs.erase(open_seqs.begin() + static_cast<long>(i));
      const std::uint32_t statuses[] = {0, 0, 0, 0x58, 0x14, 0x0B, 0x08};
      Pdu r = rng() % 10 == 0 ? makeHeaderOnly(cmd::kGenericNack, seq, 0x02)
                              : makeHeaderOnly(cmd::kSubmitSmResp, seq, statuses[rng() % 7]);
      if (r.command_id == cmd::kSubmitSmResp && r.command_status == 0) r.message_id = "id";
      feed(r);
    } else if (action < 77) {
      feed(makeHeaderOnly(cmd::kUnbind, 1000000 + static_cast<std::uint32_t>(step)));
    } else if (action < 79) {
      s.connectionLost("test", monoAt(t));
    } else {
      t += Nanos(static_cast<Nanos::rep>(rng() % 800) * 1000000);
      s.tick(monoAt(t));
    }
    ASSERT_LE(s.outstandingSubmits(), o.window);
    drain();
  }
  s.connectionLost("end", monoAt(t));
  drain();
  EXPECT_GT(next_tag, 3000u);  // the walk did submit a lot
  ASSERT_EQ(returned.size(), next_tag - 1);
  for (const auto& [tag, n] : returned) ASSERT_EQ(n, 1) << "tag " << tag;
}

// A random walk of receipts, answers from the owner (some for receipts of
// sessions already gone), lost connections and SMSC unbinds, with the SMSC
// numbering each session from 1 again. A deliver_sm_resp goes out exactly
// for the receipts answered on the session they came on, once each; the
// rest are left to the SMSC, which would send them again. (An old session's
// number that the new session has unanswered too cannot be told apart by
// the session: the sink never passes one on, by its connection serial, and
// integration.smpp checks that; here such an answer is not attempted.)
TEST(SmppSessionProperty, ReceiptsAreAnsweredOnceAndOnlyOnTheirOwnSession) {
  std::mt19937 rng(2718);
  SessionOptions o;
  o.system_id = "p";
  o.response_timeout = 3s;
  o.enquire_link_interval = 10s;
  EsmeSession s(o);
  Nanos t = 0s;
  int session_no = 0;
  std::uint32_t smsc_seq = 0;
  struct Got {
    int session;
    std::uint32_t seq;
  };
  std::vector<Got> got;                 // receipts reported, not yet handed to answerDeliver
  std::multiset<std::uint32_t> expect;  // answers the current session must write
  std::set<std::uint32_t> open_now;     // received on the current session, not answered
  std::size_t answered = 0, refused_stale = 0;
  auto feed = [&](const Pdu& p) {
    std::string wire;
    ASSERT_EQ(encode(p, wire), EncodeError::kNone);
    s.onBytes(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size(), monoAt(t));
  };
  auto drain = [&] {
    Framer f;
    f.append(s.output());
    s.consumeOutput(s.output().size());
    std::string_view frame;
    Pdu p;
    while (f.next(frame) == Framer::Next::kPdu) {
      ASSERT_EQ(decode(frame, p), DecodeError::kNone);
      if (p.command_id == cmd::kBindTransceiver) feed(makeHeaderOnly(cmd::kBindTransceiverResp, p.sequence_number));
      if (p.command_id == cmd::kEnquireLink) feed(makeHeaderOnly(cmd::kEnquireLinkResp, p.sequence_number));
      if (p.command_id == cmd::kDeliverSmResp) {
        auto it = expect.find(p.sequence_number);
        ASSERT_NE(it, expect.end()) << "deliver_sm_resp for " << p.sequence_number << " that nobody answered";
        expect.erase(it);
      }
    }
    ASSERT_TRUE(expect.empty()) << "an answered receipt was not written";
    for (const SessionEvent& e : s.events())
      if (e.kind == SessionEvent::Kind::kReceipt) {
        got.push_back({session_no, e.sequence});
        open_now.insert(e.sequence);
      }
    s.events().clear();
  };
  for (int step = 0; step < 20000; ++step) {
    if (s.state() == SessionState::kIdle || s.state() == SessionState::kClosed) {
      s.reset();
      s.start(monoAt(t));
      ++session_no;
      smsc_seq = 0;
      open_now.clear();
    }
    const int action = static_cast<int>(rng() % 100);
    if (action < 40 && s.state() == SessionState::kBound) {
      feed(receiptPdu(++smsc_seq, "m-" + std::to_string(step)));
    } else if (action < 80 && !got.empty()) {
      const std::size_t i = rng() % got.size();
      const Got g = got[i];
      got.erase(got.begin() + static_cast<long>(i));
      const bool live = g.session == session_no && s.state() == SessionState::kBound;
      const bool ambiguous = g.session != session_no && open_now.count(g.seq) > 0;  // the sink's serial stops it
      if (!ambiguous) {
        if (live) {
          expect.insert(g.seq);
          open_now.erase(g.seq);
        }
        const bool ok = s.answerDeliver(g.seq);
        ASSERT_EQ(ok, live) << "step " << step << " seq " << g.seq;
        answered += ok ? 1 : 0;
        refused_stale += ok ? 0 : 1;
      }
    } else if (action < 82) {
      feed(makeHeaderOnly(cmd::kUnbind, 1000000 + static_cast<std::uint32_t>(step)));
    } else if (action < 84) {
      s.connectionLost("test", monoAt(t));
    } else {
      t += Nanos(static_cast<Nanos::rep>(rng() % 800) * 1000000);
      s.tick(monoAt(t));
    }
    drain();
  }
  EXPECT_GT(answered, 2000u);
  EXPECT_GT(refused_stale, 50u);  // the walk did answer receipts of ended sessions
}

}  // namespace
}  // namespace pacer::smpp

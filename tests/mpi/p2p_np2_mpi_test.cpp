// Point-to-point on 2 ranks (the pipeline's stage-to-stage traffic): messages
// of several sizes arrive bit-exact in both directions and across the split
// into pieces, two ranks exchanging large messages in opposite directions at
// once complete, counters and records name the kind, bytes and peer, and bad
// peers are refused on the calling rank before anything is sent.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "mpi_test_harness.h"
#include "profiler/comm_tracer.h"

namespace hybrid::test {
namespace {

int other() { return 1 - rank(); }

// Bytes that differ by position, size and sender, so a piece landing at the
// wrong offset or a message from the wrong call cannot pass.
uint8_t pattern(size_t i, size_t bytes, int sender) {
  return uint8_t((i * 131 + bytes * 7 + size_t(sender) * 29 + (i >> 8)) & 0xff);
}

std::vector<uint8_t> message(size_t bytes, int sender) {
  std::vector<uint8_t> m(bytes);
  for (size_t i = 0; i < bytes; ++i) m[i] = pattern(i, bytes, sender);
  return m;
}

constexpr size_t kGuard = 16;  // bytes past the message that must stay untouched
constexpr uint8_t kFill = 0xA5;

// How many bytes of buf's message are wrong, plus any guard byte written.
size_t wrong_bytes(const std::vector<uint8_t>& buf, size_t bytes, int sender) {
  size_t bad = 0;
  for (size_t i = 0; i < bytes; ++i) bad += buf[i] != pattern(i, bytes, sender);
  for (size_t i = bytes; i < bytes + kGuard; ++i) bad += buf[i] != kFill;
  return bad;
}

// Rank `from` sends each size to the other rank with send(); the other recv()s.
void one_way(int from, const std::vector<size_t>& sizes) {
  for (size_t bytes : sizes) {
    if (rank() == from) {
      const auto m = message(bytes, from);
      comm().send(m.data(), bytes, other());
    } else {
      std::vector<uint8_t> buf(bytes + kGuard, kFill);
      comm().recv(buf.data(), bytes, from);
      EXPECT_EQ(wrong_bytes(buf, bytes, from), 0u) << bytes << " bytes from rank " << from;
    }
  }
}

TEST_F(MpiTest, SendRecvOfSeveralSizesArriveBitExact) {
  const std::vector<size_t> sizes = {0, 1, (size_t(1) << 20) + 3};
  one_way(0, sizes);
  one_way(1, sizes);
}

TEST_F(MpiTest, MessagesLongerThanOneChunkArriveBitExactInPieces) {
  comm().set_chunk_elements(4096);  // bytes per MPI call for point-to-point
  one_way(0, {4096, 4097, 3 * 4096 + 5});
  // Both directions at once, each side several pieces of different counts.
  const size_t mine = rank() == 0 ? 5 * 4096 + 1 : 2 * 4096 + 7;
  const size_t theirs = rank() == 0 ? 2 * 4096 + 7 : 5 * 4096 + 1;
  const auto m = message(mine, rank());
  std::vector<uint8_t> buf(theirs + kGuard, kFill);
  comm().send_recv(m.data(), mine, other(), buf.data(), theirs, other());
  EXPECT_EQ(wrong_bytes(buf, theirs, other()), 0u);
}

// Both ranks send first and receive second in the same call: with blocking
// sends beyond the eager limit each would wait for the other's receive. The
// watchdog turns a deadlock into a failure.
TEST_F(MpiTest, OppositeExchangeOfLargeMessagesCompletes) {
  for (size_t chunk : {size_t(INT_MAX), size_t(3) << 20}) {
    comm().set_chunk_elements(chunk);
    const size_t mine = (size_t(9) << 20) + size_t(rank()) * 1001;  // ≥ 8 MiB, sizes differ
    const size_t theirs = (size_t(9) << 20) + size_t(other()) * 1001;
    const auto m = message(mine, rank());
    std::vector<uint8_t> buf(theirs + kGuard, kFill);
    auto h = comm().send_recv_async(m.data(), mine, other(), buf.data(), theirs, other());
    h->wait();
    EXPECT_EQ(wrong_bytes(buf, theirs, other()), 0u) << "chunk " << chunk;
  }
}

// A side of 0 bytes sends nothing: the peer's plain recv or send matches the other side.
TEST_F(MpiTest, AZeroByteSideMakesSendRecvAPlainSendOrRecv) {
  RecordLog log;
  comm().set_observer(log.observer());
  const auto m = message(64, rank());
  std::vector<uint8_t> buf(64 + kGuard, kFill);
  if (rank() == 0) {
    comm().send_recv(m.data(), 64, 1, nullptr, 0, -1);  // src is not looked at
    comm().send_recv(nullptr, 0, 7, buf.data(), 64, 1);
  } else {
    comm().recv(buf.data(), 64, 0);
    comm().send(m.data(), 64, 0);
  }
  EXPECT_EQ(wrong_bytes(buf, 64, other()), 0u);
  const auto recs = log.snapshot();
  ASSERT_EQ(recs.size(), 2u);
  const CollectiveKind first = rank() == 0 ? CollectiveKind::send : CollectiveKind::recv;
  const CollectiveKind second = rank() == 0 ? CollectiveKind::recv : CollectiveKind::send;
  EXPECT_EQ(recs[0].kind, first);
  EXPECT_EQ(recs[1].kind, second);
}

TEST_F(MpiTest, CountersAndRecordsNameKindBytesPeerAndLink) {
  RecordLog log;
  profiler::CommTracer ct({}, nullptr, test_clock_ns);
  comm().reset_counters();
  comm().set_observer([&, to_log = log.observer()](const CommRecord& r) {
    to_log(r);
    ct.on_record(r);
  });
  // Rank 0 sends 100, receives 200, then exchanges 300 out for 400 in; rank 1 mirrors it.
  const size_t a = rank() == 0 ? 100 : 200, b = rank() == 0 ? 200 : 100;
  const size_t c = rank() == 0 ? 300 : 400, d = rank() == 0 ? 400 : 300;
  std::vector<uint8_t> out(1024, 1), in(1024, 0);
  if (rank() == 0) {
    comm().send(out.data(), a, 1);
    comm().recv(in.data(), b, 1);
  } else {
    comm().recv(in.data(), b, 0);
    comm().send(out.data(), a, 0);
  }
  comm().send_recv(out.data(), c, other(), in.data(), d, other());

  const auto k = comm().counters();
  using CK = CollectiveKind;
  EXPECT_EQ(k.calls[int(CK::send)], 2u);
  EXPECT_EQ(k.bytes[int(CK::send)], a + c);
  EXPECT_EQ(k.calls[int(CK::recv)], 2u);
  EXPECT_EQ(k.bytes[int(CK::recv)], b + d);
  EXPECT_EQ(k.total_bytes(), a + b + c + d);
  EXPECT_EQ(k.calls[int(CK::all_reduce)], 0u);

  const auto recs = log.snapshot();
  ASSERT_EQ(recs.size(), 4u);
  const CK kinds[] = {rank() == 0 ? CK::send : CK::recv, rank() == 0 ? CK::recv : CK::send,
                      CK::send, CK::recv};
  const uint64_t bytes[] = {rank() == 0 ? a : b, rank() == 0 ? b : a, c, d};
  const bool same_host = comm().placement().same_host(rank(), other());
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(recs[i].kind, kinds[i]) << i;
    EXPECT_EQ(recs[i].bytes, bytes[i]) << i;
    EXPECT_EQ(recs[i].peer, other()) << i;
    EXPECT_EQ(recs[i].world_size, 2) << i;
    EXPECT_EQ(recs[i].link,
              same_host ? profiler::LinkClass::intra_host : profiler::LinkClass::inter_host);
    EXPECT_LE(recs[i].issue_ns, recs[i].start_ns) << i;
    EXPECT_LE(recs[i].start_ns, recs[i].end_ns) << i;
  }
  // The send_recv's two records share its interval.
  EXPECT_EQ(recs[2].start_ns, recs[3].start_ns);
  EXPECT_EQ(recs[2].end_ns, recs[3].end_ns);

  // The tracer books them under their own names, bus bandwidth = algorithm bandwidth.
  int p2p_stats = 0;
  for (const auto& s : ct.stats()) {
    if (s.kind != CK::send && s.kind != CK::recv) continue;
    ++p2p_stats;
    EXPECT_DOUBLE_EQ(s.sum_busbw_gbps, s.sum_algbw_gbps) << profiler::collective_name(s.kind);
  }
  EXPECT_EQ(p2p_stats, 4);  // send and recv, two sizes each
  const std::string summary = ct.summary();
  EXPECT_NE(summary.find("send"), std::string::npos) << summary;
  EXPECT_NE(summary.find("recv"), std::string::npos) << summary;
}

TEST_F(MpiTest, ARecvOfMoreBytesThanSentFailsNamingBoth) {
  std::vector<uint8_t> buf(64, 0);
  if (rank() == 0) {
    comm().send(buf.data(), 10, 1);
  } else {
    try {
      comm().recv(buf.data(), 16, 0);
      ADD_FAILURE() << "a recv of 16 bytes matched a send of 10";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("10 bytes"), std::string::npos) << what;
      EXPECT_NE(what.find("16"), std::string::npos) << what;
    }
  }
}

// Refused at issue on the calling rank: nothing reaches MPI, so no rank waits.
TEST_F(MpiTest, BadPeersAreRefusedNamingThem) {
  std::vector<uint8_t> buf(8);
  auto message_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no std::invalid_argument)";
  };
  const std::string s = message_of([&] { comm().send(buf.data(), 8, 2); });
  EXPECT_NE(s.find("send: peer 2 is not a rank"), std::string::npos) << s;
  const std::string r = message_of([&] { comm().recv(buf.data(), 8, -1); });
  EXPECT_NE(r.find("recv: peer -1 is not a rank"), std::string::npos) << r;
  const std::string d =
      message_of([&] { comm().send_recv(buf.data(), 4, 5, buf.data() + 4, 4, 0); });
  EXPECT_NE(d.find("send_recv: dst 5"), std::string::npos) << d;
  const std::string c =
      message_of([&] { comm().send_recv(buf.data(), 4, 0, buf.data() + 4, 4, 9); });
  EXPECT_NE(c.find("send_recv: src 9"), std::string::npos) << c;
  EXPECT_THROW(comm().send_recv(buf.data(), 8, other(), buf.data() + 4, 4, other()),
               std::invalid_argument);  // overlapping buffers
  // A lone send or recv to itself could never be matched.
  EXPECT_THROW(comm().send(buf.data(), 8, rank()), std::logic_error);
  EXPECT_THROW(comm().recv(buf.data(), 8, rank()), std::logic_error);
}

TEST_F(MpiTest, SendRecvToItselfIsACopy) {
  const auto m = message(1000, rank());
  std::vector<uint8_t> buf(1000 + kGuard, kFill);
  comm().send_recv(m.data(), 1000, rank(), buf.data(), 1000, rank());
  EXPECT_EQ(wrong_bytes(buf, 1000, rank()), 0u);
}

}  // namespace
}  // namespace hybrid::test

int main(int argc, char** argv) { return hybrid::test::mpi_test_main(argc, argv, 240); }

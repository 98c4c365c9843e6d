// Point-to-point without MPI: the single-process communicator (its only peer is
// itself: send_recv is a copy, a lone send or recv is refused), the base
// class's defaults, and the pair's link class that records carry.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"

namespace hybrid::engine::comm {
namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(7 + 13 * i + (i >> 8));
  return v;
}

TEST(SingleCommunicatorP2p, SendRecvToItselfCopiesAndBooksASendAndARecv) {
  auto c = make_single_communicator();
  std::vector<CommRecord> seen;
  c->set_observer([&](const CommRecord& r) { seen.push_back(r); });
  const auto src = pattern(1000);
  std::vector<uint8_t> dst(1000 + 8, 0xEE);
  c->send_recv(src.data(), 1000, 0, dst.data(), 1000, 0);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
  for (size_t i = 1000; i < dst.size(); ++i) EXPECT_EQ(dst[i], 0xEE) << "written past the end";
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].kind, CollectiveKind::send);
  EXPECT_EQ(seen[1].kind, CollectiveKind::recv);
  for (const auto& r : seen) {
    EXPECT_EQ(r.bytes, 1000u);
    EXPECT_EQ(r.peer, 0);
    EXPECT_EQ(r.link, profiler::LinkClass::intra_host);
  }
  const auto k = c->counters();
  EXPECT_EQ(k.calls[int(CollectiveKind::send)], 1u);
  EXPECT_EQ(k.bytes[int(CollectiveKind::recv)], 1000u);
  EXPECT_EQ(k.total_bytes(), 2000u);
}

TEST(SingleCommunicatorP2p, ALoneSendOrRecvToItselfIsRefusedSayingWhy) {
  auto c = make_single_communicator();
  std::vector<uint8_t> buf(16);
  try {
    c->send(buf.data(), 16, 0);
    ADD_FAILURE() << "a lone send to itself was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot complete"), std::string::npos) << e.what();
  }
  EXPECT_THROW(c->recv(buf.data(), 16, 0), std::logic_error);
  // Different byte counts to itself cannot match either.
  EXPECT_THROW(c->send_recv(buf.data(), 8, 0, buf.data() + 8, 4, 0), std::invalid_argument);
  EXPECT_EQ(c->counters().total_bytes(), 0u);
}

TEST(SingleCommunicatorP2p, PeersOutOfRangeAreNamed) {
  auto c = make_single_communicator();
  std::vector<uint8_t> buf(16);
  try {
    c->send(buf.data(), 16, 1);
    ADD_FAILURE() << "peer 1 of a world of 1 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("send: peer 1 is not a rank"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(c->recv(buf.data(), 16, -1), std::invalid_argument);
  EXPECT_THROW(c->send_recv(buf.data(), 8, 3, buf.data() + 8, 8, 0), std::invalid_argument);
}

// A communicator without point-to-point: the defaults throw naming it.
class CollectivesOnly final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string name() const override { return "collectives-only"; }
  HandlePtr all_reduce_async(void*, size_t, DType, ReduceOp) override { return nullptr; }
  HandlePtr reduce_scatter_async(const void*, void*, const std::vector<size_t>&, DType,
                                 ReduceOp) override {
    return nullptr;
  }
  HandlePtr all_gather_async(const void*, void*, const std::vector<size_t>&, DType) override {
    return nullptr;
  }
  HandlePtr broadcast_async(void*, size_t, int) override { return nullptr; }
  HandlePtr barrier_async() override { return nullptr; }
  HandlePtr all_to_all_async(const void*, void*, size_t) override { return nullptr; }
};

TEST(CommunicatorP2p, DefaultsThrowNamingTheCommunicator) {
  CollectivesOnly c;
  uint8_t b[4] = {};
  for (auto call : {+[](Communicator&x, uint8_t*p) { x.send_async(p, 4, 0); },
                    +[](Communicator&x, uint8_t*p) { x.recv_async(p, 4, 0); },
                    +[](Communicator&x, uint8_t*p) { x.send_recv_async(p, 2, 0, p + 2, 2, 0); }}) {
    try {
      call(c, b);
      ADD_FAILURE() << "no exception";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("collectives-only"), std::string::npos) << e.what();
    }
  }
}

TEST(PlacementP2p, SameHostComparesTheTwoRanksHosts) {
  Placement p{{"a", "a", "b"}, {}};
  EXPECT_TRUE(p.same_host(0, 1));
  EXPECT_FALSE(p.same_host(1, 2));
  EXPECT_THROW(p.same_host(0, 3), std::out_of_range);
  EXPECT_TRUE(Placement{}.same_host(0, 5));  // no host named: one host
}

}  // namespace
}  // namespace hybrid::engine::comm

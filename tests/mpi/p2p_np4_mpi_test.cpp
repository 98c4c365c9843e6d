// Point-to-point on 4 ranks (oversubscribed on small machines: messages stay
// small): a chain of pipeline stages over the world, where the end stages'
// missing neighbour is a 0-byte side, and point-to-point inside split groups,
// where peers are group ranks and the records are the group's.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/comm/mpi_group_communicator.h"
#include "mpi_test_harness.h"

namespace hybrid::test {
namespace {

// Every element names its sender and its position.
std::vector<int32_t> payload(int sender, size_t n) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = sender * 1'000'000 + int32_t(i);
  return v;
}

size_t mismatches(const std::vector<int32_t>& got, int sender) {
  const auto want = payload(sender, got.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
  return bad;
}

// The pipeline's send_forward_recv_backward: stage r sends activations to r+1
// and receives gradients from r+1 while r+1 does the mirror image with r.
// Stage 0 has nothing to receive from before it, the last stage nothing to send on.
TEST_F(MpiTest, AChainOfStagesExchangesWithBothNeighbours) {
  constexpr size_t kN = 4099;
  const int next = rank() + 1, prev = rank() - 1;
  const bool last = next == world(), first = prev < 0;
  const auto act = payload(rank(), kN), grad = payload(100 + rank(), kN);
  std::vector<int32_t> act_in(kN, -1), grad_in(kN, -1);
  const size_t bytes = kN * sizeof(int32_t);
  // Forward: receive from prev and send to next in one call.
  comm().send_recv(act.data(), last ? 0 : bytes, next, act_in.data(), first ? 0 : bytes, prev);
  // Backward: gradients flow the other way.
  comm().send_recv(grad.data(), first ? 0 : bytes, prev, grad_in.data(), last ? 0 : bytes, next);
  if (!first) {
    EXPECT_EQ(mismatches(act_in, prev), 0u) << "activations from " << prev;
  } else {
    EXPECT_EQ(act_in[0], -1);  // nothing arrived where nothing was asked for
  }
  if (!last) {
    EXPECT_EQ(mismatches(grad_in, 100 + next), 0u) << "gradients from " << next;
  }
}

// Groups {0, 2} and {1, 3}: a rank's group rank is not its world rank, so a
// peer taken as a world rank would reach the wrong process (or none).
TEST_F(MpiTest, InsideAGroupPeersAreGroupRanks) {
  auto group = comm().split(rank() % 2, rank());
  auto* g = dynamic_cast<engine::comm::MpiGroupCommunicator*>(group.get());
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->world_size(), 2);
  EXPECT_EQ(g->rank(), rank() / 2);
  const int peer = 1 - g->rank();
  const int peer_world = g->world_ranks().at(size_t(peer));
  EXPECT_EQ(peer_world, rank() % 2 + 2 * peer);

  RecordLog log;
  g->set_observer(log.observer());
  const auto world_before = comm().counters();
  constexpr size_t kN = 777;
  const auto mine = payload(rank(), kN);
  std::vector<int32_t> got(kN, -1);
  // Plain send/recv: group rank 0 sends first, then the other way round.
  if (g->rank() == 0) {
    g->send(mine.data(), kN * 4, peer);
    g->recv(got.data(), kN * 4, peer);
  } else {
    g->recv(got.data(), kN * 4, peer);
    g->send(mine.data(), kN * 4, peer);
  }
  EXPECT_EQ(mismatches(got, peer_world), 0u);
  std::fill(got.begin(), got.end(), -1);
  g->send_recv(mine.data(), kN * 4, peer, got.data(), kN * 4, peer);
  EXPECT_EQ(mismatches(got, peer_world), 0u);

  // Booked by the group (peer = group rank), not by the world.
  const auto recs = log.snapshot();
  ASSERT_EQ(recs.size(), 4u);
  for (const auto& r : recs) {
    EXPECT_EQ(r.peer, peer);
    EXPECT_EQ(r.bytes, kN * 4);
  }
  EXPECT_EQ(g->counters().calls[int(CollectiveKind::send)], 2u);
  EXPECT_EQ(g->counters().calls[int(CollectiveKind::recv)], 2u);
  const auto world_after = comm().counters();
  EXPECT_EQ(world_after.calls[int(CollectiveKind::send)],
            world_before.calls[int(CollectiveKind::send)]);

  // Peer 2 exists in the world but not in a group of 2.
  std::vector<int32_t> buf(4);
  try {
    g->send(buf.data(), 16, 2);
    ADD_FAILURE() << "a send to group rank 2 of a group of 2 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("peer 2 is not a rank"), std::string::npos) << e.what();
  }
  g->set_observer({});
}

}  // namespace
}  // namespace hybrid::test

int main(int argc, char** argv) { return hybrid::test::mpi_test_main(argc, argv, 240); }

// The 1F1B schedule against its definition: every stage runs each micro-batch
// forward then backward once, inputs arrive before they are used, no more
// than min(p−s, m) activations are held, the stages' transfers pair up
// without deadlock even when every send waits for its receive (rendezvous),
// and the makespan with equal stage times gives the closed-form bubble
// (p−1)/(m+p−1). Partitions against DeepSpeed's uniform rule and a brute force.
#include "engine/parallel/pipeline_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace hybrid::engine {
namespace {

// A message across one stage boundary: (sender stage, receiver stage, forward?, micro).
using Message = std::tuple<int, int, bool, int>;

// What a step sends and receives.
void messages_of(const PipeStep& st, int s, std::vector<Message>& sends,
                 std::vector<Message>& recvs) {
  switch (st.kind) {
    case PipeStep::recv_forward:
      recvs.push_back({s - 1, s, true, st.micro});
      break;
    case PipeStep::send_forward:
      sends.push_back({s, s + 1, true, st.micro});
      break;
    case PipeStep::recv_backward:
      recvs.push_back({s + 1, s, false, st.micro});
      break;
    case PipeStep::send_backward:
      sends.push_back({s, s - 1, false, st.micro});
      break;
    case PipeStep::send_forward_recv_backward:
      sends.push_back({s, s + 1, true, st.micro});
      recvs.push_back({s + 1, s, false, st.other});
      break;
    case PipeStep::send_backward_recv_forward:
      sends.push_back({s, s - 1, false, st.micro});
      recvs.push_back({s - 1, s, true, st.other});
      break;
    default:
      break;
  }
}

// Runs every stage's schedule with rendezvous transfers (a message passes only
// while its sender and receiver both sit at the steps that carry it). Returns
// false on deadlock.
bool runs_without_deadlock(int p, int m) {
  std::vector<std::vector<PipeStep>> plan;
  for (int s = 0; s < p; ++s) plan.push_back(one_f_one_b(s, p, m));
  std::vector<size_t> at(size_t(p), 0);
  std::set<Message> delivered;
  auto pending = [&](int s, bool sends) {
    std::vector<Message> out, in;
    messages_of(plan[size_t(s)][at[size_t(s)]], s, out, in);
    auto& v = sends ? out : in;
    std::vector<Message> left;
    for (const auto& msg : v)
      if (!delivered.count(msg)) left.push_back(msg);
    return left;
  };
  for (;;) {
    bool moved = false, all_done = true;
    for (int s = 0; s < p; ++s) {
      if (at[size_t(s)] == plan[size_t(s)].size()) continue;
      all_done = false;
      for (const Message& msg : pending(s, true)) {
        const int to = std::get<1>(msg);
        if (to < 0 || to >= p) return false;  // a transfer to a stage that does not exist
        if (at[size_t(to)] == plan[size_t(to)].size()) continue;
        const auto want = pending(to, false);
        if (std::find(want.begin(), want.end(), msg) != want.end()) delivered.insert(msg);
      }
      if (pending(s, true).empty() && pending(s, false).empty()) {
        ++at[size_t(s)];
        moved = true;
      }
    }
    if (all_done) return true;
    if (!moved) return false;
  }
}

TEST(OneFOneB, EveryStageRunsEachMicroBatchOnceWithItsInputsFirst) {
  for (int p : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 3, 4, 8, 13}) {
      for (int s = 0; s < p; ++s) {
        const auto plan = one_f_one_b(s, p, m);
        std::map<int, int> fwd, bwd;
        std::set<std::pair<bool, int>> arrived;
        int held = 0, most = 0;
        for (const auto& st : plan) {
          std::vector<Message> out, in;
          messages_of(st, s, out, in);
          for (const auto& msg : in) arrived.insert({std::get<2>(msg), std::get<3>(msg)});
          if (st.kind == PipeStep::forward) {
            ++fwd[st.micro];
            if (s > 0) {
              EXPECT_TRUE(arrived.count({true, st.micro})) << s << " " << st.micro;
            }
            most = std::max(most, ++held);
          }
          if (st.kind == PipeStep::backward) {
            ++bwd[st.micro];
            EXPECT_EQ(fwd[st.micro], 1);
            if (s < p - 1) {
              EXPECT_TRUE(arrived.count({false, st.micro})) << s << " " << st.micro;
            }
            --held;
          }
        }
        ASSERT_EQ(int(fwd.size()), m);
        ASSERT_EQ(int(bwd.size()), m);
        for (int i = 0; i < m; ++i) EXPECT_EQ(fwd[i] + bwd[i], 2);
        EXPECT_EQ(most, in_flight_micro_batches(s, p, m)) << "p " << p << " m " << m << " s " << s;
      }
    }
}

TEST(OneFOneB, TransfersPairUpWithoutDeadlockUnderRendezvous) {
  for (int p : {1, 2, 3, 4, 5, 8})
    for (int m : {1, 2, 3, 4, 7, 8, 16}) EXPECT_TRUE(runs_without_deadlock(p, m)) << p << " " << m;
}

// Start times from the dependencies alone (transfers take no time): a stage runs
// its computations in schedule order, a forward after the previous stage's, a
// backward after the next stage's.
double makespan(int p, int m, double f, double b) {
  std::map<std::tuple<int, bool, int>, double> end;
  std::vector<std::vector<PipeStep>> plan;
  for (int s = 0; s < p; ++s) plan.push_back(one_f_one_b(s, p, m));
  std::vector<size_t> at(size_t(p), 0);
  std::vector<double> clock(size_t(p), 0.0);
  double last = 0.0;
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < p; ++s) {
      auto& i = at[size_t(s)];
      while (i < plan[size_t(s)].size()) {
        const PipeStep& st = plan[size_t(s)][i];
        if (st.kind != PipeStep::forward && st.kind != PipeStep::backward) {
          ++i;
          continue;
        }
        const bool fwd = st.kind == PipeStep::forward;
        double ready = clock[size_t(s)];
        const int dep = fwd ? s - 1 : s + 1;
        if (dep >= 0 && dep < p) {
          const auto it = end.find({dep, fwd, st.micro});
          if (it == end.end()) break;  // wait for the neighbour
          ready = std::max(ready, it->second);
        }
        clock[size_t(s)] = ready + (fwd ? f : b);
        end[{s, fwd, st.micro}] = clock[size_t(s)];
        last = std::max(last, clock[size_t(s)]);
        ++i;
        moved = true;
      }
    }
  }
  return last;
}

TEST(OneFOneB, BubbleMatchesTheClosedForm) {
  for (int p : {1, 2, 4, 8})
    for (int m : {1, 4, 8, 32})
      for (auto [f, b] : {std::pair{1.0, 1.0}, std::pair{1.0, 2.0}}) {
        const double total = makespan(p, m, f, b);
        const double busy = m * (f + b);
        EXPECT_NEAR((total - busy) / total, bubble_fraction(p, m), 1e-12)
            << "p " << p << " m " << m << " b/f " << b / f;
      }
}

TEST(OneFOneB, RejectsImpossibleArguments) {
  EXPECT_THROW(one_f_one_b(2, 2, 4), std::invalid_argument);
  EXPECT_THROW(one_f_one_b(0, 2, 0), std::invalid_argument);
}

TEST(PartitionBlocks, UniformGivesTheFirstStagesTheRemainder) {
  const auto parts = partition_blocks(10, 4, "uniform", 1, 0, 0);
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0].size(), 3);
  EXPECT_EQ(parts[1].size(), 3);
  EXPECT_EQ(parts[2].size(), 2);
  EXPECT_EQ(parts[3].size(), 2);
  EXPECT_EQ(parts[0].begin, 0);
  EXPECT_EQ(parts[3].end, 10);
  for (size_t s = 1; s < parts.size(); ++s) EXPECT_EQ(parts[s].begin, parts[s - 1].end);
}

// The least possible heaviest stage, by trying every split.
int64_t brute_force_heaviest(int n, int p, int64_t block, int64_t first, int64_t last) {
  int64_t best = INT64_MAX;
  std::vector<int> c(size_t(p), 1);
  std::function<void(int, int)> go = [&](int s, int left) {
    if (s == p - 1) {
      if (left < 1) return;
      c[size_t(s)] = left;
      int64_t worst = 0;
      for (int k = 0; k < p; ++k)
        worst =
            std::max(worst, c[size_t(k)] * block + (k == 0 ? first : 0) + (k == p - 1 ? last : 0));
      best = std::min(best, worst);
      return;
    }
    for (int x = 1; x <= left - (p - 1 - s); ++x) {
      c[size_t(s)] = x;
      go(s + 1, left - x);
    }
  };
  go(0, n);
  return best;
}

TEST(PartitionBlocks, ParametersMinimiseTheHeaviestStage) {
  for (auto [n, p, block, first, last] :
       {std::tuple{12, 2, 7, 39, 0}, std::tuple{12, 4, 7, 39, 1}, std::tuple{6, 3, 10, 0, 25},
        std::tuple{8, 8, 3, 100, 100}, std::tuple{9, 2, 5, 0, 0}}) {
    const auto parts = partition_blocks(n, p, "parameters", block, first, last);
    ASSERT_EQ(int(parts.size()), p);
    int64_t worst = 0;
    int covered = 0;
    for (int s = 0; s < p; ++s) {
      EXPECT_GE(parts[size_t(s)].size(), 1);
      EXPECT_EQ(parts[size_t(s)].begin, covered);
      covered = parts[size_t(s)].end;
      worst = std::max<int64_t>(
          worst, parts[size_t(s)].size() * block + (s == 0 ? first : 0) + (s == p - 1 ? last : 0));
    }
    EXPECT_EQ(covered, n);
    EXPECT_EQ(worst, brute_force_heaviest(n, p, block, first, last)) << n << " " << p;
  }
}

TEST(PartitionBlocks, ErrorsNameTheKey) {
  EXPECT_THAT([] { partition_blocks(2, 3, "uniform", 1, 0, 0); },
              testing::ThrowsMessage<std::invalid_argument>(testing::HasSubstr("pipeline.stages")));
  EXPECT_THAT(
      [] { partition_blocks(4, 2, "type:transformer", 1, 0, 0); },
      testing::ThrowsMessage<std::invalid_argument>(testing::HasSubstr("pipeline.partition")));
}

}  // namespace
}  // namespace hybrid::engine

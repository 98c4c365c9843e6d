#include "engine/parallel/pipeline_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace hybrid::engine {

namespace {

// DeepSpeed's partition_uniform: the first n % p stages take one block more.
std::vector<int> uniform_counts(int n, int p) {
  std::vector<int> counts(size_t(p), n / p);
  for (int s = 0; s < n % p; ++s) ++counts[size_t(s)];
  return counts;
}

// The counts (each at least 1, summing to n) that minimise the heaviest
// stage, a stage weighing its blocks plus its extra; ties go to earlier stages.
std::vector<int> balanced_counts(int n, int p, int64_t block, int64_t first, int64_t last) {
  auto extra = [&](int s) { return (s == 0 ? first : 0) + (s == p - 1 ? last : 0); };
  auto caps_for = [&](int64_t cap) {
    std::vector<int> c(static_cast<size_t>(p));
    for (int s = 0; s < p; ++s)
      c[size_t(s)] = int(std::min<int64_t>(n, std::max<int64_t>(0, (cap - extra(s)) / block)));
    return c;
  };
  auto fits = [&](int64_t cap) {
    int64_t total = 0;
    for (int c : caps_for(cap)) {
      if (c < 1) return false;
      total += c;
    }
    return total >= n;
  };
  int64_t lo = 0, hi = int64_t(n) * block + first + last;
  while (lo < hi) {  // the least cap that fits
    const int64_t mid = lo + (hi - lo) / 2;
    fits(mid) ? hi = mid : lo = mid + 1;
  }
  std::vector<int> counts = caps_for(lo);
  // Over-full: take blocks back from the last stages first, keeping one each.
  int surplus = -n;
  for (int c : counts) surplus += c;
  for (int s = p - 1; s >= 0 && surplus > 0; --s) {
    const int take = std::min(surplus, counts[size_t(s)] - 1);
    counts[size_t(s)] -= take;
    surplus -= take;
  }
  return counts;
}

}  // namespace

std::vector<StageBlocks> partition_blocks(int n_layer, int stages, const std::string& method,
                                          int64_t block_params, int64_t first_extra,
                                          int64_t last_extra) {
  if (stages < 1 || stages > n_layer)
    throw std::invalid_argument(
        fmt::format("pipeline.stages {}: each stage needs at least one of the model's {} blocks "
                    "(hybrid.model.n_layer)",
                    stages, n_layer));
  std::vector<int> counts;
  if (method == "uniform")
    counts = uniform_counts(n_layer, stages);
  else if (method == "parameters")
    counts = balanced_counts(n_layer, stages, std::max<int64_t>(block_params, 1), first_extra,
                             last_extra);
  else
    throw std::invalid_argument(
        fmt::format("pipeline.partition \"{}\": expected \"parameters\" or \"uniform\"", method));
  std::vector<StageBlocks> out;
  int begin = 0;
  for (int c : counts) {
    out.push_back({begin, begin + c});
    begin += c;
  }
  return out;
}

const char* pipe_step_name(PipeStep::Kind k) {
  switch (k) {
    case PipeStep::forward:
      return "forward";
    case PipeStep::backward:
      return "backward";
    case PipeStep::recv_forward:
      return "recv_forward";
    case PipeStep::send_forward:
      return "send_forward";
    case PipeStep::recv_backward:
      return "recv_backward";
    case PipeStep::send_backward:
      return "send_backward";
    case PipeStep::send_forward_recv_backward:
      return "send_forward_recv_backward";
    case PipeStep::send_backward_recv_forward:
      return "send_backward_recv_forward";
  }
  return "?";
}

std::vector<PipeStep> one_f_one_b(int stage, int stages, int micro_batches) {
  if (stages < 1 || stage < 0 || stage >= stages || micro_batches < 1)
    throw std::invalid_argument(fmt::format("one_f_one_b: stage {} of {} with {} micro-batches",
                                            stage, stages, micro_batches));
  const bool first = stage == 0, last = stage == stages - 1;
  std::vector<PipeStep> out;
  auto add = [&out](PipeStep::Kind k, int micro, int other = -1) {
    out.push_back({k, micro, other});
  };
  // A paired transfer loses the side whose neighbour does not exist.
  auto send_fwd_recv_bwd = [&](int send, int recv) {
    if (!last) add(PipeStep::send_forward_recv_backward, send, recv);
  };
  auto send_bwd_recv_fwd = [&](int send, int recv) {
    if (first) return;
    add(PipeStep::send_backward_recv_forward, send, recv);
  };
  const int warmup = std::min(stages - stage - 1, micro_batches);
  const int remaining = micro_batches - warmup;
  for (int i = 0; i < warmup; ++i) {
    if (!first) add(PipeStep::recv_forward, i);
    add(PipeStep::forward, i);
    if (!last) add(PipeStep::send_forward, i);
  }
  if (remaining > 0 && !first) add(PipeStep::recv_forward, warmup);
  for (int i = 0; i < remaining; ++i) {
    const int f = warmup + i;
    add(PipeStep::forward, f);
    send_fwd_recv_bwd(f, i);
    add(PipeStep::backward, i);
    if (i == remaining - 1) {
      if (!first) add(PipeStep::send_backward, i);
    } else {
      send_bwd_recv_fwd(i, f + 1);
    }
  }
  for (int i = remaining; i < micro_batches; ++i) {
    if (!last) add(PipeStep::recv_backward, i);
    add(PipeStep::backward, i);
    if (!first) add(PipeStep::send_backward, i);
  }
  return out;
}

}  // namespace hybrid::engine

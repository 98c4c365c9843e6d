// The synthetic Kineto trace of bench_import (bench/synthetic_kineto.h): one rank
// of a data-parallel GPT-2-like model (12 blocks), written as Kineto writes it
// (one indented object per event, µs timestamps with nanosecond fractions, ac2g
// flow events, deviceProperties, distributedInfo). What the importer meets in
// real traces, in realistic proportions:
// - ProfilerStep#N, forward scopes (user_annotation) nested model > block >
//   attn/mlp, cpu_ops around each launch, CPU-only ops the importer drops;
// - cuda_runtime launches with correlation ids; kernels on the compute stream 7,
//   ncclKernel_* all-reduces on stream 13 overlapping the backward, HtoD copies on
//   the copy stream 24, memsets, the DtoH copy of the loss;
// - the backward on the autograd thread inside autograd::engine::evaluate_function
//   ops; the optimizer's multi_tensor_apply kernels.
// Deterministic: a fixed LCG jitters the durations, so every run writes the same bytes.
#include "bench/synthetic_kineto.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/synthetic_kineto_ops.h"

namespace hybrid::bench {

namespace {

using synthetic_ops::attn_forward;
using synthetic_ops::block_backward;
using synthetic_ops::kAdam;
using synthetic_ops::kAllReduce;
using synthetic_ops::Launch;
using synthetic_ops::mlp_forward;
using synthetic_ops::Op;

constexpr int64_t kPid = 4242, kMainTid = 4242, kAutogradTid = 4301;
constexpr int64_t kComputeStream = 7, kCommStream = 13, kCopyStream = 24;
constexpr int kBlocks = 12;
constexpr int64_t kUs = 1000;

// Every byte goes to the .json and, when asked, to the .json.gz.
class Writer {
 public:
  Writer(const std::filesystem::path& json, const std::filesystem::path& gz) {
    json_ = std::fopen(json.c_str(), "wb");
    if (!json_) throw std::runtime_error("cannot write " + json.string());
    // Level 6, zlib's default (torch's gzip.open writes level 9: slower to write,
    // about as fast to read).
    if (!gz.empty() && !(gz_ = gzopen(gz.c_str(), "wb6"))) {
      std::fclose(json_);
      throw std::runtime_error("cannot write " + gz.string());
    }
  }
  ~Writer() {
    if (json_) std::fclose(json_);
    if (gz_) gzclose(gz_);
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  fmt::memory_buffer& out() { return buf_; }
  uint64_t bytes() const { return bytes_ + buf_.size(); }
  void flush_if_full() {
    if (buf_.size() >= (size_t(1) << 20)) flush();
  }
  void close() {
    flush();
    const bool json_ok = std::fclose(json_) == 0;
    const bool gz_ok = !gz_ || gzclose(gz_) == Z_OK;
    json_ = nullptr, gz_ = nullptr;
    const bool ok = json_ok && gz_ok;
    if (!ok) throw std::runtime_error("cannot finish writing the synthetic trace");
  }

 private:
  void flush() {
    if (buf_.size() == 0) return;
    if (std::fwrite(buf_.data(), 1, buf_.size(), json_) != buf_.size() ||
        (gz_ && gzwrite(gz_, buf_.data(), unsigned(buf_.size())) != int(buf_.size())))
      throw std::runtime_error("short write of the synthetic trace");
    bytes_ += buf_.size();
    buf_.clear();
  }

  std::FILE* json_ = nullptr;
  gzFile gz_ = nullptr;
  fmt::memory_buffer buf_;
  uint64_t bytes_ = 0;
};

// µs with a nanosecond fraction, as Kineto writes times: 1712195495505543.140
std::string us(int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

// The model's clocks and ids; writes the events of one step at a time.
class Model {
 public:
  explicit Model(Writer& w) : w_(w) {}

  void header();
  void footer();
  void step(int n);
  SyntheticTraceInfo& info() { return info_; }

 private:
  int64_t& clock(int64_t tid) { return tid == kMainTid ? main_ns_ : autograd_ns_; }
  int64_t jitter(int64_t max_ns) {
    seed_ = seed_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return int64_t((seed_ >> 33) % uint64_t(max_ns + 1));
  }
  template <typename... Args>
  void put(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(std::back_inserter(w_.out()), f, std::forward<Args>(args)...);
  }
  void begin_event() {
    if (info_.events++ > 0) put(",\n");
  }
  void x_event(std::string_view cat, std::string_view name, int64_t pid, int64_t tid, int64_t ts,
               int64_t dur);
  void end_event() {
    put("\n    }}\n  }}");
    w_.flush_if_full();
  }
  void flow(char ph, int64_t id, int64_t pid, int64_t tid, int64_t ts);
  void scope(std::string_view name, int64_t tid, int64_t start);
  void cpu_only(int64_t tid, std::string_view name, int64_t cpu_ns);
  void gpu_record(const Launch& l, int64_t stream, int64_t launch_ts, int64_t corr);
  void launch(int64_t tid, const Launch& l, int64_t stream);
  void op(int64_t tid, const Op& o, int64_t stream = kComputeStream);
  void autograd_op(const Op& o);
  void forward();
  void backward();
  void optimizer();

  Writer& w_;
  SyntheticTraceInfo info_;
  uint64_t seed_ = 0x5eed;
  int64_t main_ns_ = 1'712'195'495'000'000'000;  // unix-epoch ns, as Kineto's clock
  int64_t autograd_ns_ = 0;
  int64_t stream_free_[3] = {};  // compute, comm, copy: when each is idle again
  int64_t correlation_ = 100'000, external_id_ = 1;
};

int stream_slot(int64_t stream) {
  return stream == kComputeStream ? 0 : stream == kCommStream ? 1 : 2;
}

// An "X" event up to its first arg; the caller writes the others, then end_event().
void Model::x_event(std::string_view cat, std::string_view name, int64_t pid, int64_t tid,
                    int64_t ts, int64_t dur) {
  begin_event();
  put("  {{\n    \"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n"
      "    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {},",
      cat, name, pid, tid, us(ts), us(dur), external_id_++);
}

void Model::flow(char ph, int64_t id, int64_t pid, int64_t tid, int64_t ts) {
  begin_event();
  put("  {{\n    \"ph\": \"{}\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {},\n"
      "    \"cat\": \"ac2g\", \"name\": \"ac2g\"{}\n  }}",
      ph, id, pid, tid, us(ts), ph == 'f' ? ", \"bp\": \"e\"" : "");
}

// A user_annotation from `start` to the thread's clock now: written after its
// children, when its length is known (the importer sorts by time, as it must).
void Model::scope(std::string_view name, int64_t tid, int64_t start) {
  clock(tid) += 1 * kUs + jitter(500);
  x_event("user_annotation", name, kPid, tid, start, clock(tid) - start);
  put("\"Ev Idx\": {}", info_.events);
  end_event();
}

// An op that launches nothing (aten::empty, aten::view, ...): read and dropped.
void Model::cpu_only(int64_t tid, std::string_view name, int64_t cpu_ns) {
  const int64_t ts = clock(tid);
  clock(tid) += cpu_ns + jitter(cpu_ns / 4);
  x_event("cpu_op", name, kPid, tid, ts, clock(tid) - ts);
  put("\"Record function id\": 0, \"Ev Idx\": {}, \"Input Dims\": [[], [], [], [], []], "
      "\"Input type\": [\"ScalarList\", \"Scalar\", \"\", \"Device\", \"\"]",
      info_.events);
  end_event();
}

void Model::gpu_record(const Launch& l, int64_t stream, int64_t launch_ts, int64_t corr) {
  int64_t& free = stream_free_[stream_slot(stream)];
  int64_t start = std::max(free, launch_ts + 3 * kUs + jitter(2 * kUs));
  // A collective waits for the gradients it reduces (cudaStreamWaitEvent).
  if (stream == kCommStream) start = std::max(start, stream_free_[0]);
  const int64_t dur = int64_t(l.gpu_us) * kUs + jitter(int64_t(l.gpu_us) * 50);
  free = start + dur;
  x_event(l.category, l.kernel, 0, stream, start, dur);
  if (std::string_view(l.category) == "kernel")
    put("      \"queued\": 0, \"device\": 0, \"context\": 1,      \"stream\": {}, "
        "\"correlation\": {},      \"registers per thread\": 128,      \"shared memory\": "
        "49152,      \"blocks per SM\": 2.370370,      \"warps per SM\": 9.481481,      "
        "\"grid\": [24, 32, 1],      \"block\": [128, 1, 1],      "
        "\"est. achieved occupancy %\": 25",
        stream, corr);
  else
    put("      \"device\": 0, \"context\": 1,      \"stream\": {}, \"correlation\": {},      "
        "\"bytes\": {}, \"memory bandwidth (GB/s)\": {:.3f}",
        stream, corr, l.bytes, double(l.bytes) / double(dur));
  end_event();
  flow('f', corr, 0, stream, start);
  ++info_.gpu_records;
}

// cudaLaunchKernel (cudaMemcpyAsync, cudaMemsetAsync) and what it launched.
void Model::launch(int64_t tid, const Launch& l, int64_t stream) {
  const std::string_view category(l.category);
  const char* api = category == "kernel"       ? "cudaLaunchKernel"
                    : category == "gpu_memcpy" ? "cudaMemcpyAsync"
                                               : "cudaMemsetAsync";
  const int64_t ts = clock(tid), dur = 4 * kUs + jitter(3 * kUs), corr = correlation_++;
  x_event("cuda_runtime", api, kPid, tid, ts, dur);
  put("      \"cbid\": 211, \"correlation\": {}", corr);
  end_event();
  flow('s', corr, kPid, tid, ts);
  gpu_record(l, stream, ts, corr);
  clock(tid) += dur + 1 * kUs;
  ++info_.launches;
}

// A forward (or optimizer) op: the cpu_op, a CPU-only op inside it, its launches.
void Model::op(int64_t tid, const Op& o, int64_t stream) {
  const int64_t start = clock(tid);
  clock(tid) += 2 * kUs + jitter(kUs);
  cpu_only(tid, "aten::empty", 3 * kUs);
  for (const Launch& l : o.launches) launch(tid, l, stream);
  clock(tid) += 1 * kUs;
  x_event("cpu_op", o.name, kPid, tid, start, clock(tid) - start);
  put("\"Record function id\": 0, \"Sequence number\": {}, \"Fwd thread id\": 0, \"Ev Idx\": {}, "
      "\"Input Dims\": {}, \"Input type\": [\"float\", \"float\", \"float\"]",
      external_id_ % 4096, info_.events, o.dims);
  end_event();
}

// A backward op: evaluate_function > grad_fn > launches, then AccumulateGrad.
void Model::autograd_op(const Op& o) {
  const int64_t outer = autograd_ns_;
  autograd_ns_ += 3 * kUs;
  const int64_t inner = autograd_ns_;
  cpu_only(kAutogradTid, "aten::empty_like", 3 * kUs);
  for (const Launch& l : o.launches) launch(kAutogradTid, l, kComputeStream);
  autograd_ns_ += 1 * kUs;
  x_event("cpu_op", o.name, kPid, kAutogradTid, inner, autograd_ns_ - inner);
  put("\"Sequence number\": {}, \"Fwd thread id\": 1, \"Ev Idx\": {}, \"Input Dims\": {}",
      external_id_ % 4096, info_.events, o.dims);
  end_event();
  autograd_ns_ += 2 * kUs;
  x_event("cpu_op", std::string("autograd::engine::evaluate_function: ") + o.name, kPid,
          kAutogradTid, outer, autograd_ns_ - outer);
  put("\"Sequence number\": {}, \"Fwd thread id\": 1, \"Ev Idx\": {}", external_id_ % 4096,
      info_.events);
  end_event();
  cpu_only(kAutogradTid, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
           8 * kUs);
}

void Model::forward() {
  const int64_t model_start = main_ns_;
  for (int b = 0; b < kBlocks; ++b) {
    const int64_t block_start = main_ns_;
    for (const bool attn : {true, false}) {
      const int64_t start = main_ns_;
      for (const Op& o : attn ? attn_forward() : mlp_forward()) op(kMainTid, o);
      scope(fmt::format("transformer.h.{}.{}", b, attn ? "attn" : "mlp"), kMainTid, start);
    }
    scope(fmt::format("transformer.h.{}", b), kMainTid, block_start);
  }
  scope("GPT2.forward", kMainTid, model_start);
}

// On the autograd thread, blocks in reverse; each block's gradients all-reduced
// (one DDP bucket per block) on the comm stream while the next block computes.
void Model::backward() {
  autograd_ns_ = main_ns_ + 20 * kUs;
  const Op all_reduce{"record_param_comms", "[[7087872]]", {{kAllReduce, 380}}};
  for (int b = kBlocks - 1; b >= 0; --b) {
    for (const Op& o : block_backward()) autograd_op(o);
    const int64_t start = autograd_ns_;
    op(kAutogradTid, all_reduce, kCommStream);
    scope("nccl:all_reduce", kAutogradTid, start);
  }
  main_ns_ = autograd_ns_ + 10 * kUs;  // loss.backward() returns
}

void Model::optimizer() {
  const int64_t start = main_ns_;
  const Op adam{"aten::_fused_adamw_", "[[148], [148], [148], [148], [], []]", {{kAdam, 85}}};
  for (int k = 0; k < 6; ++k) op(kMainTid, adam);
  scope("Optimizer.step#AdamW.step", kMainTid, start);
}

void Model::step(int n) {
  const int64_t start = main_ns_;
  const Op h2d{"aten::copy_",
               "[[8, 1024], [8, 1024], []]",
               {{"Memcpy HtoD (Pinned -> Device)", 6, "gpu_memcpy", 65536}}};
  for (int k = 0; k < 2; ++k) op(kMainTid, h2d, kCopyStream);  // input ids and targets
  const int64_t zero = main_ns_;
  const Op memset{"aten::zero_", "[[7087872]]", {{"Memset (Device)", 12, "gpu_memset", 28351488}}};
  for (int k = 0; k < 4; ++k) op(kMainTid, memset);
  scope("Optimizer.zero_grad#AdamW.zero_grad", kMainTid, zero);
  forward();
  backward();
  optimizer();
  // loss.item(): a DtoH copy, then the CPU waits for the GPU.
  op(kMainTid, {"aten::_local_scalar_dense",
                "[[]]",
                {{"Memcpy DtoH (Device -> Pageable)", 2, "gpu_memcpy", 4}}});
  const int64_t idle = *std::max_element(std::begin(stream_free_), std::end(stream_free_));
  main_ns_ = std::max(main_ns_, idle) + 5 * kUs;
  scope(fmt::format("ProfilerStep#{}", n), kMainTid, start);
  ++info_.steps;
}

void Model::header() {
  put("{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
  for (int d = 0; d < 8; ++d)
    put("    {{\n      \"id\": {}, \"name\": \"NVIDIA H100 80GB HBM3\", "
        "\"totalGlobalMem\": 84934656000,\n      \"computeMajor\": 9, \"computeMinor\": 0,\n"
        "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
        "      \"regsPerBlock\": 65536, \"warpSize\": 32,\n"
        "      \"sharedMemPerBlock\": 49152, \"numSms\": 132\n    }}{}\n",
        d, d < 7 ? "," : "");
  put("  ],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8, "
      "\"pg_count\": 1, \"pg_config\": [{{\"pg_name\": \"0\", \"uid\": 0, \"backend_config\": "
      "\"cuda:nccl\", \"pg_size\": 8, \"ranks\": [0, 1, 2, 3, 4, 5, 6, 7]}}], \"nccl_version\": "
      "\"2.20.5\"}},\n  \"record_shapes\": 1,\n  \"with_stack\": 0,\n  \"traceEvents\": [\n");
  const char* const metadata[][3] = {{"process_name", "0", "python"},
                                     {"thread_name", "4242", "thread 4242 (python)"},
                                     {"thread_name", "4301", "thread 4301 (autograd)"}};
  for (const auto& m : metadata) {
    begin_event();
    put("  {{\n    \"name\": \"{}\", \"ph\": \"M\", \"ts\": {}, \"pid\": {}, \"tid\": {},\n"
        "    \"args\": {{\n      \"name\": \"{}\"\n    }}\n  }}",
        m[0], us(main_ns_), kPid, m[1], m[2]);
  }
}

void Model::footer() {
  put("\n  ],\n  \"traceName\": \"synthetic_rank-0.json\",\n  \"displayTimeUnit\": \"ms\"\n}}\n");
}

}  // namespace

SyntheticTraceInfo write_synthetic_kineto(const std::filesystem::path& json,
                                          const std::filesystem::path& gz, uint64_t min_bytes) {
  Writer w(json, gz);
  Model m(w);
  m.header();
  for (int step = 1; w.bytes() < min_bytes; ++step) m.step(step);
  m.footer();
  w.close();
  SyntheticTraceInfo info = m.info();
  info.json_bytes = std::filesystem::file_size(json);
  info.gz_bytes = gz.empty() ? 0 : std::filesystem::file_size(gz);
  return info;
}

}  // namespace hybrid::bench

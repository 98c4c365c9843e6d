#include "engine/model/gpt2/llmc_checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "base/atomic_file.h"
#include "engine/data/data_file_error.h"
#include "kernels/dtype.h"

namespace hybrid::engine {

namespace {

constexpr size_t kHeaderInts = 256;
constexpr size_t kHeaderBytes = kHeaderInts * sizeof(int32_t);
constexpr size_t kChunk = size_t(1) << 20;  // elements per read/convert/write chunk

std::string shape_problem(int64_t maxT, int64_t V, int64_t Vp, int64_t L, int64_t NH, int64_t C) {
  if (maxT <= 0 || V <= 0 || Vp <= 0 || L <= 0 || NH <= 0 || C <= 0)
    return fmt::format(
        "non-positive dimension (max_seq_len {}, vocab_size {}, padded_vocab_size {}, "
        "num_layers {}, num_heads {}, channels {})",
        maxT, V, Vp, L, NH, C);
  if (Vp < V) return fmt::format("padded_vocab_size {} < vocab_size {}", Vp, V);
  if (C % NH != 0) return fmt::format("channels {} not divisible by num_heads {}", C, NH);
  return {};
}

// Parameter count in 128 bits: a corrupt header must not wrap around.
unsigned __int128 param_count(int64_t maxT, int64_t Vp, int64_t L, int64_t C) {
  using u128 = unsigned __int128;
  const u128 c = u128(C), l = u128(L);
  return u128(Vp) * c + u128(maxT) * c + l * (12 * c * c + 13 * c) + 2 * c;
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::array<size_t, kLlmcTensorCount> Gpt2Weights::tensor_sizes() const {
  const size_t maxT = size_t(max_seq_len), Vp = size_t(padded_vocab_size), L = size_t(num_layers),
               C = size_t(channels);
  return {Vp * C, maxT * C, L * C,         L * C,     L * 3 * C * C, L * 3 * C, L * C * C, L * C,
          L * C,  L * C,    L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C,     C,         C};
}

size_t Gpt2Weights::num_parameters() const {
  size_t n = 0;
  for (size_t s : tensor_sizes()) n += s;
  return n;
}

std::array<std::vector<float>*, kLlmcTensorCount> Gpt2Weights::tensors() {
  return {&wte,  &wpe,  &ln1w, &ln1b, &qkvw,    &qkvb,    &attprojw, &attprojb,
          &ln2w, &ln2b, &fcw,  &fcb,  &fcprojw, &fcprojb, &lnfw,     &lnfb};
}

std::array<const std::vector<float>*, kLlmcTensorCount> Gpt2Weights::tensors() const {
  return {&wte,  &wpe,  &ln1w, &ln1b, &qkvw,    &qkvb,    &attprojw, &attprojb,
          &ln2w, &ln2b, &fcw,  &fcb,  &fcprojw, &fcprojb, &lnfw,     &lnfb};
}

void Gpt2Weights::allocate() {
  if (auto p = shape_problem(max_seq_len, vocab_size, padded_vocab_size, num_layers, num_heads,
                             channels);
      !p.empty())
    throw std::invalid_argument("gpt2 weights: " + p);
  const auto sizes = tensor_sizes();
  auto ts = tensors();
  for (size_t i = 0; i < kLlmcTensorCount; ++i) ts[i]->assign(sizes[i], 0.0f);
}

void Gpt2Weights::validate() const {
  if (auto p = shape_problem(max_seq_len, vocab_size, padded_vocab_size, num_layers, num_heads,
                             channels);
      !p.empty())
    throw std::invalid_argument("gpt2 weights: " + p);
  const auto sizes = tensor_sizes();
  const auto ts = tensors();
  for (size_t i = 0; i < kLlmcTensorCount; ++i)
    if (ts[i]->size() != sizes[i])
      throw std::invalid_argument(
          fmt::format("gpt2 weights: {} has {} elements, the shape needs {}", tensor_names[i],
                      ts[i]->size(), sizes[i]));
}

namespace {

using Header = std::array<int32_t, kHeaderInts>;

// The header, its magic, version and shape checked.
Header read_header(const std::string& path, int fd, uint64_t file_bytes) {
  if (file_bytes < kHeaderBytes)
    throw DataFileError(
        fmt::format("{}: too small for an llm.c checkpoint ({} bytes; the header "
                    "alone is {} bytes)",
                    path, file_bytes, kHeaderBytes));
  Header h{};
  if (::pread(fd, h.data(), kHeaderBytes, 0) != ssize_t(kHeaderBytes))
    throw DataFileError(fmt::format("{}: cannot read the checkpoint header", path));
  if (h[0] != kLlmcCheckpointMagic)
    throw DataFileError(fmt::format("{}: bad magic {} (an llm.c GPT-2 checkpoint starts with {})",
                                    path, h[0], kLlmcCheckpointMagic));
  if (h[1] != kLlmcVersionFp32 && h[1] != kLlmcVersionBf16)
    throw DataFileError(
        fmt::format("{}: unsupported checkpoint version {} (supported: 3 = fp32, "
                    "5 = bf16)",
                    path, h[1]));
  if (auto p = shape_problem(h[2], h[3], h[7], h[4], h[5], h[6]); !p.empty())
    throw DataFileError(fmt::format("{}: inconsistent header: {}", path, p));
  return h;
}

// The parameters after the header must be exactly what the header's shape needs.
void check_payload(const std::string& path, const Header& h, size_t elem, uint64_t payload) {
  const unsigned __int128 expected = param_count(h[2], h[7], h[4], h[6]) * elem;
  const std::string shape = fmt::format("L={} C={} Vp={} maxT={} in {}", h[4], h[6], h[7], h[2],
                                        elem == 2 ? "bf16" : "fp32");
  // A double prints any 128-bit count; exact below 2^53, which covers real files.
  if (expected > payload)
    throw DataFileError(
        fmt::format("{}: truncated: the header ({}) needs {:.0f} bytes of "
                    "parameters, but only {} bytes follow it",
                    path, shape, double(expected), payload));
  if (expected < payload)
    throw DataFileError(
        fmt::format("{}: size mismatch: the header ({}) needs {} bytes of "
                    "parameters, but {} bytes follow it",
                    path, shape, uint64_t(expected), payload));
}

// Fills the allocated tensors in file order from elem-byte values (fp32 or bf16).
void read_tensors(const std::string& path, int fd, size_t elem, Gpt2Weights& w) {
  off_t offset = off_t(kHeaderBytes);
  std::vector<uint16_t> staging;
  auto read_exact = [&](void* dst, size_t bytes) {
    char* p = static_cast<char*>(dst);
    while (bytes > 0) {
      const ssize_t n = ::pread(fd, p, bytes, offset);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        throw DataFileError(fmt::format("{}: read failed at byte {}: {}", path, offset,
                                        n < 0 ? std::strerror(errno) : "unexpected end of file"));
      }
      p += n, bytes -= size_t(n), offset += n;
    }
  };
  for (auto* t : w.tensors()) {
    if (elem == 4) {
      read_exact(t->data(), t->size() * sizeof(float));
      continue;
    }
    for (size_t done = 0; done < t->size(); done += kChunk) {
      const size_t n = std::min(kChunk, t->size() - done);
      staging.resize(n);
      read_exact(staging.data(), n * sizeof(uint16_t));
      for (size_t i = 0; i < n; ++i) (*t)[done + i] = kernels::bf16_to_float({staging[i]});
    }
  }
}

}  // namespace

Gpt2Weights read_llmc_checkpoint(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0)
    throw DataFileError(fmt::format("{}: cannot open checkpoint: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw DataFileError(fmt::format("{}: not a regular file", path));
  const uint64_t file_bytes = uint64_t(st.st_size);
  const Header h = read_header(path, f.fd, file_bytes);
  Gpt2Weights w;
  w.max_seq_len = h[2], w.vocab_size = h[3], w.num_layers = h[4], w.num_heads = h[5];
  w.channels = h[6], w.padded_vocab_size = h[7];
  const size_t elem = h[1] == kLlmcVersionBf16 ? 2 : 4;
  check_payload(path, h, elem, file_bytes - kHeaderBytes);
  w.allocate();
  read_tensors(path, f.fd, elem, w);
  return w;
}

void write_llmc_checkpoint(const std::string& path, const Gpt2Weights& weights, int version) {
  if (version != kLlmcVersionFp32 && version != kLlmcVersionBf16)
    throw std::invalid_argument(fmt::format(
        "{}: cannot write checkpoint version {} (supported: 3 = fp32, 5 = bf16)", path, version));
  try {
    weights.validate();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", path, e.what()));
  }
  std::array<int32_t, kHeaderInts> h{};
  h[0] = kLlmcCheckpointMagic;
  h[1] = version;
  h[2] = weights.max_seq_len, h[3] = weights.vocab_size, h[4] = weights.num_layers;
  h[5] = weights.num_heads, h[6] = weights.channels, h[7] = weights.padded_vocab_size;
  base::AtomicFileWriter out(path);
  out.write(h.data(), kHeaderBytes);
  std::vector<uint16_t> staging;
  for (const auto* t : weights.tensors()) {
    if (version == kLlmcVersionFp32) {
      out.write(t->data(), t->size() * sizeof(float));
      continue;
    }
    for (size_t done = 0; done < t->size(); done += kChunk) {
      const size_t n = std::min(kChunk, t->size() - done);
      staging.resize(n);
      for (size_t i = 0; i < n; ++i) staging[i] = kernels::float_to_bf16((*t)[done + i]).bits;
      out.write(staging.data(), n * sizeof(uint16_t));
    }
  }
  out.commit();
}

Gpt2Weights gpt2_weights_for(const ModelConfig& m, int padded_vocab) {
  Gpt2Weights w;
  w.num_layers = m.n_layer;
  w.channels = m.n_embd;
  w.num_heads = m.n_head;
  w.vocab_size = m.vocab_size;
  w.padded_vocab_size = padded_vocab;
  w.max_seq_len = m.seq_len;
  w.allocate();
  return w;
}

ModelConfig gpt2_config_of(const Gpt2Weights& w) {
  ModelConfig m;
  m.type = "gpt2";
  m.n_layer = w.num_layers;
  m.n_embd = w.channels;
  m.n_head = w.num_heads;
  m.vocab_size = w.vocab_size;
  m.padded_vocab_size = w.padded_vocab_size;
  m.seq_len = w.max_seq_len;
  return m;
}

}  // namespace hybrid::engine

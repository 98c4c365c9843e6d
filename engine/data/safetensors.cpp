#include "engine/data/safetensors.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/json_read.h"
#include "engine/data/data_file_error.h"
#include "kernels/dtype.h"

namespace hybrid::engine {

namespace {

struct DTypeInfo {
  StDType type;
  std::string_view name;
  size_t bytes;
};
constexpr std::array<DTypeInfo, 15> kDTypes = {{{StDType::BOOL, "BOOL", 1},
                                                {StDType::U8, "U8", 1},
                                                {StDType::I8, "I8", 1},
                                                {StDType::I16, "I16", 2},
                                                {StDType::U16, "U16", 2},
                                                {StDType::F16, "F16", 2},
                                                {StDType::BF16, "BF16", 2},
                                                {StDType::I32, "I32", 4},
                                                {StDType::U32, "U32", 4},
                                                {StDType::F32, "F32", 4},
                                                {StDType::F64, "F64", 8},
                                                {StDType::I64, "I64", 8},
                                                {StDType::U64, "U64", 8},
                                                {StDType::F8_E4M3, "F8_E4M3", 1},
                                                {StDType::F8_E5M2, "F8_E5M2", 1}}};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw DataFileError(fmt::format("{}: {}", path, what));
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A non-negative integer of the header, or a named error.
uint64_t header_uint(const std::string& path, const std::string& name, const nlohmann::json& v,
                     const char* field) {
  if (!v.is_number_unsigned())
    fail(path, fmt::format("tensor '{}': {} holds {}, not a non-negative integer", name, field,
                           v.dump()));
  return v.get<uint64_t>();
}

StTensor parse_entry(const std::string& path, const std::string& name, const nlohmann::json& e) {
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    fail(path, fmt::format("tensor '{}': an entry needs dtype, shape and data_offsets, got {}",
                           name, e.dump()));
  StTensor t;
  t.name = name;
  const auto& dtype = e["dtype"];
  const std::string dt = dtype.is_string() ? dtype.get<std::string>() : dtype.dump();
  const auto* info = std::find_if(kDTypes.begin(), kDTypes.end(),
                                  [&](const DTypeInfo& d) { return d.name == dt; });
  if (info == kDTypes.end()) fail(path, fmt::format("tensor '{}': unknown dtype '{}'", name, dt));
  t.dtype = info->type;
  if (!e["shape"].is_array()) fail(path, fmt::format("tensor '{}': shape is not a list", name));
  uint64_t bytes = info->bytes;
  for (const auto& d : e["shape"]) {
    const uint64_t n = header_uint(path, name, d, "shape");
    if (n != 0 && bytes > UINT64_MAX / n)
      fail(path, fmt::format("tensor '{}': shape {} overflows", name, e["shape"].dump()));
    bytes *= n;
    t.shape.push_back(int64_t(std::min<uint64_t>(n, INT64_MAX)));
  }
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    fail(path, fmt::format("tensor '{}': data_offsets is not [begin, end]", name));
  t.begin = header_uint(path, name, off[0], "data_offsets");
  t.end = header_uint(path, name, off[1], "data_offsets");
  if (t.end < t.begin)
    fail(path, fmt::format("tensor '{}': data_offsets [{}, {}] end before they begin", name,
                           t.begin, t.end));
  if (t.end - t.begin != bytes)
    fail(path, fmt::format("tensor '{}': shape {} of {} is {} bytes, its data_offsets span {}",
                           name, shape_text(t.shape), dt, bytes, t.end - t.begin));
  return t;
}

// The little-endian u64 that opens the file: how many bytes of JSON header follow.
uint64_t read_header_length(const std::string& path, int fd, uint64_t file_bytes) {
  if (file_bytes < 8)
    fail(path, fmt::format("{} bytes: too short for a safetensors file (an 8-byte header "
                           "length comes first)",
                           file_bytes));
  uint8_t len_bytes[8];
  if (::pread(fd, len_bytes, 8, 0) != 8) fail(path, "cannot read the header length");
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | len_bytes[i];
  if (header_bytes > kSafetensorsMaxHeaderBytes)
    fail(path, fmt::format("header length {} is over the {} bytes a safetensors header may have",
                           header_bytes, kSafetensorsMaxHeaderBytes));
  if (header_bytes > file_bytes - 8)
    fail(path, fmt::format("header length {} runs past the end of the file ({} bytes; truncated?)",
                           header_bytes, file_bytes));
  return header_bytes;
}

// The header's tensor entries and its string-to-string __metadata__.
void read_header_entries(const std::string& path, const nlohmann::json& header,
                         std::vector<StTensor>& tensors,
                         std::map<std::string, std::string>& metadata) {
  if (!header.is_object()) fail(path, "the header is not a JSON object");
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(path, "__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) fail(path, fmt::format("__metadata__ '{}' is not a string", k));
        metadata[k] = v.get<std::string>();
      }
      continue;
    }
    tensors.push_back(parse_entry(path, name, entry));
  }
}

// Sorts the tensors by offset, checks that they lie inside the data and do not
// overlap, and returns name -> position.
std::map<std::string, size_t> index_by_offset(const std::string& path,
                                              std::vector<StTensor>& tensors, uint64_t data_bytes) {
  std::sort(tensors.begin(), tensors.end(),
            [](const StTensor& a, const StTensor& b) { return a.begin < b.begin; });
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const StTensor& t = tensors[i];
    if (t.end > data_bytes)
      fail(path, fmt::format("tensor '{}': data_offsets [{}, {}] run past the {} bytes of data "
                             "(truncated?)",
                             t.name, t.begin, t.end, data_bytes));
    if (i > 0 && t.begin < tensors[i - 1].end)
      fail(path,
           fmt::format("tensors '{}' and '{}' overlap ([{}, {}] and [{}, {}])", tensors[i - 1].name,
                       t.name, tensors[i - 1].begin, tensors[i - 1].end, t.begin, t.end));
    index[t.name] = i;
  }
  return index;
}

}  // namespace

std::string_view st_dtype_name(StDType t) { return kDTypes[size_t(t)].name; }
size_t st_dtype_size(StDType t) { return kDTypes[size_t(t)].bytes; }

size_t StTensor::elements() const {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

SafetensorsFile::SafetensorsFile(std::string path) : path_(std::move(path)) {
  Fd f{::open(path_.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) fail(path_, fmt::format("cannot open: {}", std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) fail(path_, "not a regular file");
  const uint64_t file_bytes = uint64_t(st.st_size);
  const uint64_t header_bytes = read_header_length(path_, f.fd, file_bytes);
  map_bytes_ = size_t(file_bytes);
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    fail(path_, fmt::format("cannot map: {}", std::strerror(errno)));
  }
  data_start_ = 8 + header_bytes;
  const char* text = static_cast<const char*>(map_) + 8;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + header_bytes);
  } catch (const nlohmann::json::exception& e) {
    ::munmap(map_, map_bytes_);
    map_ = nullptr;
    fail(path_, fmt::format("the header is not JSON: {}", base::json_error_text(e)));
  }
  try {
    read_header_entries(path_, header, tensors_, metadata_);
    index_ = index_by_offset(path_, tensors_, file_bytes - data_start_);
  } catch (...) {
    ::munmap(map_, map_bytes_);
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, map_bytes_);
}

const StTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> SafetensorsFile::bytes(const StTensor& t) const {
  const auto* base = static_cast<const std::byte*>(map_) + data_start_;
  return {base + t.begin, size_t(t.end - t.begin)};
}

std::vector<float> SafetensorsFile::read_f32(const StTensor& t) const {
  const auto raw = bytes(t);
  const size_t n = t.elements();
  std::vector<float> out(n);
  if (n == 0 && (t.dtype == StDType::F32 || t.dtype == StDType::F16 || t.dtype == StDType::BF16))
    return out;  // an empty tensor (memcpy may not take the null data of an empty vector)
  switch (t.dtype) {
    case StDType::F32:
      std::memcpy(out.data(), raw.data(), n * 4);
      break;
    case StDType::F16:
    case StDType::BF16: {
      std::vector<uint16_t> bits(n);  // the mapping may be unaligned
      std::memcpy(bits.data(), raw.data(), n * 2);
      for (size_t i = 0; i < n; ++i)
        out[i] = t.dtype == StDType::BF16 ? kernels::bf16_to_float({bits[i]})
                                          : kernels::f16_to_float_slow({bits[i]});
      break;
    }
    default:
      fail(path_, fmt::format("tensor '{}' is {}: only F32, F16 and BF16 weights can be read",
                              t.name, st_dtype_name(t.dtype)));
  }
  return out;
}

}  // namespace hybrid::engine

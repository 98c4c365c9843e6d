// Hugging Face safetensors files: an 8-byte little-endian header length N, N
// bytes of JSON, then the tensors' bytes. The JSON maps each tensor's name to
//   {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}
// (offsets into the bytes after the header, row-major, little-endian) and may
// hold "__metadata__": {string: string}. A checkpoint directory holds one
// `model.safetensors`, or shards named by `model.safetensors.index.json`
// ({"metadata": {...}, "weight_map": {tensor: shard file}}).
//
// Reading maps the file and validates the whole header before any tensor is
// touched: the length within the file and under 100 MB, every dtype known,
// every shape's bytes equal to its offsets' span, offsets inside the data and
// not overlapping. Every error is a DataFileError naming the file (and the
// tensor). Tensors are read widened to fp32 from F32, F16 or BF16.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::engine {

enum class StDType : uint8_t {
  BOOL,
  U8,
  I8,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
  F8_E4M3,
  F8_E5M2
};
std::string_view st_dtype_name(StDType t);
size_t st_dtype_size(StDType t);

struct StTensor {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
  size_t elements() const;
};

inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

class SafetensorsFile {
 public:
  // Maps and validates `path`; throws DataFileError naming it and the problem.
  explicit SafetensorsFile(std::string path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<StTensor>& tensors() const { return tensors_; }  // by offset
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const StTensor* find(std::string_view name) const;
  // The tensor's raw bytes (inside the mapping; any alignment).
  std::span<const std::byte> bytes(const StTensor& t) const;
  // The tensor widened to fp32; throws for a dtype other than F32, F16, BF16.
  std::vector<float> read_f32(const StTensor& t) const;

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  uint64_t data_start_ = 0;
  std::vector<StTensor> tensors_;
  std::map<std::string, size_t> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

// A directory's checkpoint: `model.safetensors`, or the shards its index names
// (each opened once). Throws DataFileError naming the directory when it holds
// neither, or naming the index when it is malformed or names a missing file.
class SafetensorsSet {
 public:
  explicit SafetensorsSet(const std::string& dir);
  const std::string& dir() const { return dir_; }
  // Every tensor's name, sorted.
  std::vector<std::string> names() const;
  const StTensor* find(std::string_view name) const;
  // The named tensor in fp32, checked against `shape`: a missing tensor or
  // another shape throws naming the file, the tensor and both shapes.
  std::vector<float> read_f32(std::string_view name, const std::vector<int64_t>& shape) const;

 private:
  struct Where {
    const SafetensorsFile* file;
    const StTensor* tensor;
  };
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Where, std::less<>> where_;
};

// One tensor to write: fp32 values, stored as `dtype` (F32, F16 or BF16, round
// to nearest even).
struct StTensorOut {
  std::string name;
  std::vector<int64_t> shape;
  std::span<const float> values;
};

// Writes one file atomically (temporary file, fsync, rename), the tensors in
// the given order, the header padded with spaces to a multiple of 8 bytes.
void write_safetensors(const std::string& path, const std::vector<StTensorOut>& tensors,
                       StDType dtype, const std::map<std::string, std::string>& metadata);

// Writes `dir`/model.safetensors, or, past `max_shard_bytes`, the shards
// model-0000i-of-0000n.safetensors (whole tensors, in order) and
// model.safetensors.index.json. Every file carries {"format": "pt"}.
void write_safetensors_dir(const std::string& dir, const std::vector<StTensorOut>& tensors,
                           StDType dtype, uint64_t max_shard_bytes = uint64_t(2) << 30);

std::string shape_text(const std::vector<int64_t>& shape);  // "[768, 2304]"

}  // namespace hybrid::engine

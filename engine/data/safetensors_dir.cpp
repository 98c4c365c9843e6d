// Checkpoint directories of safetensors files (one file or an index of shards),
// and writing them.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/json_read.h"
#include "engine/data/data_file_error.h"
#include "engine/data/safetensors.h"
#include "kernels/dtype.h"

namespace hybrid::engine {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// The shard files an index names, checked to be plain names inside `dir`.
std::map<std::string, std::string> read_weight_map(const std::string& index_path) {
  std::ifstream in(index_path);
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw DataFileError(fmt::format("{}: not JSON: {}", index_path, base::json_error_text(e)));
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw DataFileError(fmt::format("{}: no \"weight_map\" object", index_path));
  std::map<std::string, std::string> map;
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    if (!file.is_string())
      throw DataFileError(
          fmt::format("{}: weight_map['{}'] is not a file name", index_path, tensor));
    const std::string name = file.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      throw DataFileError(
          fmt::format("{}: weight_map['{}'] names '{}', not a file in this directory", index_path,
                      tensor, name));
    map[tensor] = name;
  }
  return map;
}

std::vector<std::byte> encode(const StTensorOut& t, StDType dtype) {
  std::vector<std::byte> out(t.values.size() * st_dtype_size(dtype));
  if (dtype == StDType::F32) {
    std::memcpy(out.data(), t.values.data(), out.size());
    return out;
  }
  for (size_t i = 0; i < t.values.size(); ++i) {
    const uint16_t bits = dtype == StDType::BF16 ? kernels::float_to_bf16(t.values[i]).bits
                                                 : kernels::float_to_f16_slow(t.values[i]).bits;
    std::memcpy(out.data() + 2 * i, &bits, 2);
  }
  return out;
}

size_t elements_of(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

}  // namespace

SafetensorsSet::SafetensorsSet(const std::string& dir) : dir_(dir) {
  const fs::path single = fs::path(dir) / kSingleFile, index = fs::path(dir) / kIndexFile;
  std::map<std::string, std::string> weight_map;  // tensor -> file; empty: the single file
  if (fs::exists(index)) {
    weight_map = read_weight_map(index.string());
  } else if (!fs::exists(single)) {
    throw DataFileError(fmt::format("{}: holds neither {} nor {}", dir, kSingleFile, kIndexFile));
  }
  std::map<std::string, const SafetensorsFile*> opened;
  auto open = [&](const std::string& name) {
    if (auto it = opened.find(name); it != opened.end()) return it->second;
    if (!fs::exists(fs::path(dir) / name))
      throw DataFileError(
          fmt::format("{}: names {}, which {} does not hold", index.string(), name, dir));
    files_.push_back(std::make_unique<SafetensorsFile>((fs::path(dir) / name).string()));
    return opened[name] = files_.back().get();
  };
  if (weight_map.empty()) {
    open(kSingleFile);
  } else {
    for (const auto& [tensor, file] : weight_map) open(file);
  }
  for (const auto& f : files_)
    for (const auto& t : f->tensors()) {
      if (!weight_map.empty()) {  // the index says where each tensor lives
        const auto it = weight_map.find(t.name);
        if (it == weight_map.end() || fs::path(f->path()).filename() != it->second) continue;
      }
      where_[t.name] = {f.get(), &t};
    }
  for (const auto& [tensor, file] : weight_map)
    if (!where_.count(tensor))
      throw DataFileError(fmt::format("{}: tensor '{}' is not in {}, where {} says it is",
                                      (fs::path(dir) / file).string(), tensor, file, kIndexFile));
}

std::vector<std::string> SafetensorsSet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, w] : where_) out.push_back(name);
  return out;
}

const StTensor* SafetensorsSet::find(std::string_view name) const {
  const auto it = where_.find(name);
  return it == where_.end() ? nullptr : it->second.tensor;
}

std::vector<float> SafetensorsSet::read_f32(std::string_view name,
                                            const std::vector<int64_t>& shape) const {
  const auto it = where_.find(name);
  if (it == where_.end())
    throw DataFileError(fmt::format("{}: no tensor '{}' (the model needs it, shape {})", dir_, name,
                                    shape_text(shape)));
  const auto& [file, tensor] = it->second;
  if (tensor->shape != shape)
    throw DataFileError(fmt::format("{}: tensor '{}' has shape {}, the model needs {}",
                                    file->path(), name, shape_text(tensor->shape),
                                    shape_text(shape)));
  return file->read_f32(*tensor);
}

void write_safetensors(const std::string& path, const std::vector<StTensorOut>& tensors,
                       StDType dtype, const std::map<std::string, std::string>& metadata) {
  if (dtype != StDType::F32 && dtype != StDType::F16 && dtype != StDType::BF16)
    throw DataFileError(fmt::format("{}: cannot write weights as {} (F32, F16 or BF16)", path,
                                    st_dtype_name(dtype)));
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (elements_of(t.shape) != t.values.size())
      throw DataFileError(fmt::format("{}: tensor '{}' has {} values for shape {}", path, t.name,
                                      t.values.size(), shape_text(t.shape)));
    const uint64_t bytes = t.values.size() * st_dtype_size(dtype);
    header[t.name] = {{"dtype", st_dtype_name(dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // the data starts 8-byte aligned
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  base::AtomicFileWriter out(path);
  out.write(len, 8);
  out.write(text.data(), text.size());
  for (const auto& t : tensors) {
    const auto bytes = encode(t, dtype);
    out.write(bytes.data(), bytes.size());
  }
  out.commit();
}

void write_safetensors_dir(const std::string& dir, const std::vector<StTensorOut>& tensors,
                           StDType dtype, uint64_t max_shard_bytes) {
  const std::map<std::string, std::string> pt = {{"format", "pt"}};
  std::vector<std::vector<StTensorOut>> shards(1);
  uint64_t in_shard = 0, total = 0;
  for (const auto& t : tensors) {
    const uint64_t bytes = t.values.size() * st_dtype_size(dtype);
    if (in_shard > 0 && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(t);
    in_shard += bytes;
    total += bytes;
  }
  fs::create_directories(dir);
  std::error_code ec;
  if (shards.size() == 1) {
    write_safetensors((fs::path(dir) / kSingleFile).string(), tensors, dtype, pt);
    fs::remove(fs::path(dir) / kIndexFile, ec);  // an earlier export's index would win
    return;
  }
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string name =
        fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
    write_safetensors((fs::path(dir) / name).string(), shards[i], dtype, pt);
    for (const auto& t : shards[i]) weight_map[t.name] = name;
  }
  const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  base::write_file_atomic((fs::path(dir) / kIndexFile).string(), index.dump(2) + "\n");
  fs::remove(fs::path(dir) / kSingleFile, ec);  // an earlier export's, now shadowed
}

}  // namespace hybrid::engine

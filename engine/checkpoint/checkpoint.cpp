#include "engine/checkpoint/checkpoint.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "base/atomic_file.h"
#include "base/json_read.h"

namespace hybrid::engine {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'H', 'Y', 'B', 'R', 'I', 'D', 'P', 'T'};
constexpr uint32_t kVersion = 1;

struct PartitionHeader {
  char magic[8];
  uint32_t version;
  uint32_t rank;
  int64_t begin;
  int64_t end;
  uint32_t state_floats;
  uint32_t crc32;
  uint64_t payload_bytes;
  uint8_t reserved[16];
};
static_assert(sizeof(PartitionHeader) == 64);

uint32_t crc_of(const std::vector<float>& a, const std::vector<float>& b) {
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(a.data()), a.size() * 4);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(b.data()), b.size() * 4);
  return uint32_t(crc);
}

std::string where(const std::string& dir, const std::string& tag) { return dir + "/" + tag; }

// A string field of a meta.json that may be damaged (json::value throws on a type
// mismatch); `fallback` when absent or not a string.
std::string text_field(const nlohmann::json& meta, const char* key, const char* fallback) {
  if (!meta.is_object()) return fallback;
  const auto it = meta.find(key);
  return it != meta.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

std::string partition_file_name(int rank) { return fmt::format("partition_{:05d}.bin", rank); }

// `comm` is the engine's host communicator: the failure flag below is a host
// value (a device communicator such as NCCL cannot read host memory).
void write_checkpoint(const std::string& dir, const std::string& tag, comm::Communicator& comm,
                      const nlohmann::json& meta, const PartitionData* mine,
                      const CheckpointWriteOptions& options) {
  if (tag.empty() || tag.find('/') != std::string::npos || tag == "latest")
    throw CheckpointError(fmt::format("checkpoint: invalid tag '{}'", tag));
  const std::string root = where(dir, tag);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec)
    throw CheckpointError(fmt::format("checkpoint: cannot create {}: {}", root, ec.message()));

  // Each rank's failure must reach every rank, or the others would hang or
  // publish `latest` over an incomplete checkpoint.
  float failed = 0.0f;
  std::string error;
  const auto attempt = [&](const auto& work) {
    try {
      work();
    } catch (const std::exception& e) {
      failed = 1.0f;
      error = e.what();
    }
  };
  // A tag saved before (a run resumed from an older `latest`) is unpublished
  // before any rank replaces its files: cut short, the tag must not look
  // complete with some partitions of this run and some of the earlier one.
  if (comm.rank() == 0) attempt([&] { base::remove_file_durably(root + "/meta.json"); });
  comm.barrier();
  if (failed == 0.0f)
    attempt([&] {
      if (mine) {
        PartitionHeader h{};
        std::memcpy(h.magic, kMagic, 8);
        h.version = kVersion;
        h.rank = uint32_t(comm.rank());
        h.begin = mine->range.begin;
        h.end = mine->range.end;
        h.state_floats = uint32_t(mine->state_floats);
        h.payload_bytes = (mine->master.size() + mine->state.size()) * 4;
        h.crc32 = crc_of(mine->master, mine->state);
        base::AtomicFileWriter w(root + "/" + partition_file_name(comm.rank()));
        w.write(&h, sizeof h);
        w.write(mine->master.data(), mine->master.size() * 4);
        w.write(mine->state.data(), mine->state.size() * 4);
        w.commit();
      }
      if (comm.rank() == 0 && options.extra_files) options.extra_files(root);
    });
  comm.all_reduce(&failed, 1, kernels::DType::f32, comm::ReduceOp::max);
  if (failed > 0.0f)
    throw CheckpointError(
        error.empty()
            ? fmt::format("checkpoint {}: another rank failed to write its partition", root)
            : fmt::format("checkpoint {}: {}", root, error));
  if (options.before_publish) options.before_publish();
  if (comm.rank() == 0) {
    base::write_file_atomic(root + "/meta.json", meta.dump(2));
    if (options.save_latest) base::write_file_atomic(dir + "/latest", tag + "\n");
  }
  comm.barrier();
}

std::vector<std::string> prune_checkpoints(const std::string& dir, const std::string& kind,
                                           int64_t keep, const std::string& managed,
                                           const CheckpointOwner& owner) {
  std::vector<std::string> deleted;
  if (keep <= 0) return deleted;
  std::string latest;
  if (std::ifstream in(dir + "/latest"); in) std::getline(in, latest);
  const std::regex pattern(managed);
  std::vector<std::pair<int64_t, std::string>> tags;  // (global step, tag) of this kind
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string tag = entry.path().filename().string();
    if (!entry.is_directory() || tag == latest || !std::regex_match(tag, pattern)) continue;
    std::ifstream in(entry.path() / "meta.json");
    if (!in) {
      // Unpublished: a save killed before meta.json, or a deletion killed after it.
      // One older than latest (the policy's tags are zero-padded, so names sort by
      // step) is dead; a newer one may be a save in progress elsewhere: left alone.
      if (!latest.empty() && tag < latest) {
        fs::remove_all(entry.path(), ec);
        if (!ec) deleted.push_back(tag);
      }
      continue;
    }
    const auto meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (text_field(meta, "format", "") != "hybrid-checkpoint" ||
        text_field(meta, "kind", "optimizer") != kind || !belongs_to(meta, owner))
      continue;
    const auto step = meta.find("global_step");
    tags.emplace_back(step != meta.end() && step->is_number_integer() ? step->get<int64_t>() : 0,
                      tag);
  }
  // `latest` counts among the kept ones when the policy wrote it and it is of this kind.
  bool latest_counts = false;
  if (!latest.empty() && std::regex_match(latest, pattern)) {
    std::ifstream in(dir + "/" + latest + "/meta.json");
    const auto meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    latest_counts = meta.is_object() && text_field(meta, "kind", "optimizer") == kind &&
                    belongs_to(meta, owner);
  }
  const int64_t keep_others = latest_counts ? keep - 1 : keep;
  std::sort(tags.begin(), tags.end(), std::greater<>());
  for (size_t i = size_t(std::max<int64_t>(0, keep_others)); i < tags.size(); ++i) {
    // meta.json first: a deletion cut short leaves an unpublished tag, never one
    // that looks complete with its partitions gone.
    fs::remove(fs::path(dir) / tags[i].second / "meta.json", ec);
    if (!ec) fs::remove_all(fs::path(dir) / tags[i].second, ec);
    if (ec)
      throw CheckpointError(
          fmt::format("checkpoint: cannot delete {}/{}: {}", dir, tags[i].second, ec.message()));
    deleted.push_back(tags[i].second);
  }
  return deleted;
}

std::string resolve_checkpoint_tag(const std::string& dir, const std::string& tag) {
  if (!tag.empty()) return tag;
  std::ifstream in(dir + "/latest");
  if (!in)
    throw CheckpointError(
        fmt::format("checkpoint: {}/latest not found (no checkpoint saved in {}?)", dir, dir));
  std::string t;
  std::getline(in, t);
  if (t.empty()) throw CheckpointError(fmt::format("checkpoint: {}/latest is empty", dir));
  return t;
}

nlohmann::json read_checkpoint_meta(const std::string& dir, const std::string& tag) {
  const std::string path = where(dir, tag) + "/meta.json";
  std::ifstream in(path);
  if (!in)
    throw CheckpointError(
        fmt::format("checkpoint {}: meta.json missing (incomplete checkpoint)", where(dir, tag)));
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("checkpoint {}: meta.json is not valid JSON: {}",
                                      where(dir, tag), base::json_error_text(e)));
  }
  validate_checkpoint_meta(meta, where(dir, tag));
  return meta;
}

void read_checkpoint_range(const std::string& dir, const std::string& tag,
                           const nlohmann::json& meta, FlatRange want, int state_floats,
                           float* master, float* state) {
  const std::string root = where(dir, tag);
  const size_t n = size_t(want.size());
  std::fill(master, master + n, 0.0f);
  if (state) std::fill(state, state + n * size_t(state_floats), 0.0f);
  for (const auto& part : meta.at("partitions")) {
    const FlatRange range{part.at("begin").get<int64_t>(), part.at("end").get<int64_t>()};
    const FlatRange overlap = range.intersect(want);
    if (overlap.empty()) continue;
    const std::string path = root + "/" + partition_file_name(part.at("rank").get<int>());
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw CheckpointError(
          fmt::format("checkpoint {}: {} missing", root, fs::path(path).filename().string()));
    PartitionHeader h{};
    in.read(reinterpret_cast<char*>(&h), sizeof h);
    const std::string name = fs::path(path).filename().string();
    if (!in || std::memcmp(h.magic, kMagic, 8) != 0 || h.version != kVersion)
      throw CheckpointError(
          fmt::format("checkpoint {}: {} is not a partition file (bad header)", root, name));
    // Sizes come from the header only once it matches meta.json and the file's
    // length: a corrupt count must fail here, not in an allocation.
    if (h.begin != range.begin || h.end != range.end || h.state_floats > kMaxStateFloats)
      throw CheckpointError(fmt::format("checkpoint {}: {} does not match meta.json", root, name));
    const size_t file_n = size_t(h.end - h.begin);
    const uint64_t expected = (file_n + file_n * h.state_floats) * 4;
    if (h.payload_bytes != expected)
      throw CheckpointError(fmt::format("checkpoint {}: {} does not match meta.json", root, name));
    if (state && int(h.state_floats) != state_floats)
      throw CheckpointError(fmt::format(
          "checkpoint {}: optimizer state has {} floats per parameter, this optimizer needs {}",
          root, h.state_floats, state_floats));
    std::error_code ec;
    const uint64_t size = fs::file_size(path, ec);
    if (ec) throw CheckpointError(fmt::format("checkpoint {}: {}: {}", root, name, ec.message()));
    if (size != sizeof h + expected)
      throw CheckpointError(fmt::format(
          "checkpoint {}: {} is {} (expected {} bytes, found {})", root, name,
          size < sizeof h + expected ? "truncated" : "oversized", sizeof h + expected, size));
    std::vector<float> fmaster(file_n), fstate(file_n * h.state_floats);
    in.read(reinterpret_cast<char*>(fmaster.data()), std::streamsize(file_n * 4));
    in.read(reinterpret_cast<char*>(fstate.data()), std::streamsize(fstate.size() * 4));
    if (!in) throw CheckpointError(fmt::format("checkpoint {}: cannot read {}", root, name));
    if (crc_of(fmaster, fstate) != h.crc32)
      throw CheckpointError(
          fmt::format("checkpoint {}: {} is corrupt (checksum mismatch)", root, name));
    const size_t src0 = size_t(overlap.begin - range.begin),
                 dst0 = size_t(overlap.begin - want.begin);
    const size_t count = size_t(overlap.size());
    std::copy_n(fmaster.data() + src0, count, master + dst0);
    if (state)
      for (int k = 0; k < state_floats; ++k)
        std::copy_n(fstate.data() + size_t(k) * file_n + src0, count, state + size_t(k) * n + dst0);
  }
}

}  // namespace hybrid::engine

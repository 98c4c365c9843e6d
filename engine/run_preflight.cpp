#include "engine/run_preflight.h"

#include <fmt/format.h>

#include "base/output_path.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/save_policy.h"
#include "engine/data/safetensors.h"
#include "engine/engine.h"
#include "engine/model/hf_directory.h"

namespace hybrid {

using namespace engine;

namespace {

void refuse_if(const std::string& why, const char* option, const std::string& path) {
  if (!why.empty()) throw ArgumentError(fmt::format("{} {}: {}", option, path, why));
}

}  // namespace

void check_run_outputs(const Config& cfg, const TrainOptions& opts) {
  const SavePolicy policy(cfg.checkpoint, opts.save_dir, opts.save_every);
  if (policy.enabled()) {
    const char* option = opts.save_dir.empty() ? "hybrid.checkpoint.dir" : "--save";
    refuse_if(base::why_not_writable_dir(policy.dir()), option, policy.dir());
    try {
      check_save_folder(policy.dir(), model_identity(cfg));
    } catch (const CheckpointError& e) {
      throw ArgumentError(fmt::format("{} {}: {}", option, policy.dir(), e.what()));
    }
  }
  if (!opts.export_path.empty()) {
    refuse_if(base::why_not_writable_file(opts.export_path), "--export-llmc", opts.export_path);
    refuse_if(make_model(cfg)->cannot_write({opts.export_path, ""}), "--export-llmc",
              opts.export_path);
  }
  if (!opts.export_hf_dir.empty())
    refuse_if(base::why_not_writable_dir(opts.export_hf_dir), "--export-hf", opts.export_hf_dir);
  if (!opts.result_path.empty())
    refuse_if(base::why_not_writable_file(opts.result_path), "--result", opts.result_path);
}

void check_run_inputs(const Config& cfg) {
  if (is_hf_directory(cfg.init_from)) SafetensorsSet{cfg.init_from};
}

}  // namespace hybrid

// The inert collector (every build) and the CPU-build fallbacks of the GPU hook
// factories; the CUDA build gets the real ones from nvtx.cpp and cupti_collector.cpp.
#include "profiler/gpu_hooks.h"

namespace hybrid::profiler {

namespace {

class InertCollector final : public GpuCollector {
 public:
  explicit InertCollector(std::string status) : status_(std::move(status)) {}
  void on_begin(std::string_view, Category, int32_t) override {}
  void on_end(Category, int32_t) override {}
  bool available() const override { return false; }
  std::string status() const override { return status_; }
  size_t flush(bool) override { return 0; }
  GpuActivityParser::Stats stats() const override { return {}; }
  uint64_t pool_exhausted() const override { return 0; }

 private:
  std::string status_;
};

}  // namespace

std::unique_ptr<GpuCollector> make_inert_collector(std::string status) {
  return std::make_unique<InertCollector>(std::move(status));
}

#if !HYBRID_HAVE_CUPTI
std::unique_ptr<RangeListener> make_nvtx_listener() { return nullptr; }

std::unique_ptr<GpuCollector> make_cupti_collector(Tracer&, CuptiOptions) {
  return make_inert_collector(
      "CUPTI unavailable: this build has no CUDA support (HYBRID_CUDA=OFF)");
}
#endif

}  // namespace hybrid::profiler

// NVTX ranges for every tracer scope (CUDA builds only), so Nsight Systems shows
// steps, module forwards/backwards and collectives above the kernels they
// launched. Domain "hybrid"; each event category is an NVTX category with its
// own colour; the payload carries the module id. NVTX calls are no-ops unless a
// tool is attached.
#include <nvtx3/nvToolsExt.h>

#include <string>

#include "profiler/gpu_hooks.h"

namespace hybrid::profiler {

namespace {

// ARGB by category, in the enum's order: step, forward, backward, optimizer,
// comm, data, kernel, memcpy, other, recompute, prefill, decode.
constexpr uint32_t kCategoryColor[kCategoryCount] = {
    0xff808080u, 0xff4e79a7u, 0xfff28e2bu, 0xff59a14fu, 0xffe15759u, 0xff76b7b2u,
    0xffedc948u, 0xffb07aa1u, 0xffbab0acu, 0xff9c755fu, 0xffff9da7u, 0xff86bcb6u};

class NvtxListener final : public RangeListener {
 public:
  NvtxListener() : domain_(nvtxDomainCreateA("hybrid")) {
    for (int i = 0; i < kCategoryCount; ++i)
      nvtxDomainNameCategoryA(domain_, uint32_t(i + 1),
                              std::string(category_name(Category(i))).c_str());
  }
  ~NvtxListener() override { nvtxDomainDestroy(domain_); }

  void on_begin(std::string_view name, Category category, int32_t module_id) override {
    const std::string text(name);  // NVTX wants a NUL-terminated string
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = uint32_t(category) + 1;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = kCategoryColor[int(category)];
    a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
    a.payload.iValue = module_id;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = text.c_str();
    nvtxDomainRangePushEx(domain_, &a);
  }
  void on_end(Category, int32_t) override { nvtxDomainRangePop(domain_); }

 private:
  nvtxDomainHandle_t domain_;
};

}  // namespace

std::unique_ptr<RangeListener> make_nvtx_listener() { return std::make_unique<NvtxListener>(); }

}  // namespace hybrid::profiler

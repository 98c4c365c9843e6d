// Backend selection from the config's "device" setting, in every build.
//
//   "cpu"    the CPU backend.
//   "cuda"   the CUDA backend on device local_rank % device count (or "cuda:N"
//            for device N); throws when this build has no CUDA backend or no
//            device is usable, with the runtime's reason.
//   "auto"   CUDA when a device is usable, otherwise the CPU with a one-line
//            note saying why.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "kernels/ops.h"

namespace hybrid::kernels {

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string note;  // one line for the log: what was chosen and, on fallback, why
};

BackendChoice make_backend(std::string_view device, int local_rank);

// Whether this build contains the CUDA backend.
bool cuda_backend_compiled();

}  // namespace hybrid::kernels

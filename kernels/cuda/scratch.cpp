#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

Scratch::Scratch(CachingAllocator& alloc, size_t bytes)
    : alloc_(alloc), ptr_(alloc.allocate(bytes)) {}
Scratch::~Scratch() { alloc_.deallocate(ptr_); }

}  // namespace hybrid::kernels::cuda

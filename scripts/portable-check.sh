#!/usr/bin/env bash
# The numerical and engine tests on the portable (AVX2) kernel path, whatever CPU
# this is: a change made on an AVX-512 machine is checked here on the path an
# AVX2-only CPU (AMD Zen 3, older Xeons) runs, before it lands.
#
#   scripts/portable-check.sh [BUILD_DIR] [ctest arguments...]   (default: build-portable)
#
# What it pins (docs/reliability.md#kernel-paths):
# - our kernels: compiled for x86-64-v3 (HYBRID_NATIVE=OFF: AVX2, FMA, F16C; no
#   AVX-512), so the compiler's vector code is the AVX2 one;
# - oneDNN: ONEDNN_MAX_CPU_ISA=AVX2 caps its JIT kernels at AVX2, and our own
#   AVX512_BF16 GEMM honours the same cap (kernels/cpu/gemm_bf16.cpp);
# - OpenBLAS: OPENBLAS_CORETYPE=Haswell, its AVX2 kernels;
# - the GEMM choices are measured afresh (a cache of their own).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-portable}
shift || true

scripts/setup.sh
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYBRID_WERROR=ON \
  -DHYBRID_NATIVE=OFF -DHYBRID_CUDA=OFF -DHYBRID_GUI=OFF -DHYBRID_BENCH=OFF \
  "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
echo "portable-check: build done in $((SECONDS - start)) s"

# The binaries must not carry an AVX-512 instruction: then no test below can
# have run one, whatever the CPU offers.
if command -v objdump >/dev/null; then
  for lib in "$build"/kernels/libhybrid_kernels*.a "$build"/engine/libhybrid_engine.a; do
    [ -e "$lib" ] || continue
    # The AVX512_BF16 GEMM and gemv's AVX-512 loops are compiled for their own
    # targets and dispatched at run time (capped above): their objects are the
    # ones allowed to hold zmm registers.
    bad=$(objdump -d --no-show-raw-insn "$lib" 2>/dev/null |
      awk '/file format/ {obj = $1} /zmm/ && obj !~ /gemm_bf16|gemv_avx512/ {print obj; exit}')
    if [ -n "$bad" ]; then
      echo "portable-check: $lib ($bad) holds AVX-512 code outside the run-time dispatched kernels" >&2
      exit 1
    fi
  done
fi

source scripts/mpi-env.sh
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell HYBRID_CACHE_DIR=$cache
(cd "$build" && ctest --output-on-failure -j2 --timeout 900 -L 'kernels|engine|mpi' "$@")
echo "portable-check: tests done in $((SECONDS - start)) s"

#!/usr/bin/env bash
# One run on the GPU machine (H200, CUDA 13, CMake, ninja, no internet, maybe no
# Debian -dev packages): unpack the Debian packages that scripts/fetch-gpu-deps.sh
# put in .deps/ into .deps/root (never into /), point CMake at them, configure
# the CUDA build (sm_90), build the gpu-labelled tests and the CUDA benchmarks
# with every core, run `ctest -L gpu`, the op benchmark and the GPT-2 124M
# training benchmark (tokens/s, MFU), print a summary. Each
# phase is timed and logged; with $OUT set, logs and results go there. The whole
# run stays under a deadline (default 570 s).
#
#   scripts/gpu-check.sh [--no-gpu] [--build-dir DIR] [--deadline SECONDS]
#
# --no-gpu: unpack and configure only, with /usr ignored by CMake's find_*
# (CMAKE_IGNORE_PREFIX_PATH), proving the configure works from .deps alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-gpu"
deadline=570
no_gpu=0
while (($#)); do
  case "$1" in
    --no-gpu) no_gpu=1 ;;
    --build-dir) build="$(realpath -m "$2")"; shift ;;
    --deadline) deadline="$2"; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

out="${OUT:-$build/gpu-check}"
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
t0=$(date +%s)
failed=0

remaining() { echo $((deadline - ($(date +%s) - t0))); }

# phase NAME CMD...: runs CMD with its output in $out/NAME.log, under the time left.
phase() {
  local name="$1"; shift
  local left; left=$(remaining)
  if ((left <= 5)); then
    printf '%-12s SKIPPED (deadline)\n' "$name" | tee -a "$summary"
    failed=1
    return 1
  fi
  local start; start=$(date +%s.%N)
  echo "gpu-check: $name ..."
  local rc=0
  if declare -F "$1" >/dev/null; then
    "$@" >"$out/$name.log" 2>&1 || rc=$?   # our own short functions: no timeout wrapper
  else
    timeout --kill-after=10 "$left" "$@" >"$out/$name.log" 2>&1 || rc=$?
  fi
  local secs; secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
  if ((rc == 0)); then
    printf '%-12s ok      %7ss\n' "$name" "$secs" | tee -a "$summary"
  else
    printf '%-12s FAILED  %7ss  (exit %d, see %s)\n' "$name" "$secs" "$rc" "$out/$name.log" | tee -a "$summary"
    tail -n 30 "$out/$name.log" | sed 's/^/    /'
    failed=1
  fi
  return $rc
}

# ---- dependencies ------------------------------------------------------------
deps="$root/.deps"
prefix="$deps/root"
unpack() {
  shopt -s nullglob
  local debs=("$deps"/*.deb)
  if ((${#debs[@]} == 0)); then
    echo "no .deb files in $deps: run scripts/fetch-gpu-deps.sh on a machine with apt first"
    return 1
  fi
  mkdir -p "$prefix"
  local stamp="$prefix/.unpacked"
  for d in "${debs[@]}"; do
    if [[ ! -e "$stamp" || "$d" -nt "$stamp" ]]; then
      echo "unpack $(basename "$d")"
      dpkg-deb -x "$d" "$prefix"
    fi
  done
  touch "$stamp"
  [[ -f "$deps/manifest.txt" ]] && cat "$deps/manifest.txt"
  return 0
}
phase deps unpack || exit 1

arch_lib="$prefix/usr/lib/x86_64-linux-gnu"
export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export PKG_CONFIG_LIBDIR="$arch_lib/pkgconfig:$prefix/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$prefix"   # .pc files say /usr: prefix them with the unpack root
export LD_LIBRARY_PATH="$arch_lib:$arch_lib/openblas-pthread:$arch_lib/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CPATH="$prefix/usr/include${CPATH:+:$CPATH}"
export PATH="$prefix/usr/bin:$PATH"
export OPAL_PREFIX="$prefix/usr"          # relocated Open MPI finds its components and wrapper data
export OPAL_LIBDIR="$arch_lib/openmpi/lib"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# ---- configure ---------------------------------------------------------------
cmake_args=(
  -S "$root" -B "$build" -G Ninja
  -DHYBRID_CUDA=ON -DHYBRID_GUI=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release
  -DMPI_CXX_COMPILER="$prefix/usr/bin/mpicxx.openmpi"
  -DPKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf"
)
((no_gpu)) && cmake_args+=(-DCMAKE_IGNORE_PREFIX_PATH=/usr)
configure() {
  cmake "${cmake_args[@]}"
  # Show where each dependency was found (should be .deps/root on the GPU machine).
  grep -E '^(SQLite3_INCLUDE_DIR|SQLite3_LIBRARY|nlohmann_json_DIR|fmt_DIR|CLI11_DIR|GTest_DIR|benchmark_DIR|DNNL_LIBRARY|DNNL_INCLUDE_DIR|MPI_CXX_COMPILER|MPI_mpi_LIBRARY|ZLIB_LIBRARY_RELEASE|NCCL_LIBRARY|CMAKE_CUDA_COMPILER):' \
    "$build/CMakeCache.txt"
}
phase configure configure || { cat "$summary"; exit 1; }

if ((no_gpu)); then
  # Every found dependency must come from .deps/root (CUDA from its toolkit).
  if grep -E '^(SQLite3_LIBRARY|nlohmann_json_DIR|fmt_DIR|GTest_DIR|benchmark_DIR|DNNL_LIBRARY|MPI_CXX_COMPILER|ZLIB_LIBRARY_RELEASE):' \
       "$build/CMakeCache.txt" | grep -v "$prefix" >"$out/outside-deps.txt"; then
    echo "gpu-check: found outside .deps:" | tee -a "$summary"
    sed 's/^/    /' "$out/outside-deps.txt" | tee -a "$summary"
    failed=1
  else
    echo "deps-only    ok      every dependency resolved inside .deps/root" | tee -a "$summary"
  fi
  echo "gpu-check: --no-gpu: stopping after configure ($(( $(date +%s) - t0 ))s)"
  exit $failed
fi

# ---- build ---------------------------------------------------------------------
jobs=$(nproc)
targets=(hybrid_kernels_gpu_tests hybrid_profiler_gpu_tests hybrid_engine_gpu_tests bench_cuda_ops bench_gpu_train)
# -k 0: a target that fails (e.g. another folder's code) does not stop the others.
phase build cmake --build "$build" -j "$jobs" --target "${targets[@]}" -- -k 0 || true

# ---- device --------------------------------------------------------------------
phase device bash -c 'nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv' || true

# ---- tests ---------------------------------------------------------------------
phase ctest ctest --test-dir "$build" -L gpu --output-on-failure --timeout 300 \
  --output-junit "$out/ctest-gpu.xml" || true
grep -E 'tests passed|tests failed|No tests were found' "$out/ctest.log" | sed 's/^/    /' | tee -a "$summary" || true

# ---- benchmarks ----------------------------------------------------------------
bench="$build/bench/bench_cuda_ops"
if [[ -x "$bench" ]]; then
  phase bench "$bench" --benchmark_min_time=0.1 --benchmark_out="$out/bench_cuda_ops.json" \
    --benchmark_out_format=json --benchmark_counters_tabular=true || true
  if command -v python3 >/dev/null && [[ -s "$out/bench_cuda_ops.json" ]]; then
    python3 - "$out/bench_cuda_ops.json" <<'PY' | tee -a "$summary"
import json, sys
data = json.load(open(sys.argv[1]))
print(f"    {'benchmark':48} {'ms':>9} {'TFLOP/s':>9} {'GB/s':>8} {'ref_ratio':>9}")
for b in data.get("benchmarks", []):
    if b.get("error_occurred"):
        print(f"    {b['name']:48} ERROR {b.get('error_message','')}")
        continue
    ms = b["real_time"] if b.get("time_unit") == "ms" else b["real_time"] / 1e6
    fl = b.get("FLOP/s", 0) / 1e12
    bw = b.get("bytes/s", 0) / 1e9
    print(f"    {b['name']:48} {ms:9.3f} {fl:9.1f} {bw:8.0f} {b.get('ref_ratio', 0):9.2f}")
PY
  fi
else
  printf '%-12s SKIPPED (bench_cuda_ops not built)\n' bench | tee -a "$summary"
  failed=1
fi

# GPT-2 124M training step, bf16 and fp32, B=16 T=1024: tokens/s and MFU
# against the device's peak (the benchmark prints which peak it used).
train_bench="$build/bench/bench_gpu_train"
if [[ -x "$train_bench" ]]; then
  phase train-bench "$train_bench" --benchmark_out="$out/bench_gpu_train.json" --benchmark_out_format=json || true
  grep -E '^(summary|peak used|bf16|f32|fp32|bench_gpu_train: skipped)' "$out/train-bench.log" | sed 's/^/    /' | tee -a "$summary" || true
else
  printf '%-12s SKIPPED (bench_gpu_train not built)\n' train-bench | tee -a "$summary"
  failed=1
fi

echo
echo "==== gpu-check summary ($(( $(date +%s) - t0 ))s of ${deadline}s) ===="
cat "$summary"
exit $failed

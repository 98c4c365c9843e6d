#!/usr/bin/env bash
# Builds the tests with a sanitizer and runs them: 0 findings is the bar.
#
#   scripts/sanitize.sh asan|ubsan|tsan [ctest arguments...]
#   SANITIZE_TARGETS="hybrid_base_tests ..." scripts/sanitize.sh asan -R '^Atomic'
#
# asan is AddressSanitizer (with LeakSanitizer) and UBSan in one build; ubsan alone
# exists for a lighter run.
# Each mode has its own build directory (build-asan, build-ubsan, build-tsan),
# configured with HYBRID_SANITIZE (cmake/HybridSanitizers.cmake), without CUDA (no
# device here: the GPU tests skip anyway, and nvcc would only slow the build).
# Without ctest arguments: asan and ubsan run every test; tsan runs the concurrent
# parts (communicators, the comm thread, overlap, the store under concurrent
# writers, the tracers, subprocesses) — see TSAN_TESTS. Runtime options and the
# third-party suppressions live in scripts/sanitizers/. docs/reliability.md
# ("Sanitizers") has the coverage, run times and findings.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-}
shift || true
case "$mode" in
  asan) sanitizer=address,undefined ;;  # ASan and UBSan in one build: half the build time
  ubsan) sanitizer=undefined ;;
  tsan) sanitizer=thread ;;
  *) echo "usage: scripts/sanitize.sh asan|ubsan|tsan [ctest arguments...]" >&2; exit 2 ;;
esac
build=build-$mode
supp=$root/scripts/sanitizers

# tsan runs the base, profiler and MPI suites whole (subprocesses, atomic files, the
# tracers, the store under concurrent writers and readers; the communicator, its comm
# thread and overlap) and the engine tests that run them inside hybrid-train.
TSAN_ENGINE_TESTS='SingleCommunicator|Profiling\.|ZeroMpi|ZeroReduceMode|OffloadMpi'
TSAN_TARGETS=(hybrid_base_tests hybrid_profiler_tests hybrid_engine_tests
              comm_np2_mpi_test comm_np4_mpi_test engine_comms_np2_mpi_test)

start=$SECONDS
# Warnings stay errors in the normal build (scripts/test.sh); GCC's sanitizer
# instrumentation adds -Wmaybe-uninitialized noise of its own, so not here.
# -O1: the optimisation sanitizers are made for (reports match the source) and a
# build about a third faster than -O3; asserts stay off as in Release.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DHYBRID_WERROR=OFF -DHYBRID_CUDA=OFF -DHYBRID_SANITIZE=$sanitizer \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
# SANITIZE_TARGETS="a b" builds only those (with the tests they start).
if [[ -n ${SANITIZE_TARGETS:-} ]]; then
  read -ra targets <<<"$SANITIZE_TARGETS"
elif [[ $mode == tsan ]]; then
  targets=("${TSAN_TARGETS[@]}")
else
  targets=(all)
fi
nice cmake --build "$build" -j"${SANITIZE_JOBS:-$(nproc)}" --target "${targets[@]}"
echo "sanitize.sh: $mode build done in $((SECONDS - start)) s"

source scripts/mpi-env.sh
# Our code is instrumented, third-party libraries are not; the suppression files
# name only third-party libraries, each with its reason.
# fast_unwind_on_malloc=0: Open MPI and PMIx are built without frame pointers, so the
# fast unwinder records one frame of their allocations, often in a plugin that
# MPI_Finalize has dlclose()d by exit (no module name left): the leak then matches no
# suppression. The full (DWARF) stack reaches libmpi, which lsan.supp names.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:fast_unwind_on_malloc=0"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
if [[ $mode == asan ]]; then
  # The viewer's GL (Mesa under xvfb): llvmpipe JIT-compiles shaders with LLVM, which
  # registers their unwind tables with libgcc (__register_frame); the full-stack
  # unwinder above, called by ASan's malloc while libgcc's unwinder holds its own
  # lock, then deadlocks. softpipe (Mesa's renderer without a JIT) keeps full stacks,
  # which the Mesa suppression in lsan.supp needs.
  export GALLIUM_DRIVER=softpipe
fi
if [[ $mode == tsan ]]; then
  # libgomp is not built with TSan: its barriers look like races on every parallel
  # region's data. One OpenMP thread runs the regions on the calling thread, so the
  # threads TSan checks are ours (comm thread, tracer, store writers, subprocess).
  export OMP_NUM_THREADS=1
fi

# Instrumented tests are 2-15x slower: generous timeouts.
run_ctest() { (cd "$build" && nice ctest --output-on-failure -j"$(nproc)" --timeout 1800 "$@"); }
if [[ $# -gt 0 ]]; then
  run_ctest "$@"
elif [[ $mode == tsan ]]; then
  run_ctest -L '^(base|profiler|mpi)$'
  run_ctest -L '^engine$' -R "$TSAN_ENGINE_TESTS"
else
  run_ctest
fi
echo "sanitize.sh: $mode done in $((SECONDS - start)) s"

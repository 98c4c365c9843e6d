# Every dependency comes from a Debian package (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(SQLite3 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(fmt 9 REQUIRED)
find_package(CLI11 2 REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
# oneDNN: Debian's dnnl-config.cmake insists on OpenCL (its GPU runtime), which we
# do not use, so import the library directly.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp REQUIRED)
find_library(DNNL_LIBRARY dnnl REQUIRED)
add_library(hybrid_dnnl INTERFACE IMPORTED)
target_include_directories(hybrid_dnnl INTERFACE ${DNNL_INCLUDE_DIR})
target_link_libraries(hybrid_dnnl INTERFACE ${DNNL_LIBRARY})
find_package(PkgConfig REQUIRED)
set(HYBRID_BLAS "oneDNN" CACHE INTERNAL "")
if(HYBRID_TESTS)
  find_package(GTest 1.12 REQUIRED)
endif()
if(HYBRID_BENCH OR HYBRID_TESTS)
  find_package(benchmark 1.7 REQUIRED)
endif()
# OpenBLAS (a GEMM provider, kernels/cpu/openblas.h) is not linked: it is loaded at
# run time (dlopen), after its core type is chosen for the CPU.
# liburing: the io_uring engine of the NVMe offload's file I/O (engine/io); the
# pread/pwrite engine needs nothing.
pkg_check_modules(LIBURING IMPORTED_TARGET liburing)
# Tokenizers (engine/data/tokenizer): PCRE2 matches byte-level BPE's Unicode split
# pattern (std::regex has no \p{L}); SentencePiece reads and trains .model files.
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)

# --- CUDA -------------------------------------------------------------------
set(HYBRID_HAVE_CUDA OFF)
if(NOT HYBRID_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # CMake 3.25 does not know that nvcc 12+ accepts C++20 ("requires the language
    # dialect CUDA20" at generate time): tell it the flag.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # Static cudart plus CUDA::cudart would link both runtimes.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    find_package(CUDAToolkit REQUIRED)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      add_library(hybrid_nccl INTERFACE IMPORTED)
      target_include_directories(hybrid_nccl INTERFACE ${NCCL_INCLUDE_DIR})
      target_link_libraries(hybrid_nccl INTERFACE ${NCCL_LIBRARY})
      set(HYBRID_HAVE_CUDA ON)
    elseif(HYBRID_CUDA STREQUAL "ON")
      message(FATAL_ERROR "HYBRID_CUDA=ON but NCCL (nccl.h, libnccl) was not found")
    endif()
  elseif(HYBRID_CUDA STREQUAL "ON")
    message(FATAL_ERROR "HYBRID_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()

# --- GUI --------------------------------------------------------------------
set(HYBRID_HAVE_GUI OFF)
if(NOT HYBRID_GUI STREQUAL "OFF")
  pkg_check_modules(IMGUI IMPORTED_TARGET imgui)
  find_package(glfw3 3.3 QUIET)
  set(OpenGL_GL_PREFERENCE GLVND)
  find_package(OpenGL QUIET COMPONENTS OpenGL)
  if(IMGUI_FOUND AND glfw3_FOUND AND OpenGL_FOUND)
    set(HYBRID_HAVE_GUI ON)
  elseif(HYBRID_GUI STREQUAL "ON")
    message(FATAL_ERROR "HYBRID_GUI=ON but ImGui, GLFW or OpenGL was not found (run scripts/setup.sh)")
  endif()
endif()

# Build speed (scripts/test.sh builds everything, from scratch, on a 2-core CI runner):
# - precompiled headers for the tests: the heavy third-party headers (GoogleTest,
#   GoogleMock, nlohmann/json, fmt) are compiled once, in a small host target, and every
#   test binary reuses that one PCH (REUSE_FROM) instead of compiling its own;
# - unity builds of the test binaries: their sources are compiled a few at a time in one
#   translation unit, so the templates they share (GoogleTest, json, fmt) are instantiated
#   and compiled once per batch instead of once per file.
# The product's sources keep their exact per-file compilation: no batches, no PCH (a PCH
# saved 0-9 % of a product source, whose -O3 code generation dominates, and through it
# GCC 12 reported a -Warray-bounds false positive inside libstdc++ in
# engine/config/config_checkpointing.cpp).
option(HYBRID_PCH "Precompile the heavy third-party headers of the tests (one PCH for all)" ON)
set(HYBRID_UNITY_BATCH 8 CACHE STRING "Test sources per unity translation unit (0 or 1: none)")

# The third-party and standard headers most sources include (also the fuzz build's PCH).
set(HYBRID_PCH_HEADERS <nlohmann/json.hpp> <fmt/format.h> <algorithm> <cstdint> <functional>
    <map> <memory> <optional> <stdexcept> <string> <string_view> <vector>)
# The tests': the above and GoogleTest, GoogleMock and what their fixtures use.
set(HYBRID_TEST_PCH_HEADERS <gtest/gtest.h> <gmock/gmock.h> ${HYBRID_PCH_HEADERS} <filesystem>
    <fstream> <random> <regex> <set> <sstream> <thread>)

# A PCH must be compiled with the flags of the sources that include it (GCC refuses one
# built without -fopenmp, which defines _OPENMP, or without -fPIC; -Winvalid-pch, added
# by CMake, makes a refused one an error under HYBRID_WERROR). So there is one host per
# OpenMP use; a target whose flags match neither (PIC) keeps no PCH.
function(hybrid_pch_host out openmp)
  set(host hybrid_pch_test)
  if(openmp)
    string(APPEND host _openmp)
  endif()
  if(NOT TARGET ${host})
    set(anchor ${PROJECT_BINARY_DIR}/${host}.cpp)
    file(CONFIGURE OUTPUT ${anchor} CONTENT "// Compiles the precompiled header of ${host} (cmake/HybridBuildSpeed.cmake).\n")
    add_library(${host} OBJECT ${anchor})
    target_link_libraries(${host} PRIVATE hybrid_options nlohmann_json::nlohmann_json fmt::fmt)
    if(openmp)
      target_link_libraries(${host} PRIVATE OpenMP::OpenMP_CXX)
    endif()
    target_link_libraries(${host} PRIVATE GTest::gtest GTest::gmock)
    hybrid_test_compile_options(${host})
    target_precompile_headers(${host} PRIVATE ${HYBRID_TEST_PCH_HEADERS})
  endif()
  set(${out} ${host} PARENT_SCOPE)
endfunction()

# Whether target compiles with -fopenmp: it links OpenMP::OpenMP_CXX itself (every
# hybrid target that uses OpenMP links it PRIVATE, so it never comes transitively).
function(hybrid_uses_openmp out target)
  get_target_property(libs ${target} LINK_LIBRARIES)
  set(${out} OFF PARENT_SCOPE)
  if(libs AND "OpenMP::OpenMP_CXX" IN_LIST libs)
    set(${out} ON PARENT_SCOPE)
  endif()
endfunction()

# Makes target (a test binary) reuse the tests' PCH. Sources with flags
# of their own (kernels/cpu: -fno-math-errno...) are compiled without it.
function(hybrid_use_pch target)
  if(NOT HYBRID_PCH)
    return()
  endif()
  get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
  get_target_property(own ${target} PRECOMPILE_HEADERS)
  get_target_property(reuse ${target} PRECOMPILE_HEADERS_REUSE_FROM)
  if(pic OR own OR reuse)
    return()
  endif()
  hybrid_uses_openmp(openmp ${target})
  hybrid_pch_host(host ${openmp})
  target_precompile_headers(${target} REUSE_FROM ${host})
  get_target_property(sources ${target} SOURCES)
  foreach(src ${sources})
    get_source_file_property(options ${src} TARGET_DIRECTORY ${target} COMPILE_OPTIONS)
    get_source_file_property(flags ${src} TARGET_DIRECTORY ${target} COMPILE_FLAGS)
    if(options OR flags)
      set_source_files_properties(${src} TARGET_DIRECTORY ${target} PROPERTIES
                                  SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()

# Every test binary reuses the tests' PCH; called once the whole tree is configured (so
# that every link, OpenMP's included, is known).
function(hybrid_use_test_pch)
  get_property(targets DIRECTORY ${PROJECT_SOURCE_DIR}/tests PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      hybrid_use_pch(${target})
    endif()
  endforeach()
endfunction()

# Test code is compiled for build speed, not run speed (the libraries it tests keep the
# build type's optimisation): -O1.
function(hybrid_test_compile_options target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O1>)
  # GCC 12 reports std::string copies inlined at -O1 as out of bounds or
  # overlapping (GCC bugs 105329, 105651): false positives, not errors, in tests.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-restrict -Wno-stringop-overflow
                                             -Wno-stringop-overread)
  endif()
endfunction()

# Unity build of a test binary, in batches of HYBRID_UNITY_BATCH sources. Two test
# files may both define a helper or constant of the same name at namespace scope (in an
# anonymous namespace, static, or a const): together in one translation unit, that
# would be a redefinition, or worse, a silent overload. So the batches are formed
# here: a file joins the first batch that has room and declares none of its names.
# The names are read from unindented lines (clang-format indents nothing in a
# namespace): the identifier before the first "(", "=", "{", "[" or ";", the name after
# struct/class/enum/using, macros. A file with a using-directive at namespace scope is
# compiled on its own (the directive would reach the files after it). Editing a test file re-runs this (configure
# dependency), so the batches always match the sources.
function(hybrid_unity_build target)
  if(HYBRID_UNITY_BATCH LESS 2)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "\\.cpp$")
  list(LENGTH sources count)
  if(count LESS 2)
    return()
  endif()
  set(batches "")
  foreach(src ${sources})
    hybrid_namespace_scope_names(names ${src})
    if("<using namespace>" IN_LIST names)
      # Its using-directive would reach the files after it in a batch: compiled alone.
      set_source_files_properties(${src} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
      continue()
    endif()
    set(chosen "")
    foreach(b ${batches})
      if(NOT chosen STREQUAL "")
        break()
      endif()
      list(LENGTH batch_${b}_files size)
      if(size GREATER_EQUAL HYBRID_UNITY_BATCH)
        continue()
      endif()
      set(clash OFF)
      foreach(name ${names})
        if(name IN_LIST batch_${b}_names)
          set(clash ON)
          break()
        endif()
      endforeach()
      if(NOT clash)
        set(chosen ${b})
      endif()
    endforeach()
    if(chosen STREQUAL "")
      list(LENGTH batches chosen)
      list(APPEND batches ${chosen})
    endif()
    list(APPEND batch_${chosen}_files ${src})
    list(APPEND batch_${chosen}_names ${names})
    set_source_files_properties(${src} PROPERTIES UNITY_GROUP ${target}_${chosen})
  endforeach()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${sources})
endfunction()

# The names a source declares at namespace scope (see hybrid_unity_build).
function(hybrid_namespace_scope_names out src)
  file(STRINGS ${src} lines REGEX "^([A-Za-z_]|\\[\\[|#define )")
  set(names "")
  foreach(line ${lines})
    string(REGEX REPLACE "^(\\[\\[[^]]*\\]\\] *)+" "" line "${line}")  # [[noreturn]] ...
    if(line MATCHES "^using namespace ")
      list(APPEND names "<using namespace>")
      continue()
    endif()
    if(line MATCHES "^(TEST|TYPED_TEST|INSTANTIATE_|GTEST_|REGISTER_|namespace |static_assert|extern \"C\")")
      continue()
    endif()
    if(line MATCHES "^#define ([A-Za-z_][A-Za-z0-9_]*)")
      list(APPEND names ${CMAKE_MATCH_1})
    elseif(line MATCHES "^MATCHER[A-Z0-9_]*\\(([A-Za-z_][A-Za-z0-9_]*)")
      list(APPEND names ${CMAKE_MATCH_1})
    elseif(line MATCHES "^using ([A-Za-z_][A-Za-z0-9_]*) = *([^;]*)")
      # The same alias twice is fine: only one to another type clashes.
      string(REPLACE " " "" target "${CMAKE_MATCH_2}")
      list(APPEND names "${CMAKE_MATCH_1}=${target}")
    elseif(line MATCHES "^using ")
      continue()  # a using-declaration may be repeated
    elseif(line MATCHES "^(template <.*> )?(struct|class|union|enum class|enum struct|enum) ([A-Za-z_][A-Za-z0-9_]*)")
      list(APPEND names ${CMAKE_MATCH_3})
    elseif(line MATCHES "^(template <[^()]*> )?([^(={;[]*[^A-Za-z0-9_(={;[])?([A-Za-z_][A-Za-z0-9_]*) *[(={;[]")
      list(APPEND names ${CMAKE_MATCH_3})
      # Every declarator of `constexpr int M = 24, K = 20, N = 28;`, not only the first.
      string(REGEX MATCHALL ", *[A-Za-z_][A-Za-z0-9_]* *=" more "${line}")
      foreach(m ${more})
        string(REGEX REPLACE "^, *([A-Za-z_][A-Za-z0-9_]*) *=$" "\\1" m "${m}")
        list(APPEND names ${m})
      endforeach()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  set(${out} ${names} PARENT_SCOPE)
endfunction()

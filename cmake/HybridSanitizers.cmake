# HYBRID_SANITIZE=address|undefined|address,undefined|thread: build our targets (everything that links
# hybrid_options) with a GCC sanitizer. scripts/sanitize.sh configures a build
# directory per mode and runs the tests with the matching runtime options and
# suppressions (scripts/sanitizers/). Third-party libraries stay uninstrumented.
set(HYBRID_SANITIZE "" CACHE STRING "Sanitizers for our targets: address, undefined, address,undefined, thread or empty")
set_property(CACHE HYBRID_SANITIZE PROPERTY STRINGS "" address undefined "address,undefined" thread)

if(HYBRID_SANITIZE)
  if(NOT HYBRID_SANITIZE MATCHES "^(address|undefined|address,undefined|thread)$")
    message(FATAL_ERROR "HYBRID_SANITIZE=${HYBRID_SANITIZE}: expected address, undefined, address,undefined or thread")
  endif()
  # Frame pointers give whole stacks in every report; line tables give file:line
  # (-g1: full debug info would only slow the build).
  set(flags -fsanitize=${HYBRID_SANITIZE} -fno-omit-frame-pointer -g1)
  if(HYBRID_SANITIZE MATCHES "undefined")
    # A finding must fail the test, not print a line and carry on.
    list(APPEND flags -fno-sanitize-recover=undefined)
  endif()
  target_compile_options(hybrid_options INTERFACE $<$<COMPILE_LANGUAGE:CXX,C>:${flags}>)
  target_link_options(hybrid_options INTERFACE $<$<LINK_LANGUAGE:CXX,C>:-fsanitize=${HYBRID_SANITIZE}>)
  message(STATUS "hybrid: sanitizer ${HYBRID_SANITIZE} on our targets")
endif()

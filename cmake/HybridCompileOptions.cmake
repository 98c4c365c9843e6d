# Warnings and CPU flags shared by every hybrid target (through hybrid_options).
add_library(hybrid_options INTERFACE)
target_compile_options(hybrid_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unknown-pragmas>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${HYBRID_WERROR}>>:-Werror>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${HYBRID_NATIVE}>>:-march=native>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<BOOL:${HYBRID_NATIVE}>>>:-march=x86-64-v3>)
target_include_directories(hybrid_options INTERFACE ${PROJECT_SOURCE_DIR})

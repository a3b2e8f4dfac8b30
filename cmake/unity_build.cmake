# Unity builds: ATTOGRAD_UNITY_BATCH sources per translation unit (0: off) for the library and
# the program's code. The sources of a batch share one parse of their Eigen, fmt, nlohmann-json and
# standard headers and one copy of the template code instantiated from them, which roughly halves
# a cold build (bench/README.md, "Build time"); a small batch keeps the rebuild after editing one
# file short. Sources with compile options of their own (optim/adam.cpp, core/softmax_row.cpp,
# optim/distributed.cpp) are compiled alone, as CMake does for every such source.
set(ATTOGRAD_UNITY_BATCH 8 CACHE STRING "Sources per unity translation unit (0: no unity build)")
if(ATTOGRAD_UNITY_BATCH GREATER 0)
  # GCC 12's false warnings (bugs 105593 on its own AVX-512 intrinsics, 105651 -Wrestrict in
  # std::string) follow its inlining, which sees a whole batch: core/gcc12_avx512_warning.hpp
  # silences the first for one source file, so a batch needs it for all of them.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(attograd PRIVATE -Wno-uninitialized -Wno-restrict)
  endif()
  # GCC's -Wsubobject-linkage is meant for headers, and in a batch every source but the first is
  # an included file: a kernel that captures a file-local type would warn there and nowhere else.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(attograd PRIVATE -Wno-subobject-linkage)
  endif()
  foreach(target attograd attograd_cli)
    if(TARGET ${target})
      set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${ATTOGRAD_UNITY_BATCH}
                                                 UNITY_BUILD_UNIQUE_ID ATTOGRAD_UNITY_ID)
      # Each op's file names itself in its messages with a file-local `kOp`; in a unity translation
      # unit the name gets a suffix unique to its source file (CMake's ATTOGRAD_UNITY_ID), so two
      # such files can share a batch.
      set_property(TARGET ${target} PROPERTY UNITY_BUILD_CODE_BEFORE_INCLUDE
                   "#define ATTOGRAD_UNITY_CAT2(a, b) a##_##b\n#define ATTOGRAD_UNITY_CAT(a, b) ATTOGRAD_UNITY_CAT2(a, b)\n#define kOp ATTOGRAD_UNITY_CAT(kOp, ATTOGRAD_UNITY_ID)")
      set_property(TARGET ${target} PROPERTY UNITY_BUILD_CODE_AFTER_INCLUDE
                   "#undef kOp\n#undef ATTOGRAD_UNITY_CAT\n#undef ATTOGRAD_UNITY_CAT2")
    endif()
  endforeach()
endif()

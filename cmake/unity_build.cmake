# Unity builds: ATTOGRAD_UNITY_BATCH sources per translation unit (0: off) for the library and
# the program's code. The sources of a batch share one parse of their Eigen, fmt, nlohmann-json and
# standard headers and one copy of the template code instantiated from them, which roughly halves
# a cold build (bench/README.md, "Build time"); a small batch keeps the rebuild after editing one
# file short. Sources with compile options of their own (optim/adam.cpp, core/softmax_row.cpp,
# optim/distributed.cpp) are compiled alone, as CMake does for every such source.
set(ATTOGRAD_UNITY_BATCH 8 CACHE STRING "Sources per unity translation unit (0: no unity build)")
if(ATTOGRAD_UNITY_BATCH GREATER 0)
  foreach(target attograd attograd_cli)
    if(TARGET ${target})
      set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${ATTOGRAD_UNITY_BATCH})
    endif()
  endforeach()
endif()

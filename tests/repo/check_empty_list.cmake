# Fails with MESSAGE followed by FOUND (a comma-separated list) when FOUND is not empty.
#   cmake "-DFOUND=a,b" "-DMESSAGE=..." -P check_empty_list.cmake
if(NOT "${FOUND}" STREQUAL "")
  message(FATAL_ERROR "${MESSAGE}: ${FOUND}")
endif()

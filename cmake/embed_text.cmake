# Build-time script: writes OUTPUT, a C++ source defining one function per text file that returns
# the file's bytes as a std::string_view (a raw string literal), in namespace NAMESPACE, after
# `#include "HEADER"`. ENTRIES holds function=path pairs separated by '|' (a ';' would not survive
# a custom command's shell).
#   cmake -DOUTPUT=x.cpp -DHEADER=a/b.hpp -DNAMESPACE=ns "-DENTRIES=f=path|g=path" -P embed_text.cmake
set(delimiter "attograd_embed")
set(text "// Generated from the files named below by cmake/embed_text.cmake at build time; do not edit.\n")
string(APPEND text "#include \"${HEADER}\"\n\nnamespace ${NAMESPACE} {\n")
string(REPLACE "|" ";" ENTRIES "${ENTRIES}")
foreach(entry IN LISTS ENTRIES)
  string(REGEX MATCH "^([A-Za-z_][A-Za-z0-9_]*)=(.+)$" matched "${entry}")
  if(NOT matched)
    message(FATAL_ERROR "embed_text: bad entry '${entry}' (expected function=path)")
  endif()
  set(function ${CMAKE_MATCH_1})
  set(path ${CMAKE_MATCH_2})
  file(READ ${path} content)
  string(FIND "${content}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "embed_text: ${path} contains the raw string delimiter )${delimiter}\"")
  endif()
  get_filename_component(name ${path} NAME)
  string(APPEND text "\n// ${name}\nstd::string_view ${function}() {\n    return R\"${delimiter}(\n${content})${delimiter}\";\n}\n")
endforeach()
string(APPEND text "\n}  // namespace ${NAMESPACE}\n")
# Rewritten only when the text changes, so that an unchanged asset recompiles nothing.
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} previous)
  if(previous STREQUAL text)
    return()
  endif()
endif()
file(WRITE ${OUTPUT} "${text}")

# Every Markdown file that the public headers, the program's sources and the READMEs name must
# exist in the repository: a user has the source tree, not the authors' notes.
#   cmake -DSOURCE_DIR=<repo> -P check_doc_references.cmake
file(GLOB files RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/attograd.hpp ${SOURCE_DIR}/core/*.hpp ${SOURCE_DIR}/nn/*.hpp ${SOURCE_DIR}/optim/*.hpp
     ${SOURCE_DIR}/data/*.hpp ${SOURCE_DIR}/inspect/*.hpp ${SOURCE_DIR}/examples/*.cpp
     ${SOURCE_DIR}/examples/*/*.hpp ${SOURCE_DIR}/examples/*/*.cpp ${SOURCE_DIR}/tests/fixtures/*.py
     ${SOURCE_DIR}/README.md ${SOURCE_DIR}/bench/README.md)
set(missing "")
foreach(file IN LISTS files)
  file(STRINGS ${SOURCE_DIR}/${file} lines ENCODING UTF-8 REGEX "[A-Za-z0-9_./-]+\\.md|design §")
  foreach(line IN LISTS lines)
    if(line MATCHES "design §")
      list(APPEND missing "${file}: 'design §' (a document users do not have)")
    endif()
    string(REGEX MATCHALL "[A-Za-z0-9_./-]+\\.md" names "${line}")
    foreach(name IN LISTS names)
      string(REGEX REPLACE "^\\.?/" "" name "${name}")
      get_filename_component(dir ${file} DIRECTORY)
      if(NOT EXISTS ${SOURCE_DIR}/${name} AND NOT EXISTS ${SOURCE_DIR}/${dir}/${name})
        list(APPEND missing "${file}: ${name}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(missing)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "references to documents that are not in the repository:\n  ${text}")
endif()
message(STATUS "every document reference resolves (${SOURCE_DIR})")

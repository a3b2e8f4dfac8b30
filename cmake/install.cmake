# Installation, in three components that `make package` turns into Debian packages
# (cmake/package.cmake):
#   dev      the static library, the public headers under include/attograd/, a CMake package
#            (find_package(attograd) -> attograd::attograd) and a pkg-config file (attograd.pc)
#   program  the `attograd` program, its man page (from --help, with help2man) and bash completion
#   doc      the documentation site, the directory ATTOGRAD_SITE_DIR when it exists
#
# Headers: every folder that holds the library's sources (core/, nn/, ...; a new folder is
# picked up when its sources join the library) is installed whole, sub-folders included, except
# any detail/ folder: those hold kernels and helpers that are not API (a detail header that a
# public header includes is installed with it: core/detail/backward_fn.hpp, since
# autograd::record takes a BackwardFn by value). Only include/ is on the
# user's include path, and the installed headers include each other as "attograd/core/x.hpp"
# (rewritten from the source tree's "core/x.hpp" as they are installed), so a user's own core/ or
# nn/ folder never shadows ours.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS attograd EXPORT attogradTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)

# The library's top-level source folders, from its sources.
get_target_property(attograd_sources attograd SOURCES)
set(ATTOGRAD_HEADER_DIRS "")
foreach(source IN LISTS attograd_sources)
  # generated sources (the report's embedded assets) live in the build tree, not a header folder
  string(FIND "${source}" "${CMAKE_CURRENT_BINARY_DIR}/" in_build)
  if(in_build EQUAL 0)
    continue()
  endif()
  file(RELATIVE_PATH relative ${CMAKE_CURRENT_SOURCE_DIR} ${source})
  string(REGEX MATCH "^[^/]+/" dir "${relative}")
  if(dir)
    string(REGEX REPLACE "/$" "" dir "${dir}")
    list(APPEND ATTOGRAD_HEADER_DIRS ${dir})
  endif()
endforeach()
list(REMOVE_DUPLICATES ATTOGRAD_HEADER_DIRS)
list(SORT ATTOGRAD_HEADER_DIRS)

install(CODE "
  set(src \"${CMAKE_CURRENT_SOURCE_DIR}\")
  set(dirs \"${ATTOGRAD_HEADER_DIRS}\")
  set(dest \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/include/attograd\")
  file(GLOB headers RELATIVE \${src} \${src}/attograd.hpp)
  foreach(dir IN LISTS dirs)
    file(GLOB_RECURSE dir_headers RELATIVE \${src} \${src}/\${dir}/*.hpp)
    list(FILTER dir_headers EXCLUDE REGEX \"(^|/)detail/\")
    list(APPEND headers \${dir_headers})
  endforeach()
  string(REPLACE \";\" \"|\" alternatives \"\${dirs}\")
  # detail headers that installed headers include, and those they include in turn
  set(pending \${headers})
  while(pending)
    list(POP_FRONT pending header)
    file(STRINGS \${src}/\${header} includes REGEX \"#include \\\"(\${alternatives})/detail/\")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE \".*#include \\\"([^\\\"]+)\\\".*\" \"\\\\1\" included \"\${line}\")
      list(FIND headers \${included} index)  # not IN_LIST: install scripts run under old policies
      if(index EQUAL -1)
        list(APPEND headers \${included})
        list(APPEND pending \${included})
      endif()
    endforeach()
  endwhile()
  foreach(header IN LISTS headers)
    file(READ \${src}/\${header} text)
    string(REGEX REPLACE \"#include \\\"(\${alternatives})/\" \"#include \\\"attograd/\\\\1/\" text \"\${text}\")
    message(STATUS \"Installing: \${dest}/\${header}\")
    file(WRITE \${dest}/\${header} \"\${text}\")
  endforeach()
" COMPONENT dev)

install(EXPORT attogradTargets NAMESPACE attograd:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attograd
        COMPONENT dev)
configure_package_config_file(cmake/attogradConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/attogradConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attograd)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/attogradConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/attogradConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/attogradConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attograd COMPONENT dev)

# pkg-config: the library is static, so Libs names everything it links (LIBXSMM, OpenMP, MPI).
set(ATTOGRAD_PC_LIBS "-lattograd")
if(ATTOGRAD_USE_LIBXSMM)
  string(APPEND ATTOGRAD_PC_LIBS " ${ATTOGRAD_LIBXSMM_LIBRARY} ${ATTOGRAD_LIBXSMM_NOBLAS_LIBRARY} -ldl -lrt -lm")
endif()
set(ATTOGRAD_PC_REQUIRES "fmt nlohmann_json")
if(ATTOGRAD_USE_MPI)
  string(APPEND ATTOGRAD_PC_REQUIRES " ompi-cxx")
endif()
if(ATTOGRAD_USE_BLAS)
  string(APPEND ATTOGRAD_PC_LIBS " -lblas")
endif()
string(APPEND ATTOGRAD_PC_LIBS " -fopenmp -pthread")
# An instrumented library needs the sanitizers' runtimes wherever it is linked.
if(ATTOGRAD_SANITIZE)
  string(APPEND ATTOGRAD_PC_LIBS " -fsanitize=address,undefined")
endif()
# The prefix relative to the .pc file, so the installed tree can move (a scratch root, a DESTDIR).
file(RELATIVE_PATH ATTOGRAD_PC_PREFIX_FROM_PCFILEDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/attograd.pc.in ${CMAKE_CURRENT_BINARY_DIR}/attograd.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/attograd.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)

# The program, its man page and its bash completion.
if(TARGET attograd_program)
  install(TARGETS attograd_program RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT program)
  install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/examples/attograd/attograd.bash-completion
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME attograd COMPONENT program)
  # help2man (Debian's help2man) writes the page from the program's --help (cmake/man_page.cmake).
  find_program(ATTOGRAD_HELP2MAN help2man)
  find_program(ATTOGRAD_GZIP gzip)
  if(ATTOGRAD_HELP2MAN AND ATTOGRAD_GZIP)
    set(man ${CMAKE_CURRENT_BINARY_DIR}/man/attograd.1)
    add_custom_command(OUTPUT ${man}.gz
      COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:attograd_program> -DHELP2MAN=${ATTOGRAD_HELP2MAN}
              -DGZIP=${ATTOGRAD_GZIP} -DOUTPUT=${man} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/man_page.cmake
      DEPENDS attograd_program ${CMAKE_CURRENT_SOURCE_DIR}/cmake/man_page.cmake
      COMMENT "Writing the man page attograd.1 from attograd --help"
      VERBATIM)
    add_custom_target(attograd_man ALL DEPENDS ${man}.gz)
    install(FILES ${man}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT program)
  else()
    message(STATUS "attograd: no man page (help2man or gzip not found; apt-get install help2man)")
  endif()
endif()

# The documentation site (`make docs` writes it to build/site), installed when it exists.
set(ATTOGRAD_SITE_DIR ${CMAKE_CURRENT_BINARY_DIR}/site CACHE PATH "The built documentation site that the doc package holds")
install(DIRECTORY ${ATTOGRAD_SITE_DIR}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/attograd-doc/html COMPONENT doc OPTIONAL)

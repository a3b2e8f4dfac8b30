# Debian packages from the install components (cmake/install.cmake), built by `make package`
# (CPack's DEB generator, into build/packages):
#   libattograd-dev  component dev:     static library, headers, CMake package, pkg-config file
#   attograd         component program: the program, its man page, bash completion
#   attograd-doc     component doc:     the documentation site (only when ATTOGRAD_SITE_DIR exists)
# Packaging installs what is already built: it builds nothing (the Makefile builds the library,
# the program and its man page first), so packaging never compiles the tests or benchmarks.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME attograd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "attograd maintainers <attograd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "small autograd framework for learning attention and looking inside it")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_COMPONENTS_ALL dev program doc)
# The doc component leaves the list at packaging time when the site has not been built.
set(CPACK_ATTOGRAD_SITE_DIR ${ATTOGRAD_SITE_DIR})
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_SOURCE_DIR}/cmake/package_components.cmake)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libattograd-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION "attograd: static library, headers, CMake package and pkg-config file
 A C++20 autograd framework for attention: tensors and their tape, attention layers
 (additive, dot, bilinear scores; global and local; soft and hard; multi-head), Transformers,
 recurrent encoder-decoders, optimizers, toy tasks, and tools that draw and test the attention a
 model learned. Link attograd::attograd after find_package(attograd), or use
 pkg-config --cflags --libs attograd.")
set(dev_depends "libfmt-dev, libeigen3-dev, nlohmann-json3-dev")
if(ATTOGRAD_USE_LIBXSMM)
  string(APPEND dev_depends ", libxsmm-dev")
endif()
if(ATTOGRAD_USE_MPI)
  string(APPEND dev_depends ", libopenmpi-dev")
endif()
if(ATTOGRAD_USE_BLAS)
  string(APPEND dev_depends ", libblas-dev")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${dev_depends}, g++ (>= 4:12)")

set(CPACK_DEBIAN_PROGRAM_PACKAGE_NAME attograd)
set(CPACK_DEBIAN_PROGRAM_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PROGRAM_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PROGRAM_PACKAGE_SUGGESTS attograd-doc)
set(CPACK_COMPONENT_PROGRAM_DESCRIPTION "train small attention models on toy tasks and look inside them
 The attograd program trains attention models (sequence-to-sequence, self-attention encoders,
 recurrent encoder-decoders) on bundled toy tasks or TSV files, evaluates them, and draws every
 layer's and head's attention in the terminal, as SVG or as an HTML report.")

set(CPACK_DEBIAN_DOC_PACKAGE_NAME attograd-doc)
set(CPACK_DEBIAN_DOC_PACKAGE_SECTION doc)
set(CPACK_DEBIAN_DOC_PACKAGE_ARCHITECTURE all)
set(CPACK_COMPONENT_DOC_DESCRIPTION "attograd documentation: guides, tutorials and API reference
 The attograd documentation site (HTML), under /usr/share/doc/attograd-doc/html.")

include(CPack)

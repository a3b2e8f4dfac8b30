# CPack project config (read when `cpack` runs): the doc package exists only when the
# documentation site has been built (`make docs`).
if(NOT EXISTS "${CPACK_ATTOGRAD_SITE_DIR}/index.html")
  list(REMOVE_ITEM CPACK_COMPONENTS_ALL doc)
  message(STATUS "attograd: no attograd-doc package (${CPACK_ATTOGRAD_SITE_DIR}/index.html not built: make docs)")
endif()

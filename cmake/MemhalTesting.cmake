# memhal_add_test(NAME SOURCES... [LABELS l...] [LIBS l...]): one GoogleTest binary, registered
# with CTest test by test (gtest_discover_tests) so a skipped test shows as skipped.
include(GoogleTest)

function(memhal_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LABELS;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE memhal_static memhal_test_support GTest::gtest GTest::gtest_main ${ARG_LIBS})
  memhal_warnings(${name})
  set(labels unit ${ARG_LABELS})
  gtest_discover_tests(${name} PROPERTIES LABELS "${labels}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
                       DISCOVERY_TIMEOUT 60)
endfunction()

# memhal_add_test(NAME SOURCES... [LABELS l...] [LIBS l...] [TIMEOUT s]): one GoogleTest binary,
# registered with CTest test by test (gtest_discover_tests) so a skipped test shows as skipped.
# TIMEOUT (seconds per test, default CTest's) makes a hang a failure.
include(GoogleTest)

function(memhal_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LABELS;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE memhal_static memhal_test_support GTest::gtest GTest::gtest_main ${ARG_LIBS})
  memhal_warnings(${name})
  set(timeout)
  if(ARG_TIMEOUT)
    set(timeout TIMEOUT ${ARG_TIMEOUT})
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS unit SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]" ${timeout}
                       DISCOVERY_TIMEOUT 60)
  if(ARG_LABELS)
    # gtest_discover_tests flattens a list-valued property (CMake 3.25), so more labels than
    # `unit` are set by a script CTest reads after the discovered tests.
    set(labels unit ${ARG_LABELS})
    set(script ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake)
    file(WRITE ${script} "if(NOT \"\${${name}_TESTS}\" STREQUAL \"\")\n"
                         "  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"${labels}\")\nendif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
  endif()
endfunction()

# memhal_add_vm_test(NAME SOURCES... [MODULES m,...] [MODPARAMS module.param=value...] [ENV N=V...]
# [LIBS l...] [LABELS l...]): a test binary
# run in a throw-away VM whose real Linux kernel has DMA heaps and udmabuf (and, with MODULES,
# drivers such as vivid and vgem), via run-in-dmaheap-vm. CTest label `dmaheap`; the test is skipped
# (exit 77) where the runner is missing. Linked statically where every dependency has a static
# archive; otherwise (memhal links libraries shipped only as .so) dynamically, and the runner
# copies the libraries ldd reports into the VM. Not built with sanitizers.
set(MEMHAL_DMAHEAP_VM "${PROJECT_SOURCE_DIR}/../shared/tools/run-in-dmaheap-vm"
    CACHE FILEPATH "run-in-dmaheap-vm: boots a kernel with DMA heaps under qemu and runs a program in it")

option(MEMHAL_VM_TEST_STATIC "Link the DMA-heap VM test binaries statically" OFF)

function(memhal_add_vm_test name)
  cmake_parse_arguments(ARG "" "MODULES" "SOURCES;LIBS;ENV;MODPARAMS;LABELS" ${ARGN})
  if(MEMHAL_SANITIZE)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE memhal_static memhal_test_support GTest::gtest GTest::gtest_main ${ARG_LIBS})
  if(MEMHAL_VM_TEST_STATIC)
    target_link_options(${name} PRIVATE -static)
  endif()
  memhal_warnings(${name})
  set(modules)
  foreach(env ${ARG_ENV})
    list(APPEND modules --env ${env})
  endforeach()
  if(ARG_MODULES)
    list(APPEND modules --modules ${ARG_MODULES})
  endif()
  foreach(param ${ARG_MODPARAMS})
    list(APPEND modules --modparam ${param})
  endforeach()
  add_test(NAME ${name}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/support/run_in_vm.sh ${MEMHAL_DMAHEAP_VM} ${modules}
                   --env MEMHAL_TEST_REQUIRE_DMABUF=1 -- $<TARGET_FILE:${name}>)
  set_tests_properties(${name} PROPERTIES LABELS "dmaheap;${ARG_LABELS}" SKIP_RETURN_CODE 77 TIMEOUT 900 RESOURCE_LOCK dmaheap_vm)
endfunction()

# memhal_add_compile_failure_test(NAME SOURCE src [LIBS l...] [INCLUDES dir...] [OPTIONS o...]
# EXPECT regex): a rule the build enforces. SOURCE must compile as is (the control) and must fail
# to compile with MEMHAL_COMPILE_FAILURE defined, with a diagnostic matching EXPECT; both are
# built by the test itself (targets NAME_ok and NAME_fail, excluded from `all`) with LIBS's usage
# requirements, INCLUDES and OPTIONS.
function(memhal_add_compile_failure_test name)
  cmake_parse_arguments(ARG "" "SOURCE;EXPECT" "LIBS;INCLUDES;OPTIONS" ${ARGN})
  foreach(variant ok fail)
    add_library(${name}_${variant} OBJECT EXCLUDE_FROM_ALL ${ARG_SOURCE})
    target_link_libraries(${name}_${variant} PRIVATE ${ARG_LIBS})
    target_include_directories(${name}_${variant} PRIVATE ${ARG_INCLUDES})
    target_compile_options(${name}_${variant} PRIVATE ${ARG_OPTIONS})
  endforeach()
  target_compile_definitions(${name}_fail PRIVATE MEMHAL_COMPILE_FAILURE=1)
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DTARGET=${name} "-DEXPECT=${ARG_EXPECT}"
                   -P ${PROJECT_SOURCE_DIR}/cmake/expect_compile_failure.cmake)
  # Builds in the shared build directory: one at a time.
  set_tests_properties(${name} PROPERTIES LABELS "unit;compile" RESOURCE_LOCK memhal_build_dir)
endfunction()

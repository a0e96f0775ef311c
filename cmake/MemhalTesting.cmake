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

set(MEMHAL_DMAHEAP_VM_CROSS_REASON
    "the DMA-heap VM (run-in-dmaheap-vm) boots an x86-64 kernel, which cannot run ${CMAKE_SYSTEM_PROCESSOR} programs: run these on a board (README: cross-building for a board)")

# memhal_add_skipped_test(NAME REASON [LABELS l...]): a test that cannot run in this build (a
# cross build lacking a peer library, hardware or a VM of its architecture), registered anyway
# so that CTest lists it as skipped and prints REASON instead of leaving it out silently.
function(memhal_add_skipped_test name reason)
  cmake_parse_arguments(ARG "" "" "LABELS" ${ARGN})
  add_test(NAME ${name} COMMAND sh -c "echo \"SKIPPED: \$0\" >&2; exit 77" "${reason}")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "skipped;${ARG_LABELS}")
endfunction()

option(MEMHAL_VM_TEST_STATIC "Link the DMA-heap VM test binaries statically" OFF)

function(memhal_add_vm_test name)
  cmake_parse_arguments(ARG "" "MODULES" "SOURCES;LIBS;ENV;MODPARAMS;LABELS" ${ARGN})
  if(MEMHAL_SANITIZE)
    return()
  endif()
  if(CMAKE_CROSSCOMPILING)
    memhal_add_skipped_test(${name} "${MEMHAL_DMAHEAP_VM_CROSS_REASON}" LABELS dmaheap ${ARG_LABELS})
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

# memhal_mesa25_fixture(): the CTest fixture `mesa25` (test gl.fetch_mesa25, labels gl and mesa25):
# scripts/fetch-mesa25.sh unpacks Mesa 25 from Debian's bookworm-backports into
# MEMHAL_MESA25_DIR once (cached there); where the suite cannot be fetched it says why in
# MEMHAL_MESA25_DIR/unavailable and the tests that need it skip with that reason.
set(MEMHAL_MESA25_DIR "${CMAKE_BINARY_DIR}/mesa25" CACHE PATH
    "Where the GL tests' Mesa 25 (bookworm-backports, unpacked, not installed) is kept")

function(memhal_mesa25_fixture)
  if(TEST gl.fetch_mesa25)
    return()
  endif()
  add_test(NAME gl.fetch_mesa25 COMMAND ${PROJECT_SOURCE_DIR}/scripts/fetch-mesa25.sh ${MEMHAL_MESA25_DIR})
  set_tests_properties(gl.fetch_mesa25 PROPERTIES LABELS "gl;mesa25" FIXTURES_SETUP mesa25 TIMEOUT 600
                                                  RESOURCE_LOCK mesa25_fetch)
endfunction()

# memhal_add_mesa25_run(NAME [TIMEOUT s]): the GoogleTest binary NAME (made by memhal_add_test)
# registered a second time, test by test as `<test>.mesa25`, on Mesa 25 from the `mesa25`
# fixture: the environment points glvnd's libEGL at its vendor library. Labels gl and mesa25
# (not unit: sanitizer runs leave Mesa 25 alone). The tests see MEMHAL_TEST_MESA25 and skip
# with the fixture's reason when it could not fetch Mesa 25 (tests/image/gl_test_env.hpp).
function(memhal_add_mesa25_run name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "" ${ARGN})
  if(CMAKE_CROSSCOMPILING OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
    return()  # the backports packages are fetched for the x86-64 host
  endif()
  memhal_mesa25_fixture()
  set(lib "${MEMHAL_MESA25_DIR}/root/usr/lib/x86_64-linux-gnu")
  set(vendor "${MEMHAL_MESA25_DIR}/root/usr/share/glvnd/egl_vendor.d/50_mesa.json")
  gtest_discover_tests(${name} TEST_SUFFIX .mesa25 TEST_LIST ${name}_mesa25_TESTS DISCOVERY_TIMEOUT 60)
  set(timeout)
  if(ARG_TIMEOUT)
    set(timeout "TIMEOUT ${ARG_TIMEOUT}")
  endif()
  # Set after discovery (list-valued properties, see memhal_add_test).
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${name}_mesa25.cmake)
  file(WRITE ${script}
       "if(NOT \"\${${name}_mesa25_TESTS}\" STREQUAL \"\")\n"
       "  set_tests_properties(\${${name}_mesa25_TESTS} PROPERTIES LABELS \"gl;mesa25\" FIXTURES_REQUIRED mesa25\n"
       "    SKIP_REGULAR_EXPRESSION \"\\\\[  SKIPPED \\\\]\" ${timeout}\n"
       "    ENVIRONMENT \"MEMHAL_TEST_MESA25=${MEMHAL_MESA25_DIR};LD_LIBRARY_PATH=${lib};"
       "__EGL_VENDOR_LIBRARY_FILENAMES=${vendor};LIBGL_ALWAYS_SOFTWARE=1\")\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
endfunction()

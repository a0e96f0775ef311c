# cmake -DBUILD_DIR=dir -DTARGET=name -DEXPECT=regex -P expect_compile_failure.cmake: builds
# TARGET_ok (must succeed, so the source and its include paths are sound) and TARGET_fail (must
# fail, with a compiler diagnostic matching EXPECT). See memhal_add_compile_failure_test().
foreach(variant ok fail)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}_${variant}
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  set(${variant}_status ${status})
  set(${variant}_output "${output}")
endforeach()
if(NOT ok_status EQUAL 0)
  message(FATAL_ERROR "${TARGET}_ok (the control, without MEMHAL_COMPILE_FAILURE) does not build:\n${ok_output}")
endif()
if(fail_status EQUAL 0)
  message(FATAL_ERROR "${TARGET}_fail built, but the rule it breaks should have stopped it:\n${fail_output}")
endif()
if(NOT fail_output MATCHES "${EXPECT}")
  message(FATAL_ERROR "${TARGET}_fail failed, but not with a diagnostic matching '${EXPECT}':\n${fail_output}")
endif()
message(STATUS "${TARGET}_fail failed to build as it must: matched '${EXPECT}'")

# Installs the shared library, the public headers, the memhal command (RUNPATH to the
# library), a CMake package (find_package(memhal CONFIG [COMPONENTS c cxx]) gives memhal::memhal
# and memhal::c) and a pkg-config file whose Cflags suit C and C++ alike.
include(CMakePackageConfigHelpers)

set_target_properties(memhal_c PROPERTIES EXPORT_NAME c)
install(TARGETS memhal memhal_c EXPORT memhalTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/memhal DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/memhal/version.h ${PROJECT_BINARY_DIR}/include/memhal/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/memhal)
if(TARGET memhal_cli)
  # The command finds libmemhal from wherever the prefix lies: $ORIGIN/../lib (RUNPATH).
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(MEMHAL_CLI_RPATH "${CMAKE_INSTALL_LIBDIR}")
  else()
    file(RELATIVE_PATH MEMHAL_BIN_TO_LIB /${CMAKE_INSTALL_BINDIR} /${CMAKE_INSTALL_LIBDIR})
    set(MEMHAL_CLI_RPATH "$ORIGIN/${MEMHAL_BIN_TO_LIB}")
  endif()
  set_target_properties(memhal_cli PROPERTIES INSTALL_RPATH "${MEMHAL_CLI_RPATH}")
  install(TARGETS memhal_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(MEMHAL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/memhal)
install(EXPORT memhalTargets NAMESPACE memhal:: DESTINATION ${MEMHAL_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/memhalConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/memhalConfig.cmake INSTALL_DESTINATION ${MEMHAL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/memhalConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/memhalConfig.cmake ${PROJECT_BINARY_DIR}/memhalConfigVersion.cmake
        DESTINATION ${MEMHAL_CMAKE_DIR})

# Relocatable: the prefix is found from where the .pc file lies.
file(RELATIVE_PATH MEMHAL_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(${PROJECT_SOURCE_DIR}/cmake/memhal.pc.in ${PROJECT_BINARY_DIR}/memhal.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/memhal.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

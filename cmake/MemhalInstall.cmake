# Installs the shared library, the public headers, a CMake package (find_package(memhal
# CONFIG) gives memhal::memhal) and a pkg-config file.
include(CMakePackageConfigHelpers)

set_target_properties(memhal_c PROPERTIES EXPORT_NAME c)
install(TARGETS memhal memhal_c EXPORT memhalTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/memhal DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/memhal/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/memhal)
if(TARGET memhal_cli)
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

# `cmake --install`: headers, libtally.a and the tally CMake package (find_package(tally) -> tally::tally).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tally EXPORT tallyTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(layer gpu distributions runtime)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${layer}/include/tally)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/include/tally DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()

set(TALLY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tally)
install(EXPORT tallyTargets NAMESPACE tally:: DESTINATION ${TALLY_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tallyConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tallyConfig.cmake INSTALL_DESTINATION ${TALLY_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tallyConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tallyConfig.cmake ${PROJECT_BINARY_DIR}/tallyConfigVersion.cmake
  DESTINATION ${TALLY_CMAKE_DIR})

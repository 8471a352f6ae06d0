# `cmake --install <build> --prefix P`: public headers, libdnmf_core.so (and libdnmf_cuda.so beside it), the dnmf
# tool, the licence, and a CMake package so that other projects can find_package(dnmf) and link dnmf::dnmf.
include(CMakePackageConfigHelpers)

set(DNMF_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/dnmf)

# Only include/dnmf is public; headers under src/ stay private. version.hpp comes from the build tree.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/dnmf ${PROJECT_BINARY_DIR}/include/dnmf
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")

install(TARGETS dnmf_core EXPORT dnmfTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The CUDA module must sit in the same directory as libdnmf_core.so: dnmf_core dlopens it from its own
# directory (src/backend/cuda_module.cpp). Not exported: consumers reach it only through the cuda backend.
if(TARGET dnmf_cuda)
  set_target_properties(dnmf_cuda PROPERTIES INSTALL_RPATH "$ORIGIN" INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS dnmf_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

if(TARGET dnmf)
  # Relative, so the installed tree can be moved: bin/dnmf finds lib/libdnmf_core.so wherever the prefix is.
  file(RELATIVE_PATH _dnmf_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  set_target_properties(dnmf PROPERTIES INSTALL_RPATH "$ORIGIN/${_dnmf_bin_to_lib}" INSTALL_RPATH_USE_LINK_PATH ON)
  unset(_dnmf_bin_to_lib)
  install(TARGETS dnmf RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

install(EXPORT dnmfTargets NAMESPACE dnmf:: DESTINATION ${DNMF_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dnmfConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cmake/dnmfConfig.cmake
                              INSTALL_DESTINATION ${DNMF_INSTALL_CMAKEDIR})
# find_package(dnmf X.Y) accepts an install of the same major version, at least X.Y.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/dnmfConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/dnmfConfig.cmake ${PROJECT_BINARY_DIR}/cmake/dnmfConfigVersion.cmake
        DESTINATION ${DNMF_INSTALL_CMAKEDIR})

# cmake -P driver of the `install` test: installs the build into a fresh prefix, builds and runs
# tests/install/consumer against it, and runs the installed dnmf tool. Any failing step fails the test.
#
# Expects: BUILD_DIR, WORK_DIR (scratch, removed first), CONSUMER_SOURCE, VERSION, GENERATOR, MAKE_PROGRAM,
# CXX_COMPILER, BUILD_TYPE, CXX_FLAGS (sanitizer flags, may be empty), HAVE_APP, HAVE_CUDA, and the build's
# GNUInstallDirs BINDIR, LIBDIR, INCLUDEDIR, DOCDIR (relative to the prefix).

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# Fails unless `executable` resolves libdnmf_core.so to the installed copy (through its RPATH), not the build tree's.
function(check_loads_installed_core executable)
  file(GET_RUNTIME_DEPENDENCIES EXECUTABLES ${executable} RESOLVED_DEPENDENCIES_VAR resolved
       UNRESOLVED_DEPENDENCIES_VAR unresolved PRE_INCLUDE_REGEXES "dnmf" PRE_EXCLUDE_REGEXES ".*")
  list(FILTER resolved INCLUDE REGEX "libdnmf_core")
  if(resolved)
    file(REAL_PATH ${resolved} resolved)
  endif()
  file(REAL_PATH ${prefix}/${LIBDIR}/libdnmf_core.so installed_core)
  if(NOT resolved STREQUAL installed_core)
    message(FATAL_ERROR "${executable} loads '${resolved}' (unresolved: ${unresolved}), not ${installed_core}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer)
file(REMOVE_RECURSE ${WORK_DIR})

run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(expected ${INCLUDEDIR}/dnmf/factorize.hpp ${INCLUDEDIR}/dnmf/version.hpp ${LIBDIR}/libdnmf_core.so
                 ${LIBDIR}/cmake/dnmf/dnmfConfig.cmake ${LIBDIR}/cmake/dnmf/dnmfConfigVersion.cmake ${DOCDIR}/LICENSE)
  if(NOT EXISTS ${prefix}/${expected})
    message(FATAL_ERROR "the install lacks ${expected}")
  endif()
endforeach()
# dnmf_core dlopens the CUDA module from its own directory, so it must be installed right beside it.
if(HAVE_CUDA AND NOT EXISTS ${prefix}/${LIBDIR}/libdnmf_cuda.so)
  message(FATAL_ERROR "the install lacks ${LIBDIR}/libdnmf_cuda.so beside libdnmf_core.so")
endif()
# src/ headers are private; only include/dnmf is published.
file(GLOB_RECURSE installed_headers RELATIVE ${prefix}/${INCLUDEDIR} ${prefix}/${INCLUDEDIR}/*)
set(private_headers ${installed_headers})
list(FILTER private_headers EXCLUDE REGEX "^dnmf/[^/]+\\.hpp$")
if(private_headers)
  message(FATAL_ERROR "private headers were installed: ${private_headers}")
endif()

# Only the install may satisfy find_package(dnmf): not the package registry, not the build tree.
run_step("configuring the consumer"
  ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${consumer_build} -G ${GENERATOR} -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
file(STRINGS ${consumer_build}/CMakeCache.txt found_at REGEX "^dnmf_DIR:")
if(NOT found_at STREQUAL "dnmf_DIR:PATH=${prefix}/${LIBDIR}/cmake/dnmf")
  message(FATAL_ERROR "the consumer found dnmf somewhere else: ${found_at}")
endif()
run_step("building the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
check_loads_installed_core(${consumer_build}/consumer)
run_step("running the consumer" ${consumer_build}/consumer)
message(STATUS "consumer:\n${step_output}")
if(NOT step_output MATCHES "dnmf ${VERSION}\n")
  message(FATAL_ERROR "the consumer printed no `dnmf ${VERSION}`")
endif()

if(HAVE_APP)
  run_step("installed dnmf --version" ${prefix}/${BINDIR}/dnmf --version)
  # The first line is the version; the BLAS line follows.
  string(REGEX REPLACE "\n.*" "" printed "${step_output}")
  string(STRIP "${printed}" printed)
  if(NOT printed STREQUAL VERSION OR NOT step_output MATCHES "\nBLAS: ")
    message(FATAL_ERROR "installed dnmf --version printed '${printed}', expected '${VERSION}'")
  endif()
  check_loads_installed_core(${prefix}/${BINDIR}/dnmf)
  message(STATUS "installed dnmf --version: ${printed}")
endif()

# The Python extension (python/): built when nanobind is importable by the Python that CMake finds. `make build`
# points Python_EXECUTABLE at build/venv/bin/python (which has nanobind from PyPI); `pip install .` runs this
# through scikit-build-core with its own build environment (SKBUILD set).
# The interpreter of the tests that need numpy (tests/unit/test_npy.cpp): the one given, `make`'s venv.
if(Python_EXECUTABLE)
  set(DNMF_TEST_PYTHON ${Python_EXECUTABLE})
endif()
if(NOT DNMF_BUILD_PYTHON)
  return()
endif()
find_package(Python 3.9 COMPONENTS Interpreter Development.Module)
if(Python_FOUND)
  execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir OUTPUT_VARIABLE _dnmf_nanobind_dir
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _dnmf_nanobind_status ERROR_QUIET)
endif()
if(NOT Python_FOUND OR NOT _dnmf_nanobind_status EQUAL 0)
  if(SKBUILD)
    message(FATAL_ERROR "dnmf: the Python build needs nanobind (pyproject.toml's build requirements)")
  endif()
  message(STATUS "dnmf: Python extension not built (no nanobind for '${Python_EXECUTABLE}'; `make build` uses "
                 "build/venv)")
  return()
endif()
find_package(nanobind CONFIG REQUIRED PATHS ${_dnmf_nanobind_dir} NO_DEFAULT_PATH)
message(STATUS "dnmf: Python extension for ${Python_EXECUTABLE} (nanobind ${nanobind_VERSION})")
add_subdirectory(python)

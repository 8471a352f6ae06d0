# The library's layers (DESIGN §2, docs/architecture.md), lowest first:
#   util < dist < io < backend < stream < solvers < nmfk < api   (synthetic: on util, used by api)
# Each src/<layer> folder is an OBJECT library, dnmf_<layer>, whose objects make up dnmf_core. Its include path
# holds the public headers (include/), its own folder and those of the layers it links, which are all below
# it: each folder is reached through a build-tree directory, layers/<layer>, that contains only a link named
# after it (layers/<layer>/<layer> -> src/<layer>). So `#include "solvers/solve.hpp"` resolves only in a
# target that links the solvers layer, and an upward include fails to compile ("No such file or directory").

# What every layer compiles with: dnmf_core's public requirements plus its private ones.
add_library(dnmf_layer_base INTERFACE)
target_include_directories(dnmf_layer_base INTERFACE ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
target_link_libraries(dnmf_layer_base INTERFACE OpenMP::OpenMP_CXX dnmf::blas Threads::Threads
                                                nlohmann_json::nlohmann_json)
# -fno-semantic-interposition: being shared must not cost the kernels their inlining (no one interposes them).
target_compile_options(dnmf_layer_base INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=x86-64-v3>
                                                 $<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition>)
if(DNMF_HAVE_MPI)
  target_link_libraries(dnmf_layer_base INTERFACE MPI::MPI_CXX)
  target_compile_definitions(dnmf_layer_base INTERFACE DNMF_HAVE_MPI=1)
endif()
if(DNMF_HAVE_HDF5)
  target_include_directories(dnmf_layer_base INTERFACE ${HDF5_C_INCLUDE_DIRS})
  target_compile_definitions(dnmf_layer_base INTERFACE DNMF_HAVE_HDF5=1)
endif()

# dnmf_layer(<layer> [BELOW <layer>...]): the layer's target; BELOW names the layers it may use (transitively:
# each layer sees what the ones it links see). Sources are added by src/<layer>/CMakeLists.txt.
function(dnmf_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 L "" "" "BELOW")
  set(root ${PROJECT_BINARY_DIR}/layers/${name})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${name} ${root}/${name} SYMBOLIC)
  add_library(dnmf_${name} OBJECT)
  set_target_properties(dnmf_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(dnmf_${name} PUBLIC ${root})
  # Object libraries linking object libraries take only their usage requirements (no objects).
  target_link_libraries(dnmf_${name} PUBLIC dnmf_layer_base)
  foreach(below IN LISTS L_BELOW)
    target_link_libraries(dnmf_${name} PUBLIC dnmf_${below})
  endforeach()
  target_sources(dnmf_core PRIVATE $<TARGET_OBJECTS:dnmf_${name}>)
endfunction()

# dnmf_use_layers(<target> <layer>...): lets a target that links dnmf_core (the CUDA module, tests, benchmarks)
# include the private headers of the named layers. Only the include paths: the code is dnmf_core's.
function(dnmf_use_layers target)
  foreach(layer IN LISTS ARGN)
    target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/layers/${layer})
  endforeach()
endfunction()
set(DNMF_ALL_LAYERS util synthetic dist io backend stream solvers nmfk api)

dnmf_layer(util)
dnmf_layer(synthetic BELOW util)
dnmf_layer(dist BELOW util)
dnmf_layer(io BELOW dist)
dnmf_layer(backend BELOW io)
dnmf_layer(stream BELOW backend)
dnmf_layer(solvers BELOW stream)
dnmf_layer(nmfk BELOW solvers)
dnmf_layer(api BELOW nmfk synthetic)

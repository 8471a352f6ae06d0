// The CUDA backend is a module loaded on first use (src/backend/cuda_module.hpp): a process that links only
// dnmf_core and factorises on the CPU maps none of the CUDA libraries (the memory-budget promise depends on it),
// and a cuda request is what loads the module. Runs in every build; the second half needs the CUDA backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/planted.hpp"
#if DNMF_WITH_CUDA
#include "backend/cuda_module.hpp"
#endif

namespace dnmf {
namespace {

// The lines of /proc/self/maps naming a file that contains one of `names`.
std::vector<std::string> mappings_of(const std::vector<std::string>& names) {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> found;
  for (std::string line; std::getline(maps, line);) {
    for (const auto& name : names) {
      if (line.find(name) != std::string::npos) {
        found.push_back(line);
        break;
      }
    }
  }
  return found;
}

const std::vector<std::string> kCudaLibraries = {"libcudart", "libcublas", "libcusparse", "libdnmf_cuda"};

// One test, so that the order (CPU run first, then the cuda request) holds however the tests are run.
TEST(CudaModule, CpuRunMapsNoCudaLibraryAndACudaRequestLooksUpTheModule) {
  ASSERT_TRUE(std::ifstream("/proc/self/maps").good()) << "needs /proc/self/maps";
  PlantedOptions po;
  po.rows = 60;
  po.cols = 40;
  po.rank = 3;
  po.seed = 7;
  const auto planted = make_planted<double>(po);
  FactorOptions options;
  options.rank = 3;
  options.max_iterations = 40;
  options.tol = 0;
  options.backend = BackendKind::cpu;
  const auto result = factorize(planted.matrix(), options);
  // A real run: its reported error is the directly computed one and well below the trivial factorisation's.
  EXPECT_LT(result.rel_error, 0.5);
  EXPECT_NEAR(result.rel_error, relative_error_direct(planted.matrix(), result.W.view(), result.H.view()), 1e-6);
  EXPECT_THAT(mappings_of(kCudaLibraries), ::testing::IsEmpty());

  std::string message;
  try {
    (void)backend::make_kernels<float>(BackendKind::cuda);  // succeeds only with a visible device
  } catch (const Error& e) {
    message = e.what();
  }
#if DNMF_WITH_CUDA
  EXPECT_TRUE(backend::cuda_module_requested());
  if (message.find("cannot load libdnmf_cuda.so") != std::string::npos) {
    std::printf("the module did not load here: %s\n", message.c_str());
  } else {
    // Loaded: the module and the CUDA runtime are mapped now; without a device the backend said why.
    EXPECT_THAT(mappings_of({"libdnmf_cuda.so"}), ::testing::Not(::testing::IsEmpty()));
    EXPECT_THAT(mappings_of({"libcudart"}), ::testing::Not(::testing::IsEmpty()));
    if (!message.empty()) {
      EXPECT_THAT(message, ::testing::HasSubstr("--backend cuda: no CUDA device is visible ("));
    }
  }
#else
  EXPECT_EQ(message, "--backend cuda: this build of dnmf has no CUDA backend");
  EXPECT_THAT(mappings_of(kCudaLibraries), ::testing::IsEmpty());
#endif
}

}  // namespace
}  // namespace dnmf

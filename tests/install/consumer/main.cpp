// Checks an installed dnmf from the outside: factorises a small planted matrix through the public headers
// only and prints the version. Exits non-zero when the factorisation does not recover the matrix.

#include <cstdio>
#include <exception>
#include <string>

#include "dnmf/dnmf.hpp"
#include "dnmf/version.hpp"

int main() {
  static_assert(DNMF_VERSION_MAJOR >= 0 && DNMF_VERSION_MINOR >= 0 && DNMF_VERSION_PATCH >= 0);
  std::printf("dnmf %s\n", std::string(dnmf::version()).c_str());
  try {
    // Exactly low-rank, so a converged factorisation leaves only rounding error; bpp gets there in a few sweeps.
    dnmf::PlantedOptions shape;  // C++17, the standard the package asks for (no designated initialisers)
    shape.rows = 60;
    shape.cols = 40;
    shape.rank = 4;
    shape.seed = 3;
    const auto planted = dnmf::make_planted<double>(shape);
    dnmf::FactorOptions options;
    options.rank = 4;
    options.algorithm = dnmf::Algorithm::bpp;
    options.init = dnmf::InitMethod::nndsvda;
    options.max_iterations = 300;
    options.tol = 0;
    const auto result = dnmf::factorize<double>(planted.matrix(), options);
    const double direct = dnmf::relative_error_direct<double>(planted.matrix(), result.W.view(), result.H.view());
    std::printf("relative error %.3g (direct %.3g) after %d iterations\n", result.rel_error, direct, result.iterations);
    if (!(direct < 1e-3)) {
      std::fprintf(stderr, "consumer: relative error %.3g is not below 1e-3\n", direct);
      return 1;
    }
    // The entry point the CLI uses: the same matrix borrowed from memory, on a one-process context.
    const auto run = dnmf::factor<double>(dnmf::Source::dense<double>(planted.dense.view()), options, dnmf::Context());
    const double run_direct =
        dnmf::relative_error_direct<double>(planted.matrix(), run.result.W.view(), run.result.H.view());
    std::printf("factor(): relative error %.3g on a %s grid\n", run_direct, run.grid.c_str());
    if (!(run_direct < 1e-3) || run.grid != "1x1") {
      std::fprintf(stderr, "consumer: factor() gave relative error %.3g on grid %s\n", run_direct, run.grid.c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}

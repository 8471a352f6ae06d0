// dnmf: which BLAS the CPU backend runs on, as found at run time (issue 14): `dnmf --version` prints it,
// report.json records it, and `dnmf factor` warns when the BLAS runs a kernel that leaves the CPU's vector units
// unused (a slow, generic code path).
#pragma once

#include <string>

namespace dnmf {

/// The BLAS library linked into dnmf and the kernel it chose for this CPU.
struct BlasInfo {
  std::string name;     ///< "OpenBLAS", "BLIS", "MKL" or "unknown"
  std::string version;  ///< the library's own version text, e.g. "0.3.21"
  std::string kernel;   ///< the kernel it runs: OpenBLAS's core name, BLIS's architecture, MKL's instruction set
  std::string config;   ///< the library's full self-description, where it gives one
  std::string
      cpu_vector_isa;  ///< the widest vector instruction set this CPU has: "avx512", "avx2", "avx", "sse2" or ""
  /// The kernel is known to use less than AVX2 on a CPU that has AVX2 (e.g. OpenBLAS forced to a "Prescott" or
  /// "Nehalem" core): every product then runs at a fraction of the machine's rate.
  bool generic_kernel = false;
};

/// Describes the BLAS this process runs (queried once; cheap afterwards).
const BlasInfo& blas_info();

/// One line for humans: "OpenBLAS 0.3.21, kernel Zen (CPU: avx2)".
std::string blas_summary();

}  // namespace dnmf

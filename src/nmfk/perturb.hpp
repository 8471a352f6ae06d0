// Perturbed copies A_p of A (DESIGN §6). Every random number is keyed by (seed, p, global index of the
// entry, draw) through the counter-based generator, so A_p is the same whichever process holds which block.
// The global index of entry (i, j) of the m x n matrix is i + j·m.
#pragma once

#include <cstdint>

#include "dnmf/matrix.hpp"
#include "dnmf/nmfk.hpp"
#include "nmfk/provider.hpp"

namespace dnmf::rank_search {

/// Uniform in (0, 1] for perturbation p, entry `index`, draw number `draw` (the Poisson sampler may need more
/// than one per entry).
double perturbation_uniform(std::uint64_t seed, int p, std::uint64_t index, std::uint32_t draw = 0);

/// A Poisson(lambda) draw for perturbation p, entry `index` (lambda ≥ 0): inversion below 10, Hörmann's
/// transformed rejection (PTRS) above.
double poisson_draw(double lambda, std::uint64_t seed, int p, std::uint64_t index);

/// The perturbed copy of a block whose first entry is at global (row0, col0) of an m-row matrix. Uniform:
/// a·(1 + ε(2U − 1)); Poisson: a Poisson draw with mean a. Stored CSR entries stay stored (a draw of 0 is
/// kept as an explicit zero), so the pattern and the block's shape never change.
template <class T>
MatrixBlock<T> perturb_block(const MatrixBlock<T>& block, index_t row0, index_t col0, index_t m, Perturbation kind,
                             double epsilon, std::uint64_t seed, int p);

/// The initialisation seed of job (k, p): a hash of the NMFk seed, k and p.
std::uint64_t job_seed(std::uint64_t seed, index_t k, int p);

}  // namespace dnmf::rank_search

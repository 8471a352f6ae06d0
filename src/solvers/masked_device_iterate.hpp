// The masked iteration in matrix form on a backend::MaskedDevice (the GPU path of issue 15, item 3).
// Per half-step, with Q = WᵀH the model (m x n, A's orientation, so one layout serves both halves):
//   MU:  x ← x ∘ Y(W∘A) / (Y(W∘Q) + l1 + l2 x + eps)      (Y(W∘Q) is G_j x_j for every column at once)
//   KL:  x ← x ∘ Y(W∘A ⊘ Q) / (Y W + l1 + l2 x + eps)       (Y W: the weighted sums s_j)
// with Y the other factor and the products taken in A's or Aᵀ's orientation; HALS keeps the weighted residual
// w∘(A - WᵀH) and sweeps one coordinate of every column at a time; BPP forms every column's weighted Gram matrix
// on the device and solves the per-column NNLS on the host. The same rules as the host iteration
// (masked_iterate.cpp), which forms them column by column; the figures are the same sums. With --unstored
// missing (every algorithm) the model and the products are taken on the stored pattern only.
#pragma once

#include "backend/masked_device.hpp"
#include "dnmf/factorize.hpp"
#include "solvers/init.hpp"
#include "solvers/masked_problem.hpp"

namespace dnmf::solvers {

/// Runs the iteration from `factors` on `device` and leaves the final ones (on the host) there, as
/// iterate_masked does: mu, kl, hals and bpp, on dense weights or (--unstored missing) on the stored pattern.
template <class T>
FactorResult<T> iterate_masked_on_device(const MaskedProblem<T>& problem, const FactorOptions& options,
                                         Factors<T>& factors, backend::MaskedDevice<T>& device);

}  // namespace dnmf::solvers

// dnmf Python bindings: the library's option structures and contexts from the keyword dictionaries the Python
// layer passes, and numpy arrays from the library's matrices.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <utility>

#include "dnmf/context.hpp"
#include "dnmf/matrix.hpp"
#include "dnmf/nmfk.hpp"
#include "dnmf/options.hpp"

namespace dnmf::python {

/// FactorOptions from a dict with keys k, algorithm, max_iter, tol, init, seed, l1_w, l2_w, l1_h, l2_h,
/// normalize, fused, tf32 (missing keys keep the library's defaults). dnmf::Error for bad values.
FactorOptions factor_options(const nanobind::dict& kwargs);

/// NmfkOptions from a dict with the NMFk keys (ks, perturbations, epsilon, perturbation, sil_threshold,
/// err_threshold, rule, wilcoxon_alpha, h_silhouettes, groups, accept_factor, max_cluster_iterations,
/// checkpoint_dir, restart) plus the solver keys of factor_options().
NmfkOptions nmfk_options(const nanobind::dict& kwargs);

/// The context from a dict with keys comm (None: Context::world(), i.e. the MPI world under an MPI launcher and
/// one process otherwise; False: one process; an int: the handle of an MPI communicator, e.g. mpi4py's
/// `comm.handle`), grid, backend, threads, memory_budget (bytes or a string such as "2G"), device,
/// device_memory_budget.
Context make_context(const nanobind::dict& kwargs);

/// A numpy array that takes over `m`'s storage: m itself (Fortran order), or with `transposed` mᵀ (C order, no
/// copy: a k x m block of Wᵀ is numpy's m x k W).
template <class T>
nanobind::ndarray<nanobind::numpy, T, nanobind::ndim<2>> to_numpy(DenseMatrix<T>&& m, bool transposed = false) {
  auto* owned = new DenseMatrix<T>(std::move(m));
  nanobind::capsule owner(owned, [](void* p) noexcept { delete static_cast<DenseMatrix<T>*>(p); });
  const auto rows = static_cast<std::size_t>(owned->rows());
  const auto cols = static_cast<std::size_t>(owned->cols());
  const auto ld = static_cast<std::int64_t>(rows);
  if (transposed) return {owned->data(), {cols, rows}, owner, {ld, 1}};
  return {owned->data(), {rows, cols}, owner, {1, ld}};
}

}  // namespace dnmf::python

// Clustering of the k·P factor columns of one k into k clusters (DESIGN §6): every perturbation's columns
// are matched one-to-one to the centroids by an optimal assignment, the centroids become element-wise
// medians of their members, and this repeats until the assignments stop changing (or a cap is reached).
#pragma once

#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::rank_search {

/// The result of cluster_columns().
struct Clustering {
  std::vector<int> labels;        ///< cluster of every vector (N = k·P entries, vector v = p·k + l)
  DenseMatrix<double> centroids;  ///< d x k, each column of unit Euclidean norm (or zero)
  int iterations = 0;             ///< assignment rounds run
  bool converged = false;         ///< the last round changed no assignment
};

/// Scales every row of `vectors` to unit Euclidean norm (all-zero rows stay zero).
void normalise_rows(DenseMatrix<double>& vectors);

/// Clusters the rows of `vectors` (N x d with N = k·P; rows p·k .. p·k+k−1 are perturbation p's columns,
/// unit-norm) into k clusters of exactly one member per perturbation. The centroids start from
/// perturbation `seed_perturbation`. `host` computes the products (cosine similarities).
Clustering cluster_columns(backend::Kernels<double>& host, const DenseMatrix<double>& vectors, index_t k, int P,
                           int seed_perturbation, int max_iterations);

/// Element-wise medians of each cluster's members (d x k, not normalised): the centroid update.
DenseMatrix<double> cluster_medians(const DenseMatrix<double>& vectors, const std::vector<int>& labels, index_t k);

}  // namespace dnmf::rank_search

// Silhouettes with the cosine distance 1 − cos(x, y) (DESIGN §6): how much closer each vector is to its own
// cluster than to the nearest other one, averaged per cluster.
#pragma once

#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::rank_search {

/// Silhouettes of one clustering.
struct Silhouettes {
  std::vector<double> per_vector;   ///< s(v) in [−1, 1]
  std::vector<double> per_cluster;  ///< mean of s over each cluster's members
  double min = 0;                   ///< minimum over clusters
  double mean = 0;                  ///< mean over all vectors
};

/// Silhouettes of the rows of `vectors` (N x d, any norm; a zero row has cosine 0 with everything) under
/// `labels` (N entries in 0..k−1). Conventions: a vector alone in its cluster has s = 0 (as in scikit-learn);
/// with a single cluster (k = 1) every s is 1, since a lone cluster is trivially stable.
Silhouettes cosine_silhouettes(backend::Kernels<double>& host, const DenseMatrix<double>& vectors,
                               const std::vector<int>& labels, index_t k);

}  // namespace dnmf::rank_search

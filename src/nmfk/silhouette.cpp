#include "nmfk/silhouette.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "util/parallel_loops.hpp"

namespace dnmf::rank_search {

Silhouettes cosine_silhouettes(backend::Kernels<double>& host, const DenseMatrix<double>& x,
                               const std::vector<int>& labels, index_t k) {
  const index_t n_vectors = x.rows();
  if (static_cast<index_t>(labels.size()) != n_vectors || k < 1)
    throw Error("nmfk silhouettes: " + std::to_string(labels.size()) + " labels for " + std::to_string(n_vectors) +
                " vectors");
  for (int c : labels)
    if (c < 0 || c >= k)
      throw Error("nmfk silhouettes: label " + std::to_string(c) + " outside 0.." + std::to_string(k - 1));
  const auto un = to_size(n_vectors);
  const auto uk = to_size(k);
  Silhouettes s;
  s.per_vector.assign(un, 1.0);
  s.per_cluster.assign(uk, 1.0);
  if (k == 1) {
    s.min = s.mean = 1.0;
    return s;
  }
  std::vector<double> sizes(uk, 0.0);
  for (int c : labels) sizes[to_size(c)] += 1;

  // All dot products at once (N x N), then cosines from them.
  DenseMatrix<double> gram(n_vectors, n_vectors);
  host.gram(x.view(), gram.view(), 0.0);
  std::vector<double> inv_norm(un);
  for (std::size_t v = 0; v < un; ++v) {
    const double g = gram(static_cast<index_t>(v), static_cast<index_t>(v));
    inv_norm[v] = g > 0 ? 1 / std::sqrt(g) : 0.0;
  }

  // One thread below ~64k distances: a team costs more than the work.
  util::for_each_index_with(
      n_vectors, n_vectors * n_vectors >= 65536, [&] { return std::vector<double>(uk); },
      [&](index_t v, std::vector<double>& distance_sum) {
        std::fill(distance_sum.begin(), distance_sum.end(), 0.0);
        const double* row = gram.data() + v * n_vectors;  // symmetric: column v is row v
        for (index_t w = 0; w < n_vectors; ++w) {
          if (w == v) continue;
          const double cosine = row[w] * inv_norm[to_size(v)] * inv_norm[to_size(w)];
          distance_sum[to_size(labels[to_size(w)])] += std::max(0.0, 1.0 - cosine);
        }
        const auto own = to_size(labels[to_size(v)]);
        double value = 0;
        if (sizes[own] > 1) {
          const double a = distance_sum[own] / (sizes[own] - 1);
          double b = std::numeric_limits<double>::infinity();
          for (std::size_t c = 0; c < uk; ++c)
            if (c != own && sizes[c] > 0) b = std::min(b, distance_sum[c] / sizes[c]);
          const double scale = std::max(a, b);
          value = std::isfinite(b) && scale > 0 ? (b - a) / scale : 0.0;
        }
        s.per_vector[to_size(v)] = value;
      });
  std::fill(s.per_cluster.begin(), s.per_cluster.end(), 0.0);
  double total = 0;
  for (std::size_t v = 0; v < un; ++v) {
    s.per_cluster[to_size(labels[v])] += s.per_vector[v];
    total += s.per_vector[v];
  }
  s.min = std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < uk; ++c) {
    s.per_cluster[c] = sizes[c] > 0 ? s.per_cluster[c] / sizes[c] : 0.0;
    s.min = std::min(s.min, s.per_cluster[c]);
  }
  s.mean = total / static_cast<double>(n_vectors);
  return s;
}

}  // namespace dnmf::rank_search

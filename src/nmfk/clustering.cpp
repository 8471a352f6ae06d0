#include "nmfk/clustering.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "nmfk/hungarian.hpp"
#include "util/parallel_loops.hpp"

namespace dnmf::rank_search {

void normalise_rows(DenseMatrix<double>& x) {
  std::vector<double> norms(to_size(x.rows()), 0.0);
  for (index_t i = 0; i < x.cols(); ++i)
    for (index_t v = 0; v < x.rows(); ++v) norms[to_size(v)] += x(v, i) * x(v, i);
  for (double& s : norms) s = s > 0 ? 1 / std::sqrt(s) : 0.0;
  for (index_t i = 0; i < x.cols(); ++i)
    for (index_t v = 0; v < x.rows(); ++v) x(v, i) *= norms[to_size(v)];
}

DenseMatrix<double> cluster_medians(const DenseMatrix<double>& x, const std::vector<int>& labels, index_t k) {
  const index_t d = x.cols();
  std::vector<std::vector<index_t>> members(to_size(k));
  for (std::size_t v = 0; v < labels.size(); ++v) members[to_size(labels[v])].push_back(static_cast<index_t>(v));
  DenseMatrix<double> medians(d, k);
  // One thread below ~64k values: a team costs more than the work (NMFk clusters hundreds of times).
  util::for_each_index_with(
      d, d * static_cast<index_t>(labels.size()) >= 65536, [] { return std::vector<double>(); },
      [&](index_t i, std::vector<double>& values) {
        // Column i of x holds entry i of every vector, contiguous.
        const double* column = x.data() + i * x.rows();
        for (index_t c = 0; c < k; ++c) {
          const auto& group = members[to_size(c)];
          if (group.empty()) continue;
          values.clear();
          for (index_t v : group) values.push_back(column[v]);
          const std::size_t half = values.size() / 2;
          std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half), values.end());
          double median = values[half];
          if (values.size() % 2 == 0) {
            // The lower middle value is the largest of the lower half.
            median =
                0.5 * (median + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half)));
          }
          medians(i, c) = median;
        }
      });
  return medians;
}

Clustering cluster_columns(backend::Kernels<double>& host, const DenseMatrix<double>& x, index_t k, int P,
                           int seed_perturbation, int max_iterations) {
  const index_t n_vectors = x.rows(), d = x.cols();
  if (k < 1 || P < 1 || n_vectors != k * P)
    throw Error("nmfk clustering: expected k*P = " + std::to_string(k * P) + " vectors, got " +
                std::to_string(n_vectors));
  if (seed_perturbation < 0 || seed_perturbation >= P) throw Error("nmfk clustering: seed perturbation out of range");
  if (max_iterations < 1) throw Error("nmfk clustering: the iteration cap must be >= 1");
  Clustering out;
  out.centroids = DenseMatrix<double>(d, k);
  for (index_t l = 0; l < k; ++l)
    for (index_t i = 0; i < d; ++i) out.centroids(i, l) = x(seed_perturbation * k + l, i);

  const auto uk = to_size(k);
  DenseMatrix<double> similarity(n_vectors, k);
  std::vector<double> cost(uk * uk);
  std::vector<int> labels(to_size(n_vectors), -1);
  for (int it = 1; it <= max_iterations; ++it) {
    // cos(vector v, centroid c) for all v at once: X (N x d) times the centroids (d x k).
    const MatrixRef<double> centroids{DenseView<const double>(out.centroids.view())};
    host.multiply(centroids, backend::Side::H, x.view(), similarity.view(), 0.0);
    std::vector<int> next(labels.size());
    for (int p = 0; p < P; ++p) {
      for (index_t l = 0; l < k; ++l)
        for (index_t c = 0; c < k; ++c) cost[to_size(l) * uk + to_size(c)] = 1 - similarity(p * k + l, c);
      const std::vector<int> assignment = hungarian(cost, static_cast<int>(k));
      for (index_t l = 0; l < k; ++l) next[to_size(p * k + l)] = assignment[to_size(l)];
    }
    out.iterations = it;
    if (next == labels) {
      out.converged = true;
      break;
    }
    labels = std::move(next);
    out.centroids = cluster_medians(x, labels, k);
    // Unit columns: the assignment compares cosines, and the outputs rescale anyway.
    for (index_t c = 0; c < k; ++c) {
      double s = 0;
      for (index_t i = 0; i < d; ++i) s += out.centroids(i, c) * out.centroids(i, c);
      if (!(s > 0)) continue;
      const double inv = 1 / std::sqrt(s);
      for (index_t i = 0; i < d; ++i) out.centroids(i, c) *= inv;
    }
  }
  out.labels = std::move(labels);
  return out;
}

}  // namespace dnmf::rank_search

// Optimal one-to-one assignment (the Hungarian method): used to match each perturbation's W columns to the
// cluster centroids so that every cluster receives exactly one column per perturbation.
#pragma once

#include <vector>

namespace dnmf::rank_search {

/// Solves min Σ_i cost(i, assignment[i]) over permutations for an n x n cost matrix given row-major
/// (cost[i * n + j]: row i to column j). Returns assignment[i] = the column of row i. O(n³) (Kuhn-Munkres
/// with potentials). NaN costs are treated as larger than every finite cost; ties resolve deterministically.
std::vector<int> hungarian(const std::vector<double>& cost, int n);

}  // namespace dnmf::rank_search

// Lawson-Hanson's active-set method on one column of the equilibrated, shifted NNLS problem: the fallback of
// block principal pivoting (nnls_bpp.cpp) for columns that reach its round cap.
#pragma once

#include "dnmf/index.hpp"
#include "solvers/nnls_shifted.hpp"

namespace dnmf::nnls_detail {

/// Minimises 0.5 z'Mz - bs'z over z >= 0, M = Gs + growth·diag(shift), from z = 0, into z (k entries); the
/// workspace's arrays are its scratch and `retries` counts the factorisations retried with a larger shift. z is
/// left at zero when a factorisation breaks down for good or rounding made the objective rise.
void lawson_hanson(const Scaled& s, double growth, const double* bs, double* z, Workspace& ws, index_t& retries);

}  // namespace dnmf::nnls_detail

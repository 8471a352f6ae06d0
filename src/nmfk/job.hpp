// One (k, p) job: the factorisation of the perturbed matrix A_p on the group's grid.
#pragma once

#include <optional>

#include "nmfk/checkpoint.hpp"
#include "nmfk/group.hpp"

namespace dnmf::rank_search {

/// Perturbs this rank's block, factorises A_p at rank k on the group's grid (init seeded by job_seed) and
/// gathers the factors. Collective over the group; the record is returned on the group's root only.
template <class T>
std::optional<JobRecord> run_job(GroupContext<T>& group, index_t k, int p, const NmfkOptions& options);

/// The same job on an explicit grid, layout and block: a one-process group runs its jobs side by side, each
/// on a grid of its own (a one-process communicator per thread), over the group's shared block.
template <class T>
std::optional<JobRecord> run_job(const MatrixBlock<T>& block, const dist::Grid& grid, const dist::Layout& layout,
                                 index_t k, int p, const NmfkOptions& options);

}  // namespace dnmf::rank_search

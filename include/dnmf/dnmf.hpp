// dnmf: the whole public C++ API in one include. Link dnmf::dnmf (CMake: find_package(dnmf)).
#pragma once

#include "dnmf/blas.hpp"              // which BLAS runs, and its kernel
#include "dnmf/context.hpp"           // where a job runs: processes, grid, backend, threads, memory budgets
#include "dnmf/cross_validation.hpp"  // rank selection by held-out entries
#include "dnmf/error.hpp"             // dnmf::Error and its kinds
#include "dnmf/factor.hpp"            // factor(Source, FactorOptions, Context) and report_json()
#include "dnmf/factorize.hpp"         // factorize(), transform(): one process, a matrix in memory
#include "dnmf/inspect.hpp"           // what a matrix file holds
#include "dnmf/io.hpp"                // .npy, Matrix Market, HDF5, .dcsr readers and writers
#include "dnmf/matrix.hpp"            // matrix views and containers
#include "dnmf/missing.hpp"           // missing values: masks, NaN, unstored entries
#include "dnmf/nmfk.hpp"              // rank selection
#include "dnmf/nnls.hpp"              // non-negative least squares
#include "dnmf/options.hpp"           // what a factorisation computes
#include "dnmf/output_set.hpp"        // a run's output folder, replaced as one
#include "dnmf/planted.hpp"           // planted factorisations for demos and tests
#include "dnmf/progress.hpp"          // the progress lines of a factorisation
#include "dnmf/source.hpp"            // where A comes from: a file or memory
#include "dnmf/version.hpp"           // dnmf::version() and DNMF_VERSION_*

// dnmf::nmfk on a Source and a Context: the blocks of a file read per process (or sliced from memory) and
// handed to NMFk's distributed driver (src/nmfk/driver.cpp).

#include "dnmf/nmfk.hpp"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "api/context_state.hpp"
#include "api/holdout_check.hpp"
#include "api/on_every_rank.hpp"
#include "dist/communicator.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "io/entry_text.hpp"
#include "nmfk/provider.hpp"

namespace dnmf {
namespace {

/// `message` with a NaN entry's hint (--missing nan, which nmfk does not take) replaced by what nmfk users can do.
std::string with_nmfk_hint(std::string message) {
  const auto at = message.find(io::kNanMissingHint);
  if (at != std::string::npos)
    message.replace(at, io::kNanMissingHint.size(),
                    "(nmfk needs every entry; dnmf cv --missing nan, or dnmf::cross_validate, chooses k with NaN "
                    "entries as missing)");
  return message;
}

/// The cross-validation beside the sweep (NmfkOptions::cv): the same ks, seed and solver options, on the
/// whole matrix held by this (only) process.
template <class T>
void add_cross_validation(const Source& source, const NmfkOptions& options, const Context& context,
                          NmfkResult<T>& result) {
  const auto start = std::chrono::steady_clock::now();
  CrossValidationOptions cv;
  cv.ks = options.ks;
  cv.folds = options.cv_folds;
  cv.holdout = options.cv_holdout;
  cv.factor = options.factor;
  // The sweep's progress lines have ended: say why the run goes on (no progress lines, as under -q: nothing to say).
  if (options.notice && options.progress)
    options.notice("cross-validation: " + std::to_string(cv.folds) + " folds x " + std::to_string(cv.ks.size()) +
                   " k values");
  result.cv = cross_validate<T>(source, cv, context);
  result.selection.cv_k = result.cv->selected_k;
  result.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

template <class T>
NmfkResult<T> nmfk(const Source& source, const NmfkOptions& requested, const Context& context) {
  dist::Communicator& world = api::communicator(context);
  const std::string& name = source.name();
  NmfkOptions options = requested;
  const io::MatrixShape shape = api::on_every_rank([&] {
    options.factor = api::resolve(requested.factor, context);
    // The group grid may be given in either place (Context::grid is where factor() takes it); given in both, the
    // two must agree rather than one silently winning.
    if (requested.grid != "auto") {
      check_grid(requested.grid);
      if (context.grid != "auto" && context.grid != requested.grid)
        throw UsageError("nmfk: NmfkOptions::grid '" + requested.grid + "' and Context::grid '" + context.grid +
                         "' disagree: set one of them");
    } else {
      options.grid = context.grid;
    }
    if (requested.factor.missing.any())
      throw UsageError(name +
                       ": missing values (--mask, --missing nan, --unstored missing) are not supported by "
                       "nmfk yet; choose k by cross-validation instead: dnmf cv (dnmf::cross_validate) takes them");
    if (context.memory_budget > 0)
      throw UsageError(
          "--memory-budget: nmfk keeps each perturbed block in memory; streaming is not supported for nmfk");
    if (requested.cv) {
      // Checked before the sweep, which may take hours, rather than when the cross-validation starts.
      if (world.size() > 1)
        throw UsageError("--cv: the cross-validation runs on one process; run nmfk --cv without mpirun");
      if (options.factor.backend == BackendKind::cuda)
        throw UsageError("--cv is not supported with --backend cuda yet (the masked solver runs on the host)");
      if (requested.cv_folds < 1)
        throw UsageError("--cv-folds must be >= 1, got " + std::to_string(requested.cv_folds));
      if (!(requested.cv_holdout > 0 && requested.cv_holdout < 1))
        throw UsageError("--cv-holdout must be in (0, 1), got " + io::shortest_repr(requested.cv_holdout));
      api::check_not_extrapolated(options.factor);
    }
    if (source.transposed())
      throw Error(name + ": nmfk clusters the columns of W and needs A as stored (not a row-major or CSC view)");
    if (!source.is_file()) {
      if (const MatrixRef<T>* a = source.stored<T>()) return io::shape_of(*a);
      if (const auto* f = source.stored<float>()) return io::shape_of(*f);
      return io::shape_of(*source.stored<double>());
    }
    (void)io::format_of(name);  // an unknown extension fails before any output
    return io::read_shape(name, world);
  });
  // The folds' draws and the values they hide are known before the sweep, which may take hours: a fold that hides
  // none of the entries, all of them or only zeros is refused now, not once the sweep is done. One process (above).
  if (requested.cv)
    api::on_every_rank([&] {
      try {
        api::check_holdout_values<T>(source, options.factor, requested.cv_folds, requested.cv_holdout);
      } catch (const Error& e) {  // a NaN entry's hint is the one nmfk users can follow
        throw_as(e.kind(), with_nmfk_hint(e.what()));
      }
    });
  if (source.is_file() && world.rank() == 0) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(name, ec);
    if (!ec) options.data_identity.emplace_back("file_bytes", std::to_string(bytes));
  }

  BlockProvider<T> provider;
  if (source.is_file()) {
    provider = [&name](const BlockRequest& r) {
      return io::read_block<T>(name, {r.row_first, r.row_last}, {r.col_first, r.col_last}, *r.group);
    };
  } else {
    // The other precision is converted once, whole, as factor() converts it (it was refused here), with the
    // conversion's checks (a value float32 cannot hold is an error naming it).
    std::shared_ptr<io::LocalBlock<T>> converted;
    if (source.stored<T>() == nullptr) {
      const auto convert = [&](const auto& other) {
        converted = std::make_shared<io::LocalBlock<T>>(
            io::slice_block<T>(other, dist::Range{0, shape.rows}, dist::Range{0, shape.cols}));
      };
      api::on_every_rank([&] {
        if (const auto* f = source.stored<float>()) {
          convert(*f);
        } else {
          convert(*source.stored<double>());
        }
      });
    }
    const MatrixRef<T> a = converted ? converted->ref() : *source.stored<T>();
    provider = [a, converted, &name](const BlockRequest& r) {
      MatrixBlock<T> block = slice_block(a, r);
      std::visit([&](const auto& v) { io::check_nonnegative<T>(v, name, r.row_first, r.col_first); }, block.ref());
      return block;
    };
  }
  try {
    NmfkResult<T> result = nmfk<T>(shape.rows, shape.cols, provider, options, world);
    if (options.cv) add_cross_validation(source, options, context, result);
    return result;
  } catch (const Cancelled&) {
    throw;
  } catch (const PeerError&) {
    throw;
  } catch (const CollectiveError& e) {
    // The library's own checks say "nmfk: ..."; the user wants to know which file they concern.
    const std::string message = with_nmfk_hint(e.what());
    if (message.rfind("nmfk: ", 0) == 0) throw CollectiveError(name + ": " + message.substr(6), e.kind());
    if (message != e.what()) throw CollectiveError(message, e.kind());
    throw;
  } catch (const Error& e) {
    // A job's own failure on one process (the solver's checks of a perturbed copy) names the file too, as
    // factor's do; errors that name it already pass unchanged.
    const std::string message = with_nmfk_hint(e.what());
    // A checkpoint's own failure (a full disk) names the checkpoint file, not the input.
    const bool names_checkpoint =
        !options.checkpoint_dir.empty() && message.rfind(options.checkpoint_dir + "/", 0) == 0;
    if (message.rfind(name + ":", 0) == 0 || names_checkpoint) {
      if (message != e.what()) throw_as(e.kind(), message);
      throw;
    }
    throw_as(e.kind(), name + ": " + (message.rfind("nmfk: ", 0) == 0 ? message.substr(6) : message));
  }
}

template <class T>
NmfkRunInfo nmfk_run_info(const Source& source) {
  NmfkRunInfo run;
  run.input = source.name();
  run.precision = sizeof(T) == 4 ? "f32" : "f64";
  if (source.is_file()) {
    run.format = io::format_name(io::format_of(source.name()));
    const io::MatrixShape shape = io::read_shape(source.name());
    // Only a .dcsr header counts the matrix's entries: a symmetric .mtx's lines count its mirrored entries once,
    // and duplicate lines (.mtx, HDF5, .npz) are summed into one entry when read. Counted as factor's report
    // counts them, from the matrix as read.
    if (shape.sparse)
      run.nnz = io::format_of(source.name()) == io::FileFormat::dcsr ? shape.stored
                                                                     : io::load_matrix<T>(source.name()).csr.nnz();
  } else {
    run.format = "memory";
    if (const MatrixRef<T>* a = source.stored<T>(); a != nullptr && is_sparse(*a))
      run.nnz = std::get<CsrView<T>>(*a).nnz();
  }
  return run;
}

template NmfkResult<float> nmfk<float>(const Source&, const NmfkOptions&, const Context&);
template NmfkResult<double> nmfk<double>(const Source&, const NmfkOptions&, const Context&);
template NmfkRunInfo nmfk_run_info<float>(const Source&);
template NmfkRunInfo nmfk_run_info<double>(const Source&);

}  // namespace dnmf

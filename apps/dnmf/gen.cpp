// `dnmf gen`: a matrix with a planted non-negative factorisation, plus the true factors beside it.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "commands.hpp"
#include "dnmf/error.hpp"
#include "dnmf/inspect.hpp"
#include "dnmf/io.hpp"
#include "dnmf/planted.hpp"
#include "signals.hpp"

namespace dnmf::cli {
namespace {

struct GenArgs {
  PlantedOptions planted;
  std::string precision = "f64";
  std::string output;
};

/// Lower-case extension of `path` including the dot ("" when there is none).
std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

/// dir/A.npy -> dir/A.W.npy (which = "W") or dir/A.H.npy.
std::string truth_path(const std::string& output, const char* which) {
  std::filesystem::path path(output);
  path.replace_extension();
  return path.string() + "." + which + ".npy";
}

/// Refuses an -o name whose extension does not match what will be written, before any work is done.
void check_output_name(const GenArgs& args) {
  const double density = args.planted.density;
  if (!(density > 0 && density <= 1)) return;  // make_planted reports a bad density itself
  const bool sparse = args.planted.density < 1;
  const std::string ext = extension_of(args.output);
  if (ext == ".h5" || ext == ".hdf5") return;  // HDF5 holds either: a dataset /X, or a CSR group /X
  if (sparse && ext != ".mtx") {
    throw UsageError(args.output +
                     ": --density < 1 writes a sparse matrix; the -o name must end in .mtx (Matrix Market) or .h5 / "
                     ".hdf5 (a CSR group /X)");
  }
  if (!sparse && ext != ".npy") {
    throw UsageError(args.output +
                     ": --density 1 writes a dense matrix; the -o name must end in .npy or .h5 / .hdf5 (a dataset /X)");
  }
}

/// Files written under sibling names "<dir>/.<name>.gen.<pid>" and renamed to their own names by commit();
/// without commit(), the staged files are removed.
class StagedFiles {
 public:
  explicit StagedFiles(std::vector<std::string> targets) : targets_(std::move(targets)) {
    for (const std::string& target : targets_) {
      const std::filesystem::path p(target);
      staged_.push_back(
          (p.parent_path() / ("." + p.filename().string() + ".gen." + std::to_string(::getpid()))).string());
    }
  }
  ~StagedFiles() {
    std::error_code ec;  // best effort: the error that got us here matters more
    if (!committed_)
      for (const std::string& s : staged_) std::filesystem::remove(s, ec);
  }
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;

  [[nodiscard]] const std::string& path(std::size_t i) const { return staged_[i]; }

  /// Removes what a gen killed outright (SIGKILL) left beside the targets: staged files of processes that are gone
  /// (".A.npy.gen.<pid>", and the atomic writer's ".A.npy.gen.<pid>.tmp.<pid>.<n>" inside them).
  void remove_stale() const {
    namespace fs = std::filesystem;
    for (const std::string& target : targets_) {
      const fs::path t(target);
      const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
      const std::string prefix = "." + t.filename().string() + ".gen.";
      std::error_code ec;
      for (fs::directory_iterator it(dir, ec), last; !ec && it != last; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(prefix, 0) != 0) continue;
        const std::string rest = name.substr(prefix.size());
        const std::size_t digits = std::min(rest.find_first_not_of("0123456789"), rest.size());
        if (digits < rest.size() && rest.compare(digits, 5, ".tmp.") != 0) continue;
        if (gone_process(std::string_view(rest).substr(0, digits))) fs::remove(it->path(), ec);
      }
    }
  }

  /// `message` with the staged names replaced by the names the user gave.
  [[nodiscard]] std::string named(std::string message) const {
    for (std::size_t i = 0; i < staged_.size(); ++i)
      for (std::size_t at = message.find(staged_[i]); at != std::string::npos; at = message.find(staged_[i], at))
        message.replace(at, staged_[i].size(), targets_[i]);
    return message;
  }

  /// Creates every staged file empty and checks that no target is a directory: what would make the writes or the
  /// renames fail is found before the matrix is built (a 3e9 x 3e9 sparse gen into a folder it could not write
  /// ran out of memory first).
  void check_writable() const {
    check_targets();
    check_name_lengths();
    for (std::size_t i = 0; i < staged_.size(); ++i) {
      std::FILE* f = std::fopen(staged_[i].c_str(), "wb");
      if (f == nullptr) throw IoError(targets_[i] + ": cannot write: " + std::strerror(errno));
      std::fclose(f);
    }
  }

  void commit() {
    check_targets();  // what makes a rename fail after others have been done is found before the first one
    for (std::size_t i = 0; i < staged_.size(); ++i) {
      if (std::rename(staged_[i].c_str(), targets_[i].c_str()) != 0)
        throw IoError(targets_[i] + ": cannot move into place: " + std::strerror(errno));
    }
    committed_ = true;
  }

 private:
  // A staged file is the target's name plus ".gen.<pid>" behind a dot, written through a temporary that adds
  // ".tmp.<pid>.<n>": a legal name of 236 bytes failed naming the staged file (and its byte count), one of 247
  // with "File name too long" (exit 4). Checked before any work, naming the user's file.
  void check_name_lengths() const {
    constexpr std::size_t kNameMax = 255;
    const std::size_t temporary = std::string(".tmp." + std::to_string(::getpid()) + ".999").size();
    for (std::size_t i = 0; i < staged_.size(); ++i) {
      const std::size_t target = std::filesystem::path(targets_[i]).filename().string().size();
      const std::size_t needed = std::filesystem::path(staged_[i]).filename().string().size() + temporary;
      if (needed > kNameMax)
        throw UsageError(targets_[i] + ": the name is " + std::to_string(target) +
                         " bytes; dnmf gen writes it under a staged name and a temporary " +
                         std::to_string(needed - target) + " bytes longer, past the " + std::to_string(kNameMax) +
                         " a name may have: choose a -o name " + std::to_string(needed - kNameMax) + " bytes shorter");
    }
  }

  void check_targets() const {
    for (const std::string& target : targets_) {
      std::error_code ec;
      if (std::filesystem::is_directory(target, ec)) throw IoError(target + ": cannot write: it is a directory");
    }
  }

  std::vector<std::string> targets_, staged_;
  bool committed_ = false;
};

/// A, W and H into their staged names.
template <class T>
void write_set(const Planted<T>& planted, const std::string& ext, const StagedFiles& staged) {
  if (ext == ".h5" || ext == ".hdf5") {
    // AnnData's layout: the matrix is /X, a dense dataset or a CSR group.
    if (planted.sparse) {
      io::write_h5_csr<T>(staged.path(0), "/X", planted.csr.view());
    } else {
      io::write_h5_dense<T>(staged.path(0), "/X", planted.dense.view());
    }
  } else if (planted.sparse) {
    io::write_mtx<T>(staged.path(0), planted.csr.view());
  } else {
    io::write_npy<T>(staged.path(0), planted.dense.view());
  }
  io::write_npy<T>(staged.path(1), planted.W.view());
  io::write_npy<T>(staged.path(2), planted.H.view());
}

template <class T>
int generate(const GenArgs& args) {
  check_output_name(args);
  const std::string w_path = truth_path(args.output, "W");
  const std::string h_path = truth_path(args.output, "H");
  // A, W and H are one set: all three are written under staged names first and renamed into place only when all
  // are complete, so a failure (a full disk at H) leaves the previous three as they were, not a new A beside the
  // previous truth. (A kill between the three renames, microseconds, is the one window left.)
  StagedFiles staged({args.output, w_path, h_path});
  staged.remove_stale();
  // SIGINT and SIGTERM remove the staged files and the temporary being written (a killed gen left them all).
  end_writes_on_signals(args.output);
  remove_on_signals({staged.path(0), staged.path(1), staged.path(2)});
  staged.check_writable();
  const Planted<T> planted = [&] {
    try {
      return make_planted<T>(args.planted);
    } catch (const std::length_error&) {  // sizes past what a vector can hold, before any allocation
    } catch (const std::bad_alloc&) {
    }
    throw Error("gen: a " + std::to_string(args.planted.rows) + " x " + std::to_string(args.planted.cols) +
                " matrix of rank " + std::to_string(args.planted.rank) + " does not fit in memory");
  }();
  const std::string ext = extension_of(args.output);
  try {
    write_set(planted, ext, staged);
  } catch (const IoError& e) {
    throw IoError(staged.named(e.what()));
  }
  staged.commit();

  const EntryStats stats = entry_stats(planted.matrix());
  // nnz as `dnmf info` counts it: noise clamped at zero leaves zeros (a dense 20 x 10 said nnz 200 with 61); a
  // sparse file's stored count follows where it differs.
  const std::string stored = planted.sparse && stats.stored != stats.nonzeros
                                 ? " (" + std::to_string(stats.stored) + " stored)"
                                 : std::string();
  std::printf("gen: %lldx%lld %s %s, nnz %lld%s, rank %lld -> %s (truth %s, %s)\n", static_cast<long long>(stats.rows),
              static_cast<long long>(stats.cols), planted.sparse ? "sparse" : "dense", args.precision.c_str(),
              static_cast<long long>(stats.nonzeros), stored.c_str(), static_cast<long long>(args.planted.rank),
              one_line(args.output).c_str(), one_line(w_path).c_str(), one_line(h_path).c_str());
  return 0;
}

}  // namespace

Command add_gen(CLI::App& parent) {
  auto args = std::make_shared<GenArgs>();
  CLI::App* app = parent.add_subcommand("gen", "write a matrix with a planted factorisation (and its W, H)");
  app->add_option("--rows", args->planted.rows, "rows of A")
      ->required()
      ->transform(decimal_integer())
      ->check(at_least(1));
  app->add_option("--cols", args->planted.cols, "columns of A")
      ->required()
      ->transform(decimal_integer())
      ->check(at_least(1));
  app->add_option("--rank", args->planted.rank, "planted rank k")
      ->required()
      ->transform(decimal_integer())
      ->check(at_least(1));
  app->add_option("--density", args->planted.density,
                  "below 1: a sparse matrix (.mtx, or a CSR group in .h5) with about this fraction of non-zero "
                  "entries; 1: a dense matrix (its factors are half zeros, so some entries are zero)")
      ->capture_default_str();
  app->add_option("--noise", args->planted.noise, "relative multiplicative noise")->capture_default_str();
  app->add_option("--seed", args->planted.seed, "random seed")
      ->transform(decimal_integer(false))
      ->check(seed_value())
      ->capture_default_str();
  add_precision_option(*app, args->precision);
  app->add_option("-o,--output", args->output,
                  "A.npy (dense), A.mtx (sparse) or A.h5 (either, as /X); truth goes to A.W.npy, A.H.npy")
      ->required();
  return {app, [args] { return args->precision == "f32" ? generate<float>(*args) : generate<double>(*args); }};
}

}  // namespace dnmf::cli

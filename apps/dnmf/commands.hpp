// dnmf CLI: the subcommands. Each lives in its own file and only turns arguments into library calls.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <utility>

#include "dnmf/error.hpp"

namespace dnmf::cli {

/// A registered subcommand: its CLI11 node and what to run once the command line has been parsed.
struct Command {
  CLI::App* app = nullptr;
  /// Returns the exit status; throws dnmf::Error (one line, naming the file) for anything the user must fix.
  std::function<int()> run;
};

/// `dnmf gen`: writes a planted problem A = W·H (+ noise) and its true factors.
Command add_gen(CLI::App& parent);

/// `dnmf info`: shape, format and entry statistics of a matrix file.
Command add_info(CLI::App& parent);

/// `dnmf factor`: factorises a matrix file into OUTDIR/W.npy, OUTDIR/H.npy and OUTDIR/report.json.
Command add_factor(CLI::App& parent);

/// `dnmf nmfk`: chooses k by NMFk; writes OUTDIR/nmfk.json, nmfk.csv, the plot and k_<K>/W.npy, H.npy.
Command add_nmfk(CLI::App& parent);

/// `dnmf cv`: chooses k by cross-validation on held-out entries; writes OUTDIR/cv.json and cv.csv.
Command add_cv(CLI::App& parent);

/// `dnmf convert`: a matrix file into .dcsr (the binary CSR streaming reads), or a .dcsr into .mtx.
Command add_convert(CLI::App& parent);

/// The input formats, for the FILE options' help and `dnmf --help`.
inline constexpr const char* kInputFormats =
    ".npy (dense), .npz (numpy.savez with one array, or A.npz:NAME; scipy.sparse.save_npz CSR or CSC), .mtx "
    "(Matrix Market), .h5/.hdf5/.h5ad[:/object] (dense dataset, CSR or CSC group; .h5ad means /X, or "
    "A.h5ad:/layers/NAME), .dcsr (binary CSR, see dnmf convert)";

/// A validator accepting finite numbers >= `bound`, with a short message otherwise ("must be >= 0, got -1");
/// CLI11's own range validators print their (huge) default bounds.
CLI::Validator at_least(double bound);

/// `text` with its line breaks as spaces: a file name holding a newline (a legal name) split a warning or a summary
/// line in two, and could print a line that read as dnmf's own ("dnmf: error: ...") in a successful run.
std::string one_line(std::string text);

/// A transform for whole-number options: CLI11 reads integers with base 0, so `-k 010` ran k = 8 and `--seed 010`
/// the stream of seed 8, `08` failed as "Could not convert", and `0x3` was 3. Digits (with an optional sign) are
/// read as decimal, leading zeros dropped; anything else is refused naming the text, and with signed_64 so is a
/// magnitude beyond 2^63 - 1, which CLI11 would clamp (a seed's wider range is seed_value's to check). Add it with
/// transform(), which runs before the option's checks.
CLI::Validator decimal_integer(bool signed_64 = true);

/// A validator accepting a whole decimal number from 0 to 2^64 - 1 (a random seed): CLI11 would clamp a larger
/// one to 2^64 - 1, so that two different seeds given would silently run the same stream.
CLI::Validator seed_value();

/// A validator accepting a number strictly between 0 and 1 (a hold-out fraction), as the text given.
CLI::Validator fraction();

/// A validator refusing an empty value: `--mask "$MASK"` with the variable unset would otherwise run unmasked.
CLI::Validator not_empty();

/// Adds `--precision f32|f64` (default f64) bound to `precision`.
void add_precision_option(CLI::App& app, std::string& precision);

/// Runs `step`, checks of the command line that every process makes identically: its dnmf::Error becomes a
/// CollectiveError, reported once while every process ends normally; unclassified ones are usage errors.
template <class Step>
void on_every_process(Step&& step) {
  try {
    std::forward<Step>(step)();
  } catch (const CollectiveError&) {
    throw;
  } catch (const Error& e) {
    throw CollectiveError(e.what(), e.kind() == ErrorKind::general ? ErrorKind::usage : e.kind());
  }
}

}  // namespace dnmf::cli

// `dnmf info`: what a matrix file holds, and whether `dnmf factor` will accept it.

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.hpp"
#include "dnmf/inspect.hpp"
#include "dnmf/io.hpp"

namespace dnmf::cli {
namespace {

struct InfoArgs {
  std::string path;
  bool json = false;
};

int show_info(const InfoArgs& args) {
  const MatrixInfo info = inspect(args.path);
  const io::FileFormat format = info.format;
  const bool fortran_order = info.fortran_order;
  const std::string& dtype = info.dtype;
  const EntryStats& s = info.stats;
  const double entries = static_cast<double>(s.rows) * static_cast<double>(s.cols);
  const double density = entries > 0 ? static_cast<double>(s.nonzeros) / entries : 0.0;
  // An HDF5 file holds either kind; the loader says which it found.
  const bool sparse = info.sparse;

  if (args.json) {
    nlohmann::json j;
    j["path"] = args.path;
    j["format"] = io::format_name(format);
    j["dtype"] = dtype;
    if (!sparse) j["fortran_order"] = fortran_order;
    j["rows"] = s.rows;
    j["cols"] = s.cols;
    j["stored"] = s.stored;
    j["nnz"] = s.nonzeros;
    j["density"] = density;
    j["min"] = s.min;  // NaN and infinities become null in JSON
    j["max"] = s.max;
    j["sum"] = s.sum;
    j["negative"] = s.negative;
    j["nan"] = s.nan;
    j["inf"] = s.infinite;
    if (format == io::FileFormat::matrix_market) j["duplicates"] = s.duplicates;
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("file      %s\n", one_line(args.path).c_str());
    const std::string layout = format == io::FileFormat::dcsr ? "CSR, " + dtype + " values"
                               : sparse                       ? "CSR, values read as f8"
                               : format == io::FileFormat::hdf5
                                   ? "dense dataset, read as f8"
                                   : dtype + (fortran_order ? ", Fortran order" : ", C order");
    std::printf("format    %s (%s)\n", io::format_name(format).c_str(), layout.c_str());
    std::printf("shape     %lld x %lld\n", static_cast<long long>(s.rows), static_cast<long long>(s.cols));
    if (sparse) std::printf("stored    %lld\n", static_cast<long long>(s.stored));
    std::printf("nnz       %lld\n", static_cast<long long>(s.nonzeros));
    std::printf("density   %.6g\n", density);
    std::printf("min       %.10g\n", s.min);
    std::printf("max       %.10g\n", s.max);
    std::printf("sum       %.10g\n", s.sum);
    std::printf("negative  %lld\n", static_cast<long long>(s.negative));
    std::printf("nan       %lld\n", static_cast<long long>(s.nan));
    std::printf("inf       %lld\n", static_cast<long long>(s.infinite));
    if (s.duplicates > 0) {
      std::printf("duplicates %lld (entries at a position given before: summed when read; factor checks each one)\n",
                  static_cast<long long>(s.duplicates));
    }
  }
  // info is a diagnostic: a bad matrix is a finding, not a failure, but it must not go unnoticed.
  if (s.negative + s.nan + s.infinite > 0) {
    std::fprintf(stderr,
                 "dnmf: warning: %s: %lld negative, %lld NaN and %lld infinite entries; dnmf factor needs finite, "
                 "non-negative input%s\n",
                 one_line(args.path).c_str(), static_cast<long long>(s.negative), static_cast<long long>(s.nan),
                 static_cast<long long>(s.infinite),
                 s.nan > 0 ? " (with --missing nan it fits NaN entries as missing)" : "");
  }
  return 0;
}

}  // namespace

Command add_info(CLI::App& parent) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* app = parent.add_subcommand("info", "shape, format, nnz and entry statistics of a matrix file");
  app->add_option("FILE", args->path, std::string("matrix file: ") + kInputFormats)->required();
  app->add_flag("--json", args->json, "print one JSON object instead of text");
  return {app, [args] { return show_info(*args); }};
}

}  // namespace dnmf::cli

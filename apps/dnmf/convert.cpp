// `dnmf convert IN OUT.dcsr`: any matrix file the readers take (.mtx, HDF5, .npz, .npy) into the
// project's binary CSR (.dcsr, docs/formats.md), which streaming reads in nnz-balanced row ranges with three
// preads a tile; and `dnmf convert IN.dcsr OUT.mtx` back. The matrix is held in memory once while converting.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "signals.hpp"

namespace dnmf::cli {
namespace {

struct ConvertArgs {
  std::string input;
  std::string output;
  std::string precision = "f64";
  std::string missing;  // "nan": NaN entries kept (factor --missing nan fits them as missing)
};

/// Removes OUT.tmp.<pid>.<n> files beside `output` whose process is gone: what a convert killed outright (SIGKILL)
/// left; a signal it can catch removes its own. A live process's temporary (another convert now) is left alone.
void remove_stale_temporaries(const std::string& output) {
  namespace fs = std::filesystem;
  const fs::path out(output);
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  const std::regex pattern(std::regex_replace(out.filename().string(), std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                           R"(\.tmp\.([0-9]+)\.[0-9]+)");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::smatch m;
    const std::string name = it->path().filename().string();
    if (!std::regex_match(name, m, pattern)) continue;
    if (gone_process(m[1].str())) fs::remove(it->path(), ec);
  }
}

template <class T>
int convert(const ConvertArgs& args) {
  end_writes_on_signals(args.output);
  remove_stale_temporaries(args.output);
  const io::MatrixShape a = io::convert_matrix<T>(args.input, args.output, args.missing == "nan");
  if (io::format_of(args.output) != io::FileFormat::dcsr) {
    std::printf("%s: %lldx%lld, %lld entries -> %s\n", one_line(args.input).c_str(), static_cast<long long>(a.rows),
                static_cast<long long>(a.cols), static_cast<long long>(a.stored), one_line(args.output).c_str());
  } else {
    std::printf("%s: %lldx%lld, %lld entries -> %s (values %s)\n", one_line(args.input).c_str(),
                static_cast<long long>(a.rows), static_cast<long long>(a.cols), static_cast<long long>(a.stored),
                one_line(args.output).c_str(), args.precision.c_str());
  }
  return 0;
}

}  // namespace

Command add_convert(CLI::App& parent) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* app = parent.add_subcommand(
      "convert", "rewrite a matrix file as .dcsr, the binary CSR that --memory-budget streams (or .dcsr to .mtx)");
  app->add_option("IN", args->input, std::string("input matrix: ") + kInputFormats)->required();
  app->add_option("OUT", args->output, "output file (.dcsr; or .mtx from a .dcsr)")->required();
  app->add_option("--precision", args->precision, "value type stored in the .dcsr file")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  // A sparse matrix with NaN entries had no way into .dcsr, the format --missing nan streams from.
  app->add_option("--missing", args->missing,
                  "nan: keep NaN entries as stored values, for dnmf factor --missing nan (without it they are refused)")
      ->check(CLI::IsMember({"nan"}));
  return {app, [args] {
            // A .mtx is written with the .dcsr's own values: f32 rounded them (0.3 became 0.300000012) or refused
            // a value below float's range, with a summary that did not say so.
            if (args->precision == "f32" && io::format_of(args->output) == io::FileFormat::matrix_market)
              throw UsageError("--precision f32: it sets the value type of a .dcsr output; " + args->output +
                               " is written with the values of " + args->input + " (leave --precision out)");
            return args->precision == "f32" ? convert<float>(*args) : convert<double>(*args);
          }};
}

}  // namespace dnmf::cli

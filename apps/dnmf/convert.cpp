// `dnmf convert IN OUT.dcsr`: any matrix file the readers take (.mtx, HDF5, .npz, .npy) into the
// project's binary CSR (.dcsr, docs/formats.md), which streaming reads in nnz-balanced row ranges with three
// preads a tile; and `dnmf convert IN.dcsr OUT.mtx` back. The matrix is held in memory once while converting.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"

namespace dnmf::cli {
namespace {

struct ConvertArgs {
  std::string input;
  std::string output;
  std::string precision = "f64";
};

template <class T>
int convert(const ConvertArgs& args) {
  const io::MatrixShape a = io::convert_matrix<T>(args.input, args.output);
  if (io::format_of(args.input) == io::FileFormat::dcsr) {
    std::printf("%s: %lldx%lld, %lld entries -> %s\n", args.input.c_str(), static_cast<long long>(a.rows),
                static_cast<long long>(a.cols), static_cast<long long>(a.stored), args.output.c_str());
  } else {
    std::printf("%s: %lldx%lld, %lld entries -> %s (values %s)\n", args.input.c_str(), static_cast<long long>(a.rows),
                static_cast<long long>(a.cols), static_cast<long long>(a.stored), args.output.c_str(),
                args.precision.c_str());
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
  return {app, [args] { return args->precision == "f32" ? convert<float>(*args) : convert<double>(*args); }};
}

}  // namespace dnmf::cli

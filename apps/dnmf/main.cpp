// dnmf: entry point of the command-line tool. Every failure the user can cause ends here as one line on
// stderr, `dnmf: error: <message>`, and a non-zero exit status: never a stack trace, never an abort.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dnmf/error.hpp"

namespace {

/// Prints `dnmf: error: <message>` as exactly one line (embedded newlines would split it).
void print_error(std::string message) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::fprintf(stderr, "dnmf: error: %s\n", message.c_str());
}

int run(int argc, char** argv) {
  CLI::App app{"dnmf: non-negative matrix factorisation A ~ W H", "dnmf"};
  app.set_version_flag("--version", DNMF_VERSION);
  app.require_subcommand(1);
  const std::vector<dnmf::cli::Command> commands = {dnmf::cli::add_gen(app), dnmf::cli::add_info(app),
                                                    dnmf::cli::add_factor(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive as "errors" with exit code 0; CLI11 prints those itself.
    if (e.get_exit_code() == 0) return app.exit(e);
    // CLI11's own printer adds a "Run with --help" line; the contract is one line per error.
    print_error(e.what());
    return e.get_exit_code();
  }
  for (const auto& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return 0;  // unreachable: require_subcommand(1) guarantees one was parsed
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const dnmf::Error& e) {
    print_error(e.what());
  } catch (const std::bad_alloc&) {
    print_error("out of memory");
  } catch (const std::exception& e) {
    // Not expected (the library reports user errors as dnmf::Error), but still one line, not an abort.
    print_error(e.what());
  } catch (...) {
    print_error("unexpected internal error");
  }
  return 1;
}

namespace dnmf::cli {

CLI::Validator at_least(double bound) {
  std::ostringstream name;
  name << "NUMBER >= " << bound;
  return CLI::Validator(
      [bound](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return "not a number: '" + text + "'";
        if (!(value >= bound) || !std::isfinite(value)) {
          std::ostringstream message;
          message << "must be a finite number >= " << bound << ", got " << text;
          return message.str();
        }
        return {};
      },
      name.str());
}

void add_precision_option(CLI::App& app, std::string& precision) {
  app.add_option("--precision", precision, "floating-point type of the computation and of the written arrays")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
}

}  // namespace dnmf::cli

// dnmf: entry point of the command-line tool. Every failure the user can cause ends here as one line on
// stderr, `dnmf: error: <message>`, and a non-zero exit status: never a stack trace. Under mpirun a failure
// every process sees alike is printed once (by rank 0); a failure of one process is printed with its rank and
// ends the whole job (MPI_Abort), so no other process is left waiting in a collective.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "dnmf/context.hpp"
#include "dnmf/error.hpp"
#include "dnmf/version.hpp"

namespace {

/// Prints `dnmf: error: <message>` as exactly one line (embedded newlines would split it); in a job of several
/// processes the line names the rank when the failure was that rank's alone.
void print_error(std::string message, int rank = -1) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (rank >= 0) {
    std::fprintf(stderr, "dnmf: error: rank %d: %s\n", rank, message.c_str());
  } else {
    std::fprintf(stderr, "dnmf: error: %s\n", message.c_str());
  }
  std::fflush(stderr);
}

/// Reports a failure of this process alone; in a job of several processes, ends them all.
int fail_here(const std::string& message) {
  const dnmf::Context world = dnmf::Context::world();
  if (world.size() == 1) {
    print_error(message);
    return 1;
  }
  print_error(message, world.rank());
  world.abort(1);
  return 1;  // not reached: abort ends the process
}

int run(int argc, char** argv) {
  CLI::App app{"dnmf: non-negative matrix factorisation A ~ W H", "dnmf"};
  app.set_version_flag("--version", std::string(dnmf::version()));
  app.require_subcommand(1);
  app.footer(std::string("Input formats: ") + dnmf::cli::kInputFormats + ".");
  const std::vector<dnmf::cli::Command> commands = {dnmf::cli::add_gen(app), dnmf::cli::add_info(app),
                                                    dnmf::cli::add_factor(app), dnmf::cli::add_nmfk(app),
                                                    dnmf::cli::add_convert(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive as "errors" with exit code 0; CLI11 prints those itself.
    if (e.get_exit_code() == 0) return app.exit(e);
    // CLI11's own printer adds a "Run with --help" line; the contract is one line per error. Every process
    // parses the same command line, so one of them speaks.
    if (dnmf::Context::world().rank() == 0) print_error(e.what());
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
  } catch (const dnmf::CollectiveError& e) {
    if (dnmf::Context::world().rank() == 0) print_error(e.what());
    return 1;
  } catch (const dnmf::PeerError&) {
    // The failing process prints the cause; give it a moment to do so before the job is ended.
    if (dnmf::Context::world().size() > 1) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      dnmf::Context::world().abort(1);
    }
    return 1;
  } catch (const dnmf::Error& e) {
    return fail_here(e.what());
  } catch (const std::bad_alloc&) {
    return fail_here("out of memory");
  } catch (const std::exception& e) {
    // Not expected (the library reports user errors as dnmf::Error), but still one line.
    return fail_here(e.what());
  } catch (...) {
    return fail_here("unexpected internal error");
  }
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

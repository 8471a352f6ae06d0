// dnmf: entry point of the command-line tool. Every failure the user can cause ends here as one line on
// stderr, `dnmf: error: <message>`, and an exit status naming its class (kExitCodes): never a stack trace. Under mpirun
// a failure every process sees alike is printed once (by rank 0); a failure of one process is printed with its rank and
// ends the whole job (MPI_Abort), so no other process is left waiting in a collective.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "dnmf/blas.hpp"
#include "dnmf/context.hpp"
#include "dnmf/error.hpp"
#include "dnmf/version.hpp"
#include "signals.hpp"
#include "suggest.hpp"

namespace {

// Scripts branch on the class of a failure, never on the message; docs/reliability.md lists the same codes.
constexpr int kExitGeneral = 1;
constexpr int kExitUsage = 2;
constexpr int kExitData = 3;
constexpr int kExitIo = 4;
constexpr int kExitNumerical = 5;

constexpr const char* kExitCodes =
    "Exit status: 0 success, 1 other failure, 2 usage (bad option or argument), 3 bad input data, 4 I/O or file "
    "system, 5 numerical breakdown, 130 interrupted (SIGINT), 143 terminated (SIGTERM). A failed or interrupted "
    "run leaves the previous output directory as it was.";

int exit_code(dnmf::ErrorKind kind) {
  switch (kind) {
    case dnmf::ErrorKind::usage:
      return kExitUsage;
    case dnmf::ErrorKind::data:
      return kExitData;
    case dnmf::ErrorKind::io:
      return kExitIo;
    case dnmf::ErrorKind::numerical:
      return kExitNumerical;
    case dnmf::ErrorKind::general:
      break;
  }
  return kExitGeneral;
}

/// Prints `dnmf: error: <message>` as exactly one line (embedded newlines would split it); in a job of several
/// processes the line names the rank when the failure was that rank's alone.
void print_error(std::string message, int rank = -1) {
  message = dnmf::cli::one_line(std::move(message));
  if (rank >= 0) {
    std::fprintf(stderr, "dnmf: error: rank %d: %s\n", rank, message.c_str());
  } else {
    std::fprintf(stderr, "dnmf: error: %s\n", message.c_str());
  }
  std::fflush(stderr);
}

/// Reports a failure of this process alone; in a job of several processes, ends them all.
int fail_here(const std::string& message, int code = kExitGeneral) {
  const dnmf::Context world = dnmf::Context::world();
  if (world.size() == 1) {
    print_error(message);
    return code;
  }
  print_error(message, world.rank());
  world.abort(code);
  return code;  // not reached: abort ends the process
}

/// CLI11 would call a mistyped subcommand an unexpected positional argument; say what it is and the likely fix.
void check_subcommand(int argc, char** argv, const CLI::App& app) {
  if (argc < 2) return;
  if (argv[1][0] == '-') {
    // `dnmf --foo` said only "A subcommand is required".
    const std::string word = argv[1];
    if (word == "-h" || word == "--help" || word == "--version") return;
    throw dnmf::CollectiveError("unknown option '" + word +
                                    "': dnmf takes --help or --version before a subcommand "
                                    "(gen, info, factor, nmfk, cv, convert), and the other options after it",
                                dnmf::ErrorKind::usage);
  }
  const std::string word = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  for (const std::string& name : names)
    if (name == word) return;
  const std::string guess = dnmf::cli::nearest(word, names);
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  // Every process parses the same command line: a collective error, printed once.
  throw dnmf::CollectiveError("unknown subcommand '" + word + "'" +
                                  (guess.empty() ? "; the subcommands are " + list : "; did you mean '" + guess + "'?"),
                              dnmf::ErrorKind::usage);
}

/// `required` (a missing option's message), preceded by the options the command line gave that the parsed
/// subcommand does not take, each with the nearest option it does take.
std::string unexpected_before(const CLI::App& app, const std::string& required) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->parsed() == 0) continue;
    std::vector<std::string> names;
    for (const CLI::Option* option : sub->get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
      for (const std::string& name : option->get_snames()) names.push_back("-" + name);
    }
    std::string unexpected;
    const std::vector<std::string> remaining = sub->remaining();
    // After "--" every word is a file name, options included: "factor -- -A.npy -k 2" said "'-k' (did you mean
    // '-k'?)". Said when a word after it looks like an option.
    const auto end_of_options = std::find(remaining.begin(), remaining.end(), "--");
    if (std::any_of(end_of_options, remaining.end(), [](const std::string& w) { return w != "--" && w[0] == '-'; }))
      return sub->get_name() + ": after '--' every word is read as a file name; put the options before it (" +
             sub->get_name() + " [OPTIONS] -- FILE); " + required;
    for (const std::string& word : remaining) {
      if (word.empty() || word[0] != '-' || word == "--") continue;
      // The same name with the other number of dashes first (-k for --k), then the nearest by spelling.
      const std::size_t dashes = word.find_first_not_of('-');
      const std::string bare = dashes == std::string::npos ? std::string() : word.substr(dashes);
      std::string guess;
      for (const std::string& name : names)
        if (name != word && name.substr(name.find_first_not_of('-')) == bare) guess = name;
      if (guess.empty()) guess = dnmf::cli::nearest(word, names);
      if (guess == word) guess.clear();  // an option the command takes, but out of place
      unexpected += (unexpected.empty() ? "" : ", ") + ("'" + word + "'") +
                    (guess.empty() ? std::string() : " (did you mean '" + guess + "'?)");
    }
    if (!unexpected.empty()) {
      std::string message = sub->get_name();
      message.append(" does not take ").append(unexpected).append("; ").append(required);
      return message;
    }
  }
  return required;
}

int run(int argc, char** argv) {
  CLI::App app{"dnmf: non-negative matrix factorisation A ~ W H", "dnmf"};
  // The first line is the version alone (scripts compare it); the BLAS follows, as bug reports need it.
  app.set_version_flag("--version", std::string(dnmf::version()) + "\nBLAS: " + dnmf::blas_summary());
  app.require_subcommand(1);
  app.footer(std::string("Input formats: ") + dnmf::cli::kInputFormats + ".\n" + kExitCodes);
  const std::vector<dnmf::cli::Command> commands = {dnmf::cli::add_gen(app),    dnmf::cli::add_info(app),
                                                    dnmf::cli::add_factor(app), dnmf::cli::add_nmfk(app),
                                                    dnmf::cli::add_cv(app),     dnmf::cli::add_convert(app)};
  check_subcommand(argc, argv, app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    // CLI11 checks required options before unexpected ones: `nmfk -k 2:5` (factor's spelling) said only "--k is
    // required", never naming the -k it did not take.
    if (dnmf::Context::world().rank() == 0) print_error(unexpected_before(app, e.what()));
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive as "errors" with exit code 0; CLI11 prints those itself.
    if (e.get_exit_code() == 0) return app.exit(e);
    // CLI11's own printer adds a "Run with --help" line; the contract is one line per error. Every process
    // parses the same command line, so one of them speaks.
    if (dnmf::Context::world().rank() == 0) print_error(e.what());
    return kExitUsage;  // CLI11's own codes (104-114) differ by option, not by the kind of mistake
  }
  for (const auto& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return 0;  // unreachable: require_subcommand(1) guarantees one was parsed
}

}  // namespace

int main(int argc, char** argv) {
  dnmf::cli::report_file_size_limits();
  try {
    const int code = run(argc, argv);
    // What was printed must have reached stdout: `dnmf info --json A.npy > stats.json` on a full disk left an
    // empty file with exit 0 (info's text is its whole result), as did a summary, --help or --version.
    errno = 0;
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
      const int error = errno;
      // A reader that went away (`dnmf info A.npy | head -1`) wanted no more: not an error (SIGPIPE is ignored,
      // report_file_size_limits says why, and had ended such a run with status 141 and no message).
      if (code == 0 && error != EPIPE)
        throw dnmf::IoError(std::string("cannot write to standard output") +
                            (error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
    }
    return code;
  } catch (const dnmf::Cancelled& e) {
    // Stopped by SIGINT or SIGTERM: the shell's convention, 128 + the signal, so that scripts see the interrupt.
    // The CLI cancels on signals only, so a process that received none was stopped with the job by a signal sent
    // to another of its processes (every process polls its own): SIGTERM's status, as a job stopped by mpirun.
    const int signal = dnmf::cli::stop_signal();
    if (dnmf::Context::world().rank() == 0) print_error(e.what());
    return 128 + (signal != 0 ? signal : SIGTERM);
  } catch (const dnmf::CollectiveError& e) {
    if (dnmf::Context::world().rank() == 0) print_error(e.what());
    return exit_code(e.kind());
  } catch (const dnmf::PeerError&) {
    // The failing process prints the cause; give it a moment to do so before the job is ended.
    if (dnmf::Context::world().size() > 1) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      dnmf::Context::world().abort(1);
    }
    return 1;
  } catch (const dnmf::Error& e) {
    return fail_here(e.what(), exit_code(e.kind()));
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

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

CLI::Validator decimal_integer(bool signed_64) {
  return CLI::Validator(
      [signed_64](std::string& text) -> std::string {
        const std::size_t start = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
        if (text.size() == start || text.find_first_not_of("0123456789", start) != std::string::npos)
          return "must be a whole decimal number, got '" + text + "'";
        const std::size_t first = std::min(text.find_first_not_of('0', start), text.size() - 1);
        const std::string digits = text.substr(first);
        // CLI11 saturates what does not fit: -k 99999999999999999999 became k = 9223372036854775807.
        const std::string largest = "9223372036854775807";
        if (signed_64 && (digits.size() > largest.size() || (digits.size() == largest.size() && digits > largest)))
          return "must be at most " + largest + " in magnitude, got '" + text + "'";
        text = (text[0] == '-' ? "-" : "") + digits;
        return {};
      },
      "");
}

CLI::Validator fraction() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return "not a number: '" + text + "'";
        if (!(value > 0 && value < 1)) return "must be a fraction in (0, 1), got " + text;
        return {};
      },
      "FRACTION in (0, 1)");
}

CLI::Validator not_empty() {
  return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "must not be empty" : ""; },
                        "NOT EMPTY");
}

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (!digits) return "must be a whole number from 0 to 18446744073709551615, got '" + text + "'";
        errno = 0;
        (void)std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE) return "must be at most 18446744073709551615 (2^64 - 1), got " + text;
        return {};
      },
      "0..2^64-1");
}

void add_precision_option(CLI::App& app, std::string& precision) {
  app.add_option("--precision", precision, "floating-point type of the computation and of the written arrays")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
}

}  // namespace dnmf::cli

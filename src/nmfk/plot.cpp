#include "nmfk/plot.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "dnmf/io.hpp"

extern char** environ;

namespace dnmf::rank_search {
namespace {

namespace fs = std::filesystem;

// How long gnuplot may draw: 60 s (a plot of a few hundred points takes well under one), or DNMF_GNUPLOT_SECONDS.
int plot_seconds() {
  const char* text = std::getenv("DNMF_GNUPLOT_SECONDS");
  const int seconds = text != nullptr ? std::atoi(text) : 0;
  return seconds > 0 ? seconds : 60;
}

// A gnuplot single-quoted string: a quote is written twice.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// With a cross-validation (cv_column > 0: the 1-based CSV column of the mean held-out error, its standard error
// next): two panels, NMFk's above and the held-out error with its error bars below, each with its choice marked.
// A multiplot cannot be replotted, so the panels are written once per terminal.
std::string cv_script_text(const NmfkSelection& s, double threshold, int cv_column) {
  const bool chosen = s.selected_k.has_value();
  const long long k = chosen ? static_cast<long long>(*s.selected_k) : static_cast<long long>(s.best_candidate);
  const long long cv_k = s.cv_k ? static_cast<long long>(*s.cv_k) : 0;
  const std::string mark =
      chosen ? "selected k = " + std::to_string(k) : "no k passed; best candidate k = " + std::to_string(k);
  std::ostringstream panels;
  // Fixed side margins so that the two panels' k axes line up (only the upper one has a right-hand axis).
  panels << "set multiplot layout 2,1\nset lmargin at screen 0.09\nset rmargin at screen 0.89\n"
         << "set title 'NMFk: cluster stability and fit against k (" << mark << ")'\n"
         << "set xlabel 'k (number of latent features)'\n"
         << "set ylabel 'silhouette (cosine)'\n"
         << "set y2label 'relative error of the regression'\n"
         << "set ytics nomirror\nset y2tics\nset yrange [*:1.05]\nset y2range [0:*]\n"
         << "set xtics 1\nset grid xtics ytics\nset key bottom left box opaque\n"
         << "set arrow 1 from " << k << ", graph 0 to " << k
         << ", graph 1 nohead dashtype 2 linewidth 2 linecolor rgb '" << (chosen ? "#2ca02c" : "#d62728") << "'\n"
         << "set label 1 '" << (chosen ? "selected k = " : "best candidate k = ") << k << "' at " << k
         << ", graph 0.97 offset 0.6, 0\n"
         << "plot 'nmfk.csv' skip 1 using 1:2 with linespoints pointtype 7 linewidth 2 linecolor rgb '#1f77b4' "
            "title 'minimum silhouette', \\\n"
         << "     '' skip 1 using 1:3 with linespoints pointtype 5 linewidth 2 linecolor rgb '#17becf' title "
            "'mean silhouette', \\\n"
         << "     '' skip 1 using 1:4 axes x1y2 with linespoints pointtype 9 linewidth 2 linecolor rgb '#ff7f0e' "
            "title 'relative error', \\\n"
         << "     " << threshold << " with lines dashtype 3 linecolor rgb 'gray40' title 'silhouette threshold'\n"
         << "unset arrow 1\nunset label 1\nunset y2tics\nunset y2label\nset ytics mirror\nset yrange [0:*]\n"
         << "set title 'cross-validation: held-out error, mean and standard error over folds (CV k = " << cv_k
         << ", one-standard-error rule)'\n"
         << "set ylabel 'held-out relative error'\nset key top right box opaque\n"
         << "set arrow 2 from " << cv_k << ", graph 0 to " << cv_k
         << ", graph 1 nohead dashtype 2 linewidth 2 linecolor rgb '#9467bd'\n"
         << "set label 2 'CV k = " << cv_k << "' at " << cv_k << ", graph 0.9 offset 0.6, 0\n"
         << "plot 'nmfk.csv' skip 1 using 1:" << cv_column << ":" << cv_column + 1
         << " with yerrorlines pointtype 7 linewidth 2 linecolor rgb '#9467bd' title 'held-out error'\n"
         << "unset arrow 2\nunset label 2\nunset multiplot\nunset lmargin\nunset rmargin\n";
  std::ostringstream g;
  g << "# NMFk plot: gnuplot nmfk.gp (in this folder) draws nmfk.svg and nmfk.png from nmfk.csv.\n"
    << "set datafile separator ','\n"
    << "set terminal svg size 900,900 dynamic background rgb 'white' font 'sans,13'\n"
    << "set output 'nmfk.svg'\n"
    << panels.str() << "set output\n"
    << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
    << "  set terminal pngcairo size 900,900 background rgb 'white' font 'sans,11'\n"
    << "} else {\n  set terminal png size 900,900\n}\n"
    << "set output 'nmfk.png'\n"
    << panels.str() << "set output\n";
  return g.str();
}

std::string script_text(const NmfkSelection& s, double threshold) {
  const bool chosen = s.selected_k.has_value();
  const long long k = chosen ? static_cast<long long>(*s.selected_k) : static_cast<long long>(s.best_candidate);
  const std::string mark =
      chosen ? "selected k = " + std::to_string(k) : "no k passed; best candidate k = " + std::to_string(k);
  std::ostringstream g;
  g << "# NMFk plot: gnuplot nmfk.gp (in this folder) draws nmfk.svg and nmfk.png from nmfk.csv.\n"
    << "set datafile separator ','\n"
    << "set title 'NMFk: cluster stability and fit against k (" << mark << ")'\n"
    << "set xlabel 'k (number of latent features)'\n"
    << "set ylabel 'silhouette (cosine)'\n"
    << "set y2label 'relative error of the regression'\n"
    << "set ytics nomirror\nset y2tics\nset yrange [*:1.05]\nset y2range [0:*]\n"
    << "set xtics 1\nset grid xtics ytics\nset key bottom left box opaque\n"
    << "set arrow 1 from " << k << ", graph 0 to " << k << ", graph 1 nohead dashtype 2 linewidth 2 linecolor rgb '"
    << (chosen ? "#2ca02c" : "#d62728") << "'\n"
    << "set label 1 '" << (chosen ? "selected k = " : "best candidate k = ") << k << "' at " << k
    << ", graph 0.97 offset 0.6, 0\n"
    << "plot 'nmfk.csv' skip 1 using 1:2 with linespoints pointtype 7 linewidth 2 linecolor rgb '#1f77b4' title "
       "'minimum silhouette', \\\n"
    << "     '' skip 1 using 1:3 with linespoints pointtype 5 linewidth 2 linecolor rgb '#17becf' title 'mean "
       "silhouette', \\\n"
    << "     '' skip 1 using 1:4 axes x1y2 with linespoints pointtype 9 linewidth 2 linecolor rgb '#ff7f0e' title "
       "'relative error', \\\n"
    << "     " << threshold << " with lines dashtype 3 linecolor rgb 'gray40' title 'silhouette threshold'\n"
    << "set terminal push\n"
    << "set terminal svg size 900,560 dynamic background rgb 'white' font 'sans,13'\n"
    << "set output 'nmfk.svg'\nreplot\n"
    << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
    << "  set terminal pngcairo size 900,560 background rgb 'white' font 'sans,11'\n"
    << "} else {\n  set terminal png size 900,560\n}\n"
    << "set output 'nmfk.png'\nreplot\nset output\nset terminal pop\n";
  return g.str();
}

}  // namespace

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir;
    candidate.append("/").append(program);
    if (::access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate)) return candidate;
  }
  return "";
}

PlotFiles draw_plot(const std::string& directory, const NmfkSelection& selection, double sil_threshold, int cv_column,
                    const std::string& shown_directory, const std::function<bool()>& cancel) {
  PlotFiles out;
  const fs::path dir = fs::absolute(directory);
  out.script = (dir / "nmfk.gp").string();
  const std::string text =
      cv_column > 0 ? cv_script_text(selection, sil_threshold, cv_column) : script_text(selection, sil_threshold);
  io::write_file_atomically(out.script, [&text](std::ostream& s) { s << text; });
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty()) {
    out.warning =
        "gnuplot was not found on PATH, so nmfk.svg and nmfk.png were not drawn (install gnuplot, e.g. "
        "Debian's gnuplot-nox, then run 'gnuplot nmfk.gp' in " +
        fs::absolute(shown_directory.empty() ? directory : shown_directory).string() + ")";
    return out;
  }
  const fs::path svg = dir / "nmfk.svg", png = dir / "nmfk.png", log = dir / "nmfk.gp.log";
  std::error_code ec;
  fs::remove(svg, ec);
  fs::remove(png, ec);
  // gnuplot changes to the folder itself, so the script keeps relative names and works where it lies.
  const std::string cd = "cd " + quoted(dir.string());
  std::vector<std::string> args = {gnuplot, "-e", cd, out.script};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // gnuplot in a process group of its own, so that a timeout kills what it started too (a gnuplot on PATH that
  // is a wrapper script left its child running after the wrapper was killed).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, gnuplot.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  bool timed_out = false, cancelled = false;
  const int limit = plot_seconds();
  if (spawned == 0) {
    // A gnuplot that hangs (a broken terminal driver, a font lookup on a dead network share) must not hold the
    // run, whose results are written: after plot_seconds() it is killed and the plot reported missing.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit);
    for (;;) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR)) break;
      // A stop request (SIGINT, SIGTERM) is answered now, not after gnuplot's up to plot_seconds(); and gnuplot,
      // in its own group, would not see the terminal's Ctrl-C and outlive the run.
      cancelled = cancel && cancel();
      if (cancelled || std::chrono::steady_clock::now() >= deadline) {
        ::kill(-pid, SIGKILL);  // the group: gnuplot and anything it started
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        timed_out = !cancelled;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::ifstream log_in(log);
  std::string log_text((std::istreambuf_iterator<char>(log_in)), std::istreambuf_iterator<char>());
  for (char& c : log_text)
    if (c == '\n') c = ' ';
  const bool ok = spawned == 0 && !timed_out && !cancelled && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                  fs::exists(svg) && fs::exists(png);
  if (!ok) {
    // What a failed gnuplot left may be cut short (a full disk left a truncated nmfk.png in the results): neither
    // image is kept, nor the log, whose text the warning carries; nmfk.gp draws them again.
    fs::remove(svg, ec);
    fs::remove(png, ec);
    fs::remove(log, ec);
    out.warning = "gnuplot (" + gnuplot + ") " +
                  (timed_out   ? "did not finish within " + std::to_string(limit) + " s and was stopped"
                   : cancelled ? std::string("was stopped: the run was interrupted")
                               : std::string("failed to draw the plot")) +
                  (log_text.empty() ? std::string() : ": " + log_text.substr(0, 300)) +
                  "; nmfk.svg and nmfk.png were not kept (run 'gnuplot nmfk.gp' in " +
                  fs::absolute(shown_directory.empty() ? directory : shown_directory).string() + ")";
    return out;
  }
  fs::remove(log, ec);
  out.svg = svg.string();
  out.png = png.string();
  return out;
}

}  // namespace dnmf::rank_search

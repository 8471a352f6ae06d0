// The NMFk plot (minimum and mean silhouette and relative error against k, the selected k marked; with a
// cross-validation, the held-out error in a second panel, its k marked), drawn by
// gnuplot from a script written beside the data, so that people can restyle it and draw it again.
#pragma once

#include <functional>
#include <string>

#include "dnmf/nmfk.hpp"

namespace dnmf::rank_search {

/// What draw_plot() did.
struct PlotFiles {
  std::string script;    ///< nmfk.gp (always written)
  std::string svg, png;  ///< empty when not drawn
  std::string warning;   ///< why not drawn; empty when both were
};

/// Writes DIR/nmfk.gp reading DIR/nmfk.csv (columns: k, min silhouette, mean silhouette, relative error) and
/// runs gnuplot on it (found on PATH) to draw DIR/nmfk.svg and DIR/nmfk.png. With cv_column > 0 (the 1-based
/// CSV column of the mean held-out error, its standard error in the next one) a second panel draws the
/// cross-validation with selection.cv_k marked. Never throws for a missing or failing gnuplot: the warning says
/// what is missing, naming `shown_directory` (empty: `directory`) as the folder to run gnuplot in. `cancel`
/// (when set) is polled while gnuplot runs: true stops gnuplot's process group and the plot is not kept.
PlotFiles draw_plot(const std::string& directory, const NmfkSelection& selection, double sil_threshold,
                    int cv_column = 0, const std::string& shown_directory = "",
                    const std::function<bool()>& cancel = {});

/// The full path of `program` on PATH, or "" when it is not there.
std::string find_on_path(const std::string& program);

}  // namespace dnmf::rank_search

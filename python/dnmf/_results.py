"""What dnmf.factor/factor_file and dnmf.nmfk/nmfk_file return."""

import json

import numpy as np


class Factorization:
    """One factorisation A ≈ W H, as ``dnmf factor`` reports it.

    Attributes: ``W`` (m x k) and ``H`` (k x n), on rank 0 of an MPI run (None on the other ranks);
    ``rel_error`` = ‖A − WH‖_F / ‖A‖_F, ``iterations``, ``converged``, ``rel_error_history``, ``seconds``,
    ``grid``, ``shape`` and ``report``, the dict of the CLI's report.json (options, memory plan, traffic, ...).
    """

    def __init__(self, out):
        self.W = out["W"]
        self.H = out["H"]
        self.rel_error = float(out["rel_error"])
        self.iterations = int(out["iterations"])
        self.converged = bool(out["converged"])
        self.rel_error_history = np.asarray(out["rel_error_history"])
        self.seconds = float(out["seconds"])
        self.grid = out["grid"]
        self.shape = tuple(out["shape"])
        self.report = json.loads(out["report_json"])

    def __repr__(self):
        return (f"Factorization(shape={self.shape}, k={self.report.get('k')}, rel_error={self.rel_error:.4g}, "
                f"iterations={self.iterations}, grid={self.grid!r})")


class RankTable(dict):
    """NMFk's per-k table: column name → numpy array, one row per k. ``to_pandas()`` (or
    ``pandas.DataFrame(table)``) gives a DataFrame indexed by k."""

    COLUMNS = ("k", "min_silhouette", "mean_silhouette", "h_min_silhouette", "h_mean_silhouette", "rel_error",
               "accepted", "rejected_perturbations", "seconds")

    @classmethod
    def from_ranks(cls, ranks, cv=None):
        """``cv``: the cross-validation's figures (same ks), added as cv_mean_heldout_error, cv_standard_error."""
        table = cls()
        # H's silhouettes only where they were asked for (h_silhouettes=True): elsewhere they were never computed,
        # and a column of zeros would read as "no cluster structure".
        with_h = any(len(r.get("h_silhouettes", ())) for r in ranks)
        for name in cls.COLUMNS:
            if name.startswith("h_") and not with_h:
                continue
            values = [len(r[name]) if name == "rejected_perturbations" else r.get(name, np.nan) for r in ranks]
            table[name] = np.asarray(values)
        if cv is not None:
            table["cv_mean_heldout_error"] = np.asarray(cv["mean"])
            table["cv_standard_error"] = np.asarray(cv["standard_error"])
        return table

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(dict(self)).set_index("k")

    def __repr__(self):
        columns = [c for c in self.COLUMNS if c in self]
        columns += [c for c in ("cv_mean_heldout_error", "cv_standard_error") if c in self]
        width = {c: max(len(c), 8) for c in columns}
        head = "  ".join(f"{c:>{width[c]}}" for c in columns)
        rows = ["  ".join(f"{self[c][i]!s:>{width[c]}}" if c in ("k", "accepted", "rejected_perturbations")
                          else f"{self[c][i]:{width[c]}.4f}" for c in columns) for i in range(len(self["k"]))]
        return "\n".join([head, *rows])


class NmfkResult:
    """NMFk's outcome: ``k`` (the selected rank, or None when no k was accepted), ``best_candidate``,
    ``decided_by`` ('silhouette' or 'wilcoxon'), ``silhouette_k``, ``wilcoxon_k``, ``message``, ``table`` (a
    RankTable), ``ranks`` (per k: the full figures with W, H, silhouettes, per-column and per-perturbation
    errors), ``W`` and ``H`` at the selected k (at best_candidate when nothing was accepted). Complete on rank 0
    of an MPI run; other ranks get the selection only.

    With ``cv=True``: ``cv_k`` (the cross-validation's choice, one-standard-error rule; it never changes ``k``)
    and ``cv`` (dict: ks, mean, standard_error, fold_errors, held_out, warning, best_k, selected_k, seconds); the table
    gets the columns cv_mean_heldout_error and cv_standard_error. Both are None without it.
    """

    def __init__(self, out):
        self.k = out["selected_k"]
        self.best_candidate = out["best_candidate"]
        self.decided_by = out["decided_by"]
        self.silhouette_k = out["silhouette_k"]
        self.wilcoxon_k = out["wilcoxon_k"]
        self.message = out["message"]
        self.seconds = out["seconds"]
        self.jobs_run = out["jobs_run"]
        self.jobs_loaded = out["jobs_loaded"]
        self.ranks = {int(r["k"]): r for r in out["ranks"]}
        self.cv = out.get("cv")
        self.cv_k = out.get("cv_k")
        self.table = RankTable.from_ranks(out["ranks"], self.cv) if out["ranks"] else RankTable()
        chosen = self.ranks.get(self.k if self.k is not None else self.best_candidate)
        self.W = chosen["W"] if chosen else None
        self.H = chosen["H"] if chosen else None
        self.sil_threshold = out.get("sil_threshold")
        self.output_json = out.get("json")
        self.plot_warning = out.get("plot_warning")
        self.warnings = list(out.get("warnings", []))

    def plot(self, ax=None):
        """Draws what nmfk.svg shows: minimum and mean silhouette and the relative error against k, with the
        silhouette threshold's accepted ks marked and the selected k highlighted; with cv, the held-out error
        and the cross-validation's k too. Needs matplotlib."""
        return plot_nmfk(self.table, self.k, ax=ax, threshold=self.sil_threshold, cv_k=self.cv_k,
                         best_candidate=self.best_candidate)

    def __repr__(self):
        return f"NmfkResult(k={self.k}, decided_by={self.decided_by!r}, ks={sorted(self.ranks)})"


def plot_nmfk(table, selected_k, ax=None, threshold=None, cv_k=None, best_candidate=None):
    """The NMFk plot on a matplotlib Axes (a new figure when ax is None); returns the Axes. When the table has
    the cross-validation's columns, the held-out error (mean and standard error) is drawn on a third axis and
    ``cv_k`` marked. With no k selected, ``best_candidate`` is marked in red, as nmfk.svg marks it."""
    import matplotlib.pyplot as plt

    created = ax is None
    if created:
        _, ax = plt.subplots(figsize=(7, 4))
    k = table["k"]
    ax.plot(k, table["min_silhouette"], "o-", color="tab:blue", label="minimum silhouette")
    ax.plot(k, table["mean_silhouette"], "s--", color="tab:cyan", label="mean silhouette")
    accepted = table["accepted"].astype(bool)
    ax.plot(k[accepted], table["min_silhouette"][accepted], "o", color="tab:green", markersize=10,
            fillstyle="none", label="accepted")
    if threshold is not None:
        ax.axhline(threshold, color="gray", linestyle=":", label="silhouette threshold")
    ax.set_xlabel("k")
    # k is a count: no ticks at 2.5. The locator's integer mode gives up with fewer than two integers in view (one
    # k was drawn with ticks 2.8, 2.85, ...): a few k are ticked each.
    ks = np.unique(np.asarray(k))
    if len(ks) <= 15:
        ax.set_xticks(ks)
    else:
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("silhouette")
    ax.set_ylim(min(-0.05, float(np.min(table["min_silhouette"])) - 0.05), 1.05)
    err = ax.twinx()
    err.plot(k, table["rel_error"], "^-", color="tab:red", label="relative error")
    err.set_ylabel("relative error", color="tab:red")
    if selected_k is not None:
        ax.axvline(selected_k, color="tab:green", alpha=0.4, linewidth=6, label=f"selected k = {selected_k}")
    elif best_candidate is not None:
        ax.axvline(best_candidate, color="tab:red", alpha=0.4, linewidth=6,
                   label=f"no k passed; best candidate k = {best_candidate}")
    lines = ax.get_legend_handles_labels()
    more = err.get_legend_handles_labels()
    handles, labels = lines[0] + more[0], lines[1] + more[1]
    if "cv_mean_heldout_error" in table:
        held = ax.twinx()
        held.spines["right"].set_position(("axes", 1.15))
        held.errorbar(k, table["cv_mean_heldout_error"], yerr=table["cv_standard_error"], fmt="D-",
                      color="tab:purple", capsize=3, label="held-out error (CV)")
        held.set_ylabel("held-out error", color="tab:purple")
        if cv_k is not None:
            held.axvline(cv_k, color="tab:purple", linestyle="--", label=f"CV k = {cv_k}")
        extra = held.get_legend_handles_labels()
        handles, labels = handles + extra[0], labels + extra[1]
        if created:
            # The third axis sits right of the second: on a figure of its own, room for its ticks and label (they
            # ended at 772 px of a 700 px figure, cut off by savefig and show).
            ax.figure.subplots_adjust(right=0.76)
    ax.legend(handles, labels, loc="lower left", fontsize="small")
    ax.set_title("NMFk: stability and fit against k")
    return ax

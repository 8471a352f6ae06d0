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
    def from_ranks(cls, ranks):
        table = cls()
        for name in cls.COLUMNS:
            values = [len(r[name]) if name == "rejected_perturbations" else r[name] for r in ranks]
            table[name] = np.asarray(values)
        return table

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(dict(self)).set_index("k")

    def __repr__(self):
        # H's silhouettes only when they were asked for (they are zero otherwise).
        columns = [c for c in self.COLUMNS if not c.startswith("h_") or np.any(self[c] != 0)]
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
        self.table = RankTable.from_ranks(out["ranks"]) if out["ranks"] else RankTable()
        chosen = self.ranks.get(self.k if self.k is not None else self.best_candidate)
        self.W = chosen["W"] if chosen else None
        self.H = chosen["H"] if chosen else None
        self.sil_threshold = out.get("sil_threshold")
        self.output_json = out.get("json")
        self.plot_warning = out.get("plot_warning")

    def plot(self, ax=None):
        """Draws what nmfk.svg shows: minimum and mean silhouette and the relative error against k, with the
        silhouette threshold's accepted ks marked and the selected k highlighted. Needs matplotlib."""
        return plot_nmfk(self.table, self.k, ax=ax, threshold=self.sil_threshold)

    def __repr__(self):
        return f"NmfkResult(k={self.k}, decided_by={self.decided_by!r}, ks={sorted(self.ranks)})"


def plot_nmfk(table, selected_k, ax=None, threshold=None):
    """The NMFk plot on a matplotlib Axes (a new figure when ax is None); returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
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
    ax.set_ylabel("silhouette")
    ax.set_ylim(min(-0.05, float(np.min(table["min_silhouette"])) - 0.05), 1.05)
    err = ax.twinx()
    err.plot(k, table["rel_error"], "^-", color="tab:red", label="relative error")
    err.set_ylabel("relative error", color="tab:red")
    if selected_k is not None:
        ax.axvline(selected_k, color="tab:green", alpha=0.4, linewidth=6, label=f"selected k = {selected_k}")
    lines = ax.get_legend_handles_labels()
    more = err.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="lower left", fontsize="small")
    ax.set_title("NMFk: stability and fit against k")
    return ax

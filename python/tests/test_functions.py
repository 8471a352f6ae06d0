"""dnmf.factor_file / nmfk_file against the CLI on the same file, streaming within a memory budget, and NMFk."""
import json
import os
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

import dnmf
from conftest import planted


def run_cli(cli, *args):
    done = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("algorithm", ["mu", "hals", "bpp", "kl"])
def test_factor_file_equals_the_cli(tmp_path, cli, algorithm):
    np.save(tmp_path / "A.npy", planted(80, 60, 4, seed=1, noise=0.05))
    run_cli(cli, "factor", tmp_path / "A.npy", "-k", 4, "--algo", algorithm, "--seed", 3, "--iters", 60,
            "--threads", 1, "--quiet", "-o", tmp_path / "out")
    result = dnmf.factor_file(tmp_path / "A.npy", 4, algorithm=algorithm, seed=3, max_iter=60, n_threads=1)
    np.testing.assert_allclose(result.W, np.load(tmp_path / "out" / "W.npy"), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(result.H, np.load(tmp_path / "out" / "H.npy"), rtol=1e-10, atol=1e-14)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert result.iterations == report["iterations"]
    assert result.rel_error == pytest.approx(report["rel_error"], rel=1e-10)
    assert result.report["k"] == 4 and result.report["algo"] == report["algo"] == algorithm


def test_in_memory_equals_file(tmp_path):
    A = planted(50, 40, 3, seed=2)
    np.save(tmp_path / "A.npy", A)
    from_file = dnmf.factor_file(tmp_path / "A.npy", 3, seed=5, max_iter=40)
    # Column-major storage (as the file's blocks are read): the same computation.
    for form in (np.asfortranarray(A), sp.csr_matrix(A)):
        in_memory = dnmf.factor(form, 3, seed=5, max_iter=40)
        np.testing.assert_allclose(in_memory.W, from_file.W, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(in_memory.H, from_file.H, rtol=1e-10, atol=1e-14)
    # C order is Aᵀ's storage: the same start, the two half-steps in the other order, the same fit.
    converged = [dnmf.factor(form, 3, seed=5, algorithm="hals", max_iter=2000, tol=0) for form in (A, A.T.T.copy("F"))]
    assert max(run.rel_error for run in converged) < 1e-5  # both reach the planted exact factorisation


def test_streamed_within_a_memory_budget_equals_resident(tmp_path):
    np.save(tmp_path / "A.npy", planted(8000, 500, 5, seed=3))  # 32 MB, not kept in this process
    np.save(tmp_path / "tiny.npy", planted(10, 10, 1, seed=3))
    # The planner counts this process's resident baseline (the interpreter with numpy, scipy, scikit-learn): ask
    # for it on a tiny file, then give 24 MB above it: room for the stream (runtime reserve, factors, tiles) but
    # not for the 32 MB matrix.
    probe = dnmf.factor_file(tmp_path / "tiny.npy", 1, max_iter=1, memory_budget="8G")
    budget = probe.report["memory"]["planned"]["baseline_bytes"] + 24 * 2**20
    streamed = dnmf.factor_file(tmp_path / "A.npy", 5, max_iter=15, n_threads=1, memory_budget=budget)
    memory = streamed.report["memory"]
    assert memory["mode"] == "streamed" and memory["planned"]["total_bytes"] <= budget
    resident = dnmf.factor_file(tmp_path / "A.npy", 5, max_iter=15, n_threads=1)
    np.testing.assert_allclose(streamed.W, resident.W, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(streamed.H, resident.H, rtol=1e-9, atol=1e-13)
    with pytest.raises(dnmf.Error, match="A.npy.*too small|too small.*A.npy"):
        dnmf.factor_file(tmp_path / "A.npy", 5, memory_budget="10K")


def test_memory_budget_values(tmp_path):
    # Whole numbers of bytes as an int or a float (1e9), or a size string; 0 refused as "0" is (it had meant no
    # budget, silently); a fraction, a bool or another type a UsageError (a float raised RuntimeError bad_cast).
    np.save(tmp_path / "x.npy", planted(50, 40, 3, seed=1))
    ok = dnmf.factor_file(tmp_path / "x.npy", 3, max_iter=2, memory_budget=2.0 ** 33)
    assert ok.report["memory"]["budget_bytes"] == 2 ** 33
    for bad, needle in ((0, "at least one byte"), ("0", "at least one byte"), (1.5, "whole number"),
                        (float("nan"), "whole number"), (True, "bool"), ([1], "list"), (-5, ">= 0"),
                        (2 ** 70, "64-bit")):
        with pytest.raises(dnmf.UsageError, match=needle):
            dnmf.factor_file(tmp_path / "x.npy", 3, max_iter=2, memory_budget=bad)


def test_file_errors_name_the_file(tmp_path):
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    with pytest.raises(dnmf.DataError, match="bad.npy"):
        dnmf.factor_file(tmp_path / "bad.npy", 2)
    with pytest.raises(dnmf.IoError, match="missing.npy") as missing:
        dnmf.factor_file(tmp_path / "missing.npy", 2)
    assert isinstance(missing.value, OSError) and isinstance(missing.value, ValueError)
    np.save(tmp_path / "ok.npy", planted(10, 8, 2))
    with pytest.raises(dnmf.UsageError, match="ok.npy.*k=0|k=0.*ok.npy"):
        dnmf.factor_file(tmp_path / "ok.npy", 0)


def test_nmfk_file_equals_the_cli(tmp_path, cli):
    np.save(tmp_path / "K.npy", planted(200, 150, 4, seed=4, noise=0.02))
    run_cli(cli, "nmfk", tmp_path / "K.npy", "--k", "2:6", "--perturbations", 6, "--threads", 1, "--quiet",
            "-o", tmp_path / "cli")
    result = dnmf.nmfk_file(tmp_path / "K.npy", "2:6", perturbations=6, n_threads=1, output_dir=tmp_path / "py")
    cli_report = json.loads((tmp_path / "cli" / "nmfk.json").read_text())
    assert result.k == 4 == cli_report["selection"]["selected_k"]
    for row in cli_report["per_k"]:
        k = row["k"]
        assert result.ranks[k]["min_silhouette"] == pytest.approx(row["min_silhouette"], rel=1e-10, abs=1e-12)
        assert result.ranks[k]["rel_error"] == pytest.approx(row["rel_error"], rel=1e-10)
    np.testing.assert_allclose(result.W, np.load(tmp_path / "cli" / "k_4" / "W.npy"), rtol=1e-10, atol=1e-14)
    assert (tmp_path / "py" / "nmfk.json").exists()


def test_nmfk_output_dir_is_one_output_set(tmp_path, monkeypatch):
    # output_dir wrote into the folder as it was: a second, smaller sweep left the first one's k_ folders beside its
    # own nmfk.json, and '.' or a folder of the user's own files was written into. It is the CLI's output set now.
    np.save(tmp_path / "A.npy", planted(60, 40, 3, seed=2, noise=0.02))
    out = tmp_path / "out"
    first = dnmf.nmfk_file(tmp_path / "A.npy", "2:5", perturbations=2, n_threads=1, output_dir=out)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("k_")) == ["k_2", "k_3", "k_4", "k_5"]
    assert first.output_json == os.path.join(os.fspath(out), "nmfk.json")
    dnmf.nmfk_file(tmp_path / "A.npy", "2:3", perturbations=2, n_threads=1, output_dir=out)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("k_")) == ["k_2", "k_3"]
    assert [e["k"] for e in json.loads((out / "nmfk.json").read_text())["per_k"]] == [2, 3]
    assert not [p for p in tmp_path.iterdir() if ".tmp." in p.name], "no staging folder is left"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(dnmf.UsageError, match="notes.txt"):
        dnmf.nmfk_file(tmp_path / "A.npy", "2:3", perturbations=2, n_threads=1, output_dir=mine)
    assert (mine / "notes.txt").read_text() == "keep me"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(dnmf.UsageError):
        dnmf.nmfk_file(tmp_path / "A.npy", "2:3", perturbations=2, n_threads=1, output_dir=".")


def test_nmfk_estimator_selects_the_planted_rank(tmp_path):
    X = planted(150, 120, 5, seed=5, noise=0.02)
    model = dnmf.NMFk(k_range=(2, 8), n_perturbations=8, random_state=1, n_threads=1,
                      checkpoint_dir=tmp_path / "ckpt").fit(X)
    assert model.k_ == 5
    assert model.W_.shape == (150, 5) and model.components_.shape == (5, 120)
    table = model.table_
    assert list(table["k"]) == list(range(2, 9))
    assert table["accepted"][list(table["k"]).index(5)]
    frame = table.to_pandas()
    assert frame.loc[5, "min_silhouette"] >= 0.75
    W = model.transform(X)
    assert np.linalg.norm(X - W @ model.components_) / np.linalg.norm(X) < 0.05
    # A second fit with the same checkpoints loads every job instead of computing it.
    again = dnmf.NMFk(k_range=(2, 8), n_perturbations=8, random_state=1, n_threads=1,
                      checkpoint_dir=tmp_path / "ckpt").fit(X)
    assert again.k_ == 5
    np.testing.assert_array_equal(again.components_, model.components_)


def test_nmfk_plot(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X = planted(60, 50, 3, seed=6, noise=0.02)
    model = dnmf.NMFk(k_range=(2, 5), n_perturbations=5, random_state=1, n_threads=1).fit(X)
    ax = model.plot()
    ax.figure.savefig(tmp_path / "nmfk.png")
    assert (tmp_path / "nmfk.png").stat().st_size > 10_000
    assert len(ax.lines) >= 3
    # No k passes: the best candidate is marked, as nmfk.svg marks it (plot() drew no marker at all).
    noise = np.random.default_rng(4).random((40, 30))
    none = dnmf.NMFk(k_range=(3, 5), n_perturbations=4, random_state=1, n_threads=1, sil_threshold=0.9999).fit(noise)
    assert none.k_ is None
    labels = none.plot().get_legend().get_texts()
    assert f"no k passed; best candidate k = {none.best_candidate_}" in [t.get_text() for t in labels]


def test_a_misspelt_penalty_is_refused():
    X = np.random.default_rng(0).random((20, 15))
    with pytest.raises(ValueError, match=r"unknown penalties \['l1_W'\]"):
        dnmf.factor(X, 3, max_iter=5, penalties={"l1_W": 1.0})
    assert dnmf.factor(X, 3, max_iter=5, penalties={"l1_w": 1.0}).rel_error > 0


def test_bad_penalty_values_are_refused_by_name():
    # -0.5 and inf reached the library ("<memory>: penalties must be finite and >= 0", no key, no value) and None
    # raised float()'s TypeError.
    X = np.random.default_rng(0).random((20, 15))
    for value in (-0.5, float("inf"), float("nan"), None, "1", True):
        with pytest.raises(ValueError, match=r"penalties\['l2_h'\] must be a finite number >= 0, got "):
            dnmf.factor(X, 3, algorithm="hals", max_iter=5, penalties={"l2_h": value})
        with pytest.raises(ValueError, match=r"penalties\['l2_h'\] must be a finite number >= 0, got "):
            dnmf.nmfk(X, (2, 3), perturbations=2, max_iter=5, penalties={"l2_h": value})
    assert dnmf.factor(X, 3, algorithm="hals", max_iter=5, penalties={"l2_h": np.float32(0.5)}).rel_error > 0


def test_flags_of_the_functions_are_booleans(tmp_path):
    # bool('False') is True: dnmf.factor(extrapolate='False') extrapolated, tf32='False' was refused as if asked
    # for, and nmfk wrote "extrapolate": true into nmfk.json.
    X = np.random.default_rng(0).random((30, 20))
    for name in ("extrapolate", "tf32"):
        for value in ("False", "no", 0, None):
            with pytest.raises(ValueError, match=f"{name} must be True or False, got {value!r}"):
                dnmf.factor(X, 3, algorithm="hals", max_iter=5, **{name: value})
            with pytest.raises(ValueError, match=f"{name} must be True or False, got {value!r}"):
                dnmf.nmfk(X, (2, 3), perturbations=2, max_iter=5, output_dir=tmp_path / "o", **{name: value})
    assert not (tmp_path / "o").exists()
    assert dnmf.factor(X, 3, algorithm="hals", max_iter=5, extrapolate=np.bool_(True)).report["extrapolate"]
    with pytest.raises(ValueError, match="verbose must be an integer >= 0 or a bool, got 'False'"):
        dnmf.factor(X, 3, max_iter=5, verbose="False")


def test_paths_are_taken_as_open_takes_them(tmp_path):
    # 'A.npy\0.npy' read A.npy (the library cut the name at the NUL); b'A.npy' was taken for an array of shape ();
    # a name that is not UTF-8 (as os.listdir gives it) raised the binding's TypeError, naming nothing.
    X = np.random.default_rng(0).random((20, 15))
    np.save(tmp_path / "A.npy", X)
    path = str(tmp_path / "A.npy")
    with pytest.raises(ValueError, match="X: embedded null byte"):
        dnmf.factor(path + "\0.npy", 2, max_iter=3)
    with pytest.raises(ValueError, match="mask: embedded null byte"):
        dnmf.factor(path, 2, max_iter=3, mask=path + "\0")
    with pytest.raises(ValueError, match="output_dir: embedded null byte"):
        dnmf.nmfk(path, (2, 3), perturbations=2, max_iter=3, output_dir=str(tmp_path / "o\0x"))
    assert not (tmp_path / "o").exists()
    by_bytes = dnmf.factor(os.fsencode(path), 2, max_iter=3, seed=2)
    assert by_bytes.report["input"] == path
    assert np.array_equal(by_bytes.W, dnmf.factor(path, 2, max_iter=3, seed=2).W)
    with pytest.raises(ValueError, match="is not valid UTF-8, which paths given from Python must be"):
        dnmf.factor(str(tmp_path) + "/x\udcff.npy", 2, max_iter=3)


def test_a_checkpoint_dir_inside_the_output_dir_is_refused(tmp_path):
    # The output set replaces output_dir whole when it commits, keeping only output_dir/checkpoints: the jobs of a
    # checkpoint_dir equal to output_dir were deleted, and after an interruption the folder was refused.
    X = np.random.default_rng(0).random((20, 15))
    out = tmp_path / "od"
    for inside in (out, out / "sub"):
        with pytest.raises(ValueError, match="lies inside output_dir"):
            dnmf.nmfk(X, (2, 3), perturbations=2, max_iter=5, checkpoint_dir=inside, output_dir=out)
    assert not out.exists()
    dnmf.nmfk(X, (2, 3), perturbations=2, max_iter=5, checkpoint_dir=out / "checkpoints", output_dir=out)
    assert any(name.endswith(".job") for name in os.listdir(out / "checkpoints"))


def test_nmfk_warns_when_the_plot_cannot_be_drawn(tmp_path, monkeypatch):
    # The CLI prints why the plot is missing; the package only set result.plot_warning. It warns now.
    np.save(tmp_path / "A.npy", planted(40, 30, 2, seed=3, noise=0.02))
    empty = tmp_path / "no_gnuplot"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.warns(RuntimeWarning, match="gnuplot"):
        result = dnmf.nmfk_file(tmp_path / "A.npy", "2:3", perturbations=2, n_threads=1, output_dir=tmp_path / "o")
    assert result.plot_warning and (tmp_path / "o" / "nmfk.json").exists()


def test_nmfk_warns_of_a_poisson_perturbation_of_non_counts():
    counts = np.round(planted(30, 20, 2, seed=5, noise=0.02) * 20)
    fractional = counts.copy()
    fractional[3, 4] += 0.5
    with pytest.warns(UserWarning, match=r"1 of the \d+ non-zero entries of A are not whole numbers"):
        result = dnmf.nmfk(fractional, "2:2", perturbations=2, perturbation="poisson", n_threads=1, max_iter=20)
    assert len(result.warnings) == 1
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dnmf.nmfk(counts, "2:2", perturbations=2, perturbation="poisson", n_threads=1, max_iter=20).warnings == []


def test_functions_take_the_clis_missing_value_and_solver_flags(tmp_path, cli):
    """factor() takes --mask, --missing nan, --unstored and --extrapolate as the CLI does, and nmfk()
    --cluster-iters and --extrapolate (they were refused as unexpected keywords)."""
    A = planted(40, 30, 3, seed=4, noise=0.02)
    M = (np.random.default_rng(4).random(A.shape) > 0.2).astype(float)
    np.save(tmp_path / "A.npy", A)
    np.save(tmp_path / "M.npy", M)
    run_cli(cli, "factor", tmp_path / "A.npy", "-k", 3, "--algo", "hals", "--mask", tmp_path / "M.npy", "--seed",
            3, "--iters", 30, "--quiet", "-o", tmp_path / "out")
    for mask in (tmp_path / "M.npy", M):
        result = dnmf.factor(A, 3, algorithm="hals", mask=mask, seed=3, max_iter=30)
        np.testing.assert_allclose(result.W, np.load(tmp_path / "out" / "W.npy"), rtol=1e-10, atol=1e-14)
        assert result.report["observed"] == int(M.sum())
    nan = dnmf.factor(np.where(M > 0, A, np.nan), 3, algorithm="hals", missing="nan", seed=3, max_iter=30)
    np.testing.assert_allclose(nan.W, result.W, rtol=1e-12, atol=1e-14)
    run_cli(cli, "factor", tmp_path / "A.npy", "-k", 3, "--algo", "bpp", "--extrapolate", "--seed", 3, "--iters",
            30, "--quiet", "-o", tmp_path / "out_x")
    extrapolated = dnmf.factor(A, 3, algorithm="bpp", extrapolate=True, seed=3, max_iter=30)
    np.testing.assert_allclose(extrapolated.W, np.load(tmp_path / "out_x" / "W.npy"), rtol=1e-10, atol=1e-14)
    stored = dnmf.factor(sp.csr_matrix(A * M), 3, unstored="missing", seed=3, max_iter=5)
    assert stored.report["observed"] == int(M.sum())
    sweep = dnmf.nmfk(A, "2:3", perturbations=3, max_iter=50, cluster_iters=5, extrapolate=True)
    assert sweep.table["k"].tolist() == [2, 3]


def test_option_errors_are_usage_errors():
    A = planted(10, 8, 2, seed=1)
    for call in (lambda: dnmf.factor(A, 2, n_threads=-1), lambda: dnmf.factor(A, 2, max_iter=-1),
                 lambda: dnmf.factor_file("A.npy", 2, memory_budget="lots")):
        with pytest.raises(dnmf.UsageError):
            call()
    # A string budget is named by its keyword, as an int one is (and the CLI's by its option).
    with pytest.raises(dnmf.UsageError, match=r"^memory_budget: memory size '0': must be at least one byte"):
        dnmf.factor(A, 2, memory_budget="0")
    # Fractional, infinite and out-of-range counts: UsageError too (they escaped as a plain ValueError, or as
    # OverflowError for inf).
    for folds in (2.5, float("inf"), float("nan"), 2**31):
        with pytest.raises(dnmf.UsageError, match="cv_folds"):
            dnmf.nmfk(A, (2, 3), cv=True, cv_folds=folds)
    with pytest.raises(dnmf.UsageError, match="k_range"):
        dnmf.nmfk(A, [2, float("inf")])
    # max_iter=0 returns the start, as the CLI's --iters 0.
    assert dnmf.factor(A, 2, max_iter=0).iterations == 0


def test_option_errors_of_the_functions_are_usage_errors_and_complex_data_a_type_error():
    # These were plain ValueErrors (not dnmf.Error), and complex data was factored by its real part.
    X = planted(12, 9, 2, seed=3)
    for call in (lambda: dnmf.factor(X, 2, algorithm="cd"), lambda: dnmf.factor(X, 2, seed=-1),
                 lambda: dnmf.factor(X, 2, penalties={"l1": 1.0}), lambda: dnmf.factor(X, 2, precision="f16"),
                 lambda: dnmf.factor(X, 2, missing="na"), lambda: dnmf.nmfk(X, (2, 4, 2))):
        with pytest.raises(dnmf.UsageError):
            call()
    for complex_x in (X + 5j * X, sp.csr_matrix(X + 5j * X)):
        with pytest.raises(TypeError, match="complex"):
            dnmf.factor(complex_x, 2)
    # NMFk's inits: the library's list named 'given', which NMFk then refused.
    with pytest.raises(dnmf.UsageError, match="random, nndsvd, nndsvda for NMFk"):
        dnmf.NMFk((2, 3), init="custom").fit(X)



def test_library_messages_name_python_keywords_not_cli_flags(tmp_path):
    """The library's messages name the CLI's flags (--precision f64, --missing nan); raised in Python they name the
    keywords a Python user passes instead."""
    X = planted(30, 20, 3, seed=9)
    big = X.copy()
    big[2, 3] = 1e39
    np.save(tmp_path / "big.npy", big)  # read and narrowed by the library, not checked in Python first
    with pytest.raises(dnmf.DataError) as narrowing:
        dnmf.factor_file(str(tmp_path / "big.npy"), 3, precision="f32", comm=False)
    assert "big.npy" in str(narrowing.value), str(narrowing.value)
    assert "precision='f64'" in str(narrowing.value) and "--precision" not in str(narrowing.value)
    holed = X.copy()
    holed[4, 5] = np.nan
    with pytest.raises(dnmf.DataError) as nan:
        dnmf.factor(holed, 3, comm=False)
    message = str(nan.value)
    assert "row 4, column 5" in message and "(missing='nan' takes NaN entries as missing)" in message, message
    assert "--missing" not in message and "C++" not in message, message


@pytest.mark.parametrize("call, expected", [
    (lambda X: dnmf.nmfk(X, "2:4", perturbations=1, comm=False), "perturbations must be >= 2"),
    (lambda X: dnmf.nmfk(X, "3:1", perturbations=2, comm=False), "k_range: the range '3:1' is empty"),
    (lambda X: dnmf.nmfk(X, "2:3", perturbations=2, epsilon=1.0, comm=False), "epsilon must be in [0, 1)"),
    (lambda X: dnmf.nmfk(X, "2:3", perturbations=2, groups=3, comm=False), "groups=3 needs"),
    (lambda X: dnmf.nmfk(X, "2:3", perturbations=2, cv=True, cv_holdout=0.9999, comm=False), "(cv_holdout)"),
    (lambda X: dnmf.nmfk(X, "2:3", perturbations=2, cv=True, extrapolate=True, comm=False), "extrapolate=True"),
    (lambda X: dnmf.factor(X, 3, grid="2x2", comm=False), "grid='2x2' needs 4 processes"),
    (lambda X: dnmf.factor(X, 3, n_threads=100000, comm=False), "n_threads=100000 is more"),
])
def test_more_library_messages_name_python_keywords(call, expected):
    """A helper session's list: these messages named --perturbations, --k, --epsilon, --groups, --holdout,
    --extrapolate, --grid and --threads from Python; each names the keyword a Python user passes, with its value."""
    X = planted(30, 20, 3, seed=9)
    with pytest.raises(dnmf.Error) as raised:
        call(X)
    message = str(raised.value)
    assert expected in message, message
    assert " --" not in message and not message.startswith("--") and "(--" not in message, message


def test_a_near_exact_sparse_fit_reports_the_same_error_on_any_thread_count():
    # The direct residual of a sparse A (taken below the Gram identity's noise) was an OpenMP reduction, whose
    # order follows the thread count: W and H were the same bits, rel_error and objective were not.
    rng = np.random.default_rng(0)
    W = rng.random((500, 5)) * (rng.random((500, 5)) > 0.5)
    H = rng.random((5, 350)) * (rng.random((5, 350)) > 0.5)
    A = sp.csr_matrix(W @ H)
    runs = [dnmf.factor(A, 8, algorithm="bpp", max_iter=100, tol=0, seed=2, n_threads=t) for t in (1, 2, 3)]
    assert runs[0].rel_error < 1e-6
    for r in runs[1:]:
        assert np.array_equal(r.W, runs[0].W)
        assert r.rel_error == runs[0].rel_error and r.report["objective"] == runs[0].report["objective"]


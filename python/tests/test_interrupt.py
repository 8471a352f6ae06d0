"""Ctrl-C during a long fit: KeyboardInterrupt within a second, and nothing half-done."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import dnmf
from conftest import planted


@pytest.mark.parametrize("entry", ["estimator", "nmfk"])
def test_sigint_stops_a_long_run_within_a_second(entry):
    X = planted(400, 300, 10, seed=1)
    model = (dnmf.NMF(10, solver="hals", max_iter=10_000_000, tol=0) if entry == "estimator"
             else dnmf.NMFk(k_range=(2, 10), n_perturbations=1000, max_iter=100000, tol=0))
    sent = {}

    def interrupt():
        sent["at"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.5, interrupt)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        model.fit(X)
    waited = time.monotonic() - sent["at"]
    assert waited < 1.0, f"stopped {waited:.2f} s after SIGINT"
    assert not hasattr(model, "components_")  # nothing half-done


def test_process_survives_and_runs_again_after_an_interrupt():
    X = planted(50, 40, 3, seed=2)
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        dnmf.NMF(3, max_iter=10_000_000, tol=0).fit(planted(300, 200, 5, seed=3))
    model = dnmf.NMF(3, max_iter=50, random_state=0).fit(X)
    assert np.isfinite(model.reconstruction_err_)


def test_sigint_while_nmfk_draws_its_plot_raises_and_commits_nothing(tmp_path, monkeypatch):
    """Ctrl-C while gnuplot ran stopped it with a warning and was then swallowed: the output folder was committed
    without its plots and no KeyboardInterrupt came (the CLI leaves nothing). A slow gnuplot stands in here."""
    import shutil

    gnuplot = shutil.which("gnuplot")
    slow = tmp_path / "bin" / "gnuplot"
    slow.parent.mkdir()
    slow.write_text("#!/bin/sh\nsleep 5\n" + (f'exec {gnuplot} "$@"\n' if gnuplot else "exit 1\n"))
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow.parent}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "out"
    sent = {}

    def interrupt():
        sent["at"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    X = planted(60, 40, 3, seed=4)
    timer = threading.Timer(2.0, interrupt)  # the sweep takes well under a second; then the 5 s "gnuplot"
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        dnmf.nmfk(X, "2:3", perturbations=2, max_iter=20, output_dir=str(out))
    assert time.monotonic() - sent["at"] < 1.0
    assert not out.exists()


@pytest.mark.parametrize("call", ["dnmf.factor(X, 5, max_iter=10**7, tol=0)",
                                  "dnmf.NMF(5, max_iter=10**7, tol=0).fit(X)",
                                  "dnmf.nmfk(X, [2, 3], perturbations=50, max_iter=10**5, tol=0)"])
def test_interpreter_exits_cleanly_while_a_fit_runs_in_a_daemon_thread(call):
    # The fit's thread took the GIL back from a finalizing interpreter: CPython ended the thread (pthread_exit),
    # whose unwind through a noexcept GIL guard called std::terminate, and the process aborted (exit 134) where
    # a numpy thread ends quietly. It is parked now, and the process exits 0.
    import subprocess
    import sys
    script = ("import threading, time, numpy as np, dnmf\n"
              "X = np.random.default_rng(0).random((300, 200))\n"
              f"threading.Thread(target=lambda: {call}, daemon=True).start()\n"
              "time.sleep(0.5)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate" not in done.stderr and "leaked" not in done.stderr, done.stderr[-2000:]

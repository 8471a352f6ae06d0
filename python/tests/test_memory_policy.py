"""The package's malloc policy (python/src/memory_policy.hpp): freed buffers stay for the next fit.

Each case runs in a fresh interpreter, since the policy is set once, when dnmf._core is imported."""
import os
import subprocess
import sys

import pytest

# Fits a 10000x5000 sparse matrix (2.5e5 stored entries, k = 16) twice and prints whether the policy is on and
# the MiB of pages the second fit faulted in. Transparent huge pages are turned off for the child first
# (prctl PR_SET_THP_DISABLE): where the system maps 2 MiB pages on first touch, a fault counts 512 pages' worth
# and the count said a second fit without the policy faulted 0.0 MiB (a CI run; reproduced here with
# GLIBC_TUNABLES=glibc.malloc.hugetlb=1: 0.02-0.09 MiB, against 12.0-12.7 with THP off for the child).
CHILD = """
import ctypes
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE
import resource, numpy as np, scipy.sparse as sp, dnmf, dnmf._core as core
x = sp.random(10000, 5000, density=0.005, format="csr", random_state=0)
rng = np.random.default_rng(0)
w0, h0 = 0.1 * rng.random((10000, 16)), 0.1 * rng.random((16, 5000))
def fit():  # a start of the caller's, as in a sweep over solvers or settings
    dnmf.NMF(16, solver="cd", init="custom", max_iter=2, tol=0).fit(x, W=w0.copy(), H=h0.copy())
fit()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
fit()
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(core.malloc_tuned, (after - before) * resource.getpagesize() / 2**20)
"""


def run_child(**env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
                                                            "GLIBC_TUNABLES", "DNMF_MALLOC_TUNING")}
    env.update(env_changes)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    tuned, mib = out.stdout.split()
    return tuned == "True", float(mib)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the policy is glibc's mallopt")
def test_second_fit_reuses_the_first_fits_memory():
    tuned, mib = run_child()
    assert tuned
    assert mib < 4.0, f"the second fit faulted in {mib:.1f} MiB"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the policy is glibc's mallopt")
def test_turned_off_or_left_to_the_users_choice():
    # Off, with glibc's default mmap threshold (128 KiB) pinned: the same second fit faults its buffers in again
    # (what the policy is for). Unpinned, glibc raises the threshold after the first large free, so whether the
    # second fit faulted depended on the order in which threads allocated and freed: under load it faulted
    # 0.0-0.1 MiB in one run of five here, and a CI run failed so; pinned, 17.6 MiB in every run.
    tuned, mib = run_child(DNMF_MALLOC_TUNING="0", MALLOC_MMAP_THRESHOLD_="131072")
    assert not tuned
    assert mib > 4.0, f"without the policy the second fit faulted in only {mib:.1f} MiB"
    tuned, _ = run_child(DNMF_MALLOC_TUNING="0")
    assert not tuned
    tuned, _ = run_child(MALLOC_TRIM_THRESHOLD_="1048576")
    assert not tuned

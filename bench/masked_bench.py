"""What bench/masked_speed.py and bench/masked_stream_speed.py share: the command line, the planted matrix with
its 10%-missing mask, and one `dnmf factor` run read back from its report.json."""
import argparse
import json
import os
import subprocess

import numpy as np


def parser(description):
    """The options both benchmarks take (--dnmf, the shape, k, iterations, repeats)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dnmf", required=True)
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--cols", type=int, default=1500)
    p.add_argument("--k", type=int, default=16)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    return p


def write_planted(work, rows, cols, k, fortran=False):
    """A.npy (rank k, seed 1) and M.npy (weights 1, 10% of the entries 0 = missing) in `work`."""
    rng = np.random.default_rng(1)
    a = rng.random((rows, k)) @ rng.random((k, cols))
    mask = (rng.random(a.shape) >= 0.10).astype(np.float64)
    order = np.asfortranarray if fortran else np.asarray
    np.save(os.path.join(work, "A.npy"), order(a))
    np.save(os.path.join(work, "M.npy"), order(mask))


def report(dnmf, work, args, out):
    """Runs `dnmf factor ARGS -q -o OUT` in `work` and returns its report.json."""
    subprocess.run([dnmf, "factor", *args, "-q", "-o", out], cwd=work, check=True, capture_output=True)
    with open(os.path.join(work, out, "report.json")) as f:
        return json.load(f)

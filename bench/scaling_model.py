#!/usr/bin/env python3
"""Weak-scaling model of the distributed iteration (docs/scaling.md), built from bench_mpi's measurements.

Per rank and iteration (MU), on a pr x pc grid of an m x n matrix with k components:

  compute = c_nnz * k * nnz_local                  (the two products' work on the non-zeros)
          + c_blk * k * (m/pr + n/pc)              (their k x block outputs and gathered inputs)
          + c_piece * k * (m/p + n/p)              (updates, Gram matrices, error terms on the owned pieces)
  comm    = per grid direction with q > 1 ranks: allgather + reduce-scatter of k x block words,
              2 * (ceil(log2 q) * latency + (q-1)/q * 8 k block / bandwidth)
          + two k x k allreduces: 2 * (2 ceil(log2 p) * latency + 2 (p-1)/p * 8 k^2 / bandwidth)
          + four scalar collectives (two update counters, the cross term, the stop flag): 4 ceil(log2 p) * latency

The three c constants of a workload class come from its 1-process bench_mpi run: c_nnz from the products
minus the products on an empty block of the same shape, c_blk from that empty-block time, c_piece from the
rest of the iteration (so the model reproduces the 1-process time; --stat picks the fastest iteration or the
mean of the best run as that time). The bytes are DESIGN §4's
words_per_rank (the same formula as src/dist/grid.cpp) times 8.

S* (printed per row) is the node speed-up over one core measured here beyond which communication takes
longer than the arithmetic: the point where the network, not the node, sets the time.

  python3 bench/scaling_model.py --runs np1.json np2.json np4.json [--cores 2] [--bandwidth 25e9]
                                 [--latency 2e-6] [--max-nodes 4096] [--json model.json]
"""

import argparse
import json
import math
import sys


def words_per_rank(pr, pc, m, n, k):
    """DESIGN §4's model, as dist::words_per_rank."""
    p = pr * pc
    gather_w = (pc - 1) / pc * k * m / pr
    scatter_p = (pr - 1) / pr * k * n / pc
    gather_h = (pr - 1) / pr * k * n / pc
    scatter_q = (pc - 1) / pc * k * m / pr
    grams = 2 * 2 * (p - 1) / p * k * k
    return gather_w + scatter_p + gather_h + scatter_q + grams


def choose_grid(p, m, n, k):
    """The grid --grid auto picks, as dist::choose_grid."""
    best, best_words = (1, p), math.inf
    for pr in range(1, p + 1):
        if p % pr:
            continue
        pc = p // pr
        if pr > m or pc > n:
            continue
        w = words_per_rank(pr, pc, m, n, k)
        sq = abs(math.log(pr / pc))
        best_sq = abs(math.log(best[0] / best[1]))
        if w < best_words * (1 - 1e-12) or (w <= best_words * (1 + 1e-12) and sq <= best_sq + 1e-12):
            best, best_words = (pr, pc), w
    return best


def clog2(q):
    return math.ceil(math.log2(q)) if q > 1 else 0


def comm_seconds(pr, pc, m, n, k, latency, bandwidth):
    p = pr * pc
    t = 0.0
    for q, block in ((pc, m / pr), (pr, n / pc)):
        if q > 1:
            t += 2 * (clog2(q) * latency + (q - 1) / q * 8 * k * block / bandwidth)
    if p > 1:
        t += 2 * (2 * clog2(p) * latency + 2 * (p - 1) / p * 8 * k * k / bandwidth)
        t += 4 * clog2(p) * latency
    return t


def iteration_seconds(row, stat):
    """The measured time per iteration by the chosen statistic (see --stat)."""
    if stat == "best" and "best_iteration_seconds" in row:
        return row["best_iteration_seconds"]
    return row["seconds_per_iteration"]


class Rates:
    """The per-rank cost constants of one workload class, from its 1-process run."""

    def __init__(self, row, stat):
        k, m, n, nnz = row["k"], row["m"], row["n"], row["nnz"]
        self.name = row["workload"]
        total, products = iteration_seconds(row, stat), row["products_seconds"]
        # The fused pass can beat the two products timed alone (bench_iteration: 0.86x dense): then the
        # products' constants are scaled down so that the model reproduces the measured iteration.
        scale = min(1.0, total / products) if products > 0 else 1.0
        self.c_nnz = scale * max(products - row["empty_products_seconds"], 0.0) / (nnz * k)
        self.c_blk = scale * row["empty_products_seconds"] / (k * (m + n))
        self.c_piece = max(total - products, 0.0) / (k * (m + n))

    def compute(self, pr, pc, m, n, k, nnz_local, speedup=1.0):
        p = pr * pc
        work = self.c_nnz * k * nnz_local + self.c_blk * k * (m / pr + n / pc) + self.c_piece * k * (m + n) / p
        return work / speedup


def load(paths):
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(json.load(f))
    return runs


def class_rates(runs, stat):
    rates = {}
    for run in runs:
        if run["processes"] == 1:
            for row in run["rows"]:
                rates[row["workload"].split()[0]] = Rates(row, stat)
    return rates


def local_check(runs, rates, cores, stat):
    """Predicted against measured seconds per iteration for the runs made here."""
    out = []
    for run in sorted(runs, key=lambda r: r["processes"]):
        p = run["processes"]
        over = max(1.0, p / cores)  # ranks beyond the cores share them
        for row in run["rows"]:
            r = rates.get(row["workload"].split()[0])
            if r is None:
                continue
            pr, pc = (int(x) for x in row["grid"].split("x"))
            m, n, k = row["m"], row["n"], row["k"]
            nnz_local = row["local_nnz_max"]
            compute = r.compute(pr, pc, m, n, k, nnz_local) * over
            comm = comm_seconds(pr, pc, m, n, k, run["latency_s"], run["bandwidth_bytes_per_s"]) if p > 1 else 0.0
            predicted = compute + comm
            measured = iteration_seconds(row, stat)
            out.append({
                "workload": row["workload"], "processes": p, "grid": row["grid"], "oversubscription": over,
                "predicted_compute_s": compute, "predicted_comm_s": comm,
                "measured_comm_replay_s": row["comm_replay_seconds"], "predicted_s": predicted, "measured_s": measured,
                "error": predicted / measured - 1,
                # The compute half alone: the measured iteration less its collectives replayed alone, so that
                # a network model that misses (shared memory at large messages) does not hide the compute check.
                "measured_compute_s": max(measured - row["comm_replay_seconds"], 0.0),
                # None where the replayed collectives take the whole iteration: no compute left to compare with.
                "compute_error": (compute / (measured - row["comm_replay_seconds"]) - 1
                                  if measured > row["comm_replay_seconds"] else None),
                "bytes_measured": row["steady_bytes_per_rank_per_iteration_mean"], "bytes_model": row["bytes_model"],
            })
    return out


def weak_scaling(rates_dense, rates_sparse, args, speedup):
    """Time per iteration from 1 to max_nodes nodes, one rank per node, fixed work per node."""
    k = args.k
    rows = []
    p = 1
    while p <= args.max_nodes:
        for label, r in (("dense", rates_dense), ("sparse", rates_sparse)):
            if r is None:
                continue
            if label == "dense":
                side = int(round(args.dense_block * math.sqrt(p)))
                m = n = side
                pr, pc = choose_grid(p, m, n, k)
                nnz_local = (m / pr) * (n / pc)
            else:
                side = int(round(math.sqrt(p * args.nnz_per_node / args.density)))
                m = n = side
                pr, pc = choose_grid(p, m, n, k)
                nnz_local = args.density * (m / pr) * (n / pc)
            compute = r.compute(pr, pc, m, n, k, nnz_local, speedup)
            comm = comm_seconds(pr, pc, m, n, k, args.latency, args.bandwidth)
            # The node speed-up beyond which communication takes longer than the arithmetic.
            break_even = r.compute(pr, pc, m, n, k, nnz_local) / comm if comm > 0 else None
            rows.append({
                "class": label, "nodes": p, "m": m, "n": n, "grid": f"{pr}x{pc}", "compute_s": compute,
                "break_even_speedup": break_even,
                "comm_s": comm, "seconds_per_iteration": compute + comm,
                "bytes_per_rank": 8 * words_per_rank(pr, pc, m, n, k),
            })
        p *= 2
    for label in ("dense", "sparse"):
        base = next((r["seconds_per_iteration"] for r in rows if r["class"] == label and r["nodes"] == 1), None)
        for r in rows:
            if r["class"] == label and base:
                r["weak_efficiency"] = base / r["seconds_per_iteration"]
    return rows


def print_markdown(weak, speedups):
    """One table per class: nodes 1, 4, 16, ... with the time per iteration at each node speed-up."""
    for label in ("dense", "sparse"):
        head = "| nodes | grid | m = n | GB sent/rank/iter | comm s | " + " | ".join(
            f"s/iter (comm %), S = {s:g}" for s in speedups) + " |"
        print(f"\n{label}:\n\n{head}\n|" + "---|" * (5 + len(speedups)))
        first = weak[str(speedups[0])]
        for i, r in enumerate(first):
            if r["class"] != label or math.log2(r["nodes"]) % 2:
                continue
            cells = []
            for s in speedups:
                x = weak[str(s)][i]
                share = 100 * x['comm_s'] / x['seconds_per_iteration']
                cells.append(f"{x['seconds_per_iteration']:.4g} ({share:.0f}%)")
            print(f"| {r['nodes']} | {r['grid']} | {r['m']:.3g} | {r['bytes_per_rank'] / 1e9:.3g} | "
                  f"{r['comm_s']:.3g} | "
                  + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", required=True, help="bench_mpi JSON files (one must be a 1-process run)")
    ap.add_argument("--cores", type=int, default=2, help="cores of the machine the runs were made on")
    ap.add_argument("--bandwidth", type=float, default=25e9, help="bytes/s per node (200 Gb/s HDR: 25e9)")
    ap.add_argument("--latency", type=float, default=2e-6, help="seconds per message step")
    ap.add_argument("--max-nodes", type=int, default=4096)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--dense-block", type=float, default=20000, help="dense: each node holds about this squared")
    ap.add_argument("--nnz-per-node", type=float, default=1e8, help="sparse: non-zeros per node")
    ap.add_argument("--density", type=float, default=1e-6, help="sparse: density of the whole matrix")
    ap.add_argument("--speedups", type=float, nargs="+", default=[1, 32, 1000],
                    help="node compute speed over one core measured here (1: a node is one such core)")
    ap.add_argument("--stat", choices=["best", "mean"], default="best",
                    help="time per iteration: the fastest single iteration (default; least disturbed by other jobs "
                    "on a shared machine) or the mean of the best run")
    ap.add_argument("--json", help="write everything here")
    ap.add_argument("--markdown", action="store_true",
                    help="also print the weak-scaling tables as markdown (every other power of two)")
    args = ap.parse_args()

    runs = load(args.runs)
    rates = class_rates(runs, args.stat)
    if not rates:
        sys.exit("scaling_model: no 1-process run among --runs")
    print("Cost constants per rank (from the 1-process runs; ns per k-scaled unit):")
    for _key, r in rates.items():
        print(f"  {r.name:<26} c_nnz {r.c_nnz * 1e9:8.3f}  c_blk {r.c_blk * 1e9:8.3f}  c_piece {r.c_piece * 1e9:8.3f}")

    check = local_check(runs, rates, args.cores, args.stat)
    print(f"\nCheck against the runs made here ({args.cores} cores; network = each run's measured latency/bandwidth):")
    print(f"{'workload':<26} {'P':>2} {'grid':>5} {'pred s/it':>10} {'meas s/it':>10} {'error':>7} "
          f"{'pred comm':>10} {'replay':>10} {'pred comp':>10} {'meas comp':>10} {'error':>7} {'bytes/model':>11}")
    for c in check:
        ratio = c["bytes_measured"] / c["bytes_model"] if c["bytes_model"] else 1.0
        compute_error = "n.a." if c["compute_error"] is None else f"{100 * c['compute_error']:.0f}%"
        print(f"{c['workload']:<26} {c['processes']:>2} {c['grid']:>5} {c['predicted_s']:>10.5f} "
              f"{c['measured_s']:>10.5f} "
              f"{100 * c['error']:>6.0f}% {c['predicted_comm_s']:>10.5f} {c['measured_comm_replay_s']:>10.5f} "
              f"{c['predicted_compute_s']:>10.5f} {c['measured_compute_s']:>10.5f} "
              f"{compute_error:>7} "
              f"{ratio:>11.3f}")

    result = {"constants": {k: vars(v) for k, v in rates.items()}, "check": check, "weak": {}}
    for s in args.speedups:
        weak = weak_scaling(rates.get("dense"), rates.get("hyper"), args, s)
        result["weak"][str(s)] = weak
        print(f"\nWeak scaling, node = {s:g} x the per-core rate measured here; network {args.bandwidth / 1e9:g} GB/s, "
              f"{args.latency * 1e6:g} us; k = {args.k}")
        print(f"{'class':<7} {'nodes':>5} {'m = n':>11} {'grid':>7} {'compute s':>10} {'comm s':>10} {'s/iter':>10} "
              f"{'comm %':>7} {'GB/rank':>8} {'weak eff':>8} {'S*':>8}")
        for r in weak:
            print(f"{r['class']:<7} {r['nodes']:>5} {r['m']:>11} {r['grid']:>7} {r['compute_s']:>10.4f} "
                  f"{r['comm_s']:>10.4f} "
                  f"{r['seconds_per_iteration']:>10.4f} {100 * r['comm_s'] / r['seconds_per_iteration']:>6.1f}% "
                  f"{r['bytes_per_rank'] / 1e9:>8.3f} {100 * r.get('weak_efficiency', 1):>7.0f}% "
                  f"{'-' if r['break_even_speedup'] is None else format(r['break_even_speedup'], '.0f'):>8}")
    if args.markdown:
        print_markdown(result["weak"], args.speedups)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Pools the samples of several bench runs (GH_BENCH_SAMPLES=FILE, one file per run) into one table.

    python3 bench/pool.py RUN1.samples RUN2.samples ...

Each line of a file is "KIND ROUND:µs:CPUµs ...".  A round is named by its file and number, so a
kind's start is only ever paired with the "none" start of its own round; the statistics are those of
bench/common.sh (_bench_rounds_stats): median, nearest-rank p90, the median of the per-round
differences to "none" and its distribution-free 95 % interval (order statistics)."""
import math
import sys


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def interval(d):
    """The k-th smallest and k-th largest of d, k the largest with P(Binomial(n, 1/2) < k) <= 0.025."""
    n = len(d)
    if n < 6:
        return None
    d = sorted(d)
    cdf, k = 0.0, 0
    for j in range(n + 1):
        cdf += math.comb(n, j) / 2**n
        if cdf > 0.025:
            break
        k = j + 1
    return (d[k - 1], d[n - k]) if k >= 1 else None


def main(files):
    kinds, samples = [], {}
    for i, f in enumerate(files):
        for line in open(f):
            parts = line.split()
            if not parts:
                continue
            kind = parts[0]
            if kind not in samples:
                kinds.append(kind)
                samples[kind] = {}
            for s in parts[1:]:
                rnd, us, cpu = s.split(":")
                samples[kind]["%d.%s" % (i, rnd)] = (int(us), None if cpu == "-" else int(cpu))
    base = samples.get("none", {})
    print("| kind (%d runs pooled) | n | median ms | p90 ms | Δ vs none, median of per-round differences (ms) | 95 %% interval (ms) | Δ CPU per round (ms) |" % len(files))
    print("|---|---:|---:|---:|---:|---:|---:|")
    for k in kinds:
        v = [us for us, _ in samples[k].values()]
        vs = sorted(v)
        p90 = vs[max(0, math.ceil(0.9 * len(vs)) - 1)]
        d = [us - base[r][0] for r, (us, _) in samples[k].items() if r in base and k != "none"]
        dc = [c - base[r][1] for r, (_, c) in samples[k].items()
              if r in base and k != "none" and c is not None and base[r][1] is not None]
        ci = interval(d)
        print("| %s | %d | %.1f | %.1f | %s | %s | %s |" % (
            k, len(v), median(v) / 1000, p90 / 1000,
            "%+.2f" % (median(d) / 1000) if d else "-",
            "%+.2f .. %+.2f" % (ci[0] / 1000, ci[1] / 1000) if ci else "-",
            "%+.2f" % (median(dc) / 1000) if dc else "-"))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: pool.py SAMPLES...")
    main(sys.argv[1:])

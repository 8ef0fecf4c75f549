#!/usr/bin/env python3
"""Fits kvsim's collective model (sim/comm.c) to the published timings of
configs/comm/nccl-measured.csv and prints the held-out error table.

Split: within each (collective, impl, gpu, topology, ranks) series the rows
are taken in size order and every third one (the 2nd, 5th, ...) is held out;
the A100 custom all-reduce rows are all held out (fitted on H100, they check
that the per-byte term scales with the link's bus bandwidth).

Models (the same arithmetic as sim/comm.c):
  NCCL all-reduce: NCCL's tuning model (comm.h) with, per protocol p, the
    latency scaled by lat[p] and the bandwidth by bw[p]; fitted by
    coordinate descent on the median absolute log error of the fit rows.
  all-to-all and send/recv: lat_a2a + (n-1)/n * B / (busbw * eff_a2a)
    (NCCL runs the n-1 sends of an all-to-all as one group, in parallel, so
    the latency does not grow with n); send/recv takes the same latency.
  custom all-reduce (vLLM, SGLang), one-shot below the engine's switch size,
    two-shot above (vLLM custom_all_reduce.cuh):
      one-shot  lat1 + k1 * (n-1) * B / busbw
      two-shot  lat2 + k2 * 2(n-1)/n * B / busbw
usage: fit.py [--params | --table | --check-c sim/comm.c]
"""
import csv, math, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUSBW = {("H20", "nvswitch"): 370e9, ("H100", "nvswitch"): 370e9,
         ("A100", "nvswitch"): 235e9, ("H100-PCIe", "nvlink-bridge"): 116e9}
BASE = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4)}
HW = {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4)}
RING_F = (0.25, 0.92, 1.0)
TREE_F = (1 / 3.8, 7 / 9, 1.0)


def load():
    rows = []
    with open(os.path.join(HERE, "nccl-measured.csv"), newline="") as f:
        for r in csv.DictReader(l for l in f if not l.startswith("#")):
            r["ranks"], r["bytes"] = int(r["ranks"]), float(r["bytes"])
            r["time_us"] = float(r["time_us"])
            r["busbw"] = BUSBW[r["gpu"], r["topology"]]
            rows.append(r)
    series = {}
    for r in rows:
        series.setdefault((r["collective"], r["impl"], r["gpu"], r["topology"], r["ranks"]), []).append(r)
    for key, s in series.items():
        s.sort(key=lambda r: r["bytes"])
        for i, r in enumerate(s):
            r["held_out"] = i % 3 == 1 or (r["impl"] != "nccl" and r["gpu"] != "H100")
    return rows


def nccl_allreduce(n, b, busbw, lat=(1, 1, 1), bw=(1, 1, 1)):
    best = None
    for algo in ("tree", "ring"):
        for p in range(3):
            steps = 2 * (n - 1)
            if algo == "ring":
                algbw = busbw * RING_F[p] * bw[p] * n / steps
            else:
                algbw = min(busbw * 0.9, 110e9) * TREE_F[p] * bw[p] / 2
            t = (BASE[algo][p] + steps * HW[algo][p]) * lat[p] + b / algbw * 1e6
            best = t if best is None or t < best else best
    return best


def alltoall(n, b, busbw, P):
    return P["a2a_lat_us"] + (n - 1) / n * b / (busbw * P["a2a_eff"]) * 1e6


def custom(n, b, busbw, c):
    one = n == 2 or (n <= 4 and b < 512 * 1024) or (n <= 8 and b < 256 * 1024)
    if one:
        return c[0] + c[1] * (n - 1) * b / busbw * 1e6
    return c[2] + c[3] * 2 * (n - 1) / n * b / busbw * 1e6


def mlog(pairs):
    e = sorted(abs(math.log(p / t)) for p, t in pairs)
    return e[len(e) // 2] if e else 0.0


def fit_nccl(rows):
    fit = [r for r in rows if r["impl"] == "nccl" and r["collective"] == "allreduce" and not r["held_out"]]
    lat, bw = [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]
    grid = [0.5 + 0.05 * i for i in range(31)]

    def loss():
        return sum(abs(math.log(nccl_allreduce(r["ranks"], r["bytes"], r["busbw"], lat, bw) / r["time_us"])) for r in fit)
    for _ in range(4):
        for vec in (lat, bw):
            for p in range(3):
                best = min(grid, key=lambda g: (vec.__setitem__(p, g), loss())[1])
                vec[p] = best
    return lat, bw


def lsq(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - k * mx, k


def fit_custom(rows, impl):
    fit = [r for r in rows if r["impl"] == impl and not r["held_out"]]
    one = [r for r in fit if r["ranks"] == 2 or (r["ranks"] <= 4 and r["bytes"] < 524288) or r["bytes"] < 262144]
    two = [r for r in fit if r not in one]
    a1, k1 = lsq([(r["ranks"] - 1) * r["bytes"] / r["busbw"] * 1e6 for r in one], [r["time_us"] for r in one])
    a2, k2 = lsq([2 * (r["ranks"] - 1) / r["ranks"] * r["bytes"] / r["busbw"] * 1e6 for r in two], [r["time_us"] for r in two])
    return (a1, k1, a2, k2)


def fit_all(rows):
    P = {}
    P["lat"], P["bw"] = fit_nccl(rows)
    small = [r for r in rows if r["collective"] == "alltoall" and not r["held_out"] and r["bytes"] <= 65536]
    big = [r for r in rows if r["collective"] == "alltoall" and r["bytes"] > 65536]
    lat = sorted(r["time_us"] for r in small)[len(small) // 2]
    P["a2a_lat_us"] = round(lat, 2)
    eff = [(r["ranks"] - 1) / r["ranks"] * r["bytes"] / r["busbw"] * 1e6 / (r["time_us"] - lat) for r in big]
    P["a2a_eff"] = round(sum(eff) / len(eff), 3)
    P["vllm-custom"] = tuple(round(x, 3) for x in fit_custom(rows, "vllm-custom"))
    P["sglang-custom"] = tuple(round(x, 3) for x in fit_custom(rows, "sglang-custom"))
    P["lat"] = [round(x, 2) for x in P["lat"]]
    P["bw"] = [round(x, 2) for x in P["bw"]]
    return P


def predict(r, P, before=False):
    n, b, bus = r["ranks"], r["bytes"], r["busbw"]
    if r["collective"] == "alltoall":
        if before:  # NCCL's Simple ring latency over n-1 steps, full busbw
            return 8.4 + (n - 1) * 3.4 + (n - 1) / n * b / bus * 1e6
        return alltoall(n, b, bus, P)
    if r["impl"] == "nccl":
        return nccl_allreduce(n, b, bus) if before else nccl_allreduce(n, b, bus, P["lat"], P["bw"])
    if before:  # the engines' custom all-reduce was costed as NCCL
        return nccl_allreduce(n, b, bus)
    return custom(n, b, bus, P[r["impl"]])


def table(rows, P):
    out = ["| collective | implementation | GPU, topology | ranks | rows (held out) | median error before | median error after | worst held-out after |",
           "|---|---|---|---|---|---|---|---|"]
    groups = {}
    for r in rows:
        groups.setdefault((r["collective"], r["impl"], r["gpu"] + ", " + r["topology"], r["ranks"]), []).append(r)
    allb, alla = [], []
    for key in sorted(groups):
        s = groups[key]
        ho = [r for r in s if r["held_out"]]
        if not ho:
            continue
        eb = sorted(predict(r, P, True) / r["time_us"] - 1 for r in ho)
        ea = sorted(predict(r, P) / r["time_us"] - 1 for r in ho)
        allb += [abs(x) for x in eb]
        alla += [abs(x) for x in ea]
        worst = max(ea, key=abs)
        out.append("| %s | %s | %s | %d | %d (%d) | %+.0f%% | %+.0f%% | %+.0f%% |" % (
            key[0], key[1], key[2], key[3], len(s), len(ho), 100 * eb[len(eb) // 2],
            100 * ea[len(ea) // 2], 100 * worst))
    allb.sort(); alla.sort()
    out.append("")
    out.append("Held-out rows: %d; median |error| %.0f%% before, %.0f%% after." % (
        len(alla), 100 * allb[len(allb) // 2], 100 * alla[len(alla) // 2]))
    hop = sorted(predict(r, P) / r["time_us"] - 1 for r in rows if r["held_out"] and
                 r["impl"] == "nccl" and r["collective"] == "allreduce" and r["gpu"] in ("H100", "H20"))
    out.append("Hopper NCCL all-reduce, held out: %d rows, median error %+.0f%%, middle half %+.0f%% to %+.0f%%." % (
        len(hop), 100 * hop[len(hop) // 2], 100 * hop[len(hop) // 4], 100 * hop[3 * len(hop) // 4]))
    return "\n".join(out)


def c_block(P):
    return "\n".join([
        "/* configs/comm/fit.py --params: begin */",
        "#define COMM_FIT_LAT { %.2f, %.2f, %.2f } /* NCCL latency scale, LL LL128 Simple */" % tuple(P["lat"]),
        "#define COMM_FIT_BW { %.2f, %.2f, %.2f } /* NCCL bandwidth scale, LL LL128 Simple */" % tuple(P["bw"]),
        "#define COMM_FIT_A2A_LAT_US %.2f /* all-to-all and send/recv latency, us */" % P["a2a_lat_us"],
        "#define COMM_FIT_A2A_EFF %.3f /* all-to-all share of the bus bandwidth */" % P["a2a_eff"],
        "#define COMM_FIT_VLLM_CAR { %.3f, %.3f, %.3f, %.3f } /* lat1 us, k1, lat2 us, k2 */" % P["vllm-custom"],
        "#define COMM_FIT_SGLANG_CAR { %.3f, %.3f, %.3f, %.3f } /* lat1 us, k1, lat2 us, k2 */" % P["sglang-custom"],
        "/* configs/comm/fit.py --params: end */"])


def main():
    rows = load()
    P = fit_all(rows)
    mode = sys.argv[1] if len(sys.argv) > 1 else "--table"
    if mode == "--params":
        print(c_block(P))
    elif mode == "--table":
        print(table(rows, P))
    elif mode == "--check-c":
        text = open(sys.argv[2]).read()
        m = re.search(r"/\* configs/comm/fit.py --params: begin \*/.*?/\* configs/comm/fit.py --params: end \*/", text, re.S)
        if not m or m.group(0) != c_block(P):
            sys.exit("%s: the fitted constants differ from configs/comm/fit.py --params" % sys.argv[2])
    else:
        sys.exit("usage: fit.py [--params | --table | --check-c FILE]")


if __name__ == "__main__":
    main()

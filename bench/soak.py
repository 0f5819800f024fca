#!/usr/bin/env python3
"""Soak: runs detection continuously through the C API (libyoloc_runtime, loaded with ctypes)
and reports, per window (a minute by default), the latency p50 / p99 / p99.9, the process's RSS
and, where nvidia-smi answers, the GPU memory it holds. Writes JSON (and a latency-over-time
plot when matplotlib is installed).

usage: soak.py --lib build/release/libyoloc_runtime.so --model MODEL.ycm --minutes 30
               [--window 60] [--threads N] [--image FILE] --json OUT.json [--plot OUT.png]

Without --image, each call detects a fixed synthetic 1280x720 RGB frame (yoloc_detect_rgb: no
file decoding in the timing); with --image, yoloc_detect_file decodes that file every call.
The verdict, on the windows after the first (warm-up) and without a short last window: every
window's p99 within 1.05x the run's median p99, RSS flat within 1 %. The drift figures compare
the last such window with the first (p50, p99, RSS). Each window also records the load average:
on a shared machine, latency steps follow the other work. The JSON is rewritten after every
window, so an interrupted run keeps what it measured.
"""
import argparse
import ctypes
import json
import os
import platform
import subprocess
import sys
import time


class Detection(ctypes.Structure):
    _fields_ = [("x1", ctypes.c_float), ("y1", ctypes.c_float), ("x2", ctypes.c_float),
                ("y2", ctypes.c_float), ("score", ctypes.c_float), ("class_id", ctypes.c_int),
                ("class_name", ctypes.c_char_p)]


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def gpu_mb():
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        pid, mb = [x.strip() for x in line.split(",")[:2]]
        if pid == str(os.getpid()):
            return float(mb)
    return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def quantile(sorted_ms, q):
    pos = q * (len(sorted_ms) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_ms) - 1)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (pos - lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--window", type=float, default=60, help="seconds per reported window")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--image")
    ap.add_argument("--json", required=True)
    ap.add_argument("--plot")
    a = ap.parse_args()

    lib = ctypes.CDLL(a.lib)
    lib.yoloc_last_error.restype = ctypes.c_char_p
    # The options struct, filled by yoloc_options_init in a buffer larger than it will ever be
    # (fields may be appended); threads is its first field.
    opts = ctypes.create_string_buffer(512)
    lib.yoloc_options_init(opts)
    ctypes.c_int.from_buffer(opts, 0).value = a.threads
    det = ctypes.c_void_p()
    if lib.yoloc_detector_load(a.model.encode(), opts, ctypes.byref(det)) != 0:
        sys.exit(f"error: {lib.yoloc_last_error().decode()}")
    dets = ctypes.POINTER(Detection)()
    count = ctypes.c_size_t()
    if a.image:
        path = a.image.encode()
        call = lambda: lib.yoloc_detect_file(det, path, ctypes.byref(dets), ctypes.byref(count))  # noqa
    else:
        w, h = 1280, 720
        frame = bytes((x * 7 + y * 3) & 0xFF for y in range(h // 16) for x in range(w * 3)) * 16
        buf = ctypes.create_string_buffer(frame, len(frame))
        call = lambda: lib.yoloc_detect_rgb(det, buf, w, h, w * 3, ctypes.byref(dets),  # noqa
                                            ctypes.byref(count))

    def summarize(windows):
        # Warm-up (the first window) and a last window shorter than half the others are left out.
        settled = [w for w in windows[1:] if w["seconds"] >= a.window / 2] or windows
        p99s = sorted(w["p99_ms"] for w in settled)
        median_p99 = quantile(p99s, 0.5)
        rss = [w["rss_mb"] for w in settled]
        first, last = settled[0], settled[-1]
        summary = {
            "windows_judged": len(settled),
            "median_p50_ms": quantile(sorted(w["p50_ms"] for w in settled), 0.5),
            "median_p99_ms": median_p99,
            "worst_p99_ratio": max(p99s) / median_p99,
            "p50_drift": last["p50_ms"] / first["p50_ms"] - 1,
            "p99_drift": last["p99_ms"] / first["p99_ms"] - 1,
            "rss_growth": last["rss_mb"] / first["rss_mb"] - 1,
            "rss_drift": (max(rss) - min(rss)) / min(rss),
        }
        summary["p99_within_5pct"] = summary["worst_p99_ratio"] <= 1.05
        summary["rss_flat_within_1pct"] = summary["rss_drift"] <= 0.01
        return summary

    def write(windows, done):
        result = {"model": a.model, "minutes": a.minutes, "window_s": a.window,
                  "threads": a.threads, "input": a.image or "synthetic 1280x720 RGB",
                  "machine": cpu_model(), "cpus": os.cpu_count(), "complete": done,
                  "windows": windows, "summary": summarize(windows) if windows else None}
        with open(a.json + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
        os.replace(a.json + ".tmp", a.json)
        return result

    windows, start = [], time.monotonic()
    end = start + a.minutes * 60
    while time.monotonic() < end:
        w0, ms = time.monotonic(), []
        while not ms or (time.monotonic() - w0 < a.window and time.monotonic() < end):
            t0 = time.perf_counter()
            status = call()
            ms.append((time.perf_counter() - t0) * 1e3)
            if status != 0:
                sys.exit(f"error: {lib.yoloc_last_error().decode()}")
            lib.yoloc_detections_free(dets)
        ms.sort()
        windows.append({"t_s": round(time.monotonic() - start, 1),
                        "seconds": round(time.monotonic() - w0, 1), "runs": len(ms),
                        "p50_ms": quantile(ms, 0.5), "p99_ms": quantile(ms, 0.99),
                        "p999_ms": quantile(ms, 0.999), "max_ms": ms[-1],
                        "rss_mb": round(rss_mb(), 2), "gpu_mb": gpu_mb(),
                        "load_1min": os.getloadavg()[0]})
        wd = windows[-1]
        print(f"{wd['t_s']:>8.1f} s  runs {wd['runs']:>6}  p50 {wd['p50_ms']:.3f}  p99 "
              f"{wd['p99_ms']:.3f}  p99.9 {wd['p999_ms']:.3f} ms  RSS {wd['rss_mb']:.1f} MB  "
              f"load {wd['load_1min']:.1f}", flush=True)
        write(windows, False)
    lib.yoloc_detector_free(det)
    result = write(windows, True)
    print(json.dumps(result["summary"]))
    if a.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("no matplotlib: no plot")
            return 0
        t = [w["t_s"] / 60 for w in windows]
        fig, ax = plt.subplots(figsize=(8, 4))
        for key, label in [("p50_ms", "p50"), ("p99_ms", "p99"), ("p999_ms", "p99.9")]:
            ax.plot(t, [w[key] for w in windows], marker=".", label=label)
        ax.set_xlabel("minutes")
        ax.set_ylabel("latency (ms)")
        ax.legend()
        ax2 = ax.twinx()
        ax2.plot(t, [w["rss_mb"] for w in windows], color="grey", linestyle="--")
        ax2.set_ylabel("RSS (MB)")
        fig.savefig(a.plot, dpi=100, bbox_inches="tight")
    return 0


if __name__ == "__main__":
    sys.exit(main())

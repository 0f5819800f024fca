#!/usr/bin/env python3
"""yoloc on the GPU against the PyTorch peer (eager and torch.compile), in one run on one
machine: yolov8n (640) and yolox-nano (416) at fp16, batches 1, 8, 32 and 128 (a
dynamic-batch twin of each model serves batch > 1, bench/onnx_twin.py).

For each model and batch: `yoloc compile --target cuda --precision fp16 --batch N` (with
--records when given), then `yoloc bench` (network alone in one CUDA graph, host tensors in
and out, end to end from a uint8 frame to detections); then ../shared/peers/torch_peer.py on
the same twin. `--io fp32,fp16` benchmarks yoloc both ways: float32 image in and output out
(the default), and `--io-precision fp16` (fp16 in and out, as the peer takes and gives them).
Writes JSON: machine (GPU, driver, clocks), versions, every row, and the ratios
(yoloc network images/s over torch.compile's, latency ratios). The peer's images/s are counted
over calls back to back; yoloc's network_throughput_ips is batch / the median of single
replays, its network_queued_ips counts replays back to back as the peer does.

usage (GPU machine): gpu_vs_torch.py --yoloc BIN --models DIR --peers DIR --image bus.jpg
                     --json OUT [--batches 1,8,32,128] [--only yolov8n.onnx] [--records FILE]
                     [--no-peer] [--io fp32,fp16]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_twin import dynamic_batch_twin  # noqa: E402

MODELS = [("yolov8n.onnx", 640, []), ("yolox-nano-facemask.onnx", 416, ["--family", "yolox"])]


def sh(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout


def gpu_info():
    q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,memory.total"
    try:
        line = sh(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"]).splitlines()[0]
        return dict(zip(q.split(","), [v.strip() for v in line.split(",")]))
    except (SystemExit, FileNotFoundError, IndexError) as e:
        return {"error": str(e)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--peers", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--only", help="comma-separated model file names to run (default: all)")
    ap.add_argument("--records")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--peer-iters", type=int, default=50)
    ap.add_argument("--peer-modes", default="eager,compile")
    ap.add_argument("--io", default="fp32",
                    help="comma-separated --io-precision values to benchmark yoloc with")
    a = ap.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    work = tempfile.mkdtemp()
    rows, peer = [], []
    for name, hw, fam in MODELS:
        if a.only and name not in a.only.split(","):
            continue
        path = os.path.join(a.models, name)
        twin = dynamic_batch_twin(path, work)
        for b, io in [(b, io) for b in batches for io in a.io.split(",")]:
            model = path if b == 1 else twin
            art = os.path.join(work, f"{name}-b{b}-{io}.ycm")
            extra = ["--records", a.records] if a.records else []
            compile_out = sh([a.yoloc, "compile", model, "--target", "cuda", "--precision", "fp16",
                              "--io-precision", io, "--batch", str(b), "-o", art, "--force", *fam,
                              *extra])
            out = os.path.join(work, f"{name}-b{b}-{io}.json")
            # Large batches copy hundreds of MB per host-tensor run: fewer iterations there.
            iters = a.iters if b <= 8 else max(20, a.iters * 8 // b)
            sh([a.yoloc, "bench", art, "--iters", str(iters), "--warmup", "10", "--image",
                a.image, "--json", out])
            r = json.load(open(out))
            r.update({"model": name, "batch": b, "io_precision": io,
                      "compile": compile_out.strip().splitlines()})
            print(json.dumps({k: r[k] for k in r if k != "compile"}), flush=True)
            rows.append(r)
        save(a.json, rows, peer)
        if not a.no_peer:
            pj = os.path.join(work, f"peer-{name}.json")
            sh([sys.executable, os.path.join(a.peers, "torch_peer.py"), twin, "--hw", str(hw),
                "--batches", a.batches, "--modes", a.peer_modes, "--iters", str(a.peer_iters),
                "--json", pj])
            for r in json.load(open(pj)):
                r["model"] = name
                peer.append(r)
                print(json.dumps(r), flush=True)
        save(a.json, rows, peer)
    save(a.json, rows, peer, final=True)


def save(path, rows, peer, final=False):
    """Writes what was measured so far (a run cut short keeps its rows)."""
    ratios = []
    for r in rows:
        for p in peer:
            if p["model"] == r["model"] and p["batch"] == r["batch"]:
                ratios.append({
                    "model": r["model"], "batch": r["batch"], "peer_mode": p["mode"],
                    "io_precision": r.get("io_precision", "fp32"),
                    "network_speedup_ips": r["network_throughput_ips"] / p["throughput_ips"],
                    "network_latency_ratio": r["network_median_ms"] / p["median_ms"],
                })
                if "network_queued_ips" in r:  # back to back, as the peer's throughput
                    ratios[-1]["network_queued_speedup_ips"] = (
                        r["network_queued_ips"] / p["throughput_ips"])
                if "network_streams_throughput_ips" in r:
                    ratios[-1]["network_streams_speedup_ips"] = (
                        r["network_streams_throughput_ips"] / p["throughput_ips"])
    try:
        import torch
        torch_version = torch.__version__
        cuda_version = torch.version.cuda
    except ImportError:
        torch_version = cuda_version = None
    result = {
        "date": datetime.date.today().isoformat(),
        "what": "yoloc (fp16, CUDA graphs) vs PyTorch eager / torch.compile(reduce-overhead), "
                "same machine, same run; yoloc network = one CUDA graph replay from device memory "
                "(CUDA events; network_throughput_ips = batch / its median), network_queued = "
                "its runs back to back between two events, as the peer's throughput_ips counts "
                "(network_queued_speedup_ips: the like-for-like images/s ratio), "
                "network_streams = the network on 2 streams at once (images/s), "
                "e2e = uint8 BGR frame in host memory -> detections in host memory, "
                "e2e_pipelined = submit/wait with 2 frames in flight",
        "gpu": gpu_info(), "torch": torch_version, "torch_cuda": cuda_version,
        "yoloc": rows, "peer": peer, "ratios": ratios,
    }
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    for q in ratios if final else []:
        streams = q.get("network_streams_speedup_ips")
        queued = q.get("network_queued_speedup_ips")
        print(f"{q['model']} b{q['batch']} io {q['io_precision']} vs torch {q['peer_mode']}: "
              f"{q['network_speedup_ips']:.2f}x "
              f"images/s, latency ratio {q['network_latency_ratio']:.2f}"
              + (f", back to back {queued:.2f}x" if queued else "")
              + (f", 2 streams {streams:.2f}x" if streams else ""))


if __name__ == "__main__":
    main()

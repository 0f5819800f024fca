#!/usr/bin/env python3
"""The OpenCL artifact of a shared model run by `yoloc run`: its detections on the images equal
the CPU artifact's (same boxes within 0.5 px, same classes, scores within 1e-3), the second load
takes the program binary from the kernel build cache, and the errors a user can meet give one
line each: no OpenCL library, a device index or a YOLOC_OPENCL_DEVICE that is not there.
Prints the time of each step (compile, first run with the device build, cached run).

usage: check_opencl_run.py --yoloc BIN --model M.onnx --work DIR --images A.jpg [B.jpg ...]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import common  # noqa: E402


def detections(yoloc, artifact, images, env=None):
    p = subprocess.run([yoloc, "run", artifact, *images, "--json", "-"], capture_output=True,
                       text=True, env=env)
    if p.returncode != 0:
        print(f"FAIL: yoloc run {artifact} exited with {p.returncode}: {p.stderr[-2000:]}")
        sys.exit(1)
    return json.loads(p.stdout)


def expect_one_line_error(cmd, env, needle, what):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    ok = p.returncode != 0 and len(lines) == 1 and needle in lines[0]
    print(f"{what}: exit {p.returncode}, stderr {lines!r} ({'ok' if ok else 'FAIL'})")
    return ok


def boxes_of(result):
    out = []
    for image in result if isinstance(result, list) else result.get("images", [result]):
        dets = image.get("detections", image) if isinstance(image, dict) else image
        out.append(sorted(dets, key=lambda d: -d["score"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--images", nargs="+", required=True)
    args = ap.parse_args()
    if not os.path.isfile(args.model):
        common.skip(f"model {args.model} not found")
    os.makedirs(args.work, exist_ok=True)
    cl = os.path.join(args.work, "model-opencl.ycm")
    cpu = os.path.join(args.work, "model-cpu.ycm")
    t0 = time.time()
    common.run([args.yoloc, "compile", args.model, "-o", cl, "--force", "--target", "opencl"],
               "yoloc compile --target opencl")
    print(f"compiled for opencl in {time.time() - t0:.1f} s")
    common.run([args.yoloc, "compile", args.model, "-o", cpu, "--force"], "yoloc compile")
    env = dict(os.environ)
    env["YOLOC_CACHE_DIR"] = os.path.join(args.work, "cache")
    shutil.rmtree(env["YOLOC_CACHE_DIR"], ignore_errors=True)
    t0 = time.time()
    p = subprocess.run([args.yoloc, "run", cl, *args.images, "--json", "-"], capture_output=True,
                       text=True, env=env)
    if p.returncode != 0 and ("cannot load the OpenCL library" in p.stderr
                              or "has no OpenCL device" in p.stderr):
        common.skip(p.stderr.strip())
    if p.returncode != 0:
        print(f"FAIL: yoloc run {cl} exited with {p.returncode}: {p.stderr[-2000:]}")
        sys.exit(1)
    got = json.loads(p.stdout)
    print(f"yoloc run, {len(args.images)} images, the device building the program: "
          f"{time.time() - t0:.1f} s")
    t0 = time.time()
    again = detections(args.yoloc, cl, args.images, env)
    print(f"yoloc run, {len(args.images)} images, the program binary from the cache: "
          f"{time.time() - t0:.1f} s")
    want = detections(args.yoloc, cpu, args.images)
    failed = again != got
    if failed:
        print("FAIL: the run with the cached program binary gives other detections")
    for image, (g, w) in enumerate(zip(boxes_of(got), boxes_of(want))):
        ok = len(g) == len(w) and len(w) > 0
        for a, b in zip(g, w):
            ok &= a["class_id"] == b["class_id"] and abs(a["score"] - b["score"]) <= 1e-3
            ok &= all(abs(x - y) <= 0.5 for x, y in zip(a["box"], b["box"]))
        print(f"{args.images[image]}: {len(g)} detections, CPU artifact {len(w)} "
              f"({'same' if ok else 'FAIL: they differ'})")
        if not ok:
            print(json.dumps(g[:5]), json.dumps(w[:5]), sep="\n")
        failed |= not ok

    run = [args.yoloc, "run", cl, args.images[0]]
    bad = dict(env, YOLOC_OPENCL_LIBRARY="/nonexistent/libOpenCL.so.1")
    failed |= not expect_one_line_error(run, bad, "cannot load the OpenCL library", "no library")
    failed |= not expect_one_line_error(run + ["--device", "57"], env, "OpenCL device 57 is not there",
                                        "--device 57")
    bad = dict(env, YOLOC_OPENCL_DEVICE="9:9")
    failed |= not expect_one_line_error(run, bad, "YOLOC_OPENCL_DEVICE=9:9: there is no such",
                                        "YOLOC_OPENCL_DEVICE=9:9")
    bad = dict(env, YOLOC_OPENCL_DEVICE="gpu")
    failed |= not expect_one_line_error(run, bad, "YOLOC_OPENCL_DEVICE=gpu: give a device",
                                        "YOLOC_OPENCL_DEVICE=gpu")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

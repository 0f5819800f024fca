#!/usr/bin/env python3
"""`yoloc calibrate` and `yoloc compile --precision int8` end to end on two images: the
calibration file (its convs, the stem and head kept float), the int8 artifact finding the bus in
bus.jpg, and the bad inputs (an empty folder, a calibration file of another model, calibration
options without --precision int8): one-line errors, nothing written.

usage: check_int8.py --yoloc BIN --model M.onnx --other OTHER.onnx --images A.jpg B.jpg --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--other", required=True)
    ap.add_argument("--images", nargs="+", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    calib, empty = os.path.join(a.work, "calib"), os.path.join(a.work, "empty")
    os.makedirs(calib)
    os.makedirs(empty)
    for im in a.images:
        os.symlink(os.path.abspath(im), os.path.join(calib, os.path.basename(im)))
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)

    def expect_error(args, needle, out):
        p = run(args)
        err = p.stderr.strip()
        expect(p.returncode != 0, f"{' '.join(args)} should fail")
        expect(needle in err, f"{' '.join(args)}: error lacks '{needle}': {err!r}")
        expect(len(err.splitlines()) == 1, f"{' '.join(args)}: error is not one line: {err!r}")
        expect(not os.path.exists(out), f"{' '.join(args)} wrote {out}")

    y = a.yoloc
    out = os.path.join(a.work, "c0.json")
    expect_error([y, "calibrate", a.model, "--calibration", empty, "-o", out], "no .jpg", out)
    cal = os.path.join(a.work, "calib.json")
    p = run([y, "calibrate", a.model, "--calibration", calib, "-o", cal])
    if p.returncode != 0:
        print(f"FAIL: calibrate exited {p.returncode}: {p.stderr}")
        return 1
    j = json.load(open(cal))
    int8 = [c for c in j["convs"] if "float" not in c]
    reasons = {c.get("float", "") for c in j["convs"]}
    expect(j["calibration"]["images"] == len(a.images), "calibration image count")
    expect(any(r.startswith("stem") for r in reasons), f"no stem kept float: {reasons}")
    expect("detect head output" in reasons, f"no head conv kept float: {reasons}")
    expect(len(int8) > 10, f"only {len(int8)} int8 convs")
    expect(set(c["input"] for c in int8) == set(j["tensors"]), "statistics of every int8 input")
    for name, t in j["tensors"].items():
        expect(t["scale"] > 0 and -128 <= t["zero_point"] <= 127, f"{name}: scale {t['scale']}")

    ycm = os.path.join(a.work, "other.ycm")
    expect_error([y, "compile", a.other, "--precision", "int8", "--calibration-file", cal,
                  "-o", ycm], "another model", ycm)
    expect_error([y, "compile", a.model, "--calibration-file", cal, "-o", ycm],
                 "--precision int8", ycm)
    ycm = os.path.join(a.work, "int8.ycm")
    p = run([y, "compile", a.model, "--precision", "int8", "--calibration-file", cal, "-o", ycm])
    expect(p.returncode == 0, f"int8 compile failed: {p.stderr}")
    expect("fake-quant" in p.stdout, f"compile does not say it runs fake-quant: {p.stdout}")
    if p.returncode == 0:
        p = run([y, "run", ycm, a.images[0], "--json", "-"])
        expect(p.returncode == 0, f"run failed: {p.stderr}")
        if p.returncode == 0:
            dets = json.loads(p.stdout)
            dets = dets[0] if isinstance(dets, list) else dets
            names = [d["class_name"] for d in dets["detections"] if d["score"] > 0.5]
            expect("bus" in names, f"the int8 artifact finds no bus in {a.images[0]}: {names}")
    for pr in problems:
        print("FAIL:", pr)
    if not problems:
        print(f"ok: {len(int8)} of {len(j['convs'])} convs int8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

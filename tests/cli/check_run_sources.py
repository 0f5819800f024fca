#!/usr/bin/env python3
"""What `yoloc run` takes: image files, folders, globs, in the order given, and an unreadable
image skipped with a warning (the others still detected and written, exit code 1 at the end).
The detections of an image are the same however it was named; a folder gives its images sorted
by name and nothing else (a text file in it is not an input).

usage: check_run_sources.py --yoloc BIN --model yolov8n.onnx --images DIR_WITH_bus_AND_zidane
                            --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import run, skip  # noqa: E402

problems = []


def expect(cond, what):
    print(f"{'ok  ' if cond else 'FAIL'} {what}")
    if not cond:
        problems.append(what)


def dets(result):
    return [(d["class_id"], round(d["score"], 5), [round(v, 2) for v in d["box"]])
            for d in result["detections"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--images", required=True, help="folder with bus.jpg and zidane.jpg")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    bus, zidane = (os.path.join(a.images, n) for n in ("bus.jpg", "zidane.jpg"))
    for f in (a.model, bus, zidane):
        if not os.path.exists(f):
            skip(f"{f} not found")
    shutil.rmtree(a.work, ignore_errors=True)
    folder = os.path.join(a.work, "folder")
    os.makedirs(folder)
    for src, name in ((zidane, "b.jpg"), (bus, "a.jpg")):
        shutil.copy(src, os.path.join(folder, name))
    with open(os.path.join(folder, "notes.txt"), "w") as f:
        f.write("not an image\n")
    art = os.path.join(a.work, "yolov8n.ycm")
    run([a.yoloc, "compile", a.model, "-o", art], "compile")

    def run_json(*sources):
        p = run([a.yoloc, "run", art, *sources, "--json", "-"], "run " + " ".join(sources))
        return json.loads(p.stdout)

    files = run_json(bus, zidane)
    expect([os.path.basename(r["image"]) for r in files] == ["bus.jpg", "zidane.jpg"],
           "files: one result each, in the order given")
    expect(len(files[0]["detections"]) > 0, "files: bus.jpg has detections")
    by_folder = run_json(folder)
    expect([os.path.basename(r["image"]) for r in by_folder] == ["a.jpg", "b.jpg"],
           "folder: its images sorted by name, the .txt left out")
    expect(dets(by_folder[0]) == dets(files[0]) and dets(by_folder[1]) == dets(files[1]),
           "folder: the same detections as the files")
    by_glob = run_json(os.path.join(folder, "*.jpg"), bus)
    expect([os.path.basename(r["image"]) for r in by_glob] == ["a.jpg", "b.jpg", "bus.jpg"],
           "glob then file: the matches sorted, then the file")
    expect(dets(by_glob[2]) == dets(files[0]), "glob: the same detections")

    # An unreadable image among good ones: a warning, the others processed, exit 1 at the end.
    bad = os.path.join(folder, "c.jpg")
    with open(bad, "w") as f:
        f.write("this is not a JPEG\n")
    out = os.path.join(a.work, "skip.json")
    drawn = os.path.join(a.work, "drawn")
    p = subprocess.run([a.yoloc, "run", art, folder, "--json", out, "--draw", drawn],
                       capture_output=True, text=True)
    err = p.stderr.strip().splitlines()
    expect(p.returncode == 1, f"unreadable image: exit code 1 (got {p.returncode})")
    expect(any(l.startswith("warning:") and "c.jpg" in l for l in err),
           "unreadable image: a warning naming it")
    expect(err and err[-1].startswith("error:") and "1 of 3" in err[-1],
           f"unreadable image: a last error line counting it ({err[-1:] })")
    with open(out) as f:
        skipped = json.load(f)
    expect([os.path.basename(r["image"]) for r in skipped] == ["a.jpg", "b.jpg"],
           "unreadable image: the JSON still holds the other images")
    expect(sorted(os.listdir(drawn)) == ["a.jpg", "b.jpg"],
           "unreadable image: the other annotated images are written")
    expect("Speed:" in p.stdout, "unreadable image: the speed line is still printed")

    # A missing path and a glob matching nothing fail before any work, in one line.
    for source, needle in ((os.path.join(a.work, "missing.jpg"), "missing.jpg"),
                           (os.path.join(a.work, "*.png"), "no file matches")):
        p = subprocess.run([a.yoloc, "run", art, source], capture_output=True, text=True)
        expect(p.returncode == 1 and needle in p.stderr and len(p.stderr.splitlines()) == 1,
               f"{os.path.basename(source)}: one error line naming it ({p.stderr.strip()})")
    print("FAIL" if problems else "ok", f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

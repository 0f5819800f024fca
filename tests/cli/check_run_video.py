#!/usr/bin/env python3
"""`yoloc run` on a video file: a Motion-JPEG AVI made here from bus.jpg (FRAMES copies) gives
one result per frame, each with bus.jpg's detections (the same class, IoU >= 0.9, score within
0.02: the video's JPEG decoder is not stb_image's), YOLO labels <stem>_<frame>.txt, and with
--draw an annotated .mp4 that reads back with as many frames. A build without video support
must refuse the video in one line (then the rest is skipped).

usage: check_run_video.py --yoloc BIN --model yolov8n.onnx --image bus.jpg --work DIR
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from common import run, skip  # noqa: E402
from independent_eval import image_size  # noqa: E402

FRAMES = 3
problems = []


def expect(cond, what):
    print(f"{'ok  ' if cond else 'FAIL'} {what}")
    if not cond:
        problems.append(what)


def chunk(fourcc, data):
    return fourcc + struct.pack("<I", len(data)) + data + (b"\0" if len(data) % 2 else b"")


def lst(kind, data):
    return chunk(b"LIST", kind + data)


def mjpeg_avi(path, jpeg, frames, fps=10):
    """An AVI (RIFF) file holding `frames` copies of the JPEG bytes `jpeg` as MJPG frames."""
    with open(path + ".tmp.jpg", "wb") as f:
        f.write(jpeg)
    w, h = image_size(path + ".tmp.jpg")
    os.remove(path + ".tmp.jpg")
    avih = struct.pack("<14I", 1000000 // fps, 0, 0, 0x10, frames, 0, 1, len(jpeg), w, h,
                       0, 0, 0, 0)
    strh = b"vids" + b"MJPG" + struct.pack("<IHHIIIIIIII4h", 0, 0, 0, 0, 1, fps, 0, frames,
                                           len(jpeg), 0xFFFFFFFF, 0, 0, 0, w, h)
    strf = struct.pack("<IiiHH4sIiiII", 40, w, h, 1, 24, b"MJPG", w * h * 3, 0, 0, 0, 0)
    hdrl = lst(b"hdrl", chunk(b"avih", avih) + lst(b"strl", chunk(b"strh", strh) +
                                                    chunk(b"strf", strf)))
    movi, index, offset = b"", b"", 4
    for _ in range(frames):
        c = chunk(b"00dc", jpeg)
        index += b"00dc" + struct.pack("<III", 0x10, offset, len(jpeg))
        movi += c
        offset += len(c)
    body = b"AVI " + hdrl + lst(b"movi", movi) + chunk(b"idx1", index)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", len(body)) + body)


def iou(a, b):
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def same(ref, got):
    """Every confident detection of either list has a partner in the other."""
    def covered(xs, ys):
        return all(any(y["class_id"] == x["class_id"] and iou(x["box"], y["box"]) >= 0.9 and
                       abs(x["score"] - y["score"]) <= 0.02 for y in ys)
                   for x in xs if x["score"] >= 0.27)
    return covered(ref, got) and covered(got, ref)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    for f in (a.model, a.image):
        if not os.path.exists(f):
            skip(f"{f} not found")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    video = os.path.join(a.work, "clip.avi")
    with open(a.image, "rb") as f:
        mjpeg_avi(video, f.read(), FRAMES)
    art = os.path.join(a.work, "yolov8n.ycm")

    p = subprocess.run([a.yoloc, "run", art, video], capture_output=True, text=True)
    if "no video support" in p.stderr:
        ok = p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "clip.avi" in p.stderr
        print(f"{'ok  ' if ok else 'FAIL'} a build without video support refuses the video in "
              f"one line: {p.stderr.strip()}")
        if not ok:
            return 1
        skip("this yoloc build has no video support (OpenCV's videoio was not found)")

    run([a.yoloc, "compile", a.model, "-o", art], "compile")
    still = json.loads(run([a.yoloc, "run", art, a.image, "--json", "-"], "run image").stdout)
    drawn, save = os.path.join(a.work, "drawn"), os.path.join(a.work, "save")
    p = run([a.yoloc, "run", art, video, "--json", "-", "--draw", drawn, "--save-txt",
             "--save-dir", save], "run video")
    frames = json.loads(p.stdout)
    expect([r["image"] for r in frames] == [f"{video}#{i}" for i in range(FRAMES)],
           f"one result per frame, named <video>#<frame> ({len(frames)} results)")
    expect(all(same(still[0]["detections"], r["detections"]) for r in frames),
           "each frame has the image's detections")
    expect(sorted(os.listdir(os.path.join(save, "labels"))) ==
           [f"clip_{i}.txt" for i in range(FRAMES)], "labels clip_<frame>.txt")
    out = os.path.join(drawn, "clip.mp4")
    expect(os.path.isfile(out) and os.path.getsize(out) > 1000, "--draw writes clip.mp4")
    if os.path.isfile(out):
        again = json.loads(run([a.yoloc, "run", art, out, "--json", "-"], "run drawn").stdout)
        expect(len(again) == FRAMES, f"the annotated video reads back with {FRAMES} frames "
                                     f"({len(again)})")
    print("FAIL" if problems else "ok", f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks `yoloc run MODEL IMAGES... --json -` against detections computed here with ONNX Runtime
and an independent numpy pre/post-processing (letterbox or YOLOX resize, head decoding, NMS), as
/work/shared/models/README.md specifies them.

Every reference detection must have a yoloc detection of the same class with IoU >= 0.99, a score
within 0.002 and no box edge moved by more than 0.25 input pixels (FP32), and vice versa;
detections whose score is within the score tolerance of the confidence threshold may be missing on
either side. Correct fp32 runs show IoU 1.0000, score 0.0000 and edges within 0.01 px (bus.jpg and
zidane.jpg, every shared float model); the edge bound is what sees a one-pixel shift of a large box
(the bus: IoU 0.996).

Dynamically quantized models quantize every activation at run time: a last-bit difference in a
float op (ONNX Runtime's Sigmoid is a polynomial approximation) moves a value across a rounding
boundary of the next quantization, and scores drift by one or two quanta (up to ~0.02) between
any two correct implementations. For them the ONNX reference evaluator (onnx.reference) is a
second, independent reference: the tolerances on an image become 1.5x the largest differences
between the two references there (score, 1 - IoU, edge shift; at least INT8_FLOOR's, as single
detections move by whole quanta). A one-pixel shift is within that drift: the compiled check
(against the float rewrite, FP32) is the one that sees it for these models.

A dynamically quantized model compiled for the CPU computes in float (weights dequantized): its
detections must match the reference executor running that rewrite (`yoloc run --precision fp32`)
within FP32, and ONNX Runtime's int8 detections within 1.5x the differences between ONNX
Runtime's int8 detections and its detections on the float rewrite made independently
(float_rewrite.py): two references independent of yoloc for the cost of float activations.

usage: check_detections.py --yoloc BIN --decoder DECODE_BIN --model M.onnx --images A.jpg ...
                           --work DIR [--conf 0.25] [--iou 0.45]
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import compare  # noqa: E402


class Tolerance:
    """How far a matched detection may be: IoU at least min_iou, score within score, every box
    edge within shift input pixels."""

    def __init__(self, min_iou, score, shift):
        self.min_iou, self.score, self.shift = min_iou, score, shift

    def __str__(self):
        return f"IoU >= {self.min_iou:.4f}, score within {self.score:.4f}, edges within " \
               f"{self.shift:.2f} px"


# fp32 runs against fp32 references (measured: IoU 1.0000, score 0.0000, edges < 0.01 px).
FP32 = Tolerance(0.99, 0.002, 0.25)
# The fp16 model (yolov5n-fp16) run in fp16 by both sides: its outputs round box coordinates near
# 640 to 0.25-0.5 px (measured: IoU 0.9983, score 0.0005, edges 0.12 px).
FP16_MODEL = Tolerance(0.99, 0.002, 0.5)
# Activations stored in 16 bits (CUDA --precision fp16 / bf16) move scores by up to about 1e-2 and
# round box coordinates at every store (recorded GPU runs: IoU >= 0.9993, score 0.0011; edges
# not recorded, bounded loosely).
NARROW = Tolerance(0.99, 0.02, 2.0)
# Matches two references to measure how far apart they are.
LOOSE = Tolerance(0.5, 1.0, float("inf"))
SLACK = 1.5


def tolerance(precision, fp16_model):
    """The tolerance against an fp32 or fp16 reference of the same precision."""
    return NARROW if precision != "fp32" else FP16_MODEL if fp16_model else FP32


# Two int8 implementations' detections move by whole quanta, one detection at a time: ONNX Runtime
# and the ONNX reference evaluator differ by up to IoU 0.946, score 0.034 and edges 5.4 px on
# bus.jpg / zidane.jpg, yoloc and ONNX Runtime by up to IoU 0.910, score 0.037 (zidane.jpg's tie,
# yolov8n-dynint8: IoU 0.984, edges 0.3 px) and edges 5.5 px, 1.5x to 3x the references' figures on
# the same image. So the int8 tolerance derived on an image is at least this: IoU 0.9 as the
# whole-model check always allowed, score and edges 1.5x the largest references' 0.034 and 5.4.
INT8_FLOOR = Tolerance(0.9, 0.05, 8.0)


def derived(pairs, floor=FP32):
    """The tolerance SLACK times the differences of matched pairs of two references (at least
    floor's)."""
    return Tolerance(min(floor.min_iou, 1 - SLACK * (1 - min((p[0] for p in pairs), default=1))),
                     max(floor.score, SLACK * max((p[1] for p in pairs), default=0)),
                     max(floor.shift, SLACK * max((p[2] for p in pairs), default=0)))

MAX_DET = 300
PAD = 114


def family(model, session):
    """The head of a model: 'v8' (1,4+C,N), 'v5' (B,N,5+C), 'yolox' (raw head), 'v10' (1,300,6)."""
    shape = session.get_outputs()[0].shape
    fam = compare.head_family(model, shape)
    if fam is None:
        raise SystemExit(f"error: cannot tell the head of {model} (output {shape})")
    return fam


def input_size(session):
    shape = session.get_inputs()[0].shape
    return shape[2] if isinstance(shape[2], int) else 640


def resize_bilinear(img, new_w, new_h):
    """OpenCV INTER_LINEAR on uint8 HWC: half-pixel centers, edge clamp, no antialiasing."""
    h, w = img.shape[:2]

    def axis(n_dst, n_src):
        s = np.maximum((np.arange(n_dst) + 0.5) * (n_src / n_dst) - 0.5, 0.0)
        i0 = np.minimum(np.floor(s).astype(np.int64), n_src - 1)
        i1 = np.minimum(i0 + 1, n_src - 1)
        f = np.where(i0 >= n_src - 1, 0.0, s - i0)
        return i0, i1, f

    y0, y1, fy = axis(new_h, h)
    x0, x1, fx = axis(new_w, w)
    src = img.astype(np.float64)
    top = src[y0] * (1 - fy)[:, None, None] + src[y1] * fy[:, None, None]
    out = top[:, x0] * (1 - fx)[None, :, None] + top[:, x1] * fx[None, :, None]
    return np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)


def preprocess(rgb, size, fam):
    """The input tensor (1, 3, S, S) float32 and the mapping back: (r, left, top)."""
    h, w = rgb.shape[:2]
    r = min(size / h, size / w)
    if fam == "yolox":
        new_w, new_h = int(w * r), int(h * r)
        canvas = np.full((size, size, 3), PAD, np.uint8)
        canvas[:new_h, :new_w] = resize_bilinear(rgb, new_w, new_h)
        bgr = canvas[:, :, ::-1]
        x = bgr.transpose(2, 0, 1).astype(np.float32)  # 0..255, BGR: the Megvii demo convention
        return x[None], (r, 0.0, 0.0)
    new_w, new_h = round(w * r), round(h * r)
    dw, dh = (size - new_w) / 2, (size - new_h) / 2
    top, bottom = round(dh - 0.1), round(dh + 0.1)
    left, right = round(dw - 0.1), round(dw + 0.1)
    canvas = np.full((new_h + top + bottom, new_w + left + right, 3), PAD, np.uint8)
    canvas[top:top + new_h, left:left + new_w] = resize_bilinear(rgb, new_w, new_h)
    x = canvas.transpose(2, 0, 1).astype(np.float32) / 255.0
    return x[None], (r, float(left), float(top))


def iou(a, b):
    """IoU of one box a (4,) with boxes b (N, 4), x1y1x2y2."""
    ix1, iy1 = np.maximum(a[0], b[:, 0]), np.maximum(a[1], b[:, 1])
    ix2, iy2 = np.minimum(a[2], b[:, 2]), np.minimum(a[3], b[:, 3])
    inter = np.clip(ix2 - ix1, 0, None) * np.clip(iy2 - iy1, 0, None)
    area = lambda x: (x[..., 2] - x[..., 0]) * (x[..., 3] - x[..., 1])  # noqa: E731
    return inter / np.maximum(area(a) + area(b) - inter, 1e-12)


def nms(boxes, scores, classes, iou_thr):
    """Greedy per-class NMS; returns kept indices by decreasing score."""
    order = np.argsort(-scores, kind="stable")
    keep = []
    suppressed = np.zeros(len(order), bool)
    for k, i in enumerate(order):
        if suppressed[k]:
            continue
        keep.append(i)
        rest = order[k + 1:]
        same = classes[rest] == classes[i]
        over = iou(boxes[i], boxes[rest]) > iou_thr
        suppressed[k + 1:] |= same & over
        if len(keep) == MAX_DET:
            break
    return np.array(keep, dtype=np.int64)


def cxcywh_to_xyxy(b):
    return np.stack([b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2,
                     b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2], axis=1)


def yolox_grid(pred, size):
    """Decodes the raw YOLOX head: grid offsets and exp sizes at strides 8, 16, 32."""
    out = pred.copy()
    start = 0
    for s in (8, 16, 32):
        n = size // s
        gy, gx = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        sl = slice(start, start + n * n)
        out[sl, 0] = (pred[sl, 0] + gx.reshape(-1)) * s
        out[sl, 1] = (pred[sl, 1] + gy.reshape(-1)) * s
        out[sl, 2] = np.exp(pred[sl, 2]) * s
        out[sl, 3] = np.exp(pred[sl, 3]) * s
        start += n * n
    return out


def postprocess(out, fam, size, conf, iou_thr, candidates=None):
    """Boxes (N, 4) x1y1x2y2 in input pixels, scores (N,), classes (N,) of batch item 0; with
    candidates (a list), appends to it the (boxes, scores, classes) NMS started from."""
    out = out[0].astype(np.float64)
    if fam == "v10":
        keep = out[:, 4] > conf
        return out[keep, :4], out[keep, 4], out[keep, 5].astype(np.int64)
    if fam == "v8":
        pred = out.T
        cls_scores = pred[:, 4:]
    else:
        pred = yolox_grid(out, size) if fam == "yolox" else out
        cls_scores = pred[:, 5:] * pred[:, 4:5]
    classes = cls_scores.argmax(1)
    scores = cls_scores[np.arange(len(classes)), classes]
    keep = scores > conf
    boxes, scores, classes = cxcywh_to_xyxy(pred[keep, :4]), scores[keep], classes[keep]
    if candidates is not None:
        candidates.append((boxes, scores, classes))
    k = nms(boxes, scores, classes, iou_thr)
    return boxes[k], scores[k], classes[k]


def to_detections(boxes, scores, classes, r, left, top, w, h):
    boxes = boxes.copy()
    boxes[:, [0, 2]] = np.clip((boxes[:, [0, 2]] - left) / r, 0, w)
    boxes[:, [1, 3]] = np.clip((boxes[:, [1, 3]] - top) / r, 0, h)
    return [{"class_id": int(c), "score": float(s), "box": [float(v) for v in b]}
            for b, s, c in zip(boxes, scores, classes)]


def reference(session, model, rgb, conf, iou_thr, candidates=None):
    """The reference detections of one image; with candidates (a list), also extends it with the
    detections NMS started from (every box over the confidence threshold, v10: the output)."""
    fam = family(model, session)
    size = input_size(session)
    x, (r, left, top) = preprocess(rgb, size, fam)
    inp = session.get_inputs()[0]
    if inp.type == "tensor(float16)":
        x = x.astype(np.float16)
    out = session.run(None, {inp.name: x})[0]
    pre = []
    boxes, scores, classes = postprocess(out, fam, size, conf, iou_thr, pre)
    h, w = rgb.shape[:2]
    if candidates is not None:
        candidates += to_detections(*(pre[0] if pre else (boxes, scores, classes)),
                                    r, left, top, w, h)
    return to_detections(boxes, scores, classes, r, left, top, w, h)


def within(a, b, tol, r):
    """Whether detection b is detection a within tol: (ok, IoU, score difference, edge shift)."""
    v = float(iou(np.array(a["box"]), np.array([b["box"]]))[0])
    ds = abs(a["score"] - b["score"])
    shift = r * float(np.max(np.abs(np.array(a["box"]) - np.array(b["box"]))))
    return v >= tol.min_iou and ds <= tol.score and shift <= tol.shift, v, ds, shift


def nms_tie(d, got, used, candidates, tol, r, iou_thr):
    """The index of an unmatched yoloc detection that NMS kept in place of reference detection d
    because the two overlapping boxes scored within tol (their order is a last-bit matter): same
    class, IoU over iou_thr with d, and within tol of a box the reference suppressed whose score
    is within tol of d's. None where there is none."""
    for j, g in enumerate(got):
        if j in used or g["class_id"] != d["class_id"] or \
                float(iou(np.array(d["box"]), np.array([g["box"]]))[0]) <= iou_thr:
            continue
        if any(c["class_id"] == g["class_id"] and abs(c["score"] - d["score"]) <= tol.score and
               within(c, g, tol, r)[0] for c in candidates):
            return j
    return None


def match(ref, got, conf, tol, r, candidates=None, iou_thr=0.45):
    """Returns (problems, matched pairs (IoU, score difference, largest edge shift in input
    pixels)) between reference and yoloc detections; r is input pixels per image pixel. With the
    reference's NMS candidates, a yoloc detection that NMS kept in place of a reference detection
    of (within tol) the same score is a tie, not a difference (nms_tie)."""
    problems, pairs = [], []
    used = set()
    for d in sorted(ref, key=lambda d: -d["score"]):
        best, best_iou = None, 0.0
        for j, g in enumerate(got):
            if j in used or g["class_id"] != d["class_id"]:
                continue
            v = float(iou(np.array(d["box"]), np.array([g["box"]]))[0])
            if v > best_iou:
                best, best_iou = j, v
        ok, ds, shift = False, None, None
        if best is not None:
            ok, _, ds, shift = within(d, got[best], tol, r)
        tie = None
        if ok:
            used.add(best)
            pairs.append((best_iou, ds, shift))
        elif candidates is not None and \
                (tie := nms_tie(d, got, used, candidates, tol, r, iou_thr)) is not None:
            used.add(tie)
            print(f"     NMS tie: reference kept class {d['class_id']} score {d['score']:.4f} box "
                  f"{[round(v, 1) for v in d['box']]}, yoloc the overlapping box "
                  f"{[round(v, 1) for v in got[tie]['box']]} score {got[tie]['score']:.4f}, "
                  f"which the reference scored within {tol.score:.4f} of it")
        elif d["score"] >= conf + tol.score:
            near = f"; nearest same-class yoloc box IoU {best_iou:.4f}" + (
                f" score {got[best]['score']:.4f} edges {shift:.2f} px" if best is not None else "")
            problems.append(f"reference detection class {d['class_id']} score {d['score']:.4f} "
                            f"box {[round(v, 1) for v in d['box']]} has no match{near}")
    for j, g in enumerate(got):
        if j not in used and g["score"] >= conf + tol.score:
            problems.append(f"extra yoloc detection class {g['class_id']} score {g['score']:.4f} "
                            f"box {[round(v, 1) for v in g['box']]}")
    return problems, pairs


def figures(pairs):
    return (f"{len(pairs)} matched, min IoU {min(p[0] for p in pairs):.4f}, max score diff "
            f"{max(p[1] for p in pairs):.4f}, max edge shift {max(p[2] for p in pairs):.2f} px"
            if pairs else "0 matched")


class ReferenceEvaluatorSession:
    """The ONNX reference evaluator behind ONNX Runtime's session interface."""

    def __init__(self, session, model):
        self._session = session
        self._evaluator = common.onnx_reference_evaluator(model)

    def get_inputs(self):
        return self._session.get_inputs()

    def get_outputs(self):
        return self._session.get_outputs()

    def run(self, names, feeds):
        with np.errstate(all="ignore"):  # its Sigmoid evaluates exp on both branches
            return self._evaluator.run(names, feeds)


def threshold_options(yoloc, conf, iou_thr):
    """`yoloc run` options that set the thresholds, when its --help lists them."""
    if not common.has_subcommand(yoloc, "run"):
        common.skip("`yoloc run` is not available in this build")
    p = subprocess.run([yoloc, "run", "--help"], capture_output=True, text=True)
    opts = []
    for pattern, value in ((r"--conf[\w-]*", conf), (r"--iou[\w-]*", iou_thr)):
        m = re.search(pattern, p.stdout)
        if m:
            opts += [m.group(0), str(value)]
    return opts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--decoder", required=True, help="yoloc_test_decode_image")
    ap.add_argument("--model", required=True)
    ap.add_argument("--images", nargs="+", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.45)
    ap.add_argument("--compile", action="store_true",
                    help="compile the model for the CPU first and detect with the artifact")
    ap.add_argument("--target", default="cpu", help="with --compile: cpu, or cuda (GPU machine)")
    ap.add_argument("--precision", default="fp32", help="with --compile: fp32, fp16 or bf16")
    args = ap.parse_args()
    for f in [args.model] + args.images:
        if not os.path.isfile(f):
            common.skip(f"{f} not found")
    if args.compile:
        common.check_known_unsupported(args.yoloc, args.model, args.work, args.target,
                                       ["--precision", args.precision])
    extra = threshold_options(args.yoloc, args.conf, args.iou)
    session = common.ort_session(args.model)
    os.makedirs(args.work, exist_ok=True)

    head = family(args.model, session)
    # v5 and YOLOX exports carry no metadata: yoloc needs the family named (an artifact has it).
    family_opts = []
    if head in ("v5", "yolox"):
        family_opts = ["--family", {"v5": "yolov5", "yolox": "yolox"}[head]]
    quantized = any(n.op_type == "DynamicQuantizeLinear" for n in common.load_nodes(args.model))
    second = ReferenceEvaluatorSession(session, args.model) if quantized else None
    target = args.model
    # A quantized model compiled for the CPU computes in fp32 (weights dequantized, activations
    # in float): its references are the reference executor on that same rewrite, and ONNX
    # Runtime's int8 run within the cost of float activations (measured on ONNX Runtime's run of
    # the float rewrite).
    fp32_reference = None
    if args.compile and quantized:
        from float_rewrite import float_rewrite_session

        second = float_rewrite_session(args.model)
        p = common.run([args.yoloc, "run", args.model, *args.images, "--json", "-", *extra,
                        *family_opts, "--precision", "fp32"], "yoloc run --precision fp32")
        fp32_reference = json.loads(p.stdout)
    if args.compile:
        target = os.path.join(args.work, "model.ycm")
        common.run([args.yoloc, "compile", args.model, "-o", target, "--force", "--target",
                    args.target, "--precision", args.precision, *family_opts,
                    *os.environ.get("COMPILE_OPTIONS", "").split()], "yoloc compile")
        family_opts = []
    p = common.run([args.yoloc, "run", target, *args.images, "--json", "-", *extra, *family_opts],
                   "yoloc run")
    try:
        results = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        print(f"FAIL: `yoloc run --json -` printed no JSON on stdout ({e}):\n{p.stdout[:2000]}")
        return 1
    ok = True
    name = os.path.basename(args.model)
    size = input_size(session)
    fp16_model = session.get_inputs()[0].type == "tensor(float16)"
    for image, res in zip(args.images, results):
        pixels = os.path.join(args.work, os.path.basename(image) + ".npy")
        common.run([args.decoder, image, pixels], "image decoder")
        rgb = np.load(pixels)
        h, w = rgb.shape[:2]
        r = min(size / h, size / w)
        problems = []
        if (res.get("width"), res.get("height")) != (w, h):
            problems.append(f"image size {res.get('width')}x{res.get('height')}, expected {w}x{h}")
            print(f"FAIL {name} {os.path.basename(image)}: {problems[-1]}")
        candidates = []
        ref = reference(session, args.model, rgb, args.conf, args.iou, candidates)
        got = res.get("detections", [])
        tol = tolerance(args.precision, fp16_model)
        checks = [("ONNX Runtime", ref, tol)]
        if second is not None:
            ref2 = reference(second, args.model, rgb, args.conf, args.iou)
            _, ref_pairs = match(ref, ref2, args.conf, LOOSE, r)
            other = "its float rewrite" if fp32_reference is not None else \
                "the ONNX reference evaluator"
            checks = [("ONNX Runtime (int8)", ref,
                       derived(ref_pairs, FP32 if fp32_reference is not None else INT8_FLOOR))]
            print(f"     {os.path.basename(image)}: ONNX Runtime's int8 run and {other}: "
                  f"{figures(ref_pairs)}")
        if fp32_reference is not None:
            checks.append(("the reference executor's fp32 rewrite",
                           fp32_reference[args.images.index(image)]["detections"], tol))
        for what, want, t in checks:
            probs, pairs = match(want, got, args.conf, t, r,
                                 candidates if want is ref else None, args.iou)
            problems += probs
            print(f"{'ok  ' if not probs else 'FAIL'} {name} {os.path.basename(image)} vs {what}: "
                  f"{len(want)} reference, {len(got)} yoloc detections; {figures(pairs)} "
                  f"(allowed {t})")
            for pr in probs:
                print(f"     {pr}")
        ok &= not problems
    if len(results) != len(args.images):
        print(f"FAIL: yoloc gave {len(results)} results for {len(args.images)} images")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

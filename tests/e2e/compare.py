"""Whole-output comparisons judged per part of a detector's output.

A detector's output mixes quantities of very different scales: box coordinates in input pixels
(up to ~640), class scores and objectness in 0..1, class ids up to 79. One relative error over the
whole tensor (divided by its largest magnitude, a box coordinate) cannot see the scores: zeroing
every class score of yolov8n moves it by 1e-4. So each part is compared relative to its own scale.

The heads (as src/detect/family.cpp tells them apart, and /work/shared/models/README.md lays them
out):
- v8 / v11: (B, 4+C, N): rows 0-3 cx, cy, w, h; rows 4.. class scores.
- v5: (B, N, 5+C): cx, cy, w, h, objectness, class scores.
- YOLOX (raw head): (B, N, 5+C): the four box terms (grid offsets, log sizes), objectness, scores.
- v10 end-to-end: (B, K, 6): x1, y1, x2, y2, score, class id; the top-K rows by score descending,
  whose order among near-tied scores is not defined (compared by matched rows, see rows_errors).
Any other output is one part.
"""
import os

import numpy as np

FRACTION_THRESHOLD = 1e-4  # an element counts as "off" beyond this fraction of its part's scale


def head_family(model, shape):
    """The head of a model from its file name and output shape: 'v8' (B, 4+C, N), 'v5' (B, N, 5+C),
    'yolox' (raw head), 'v10' (B, K, 6), or None for an output that is no detector head."""
    base = os.path.basename(model).lower()
    if len(shape) != 3:
        return None
    if "yolox" in base:
        return "yolox"
    if isinstance(shape[-1], int) and shape[-1] == 6:
        return "v10"
    if isinstance(shape[1], int) and shape[1] == 84:
        return "v8"
    if "yolov5" in base or (isinstance(shape[-1], int) and shape[-1] == 85):
        return "v5"
    if "yolov8" in base or "yolo11" in base:
        return "v8"
    return None


def output_parts(model, shape):
    """({part name: index into the output}, whether the rows are top-K rows of undefined order)."""
    fam = head_family(model, shape)
    every = slice(None)
    if fam == "v8":
        return {"boxes": (every, slice(0, 4)), "class scores": (every, slice(4, None))}, False
    if fam in ("v5", "yolox"):
        return {"boxes": (Ellipsis, slice(0, 4)), "objectness": (Ellipsis, slice(4, 5)),
                "class scores": (Ellipsis, slice(5, None))}, False
    if fam == "v10":
        return {"boxes": (Ellipsis, slice(0, 4)), "scores": (Ellipsis, slice(4, 5)),
                "class ids": (Ellipsis, slice(5, 6))}, True
    return {"output": (Ellipsis,)}, False


def _scale(r):
    return max(float(np.nanmax(np.abs(r))), 1e-6) if r.size else 1e-6


def _part_error(y, r, scale):
    """(max |y - r| / scale, fraction of elements off by more than FRACTION_THRESHOLD of it)."""
    if not r.size:
        return 0.0, 0.0
    diff = np.abs(r.astype(np.float64) - y.astype(np.float64)) / scale
    return float(np.nanmax(diff)), float(np.mean(diff > FRACTION_THRESHOLD))


def rows_errors(y, r, separation):
    """Per-part errors of an end-to-end head's output (B x K x 6 rows of box, score, class id, by
    score descending) where near-tied scores may come out in either order (a TopK over scores
    that differ in the last bits between two implementations). Compared:
    - scores: as a sorted set, and row by row for the matched rows;
    - boxes and class ids: the matched rows, those whose reference score lies more than
      `separation` from its neighbours' (their rank is certain, so row i is row i);
    - order: the rows must come by score descending, as the reference's do (the largest rise
      from one row to the next, relative to the score scale).
    Returns ({part: (error, fraction)}, rows compared, rows)."""
    r64, y64 = r.astype(np.float64), y.astype(np.float64)
    scales = {"boxes": _scale(r64[..., :4]), "scores": _scale(r64[..., 4]),
              "class ids": _scale(r64[..., 5])}
    cols = {"boxes": slice(0, 4), "scores": slice(4, 5), "class ids": slice(5, 6)}
    got = {p: [] for p in cols}
    sorted_scores, rises, compared = [], [], 0
    for b in range(r64.shape[0]):
        rs, ys = r64[b, :, 4], y64[b, :, 4]
        sorted_scores.append((np.sort(ys), np.sort(rs)))
        rises.append(float(np.max(np.diff(ys), initial=0.0)))
        gaps = np.abs(np.diff(rs))
        before = np.concatenate([[np.inf], gaps])
        after = np.concatenate([gaps, [np.inf]])
        sure = (before > separation) & (after > separation)
        compared += int(sure.sum())
        for p, c in cols.items():
            got[p].append((y64[b][sure][:, c], r64[b][sure][:, c]))
    errors = {}
    for p in cols:
        pairs = got[p] + (sorted_scores if p == "scores" else [])
        ys = np.concatenate([a.ravel() for a, _ in pairs])
        rs = np.concatenate([b.ravel() for _, b in pairs])
        errors[p] = _part_error(ys, rs, scales[p])
    errors["order"] = (max(rises) / scales["scores"], 0.0)
    return errors, compared, r64.shape[0] * r64.shape[1]


def part_errors(y, r, model, separation=0.0):
    """{part: (max relative error, fraction of elements off by > 1e-4)} of output y against the
    reference r (same shape), each part relative to its own largest reference magnitude. For
    top-K rows (v10) see rows_errors (with `separation`)."""
    parts, unordered = output_parts(model, r.shape)
    if unordered:
        return rows_errors(y, r, separation)[0]
    return {p: _part_error(y[i], r[i], _scale(r[i].astype(np.float64))) for p, i in parts.items()}


def judge(errors, tolerance, allowance=None, slack=1.5, max_floor=0.0):
    """Whether per-part errors pass: each part's error within `tolerance`, or, given the errors
    of a second independent reference against the first (`allowance`, per part), within `slack`
    times that reference's error (at least max_floor) and its fraction of elements off. Returns
    (passed, text)."""
    ok, texts = True, []
    for p, (err, frac) in errors.items():
        if allowance is None:
            passed, bound = err <= tolerance, f"{tolerance:g}"
        else:
            ref_err, ref_frac = allowance[p]
            limit = max(tolerance, slack * ref_err, max_floor)
            passed = err <= limit and frac <= slack * ref_frac + 1e-3
            bound = (f"{limit:.3g}; {frac:.2%} of elements off, allowed "
                     f"{slack * ref_frac + 1e-3:.2%}")
        ok &= passed
        texts.append(f"{p} {err:.3g}{'' if passed else ' FAIL'} (allowed {bound})")
    return ok, ", ".join(texts)


def loose_allowance(r, model, tolerance, allowance, separation, slack=1.5, max_floor=0.0,
                    must_reject=("scores zeroed", "all zeros")):
    """The corruptions of r (of those named) that an allowance from a second reference would
    accept: an allowance that passes an output of zeros cannot fail."""
    return [kind for kind, bad in corruptions(r, model).items() if kind in must_reject and
            judge(part_errors(bad, r, model, separation), tolerance, allowance, slack,
                  max_floor)[0]]


def topk_separation(second, r, slack=1.5):
    """For top-K rows judged against two references that drift apart (int8): ranks are certain
    only for scores further apart than slack times the references' score drift."""
    return slack * sorted_score_drift(second, r)


def sorted_score_drift(y, r):
    """The largest difference between the two outputs' top-K scores taken as sorted sets."""
    return float(np.max(np.abs(np.sort(y[..., 4], axis=-1) - np.sort(r[..., 4], axis=-1)),
                        initial=0.0))


def _input_pixel_strides(rows):
    """Per row of a raw YOLOX head, the stride of its grid (8, 16, 32; rows in that order): the
    input side S follows from rows = (S/8)^2 + (S/16)^2 + (S/32)^2 = 21 S^2 / 1024."""
    side = int(round((rows * 1024 / 21) ** 0.5))
    return np.concatenate([np.full((side // s) ** 2, s, np.float64) for s in (8, 16, 32)])


def corruptions(r, model):
    """{name: a corrupted copy of the output r} that a checker must reject: the class scores
    zeroed, every box moved right by one input pixel, the rows (anchors, top-K rows) shuffled,
    and all zeros."""
    fam = head_family(model, r.shape)
    parts, _ = output_parts(model, r.shape)
    out = {}
    score_part = "class scores" if "class scores" in parts else "scores" if "scores" in parts \
        else None
    if score_part:
        z = r.copy()
        z[parts[score_part]] = 0
        out["scores zeroed"] = z
    if fam is not None:
        s = r.astype(np.float64)
        if fam == "v8":
            s[:, 0, :] += 1  # cx
        elif fam == "v5":
            s[..., 0] += 1  # cx
        elif fam == "v10":
            s[..., 0] += 1  # x1
            s[..., 2] += 1  # x2
        else:  # YOLOX raw head: cx = (o0 + gx) * stride
            s[..., 0] += 1 / _input_pixel_strides(r.shape[1])
        out["boxes moved 1 px"] = s.astype(r.dtype)
    axis = 2 if fam == "v8" else 1 if r.ndim > 1 else 0
    perm = np.random.default_rng(0).permutation(r.shape[axis])
    out["rows shuffled"] = np.take(r, perm, axis=axis)
    out["all zeros"] = np.zeros_like(r)
    return out

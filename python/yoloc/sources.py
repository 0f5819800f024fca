"""What ``Model.predict`` accepts as a source, turned into a stream of (name, BGR image) pairs:
an image file, a folder, a glob, a list of any of these, a numpy HWC uint8 array, or a video file
(decoded with OpenCV when it is installed)."""

from __future__ import annotations

import glob
import os
from typing import Iterator, Tuple

import numpy as np

from . import _yoloc

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tga", ".pnm", ".ppm", ".pgm")
VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg")


def _is_video(path: str) -> bool:
    return path.lower().endswith(VIDEO_SUFFIXES)


def _video_frames(path: str) -> Iterator[Tuple[str, np.ndarray]]:
    try:
        import cv2  # noqa: PLC0415  (optional dependency, only for videos)
    except ImportError as e:
        raise RuntimeError(f"{path}: reading videos needs OpenCV: pip install opencv-python-headless"
                           ) from e
    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        raise ValueError(f"{path}: cannot open this video (not a video, or a codec OpenCV lacks)")
    try:
        index = 0
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            yield f"{path}#{index}", np.ascontiguousarray(frame)
            index += 1
    finally:
        cap.release()


def _expand(source: str) -> list:
    if os.path.isdir(source):
        files = sorted(os.path.join(source, f) for f in os.listdir(source)
                       if f.lower().endswith(IMAGE_SUFFIXES + VIDEO_SUFFIXES))
        if not files:
            raise ValueError(f"{source}: the folder holds no image or video file")
        return files
    if any(ch in source for ch in "*?["):
        files = sorted(glob.glob(source, recursive=True))
        if not files:
            raise ValueError(f"{source}: the pattern matches no file")
        return files
    if not os.path.exists(source):
        raise FileNotFoundError(f"{source}: no such file or folder")
    return [source]


def iterate(source, bgr: bool = True) -> Iterator[Tuple[str, np.ndarray]]:
    """Yields (name, image) with the image as a C-contiguous HxWx3 uint8 BGR array. A numpy
    array is taken as BGR (as OpenCV gives it) unless ``bgr`` is False (then RGB)."""
    if isinstance(source, np.ndarray):
        yield "image0", _as_bgr(source, bgr)
        return
    if isinstance(source, (list, tuple)):
        for i, item in enumerate(source):
            if isinstance(item, np.ndarray):
                yield f"image{i}", _as_bgr(item, bgr)
            else:
                yield from iterate(item, bgr)
        return
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise TypeError(f"predict: cannot read a source of type {type(source).__name__}: give a "
                        "path, folder, glob, list, numpy array or video file")
    for path in _expand(source):
        if _is_video(path):
            yield from _video_frames(path)
        else:
            yield path, _yoloc.read_image(path)


def _as_bgr(array: np.ndarray, bgr: bool) -> np.ndarray:
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"predict: an image array must be HxWx3 uint8, not {array.dtype} "
                         f"{tuple(array.shape)}")
    if not bgr:
        array = array[:, :, ::-1]
    return np.ascontiguousarray(array)

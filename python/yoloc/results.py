"""Detections of one image, shaped as Ultralytics' ``Results`` so that code written for it reads
the same: ``r.boxes.xyxy``, ``r.boxes.conf``, ``r.boxes.cls``, ``r.names``, ``r.plot()``."""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional

import numpy as np

from . import _yoloc


class Boxes:
    """The boxes of one image: ``data`` is an (N, 6) float32 array of x1, y1, x2, y2 (image
    pixels), score and class id, by score descending."""

    def __init__(self, data: np.ndarray, orig_shape):
        self.data = np.asarray(data, dtype=np.float32).reshape(-1, 6)
        self.orig_shape = tuple(orig_shape)

    def __len__(self) -> int:
        return int(self.data.shape[0])

    @property
    def xyxy(self) -> np.ndarray:
        """(N, 4) corners x1, y1, x2, y2 in pixels."""
        return self.data[:, :4]

    @property
    def xywh(self) -> np.ndarray:
        """(N, 4) centre x, centre y, width, height in pixels."""
        b = self.data[:, :4]
        return np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2,
                         b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)

    @property
    def xyxyn(self) -> np.ndarray:
        """(N, 4) corners divided by the image's width and height."""
        h, w = self.orig_shape[:2]
        return self.xyxy / np.array([w, h, w, h], dtype=np.float32)

    @property
    def xywhn(self) -> np.ndarray:
        """(N, 4) centre and size divided by the image's width and height (YOLO labels)."""
        h, w = self.orig_shape[:2]
        return self.xywh / np.array([w, h, w, h], dtype=np.float32)

    @property
    def conf(self) -> np.ndarray:
        return self.data[:, 4]

    @property
    def cls(self) -> np.ndarray:
        return self.data[:, 5]

    def __repr__(self) -> str:
        return f"Boxes({len(self)} boxes)"


class Results:
    """One image's detections. ``orig_img`` is the image as it was read (BGR, HxWx3 uint8)."""

    def __init__(self, orig_img: np.ndarray, path: str, names: Dict[int, str], boxes: np.ndarray,
                 speed: Dict[str, float]):
        self.orig_img = orig_img
        self.orig_shape = orig_img.shape[:2]
        self.path = path
        self.names = names
        self.boxes = Boxes(boxes, self.orig_shape)
        self.speed = speed

    def __len__(self) -> int:
        return len(self.boxes)

    def __repr__(self) -> str:
        return f"Results({self.path!r}, {len(self)} detections)"

    def plot(self) -> np.ndarray:
        """A copy of the image (BGR) with the boxes, class names and scores drawn."""
        names = [self.names.get(i, str(i)) for i in range(max(self.names, default=-1) + 1)]
        return _yoloc.draw(self.orig_img, self.boxes.data, names)

    def save(self, filename: str, overwrite: bool = False) -> str:
        """Writes the annotated image (PNG, or JPEG for .jpg / .jpeg) and returns its path.
        Refuses to overwrite an existing file (or the input image) unless ``overwrite``."""
        if os.path.exists(filename) and not overwrite:
            raise FileExistsError(f"{filename} exists: pass overwrite=True or another name")
        _yoloc.write_image(filename, self.plot())
        return filename

    def save_txt(self, filename: str, save_conf: bool = False) -> str:
        """Writes the detections in the YOLO label format: ``class cx cy w h [conf]``, the box
        normalised by the image size, one line per detection."""
        with open(filename, "w") as f:
            for (cx, cy, w, h), c, k in zip(self.boxes.xywhn, self.boxes.conf, self.boxes.cls):
                line = f"{int(k)} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}"
                f.write(line + (f" {c:.6f}\n" if save_conf else "\n"))
        return filename

    def summary(self) -> List[dict]:
        """The detections as dicts, the shape of Ultralytics' ``Results.summary()``."""
        out = []
        for (x1, y1, x2, y2), c, k in zip(self.boxes.xyxy, self.boxes.conf, self.boxes.cls):
            out.append({"name": self.names.get(int(k), str(int(k))), "class": int(k),
                        "confidence": round(float(c), 5),
                        "box": {"x1": float(x1), "y1": float(y1), "x2": float(x2),
                                "y2": float(y2)}})
        return out

    def to_json(self, indent: Optional[int] = None) -> str:
        return json.dumps(self.summary(), indent=indent)

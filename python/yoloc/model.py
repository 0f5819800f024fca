"""A compiled detector: ``yoloc.compile(onnx)`` or ``yoloc.load(artifact)`` give one."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from . import _yoloc
from .results import Results
from .sources import iterate


class Model:
    """A `.ycm` artifact loaded by the runtime. ``predict`` detects objects in images;
    calling the model runs the raw network on tensors."""

    def __init__(self, path: str, threads: int = 0, device: int = 0,
                 trusted_key: Optional[str] = None, _temp_dir: Optional[str] = None):
        self.path = os.fspath(path)
        self._temp_dir = _temp_dir
        self._detector = _yoloc.Detector(self.path, threads, device, trusted_key or "")
        self.names: Dict[int, str] = dict(enumerate(self._detector.class_names))

    def __del__(self):
        if getattr(self, "_temp_dir", None):
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"yoloc.Model({self.path!r}, family={self.family!r}, target={self.target!r}, "
                f"precision={self.precision!r}, batch={self.batch})")

    # What the artifact says of itself.
    @property
    def family(self) -> str:
        return self._detector.family

    @property
    def target(self) -> str:
        return self._detector.target

    @property
    def precision(self) -> str:
        return self._detector.precision

    @property
    def inputs(self) -> List[dict]:
        """The network's inputs: name, dtype and shape each."""
        return self._detector.inputs

    @property
    def outputs(self) -> List[dict]:
        return self._detector.outputs

    @property
    def batch(self) -> int:
        return int(self.inputs[0]["shape"][0]) if self.inputs else 1

    def save(self, path: str, overwrite: bool = False) -> str:
        """Copies the artifact to ``path``; refuses to overwrite unless ``overwrite``."""
        path = os.fspath(path)
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"{path} exists: pass overwrite=True or another name")
        if os.path.abspath(path) == os.path.abspath(self.path):
            return path
        shutil.copyfile(self.path, path)
        return path

    def __call__(self, *tensors) -> List[np.ndarray]:
        """The raw network: one array per input (numpy or any DLPack tensor on the host), in
        the manifest's dtype and shape; returns the outputs as numpy arrays."""
        return self._detector.infer(list(tensors))

    def predict(self, source, conf: float = 0.25, iou: float = 0.7,
                classes: Optional[Sequence[int]] = None, max_det: int = 300,
                stream: bool = False, bgr: bool = True) -> Union[List[Results], Iterator[Results]]:
        """Detects objects in ``source``: an image path, folder, glob, list, numpy HxWx3 uint8
        array (BGR as OpenCV gives it; ``bgr=False`` for RGB) or video file. Returns a list of
        ``Results`` (one per image or frame), or a generator of them with ``stream=True``."""
        gen = self._predict(source, conf, iou, classes, max_det, bgr)
        return gen if stream else list(gen)

    def _predict(self, source, conf, iou, classes, max_det, bgr) -> Iterator[Results]:
        # Up to `batch` images a network run (a batch-N artifact takes N at once); each result's
        # speed is its share of its batch's.
        wanted = None if classes is None else np.asarray(list(classes), dtype=np.float32)
        images = iterate(source, bgr)
        done = False
        while not done:
            t0 = time.perf_counter()
            batch = []
            while len(batch) < self.batch:
                try:
                    batch.append(next(images))
                except StopIteration:
                    done = True
                    break
            if not batch:
                return
            t1 = time.perf_counter()
            boxes, timings = self._detector.detect_batch([im for _, im in batch], conf, iou,
                                                         max_det)
            t2 = time.perf_counter()
            n = len(batch)
            speed = {"read": (t1 - t0) * 1e3 / n, "preprocess": timings[0] / n,
                     "inference": timings[1] / n, "postprocess": timings[2] / n,
                     "total": (t2 - t0) * 1e3 / n}
            for (name, image), b in zip(batch, boxes):
                if wanted is not None:
                    b = b[np.isin(b[:, 5], wanted)]
                yield Results(image, name, self.names, b, dict(speed))

    def eval(self, data: str, progress: bool = False) -> dict:
        """COCO mAP50 and mAP50-95 on a folder of ``images/`` and YOLO ``labels/`` (conf 0.001,
        NMS IoU 0.7, 300 detections), as ``yoloc eval`` computes them."""
        return self._detector.evaluate(os.fspath(data), progress)

    def bench(self, iters: int = 50, warmup: int = 5) -> dict:
        """Times the raw network on zero inputs: median, p90 and p99 in ms and images/s."""
        if iters < 1 or warmup < 0:
            raise ValueError("bench: iters must be >= 1 and warmup >= 0")
        tensors = [np.zeros(t["shape"], dtype=_numpy_dtype(t["dtype"])) for t in self.inputs]
        for _ in range(warmup):
            self(*tensors)
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            self(*tensors)
            times.append((time.perf_counter() - t0) * 1e3)
        times = np.sort(np.array(times))
        median = float(np.median(times))
        return {"median_ms": median, "p90_ms": float(np.percentile(times, 90)),
                "p99_ms": float(np.percentile(times, 99)),
                "throughput_ips": self.batch * 1e3 / median, "iters": iters}


def _numpy_dtype(name: str):
    return {"float32": np.float32, "float16": np.float16, "uint8": np.uint8, "int64": np.int64,
            "int32": np.int32, "int8": np.int8}.get(name, np.float32)


def load(path: str, threads: int = 0, device: int = 0, trusted_key: Optional[str] = None) -> Model:
    """Loads a `.ycm` artifact (its digest checked, and its signature with ``trusted_key``)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such artifact")
    return Model(path, threads, device, trusted_key)


def compile(onnx_path: str, target: str = "cpu", precision: str = "auto", batch: int = 1,
            imgsz: Optional[int] = None, family: Optional[str] = None,
            records: Optional[str] = None, output: Optional[str] = None, threads: int = 0,
            **options) -> Model:
    """Compiles an ONNX detector for ``target`` and loads it. The artifact is written to
    ``output`` (which must not exist) or to a temporary file that ``Model.save`` can keep.
    Other keyword options are ``yoloc compile``'s long options (``arch="sm_90"``,
    ``io_precision="fp16"``, ``isa="avx2"``, ``no_cache=True``, ...)."""
    temp_dir = None
    if output is None:
        temp_dir = tempfile.mkdtemp(prefix="yoloc-")
        output = os.path.join(temp_dir, "model.ycm")
    try:
        _yoloc.compile(os.fspath(onnx_path), os.fspath(output), target, precision, batch,
                       imgsz or 0, family or "", records or "",
                       {k: str(v) for k, v in options.items()})
        return Model(output, threads, 0, None, _temp_dir=temp_dir)
    except BaseException:
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)
        raise

"""The Python package against independent references: ONNX Runtime for the raw network, the
`yoloc` CLI (itself checked against a numpy pipeline by tests/e2e) for detections and mAP, and
facts of the images known by looking at them (bus.jpg: one bus and four people)."""
import glob
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import yoloc

SHARED = os.environ.get("YOLOC_SHARED_DIR", os.path.join(os.path.dirname(__file__), "../../../shared"))
MODEL = os.path.join(SHARED, "models", "yolov8n.onnx")
IMAGES = os.path.join(SHARED, "data", "images")
BUS = os.path.join(IMAGES, "bus.jpg")
ZIDANE = os.path.join(IMAGES, "zidane.jpg")
YOLOC = os.environ.get("YOLOC_CLI", "yoloc")

pytestmark = pytest.mark.skipif(not os.path.isfile(MODEL), reason=f"no model {MODEL}")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return yoloc.compile(MODEL, output=str(tmp_path_factory.mktemp("m") / "yolov8n.ycm"))


def cli_detections(artifact, images, conf, iou):
    out = subprocess.run([YOLOC, "run", artifact, *images, "--conf", str(conf), "--iou", str(iou),
                          "--json", "-"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_bus_has_a_bus_and_four_people(model):
    r = model.predict(BUS)[0]
    assert r.boxes.xyxy.shape == (5, 4)
    names = sorted(r.names[int(c)] for c in r.boxes.cls)
    assert names == ["bus", "person", "person", "person", "person"]
    assert r.orig_shape == (1080, 810)
    assert np.all(np.diff(r.boxes.conf) <= 0), "detections by score descending"


def test_predictions_match_the_cli(model):
    for conf, iou in [(0.25, 0.7), (0.1, 0.45)]:
        results = model.predict([BUS, ZIDANE], conf=conf, iou=iou)
        cli = cli_detections(model.path, [BUS, ZIDANE], conf, iou)
        for r, c in zip(results, cli):
            expected = np.array([d["box"] for d in c["detections"]], dtype=np.float32).reshape(-1, 4)
            assert r.boxes.xyxy.shape == expected.shape
            np.testing.assert_allclose(r.boxes.xyxy, expected, atol=1e-3)
            np.testing.assert_allclose(r.boxes.conf, [d["score"] for d in c["detections"]], atol=1e-5)
            assert [int(k) for k in r.boxes.cls] == [d["class_id"] for d in c["detections"]]


def test_batch_artifact_matches_batch_one(tmp_path):
    # A batch-2 artifact takes the images two at a time (the last run padded): three images
    # give the detections of the batch-1 artifact, image by image.
    dynbatch = os.path.join(SHARED, "models", "yolov5n-fp16-dynbatch.onnx")
    if not os.path.isfile(dynbatch):
        pytest.skip(f"no model {dynbatch}")
    b1 = yoloc.compile(dynbatch, family="yolov5", output=str(tmp_path / "b1.ycm"))
    b2 = yoloc.compile(dynbatch, family="yolov5", batch=2, output=str(tmp_path / "b2.ycm"))
    assert b1.batch == 1 and b2.batch == 2
    sources = [BUS, ZIDANE, BUS]
    one = b1.predict(sources)
    two = b2.predict(sources)
    assert [r.path for r in two] == sources
    for a, b in zip(one, two):
        assert a.boxes.data.shape == b.boxes.data.shape and len(a.boxes) > 0
        np.testing.assert_allclose(b.boxes.xyxy, a.boxes.xyxy, atol=1e-2)
        np.testing.assert_allclose(b.boxes.conf, a.boxes.conf, atol=1e-4)
        np.testing.assert_array_equal(b.boxes.cls, a.boxes.cls)


def test_array_sources_bgr_and_rgb(model):
    from_path = model.predict(BUS)[0].boxes.data
    bgr = yoloc.read_image(BUS)
    assert bgr.shape == (1080, 810, 3) and bgr.dtype == np.uint8
    np.testing.assert_array_equal(model.predict(bgr)[0].boxes.data, from_path)
    rgb = np.ascontiguousarray(bgr[:, :, ::-1])
    np.testing.assert_array_equal(model.predict(rgb, bgr=False)[0].boxes.data, from_path)
    # The same pixels taken as BGR are another image: the channels matter.
    assert not np.array_equal(model.predict(rgb)[0].boxes.data, from_path)


def test_folder_glob_list_and_stream(model, tmp_path):
    shutil.copy(BUS, tmp_path / "a.jpg")
    shutil.copy(ZIDANE, tmp_path / "b.jpg")
    (tmp_path / "notes.txt").write_text("not an image")
    assert [os.path.basename(r.path) for r in model.predict(str(tmp_path))] == ["a.jpg", "b.jpg"]
    assert len(model.predict(str(tmp_path / "*.jpg"))) == 2
    gen = model.predict([BUS, str(tmp_path / "b.jpg")], stream=True)
    assert not isinstance(gen, list)
    assert [len(r) for r in gen] == [len(model.predict(BUS)[0]), len(model.predict(ZIDANE)[0])]


def test_classes_filter_and_speed(model):
    r = model.predict(BUS, classes=[5])[0]
    assert [r.names[int(c)] for c in r.boxes.cls] == ["bus"]
    for k in ("preprocess", "inference", "postprocess"):
        assert r.speed[k] >= 0
    assert r.speed["inference"] > 0


def test_boxes_formats_and_labels(model, tmp_path):
    r = model.predict(BUS)[0]
    xyxy, xywh = r.boxes.xyxy, r.boxes.xywh
    np.testing.assert_allclose(xywh[:, 0], (xyxy[:, 0] + xyxy[:, 2]) / 2, rtol=1e-6)
    np.testing.assert_allclose(xywh[:, 3], xyxy[:, 3] - xyxy[:, 1], rtol=1e-6)
    np.testing.assert_allclose(r.boxes.xyxyn[:, 2], xyxy[:, 2] / 810, rtol=1e-6)
    lines = open(r.save_txt(str(tmp_path / "bus.txt"))).read().split("\n")[:-1]
    assert len(lines) == 5
    first = [float(v) for v in lines[0].split()]
    assert int(first[0]) == int(r.boxes.cls[0])
    np.testing.assert_allclose(first[1:], r.boxes.xywhn[0], atol=1e-6)
    assert json.loads(r.to_json())[0]["name"] == r.names[int(r.boxes.cls[0])]


def test_plot_and_save(model, tmp_path):
    r = model.predict(BUS)[0]
    plotted = r.plot()
    assert plotted.shape == r.orig_img.shape
    assert not np.array_equal(plotted, r.orig_img), "boxes drawn"
    changed = np.any(plotted != r.orig_img, axis=2)
    x1, y1, x2, y2 = (int(round(v)) for v in r.boxes.xyxy[0])
    assert changed[(y1 + y2) // 2, max(x1 - 1, 0):x1 + 2].any(), "the box's left edge is drawn"
    # Far from every box (labels sit just above one), the picture is left alone.
    near = np.zeros_like(changed)
    for bx1, by1, bx2, by2 in r.boxes.xyxy.astype(int):
        near[max(by1 - 60, 0):by2 + 10, max(bx1 - 10, 0):bx2 + 10] = True
    assert not changed[~near].any()
    path = r.save(str(tmp_path / "bus.png"))
    np.testing.assert_array_equal(yoloc.read_image(path), plotted)
    with pytest.raises(FileExistsError):
        r.save(path)


def test_raw_network_matches_onnxruntime(model):
    ort = pytest.importorskip("onnxruntime")
    x = np.random.default_rng(0).random((1, 3, 640, 640), dtype=np.float32)
    (ours,) = model(x)
    (ref,) = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"]).run(None, {"images": x})
    assert ours.shape == ref.shape == (1, 84, 8400)
    # Each part relative to its own scale: box coordinates (pixels) and class scores ([0, 1]).
    boxes_err = np.abs(ours[:, :4] - ref[:, :4]).max() / np.abs(ref[:, :4]).max()
    scores_err = np.abs(ours[:, 4:] - ref[:, 4:]).max()
    assert boxes_err < 1e-4 and scores_err < 1e-4, (boxes_err, scores_err)


def test_artifact_facts_save_and_load(model, tmp_path):
    assert model.family == "yolov8" and model.precision == "fp32"
    assert model.target.startswith("cpu")
    assert model.inputs == [{"name": "images", "dtype": "float32", "shape": (1, 3, 640, 640)}]
    assert model.batch == 1 and model.names[0] == "person" and len(model.names) == 80
    saved = model.save(str(tmp_path / "copy.ycm"))
    with pytest.raises(FileExistsError):
        model.save(saved)
    again = yoloc.load(saved)
    np.testing.assert_array_equal(again.predict(BUS)[0].boxes.data, model.predict(BUS)[0].boxes.data)


def test_eval_matches_the_cli(model, tmp_path):
    data = os.path.join(SHARED, "data", "coco-eval")
    if not os.path.isdir(data):
        pytest.skip("no coco-eval")
    ours = model.eval(data)
    out = tmp_path / "eval.json"
    subprocess.run([YOLOC, "eval", model.path, "--data", data, "--json", str(out)], check=True,
                   capture_output=True)
    cli = json.loads(out.read_text())
    assert abs(ours["map50_95"] - cli["map50_95"]) < 1e-9 and abs(ours["map50"] - cli["map50"]) < 1e-9
    assert 0.3 < ours["map50_95"] < 0.6


def test_bench(model):
    b = model.bench(iters=3, warmup=1)
    assert 0 < b["median_ms"] <= b["p99_ms"] and b["throughput_ips"] > 0


def test_errors_are_one_line(tmp_path):
    with pytest.raises(FileNotFoundError):
        yoloc.load(str(tmp_path / "missing.ycm"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(yoloc.Error) as e:
        yoloc.compile(str(bad))
    assert "\n" not in str(e.value) and "bad.onnx" in str(e.value)
    with pytest.raises(yoloc.Error, match="unknown option"):
        yoloc.compile(MODEL, frobnicate=1)
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        next(iter(yoloc.sources.iterate(np.zeros((4, 4), dtype=np.uint8))))
    with pytest.raises(FileNotFoundError):
        list(yoloc.sources.iterate(str(tmp_path / "nothing.jpg")))

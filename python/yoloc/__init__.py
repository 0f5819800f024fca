"""yoloc: compile YOLO detectors for the machine they run on, and run them.

    import yoloc
    model = yoloc.compile("yolov8n.onnx")            # or yoloc.load("yolov8n.ycm")
    for r in model.predict("bus.jpg"):
        print(r.boxes.xyxy, r.boxes.conf, r.boxes.cls)
"""

from ._yoloc import Error, __version__, read_image, write_image  # noqa: F401
from .model import Model, compile, load  # noqa: F401
from .results import Boxes, Results  # noqa: F401

__all__ = ["Boxes", "Error", "Model", "Results", "compile", "load", "read_image", "write_image",
           "__version__"]

"""The dynamic-batch twin of a static-batch ONNX YOLO export, for benchmarks at batch > 1 (the
twin is written into a work folder, never committed): its input and output batch become
symbolic, and every Reshape shape constant that starts with the batch 1 starts with 0 (copy the
input's dim) instead. ONNX Runtime's outputs of the twin at batch N equal N batch-1 runs."""
import os

import onnx
import onnx.numpy_helper


def dynamic_batch_twin(path, out_dir):
    """The model with a symbolic batch (see the module doc), or the model itself if its batch
    is dynamic already."""
    m = onnx.load(path)
    dim0 = m.graph.input[0].type.tensor_type.shape.dim[0]
    if not dim0.HasField("dim_value"):
        return path
    dim0.ClearField("dim_value")
    dim0.dim_param = "batch"
    for o in m.graph.output:
        d = o.type.tensor_type.shape.dim
        if d and d[0].HasField("dim_value"):
            d[0].ClearField("dim_value")
            d[0].dim_param = "batch"
    shapes = {n.input[1] for n in m.graph.node if n.op_type == "Reshape" and len(n.input) > 1}
    for init in m.graph.initializer:
        if init.name in shapes:
            arr = onnx.numpy_helper.to_array(init).copy()
            if arr.ndim == 1 and arr.size and arr[0] == 1:
                arr[0] = 0
                init.CopyFrom(onnx.numpy_helper.from_array(arr, init.name))
    for n in m.graph.node:  # Constant-node shapes
        if n.op_type == "Constant" and n.output[0] in shapes:
            t = onnx.numpy_helper.to_array(n.attribute[0].t).copy()
            if t.ndim == 1 and t.size and t[0] == 1:
                t[0] = 0
                n.attribute[0].t.CopyFrom(onnx.numpy_helper.from_array(t))
    del m.graph.value_info[:]
    out = os.path.join(out_dir, os.path.basename(path).replace(".onnx", "-dynbatch.onnx"))
    onnx.save(m, out)
    return out

"""The float rewrite of a dynamically quantized model, made here with onnx and numpy for ONNX
Runtime to run: an independent implementation of what yoloc's CPU target compiles such a model to.

Every DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul(x_scale * w_scale) [-> Add(bias)] chain
becomes a float Conv of the unquantized activation with the weights (w_q - w_zero_point), whose
output the chain's Mul then scales by w_scale alone (x_scale becomes the constant 1). Weights are
the int8 grid values, activations stay float (as in /work/shared/models/README.md: yolov8n.onnx is
this rewrite of yolov8n-dynint8.onnx).
"""
import numpy as np


def float_rewrite(path):
    """The rewritten model (onnx.ModelProto)."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(path)
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    quantized_by = {n.output[0]: n for n in g.node if n.op_type == "DynamicQuantizeLinear"}
    nodes = []
    for n in g.node:
        if n.op_type == "DynamicQuantizeLinear":
            nodes.append(helper.make_node("Constant", [], [n.output[1]], value=helper.make_tensor(
                n.output[1] + "_one", onnx.TensorProto.FLOAT, [], [1.0])))
        elif n.op_type == "ConvInteger":
            if n.input[0] not in quantized_by or n.input[1] not in inits:
                raise ValueError(f"{path}: ConvInteger {n.name} is not fed by a "
                                 "DynamicQuantizeLinear and a weight initializer")
            w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
            if len(n.input) > 3 and n.input[3]:
                zp = numpy_helper.to_array(inits[n.input[3]]).astype(np.float32)
                w = w - (zp.reshape(-1, 1, 1, 1) if zp.size > 1 else zp)
            name = n.input[1] + "_float"
            g.initializer.append(numpy_helper.from_array(w, name))
            x = quantized_by[n.input[0]].input[0]
            nodes.append(helper.make_node("Conv", [x, name], list(n.output), name=n.name,
                                          **{a.name: helper.get_attribute_value(a)
                                             for a in n.attribute}))
        else:
            nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    kept = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(kept)
    del g.value_info[:]  # the ConvInteger outputs were int32
    return model


def float_rewrite_session(path, optimize=True):
    """An ONNX Runtime (CPU) session of the float rewrite (common.ort_session)."""
    import common

    return common.ort_session(float_rewrite(path).SerializeToString(), optimize)

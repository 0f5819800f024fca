#!/usr/bin/env python3
"""Writes the ONNX node tests of the installed `onnx` package as test folders.

The onnx wheel ships the test generators but not their data. This writes, for every case of
onnx.backend.test.case.node.collect_testcases(), OUTPUT/node/<test>/model.onnx and
test_data_set_<i>/{input,output}_<j>.pb, the layout of `backend-test-tools generate-data`
(onnx/backend/test/cmd_tools.py). A stamp file holding the onnx version makes a second run with
the same version a no-op.

usage: gen_onnx_node_tests.py --output DIR [--force]
"""
import argparse
import os
import shutil
import sys
import warnings


def serialize(value, type_proto, name):
    """The .pb bytes of one input or output value, as cmd_tools.generate_data writes them."""
    from onnx import TensorProto, numpy_helper

    if type_proto.HasField("map_type"):
        return numpy_helper.from_dict(value, name).SerializeToString()
    if type_proto.HasField("sequence_type"):
        return numpy_helper.from_list(value, name).SerializeToString()
    if type_proto.HasField("optional_type"):
        return numpy_helper.from_optional(value, name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, name).SerializeToString()


def write_case(case, case_dir):
    os.makedirs(case_dir)
    graph = case.model.graph
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        set_dir = os.path.join(case_dir, f"test_data_set_{i}")
        os.makedirs(set_dir)
        for kind, values, protos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                with open(os.path.join(set_dir, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(serialize(value, protos[j].type, protos[j].name))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="folder that receives node/<test>/")
    parser.add_argument("--force", action="store_true", help="regenerate even if up to date")
    args = parser.parse_args()

    try:
        import onnx
        from onnx.backend.test.case import node as node_cases
    except ImportError as e:
        print(f"error: the Python package onnx is needed to generate the node tests ({e}); "
              "pip install onnx", file=sys.stderr)
        return 1

    node_dir = os.path.join(args.output, "node")
    stamp = os.path.join(args.output, "onnx-version.stamp")
    if not args.force and os.path.isfile(stamp) and open(stamp).read().strip() == onnx.__version__:
        print(f"ONNX {onnx.__version__} node tests already in {node_dir}")
        return 0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generators divide by zero on purpose, etc.
        cases = node_cases.collect_testcases(None)
    # Write into a temporary folder and rename, so an interrupted run leaves no half-written set.
    tmp_dir = node_dir + ".tmp"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    os.makedirs(tmp_dir)
    for case in cases:
        write_case(case, os.path.join(tmp_dir, case.name))
    shutil.rmtree(node_dir, ignore_errors=True)
    os.rename(tmp_dir, node_dir)
    with open(stamp, "w") as f:
        f.write(onnx.__version__ + "\n")
    print(f"wrote {len(cases)} ONNX {onnx.__version__} node tests to {node_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

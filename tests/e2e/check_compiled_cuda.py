#!/usr/bin/env python3
"""Compiles a shared model for CUDA (`yoloc compile --target cuda --precision fp16`: NVRTC, no
GPU needed) and checks the artifact's structure: target and precision in the manifest, a CUDA
program whose every launch names a module of cubins (ELF images) with a launchable geometry,
bindings inside the arena or the weights and the arena arguments it writes (for the streams), programmatic dependent launch allowed (sm_90), one
module per task plus the detection module of a detector, an arena below the naive sum. For
yolov8n it also checks that its SPPF is one launch of the SPPF template, that the shipped tuning
records (records/cuda-sm_90.jsonl) still apply (a change of workload keys would leave them
silently unused), that its two Resizes have no launch of their own (the convs they read write
the upsampled copies; at batch 128 the 1x1 convs reading their concats read their sources),
that with --b2b on its 9 back-to-back conv pairs run as one kernel each
(the detect head's 3x3 -> 1x1 ends of branches, the stride-2 convs with the C2f cv1 after them),
the box pairs then decoding the boxes and the class pairs storing the scores (no detect tail),
and that by default (--b2b measured) none does at batch 1 (the shipped records time none of them
faster than its two convs by the margin), that its NCHW-output head convs and the convs with
an upsampled copy are tuned (by their own records, or, without them, by their NHWC twin's) and
that --no-records applies none, that --batch 2 --lanes 2 launches every kernel once per lane, and that --io-precision fp16 makes the image and the output
float16 (the stem reads the fp16 image, the detect tail writes fp16; no cast kernels) and refuses
another --precision.
Models the CUDA target cannot compile must fail with one clear error line (reported as skipped).
The outputs themselves are checked on a GPU machine (`scripts/gpu_checks.sh models`,
check_compiled.py --target cuda).

usage: check_compiled_cuda.py --yoloc BIN --model M.onnx --work DIR
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from check_compiled import family_options  # noqa: E402


def main():
    args = common.model_args()
    common.check_known_unsupported(args.yoloc, args.model, args.work, "cuda",
                                   ["--precision", "fp16"])
    os.makedirs(args.work, exist_ok=True)
    artifact = os.path.join(args.work, "model.ycm")
    p = common.run([args.yoloc, "compile", args.model, "-o", artifact, "--force", "--target",
                    "cuda", "--precision", "fp16", *family_options(args.model)],
                   "yoloc compile --target cuda")
    print(p.stdout.strip())
    m, blobs = common.read_artifact(artifact)
    problems = []
    prog = m.get("program", {})
    if m.get("target") != "cuda-sm_90" or m.get("precision") != "fp16":
        problems.append(f"target/precision {m.get('target')}/{m.get('precision')}")
    if prog.get("kind") != "cuda":
        problems.append(f"program kind {prog.get('kind')}")
    if prog.get("pdl") is not True:
        problems.append("an sm_90 program without \"pdl\": its kernels would not overlap launches")
    modules = prog.get("modules", [])
    for name in modules:
        if not blobs.get(name, b"").startswith(b"\x7fELF"):
            problems.append(f"module {name} is not a cubin")
    tasks = {launch["task"]["task"] for launch in prog.get("launches", [])}
    detector = "detect" in prog
    if len(modules) != len(tasks) + (1 if detector else 0):
        problems.append(f"{len(modules)} modules for {len(tasks)} tasks (detector: {detector})")
    arena = prog.get("arena_bytes", 0)
    weights = len(blobs.get("weights", b""))
    for i, launch in enumerate(prog.get("launches", [])):
        if not 0 <= launch["module"] < len(modules):
            problems.append(f"launch {i} names module {launch['module']}")
        threads = launch["block"][0] * launch["block"][1] * launch["block"][2]
        if min(launch["grid"] + launch["block"]) < 1 or threads > 1024:
            problems.append(f"launch {i} geometry {launch['grid']} x {launch['block']}")
        writes = launch.get("writes")
        if not isinstance(writes, list) or not writes or \
                any(not 0 <= w < len(launch["args"]) or launch["args"][w]["buffer"] != "arena"
                    for w in writes):
            problems.append(f"launch {i} writes {writes}: the executor could not tell which "
                            "launches may run on other streams")
        for a in launch["args"]:
            size = {"arena": arena, "weights": weights}.get(a["buffer"])
            if a["buffer"] != "null" and (size is None or a["offset"] + a["bytes"] > size):
                problems.append(f"launch {i} binds {a} outside its buffer")
    plan = m.get("memory_plan", {})
    if not 0 < plan.get("arena_bytes", 0) < plan.get("naive_bytes", 0):
        problems.append(f"arena {plan.get('arena_bytes')} vs naive {plan.get('naive_bytes')}")
    if os.path.basename(args.model) == "yolov8n.onnx":
        # Its SPPF is one kernel of the SPPF template; no max pool is left to the generic one.
        templates = [launch["task"] for launch in prog.get("launches", [])]
        if [t["template"] for t in templates].count("sppf") != 1 or any(
                t["template"] == "generic" and "MaxPool" in t["key"] for t in templates):
            problems.append("the SPPF group is not one launch of the sppf template")
        # Its two nearest 2x Resizes are the upsampled copies of the convs they read
        # (CudaConvTask::up): no launch of their own, two fewer launches than groups.
        ups = [t for t in templates if " up2x2 out" in t["key"]]
        resizes = [t["group"] for t in templates if "Resize" in t["group"]]
        untuned_ups = [t["key"] for t in ups if not t.get("tuned")]
        if len(ups) != 2 or resizes or untuned_ups:
            problems.append(f"{len(ups)} convs with an upsampled copy (untuned: {untuned_ups}), "
                            f"Resize launches {resizes}")
        tuned = re.search(r"; (\d+) tuned,", p.stdout)
        if not tuned or int(tuned.group(1)) == 0:
            problems.append("the shipped records/cuda-sm_90.jsonl no longer apply to yolov8n")
        # Back-to-back pairs at batch 1: the head's 6 branch ends and 3 backbone pairs (the
        # 256-channel one at 20x20 does not fit in shared memory). The default compile fuses
        # those the shipped records time faster than their two convs by B2bPolicy's margin
        # (since the staged second-stage epilogue, 5 at batch 1 on the H200), as it reports.
        single_launches = prog.get("launches", [])
        fused = sum(" b2b " in t["key"] for t in templates)
        if fused > 9 or f"back-to-back pairs: {fused} fused (--b2b measured)" not in p.stdout:
            problems.append(f"{fused} back-to-back pairs launched at batch 1 with --b2b measured "
                            "(the default), not the number it reports:\n" + p.stdout)
        pairs = common.run([args.yoloc, "compile", args.model, "-o", artifact + ".b2b.ycm",
                            "--force", "--target", "cuda", "--precision", "fp16", "--b2b", "on"],
                           "yoloc compile --target cuda --b2b on")
        pair_launches = common.read_artifact(artifact + ".b2b.ycm")[0].get("program", {}).get(
            "launches", [])
        b2b = [launch["task"] for launch in pair_launches if " b2b " in launch["task"]["key"]]
        # Each pair is one launch in place of two; the three box pairs decode the boxes into the
        # output (" boxes<base>/<anchors>"), the class pairs store the scores, so the detect
        # tail has nothing left and no launch.
        unfused = len(single_launches) + fused
        box_pairs = sum(" boxes" in t["key"] for t in b2b)
        tails = sum(launch["task"]["template"] == "detect_tail" for launch in pair_launches)
        if len(b2b) != 9 or any(t["template"] != "tc_conv" for t in b2b) or box_pairs != 3 or \
                tails != 0 or len(pair_launches) != unfused - len(b2b) - 1 or \
                "back-to-back pairs: 9 fused (--b2b on)" not in pairs.stdout:
            problems.append(f"--b2b on: {len(b2b)} back-to-back pairs (expected 9), {box_pairs} "
                            f"decoding boxes (expected 3), {tails} detect tails (expected 0), "
                            f"{len(pair_launches)} launches against {unfused} unfused:\n" +
                            pairs.stdout)
        # The head's NCHW-output convs are tuned: by records of their own, else by their NHWC
        # twin's (nhwc_output_twin), as the shipped records may hold either.
        nchw = [launch["task"] for launch in single_launches
                if launch["task"]["key"].endswith(" out-nchw")]
        untuned_nchw = [t["key"] for t in nchw if not t.get("tuned")]
        if not nchw or untuned_nchw:
            problems.append(f"{len(nchw)} NCHW-output convs, untuned: {untuned_nchw}\n" +
                            p.stdout)
        # Without records of their own, they take their NHWC twin's: the shipped records less
        # the NCHW-output ones.
        shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "records",
                               "cuda-sm_90.jsonl")
        nhwc_only = os.path.join(args.work, "nhwc-only.jsonl")
        with open(shipped) as f, open(nhwc_only, "w") as out:
            out.writelines(line for line in f
                           if ' out-nchw"' not in line and ' up2x2 out' not in line)
        twins = common.run([args.yoloc, "compile", args.model, "-o", artifact + ".twins.ycm",
                            "--force", "--target", "cuda", "--precision", "fp16", "--records",
                            nhwc_only],
                           "yoloc compile --target cuda --records (no NCHW-output records)")
        # So do the convs with an upsampled copy (their records less too). (Fewer pairs may be
        # fused without the pairs' NCHW records: count the convs of this artifact.)
        twin_tasks = [launch["task"] for launch in common.read_artifact(
            artifact + ".twins.ycm")[0]["program"]["launches"]]
        twin_nchw = sum(t["key"].endswith(" out-nchw") for t in twin_tasks)
        twin_ups = sum(" up2x2 out" in t["key"] for t in twin_tasks)
        # The class convs storing the scores into the output (" scores<base>/<plane>") and the
        # box pairs decoding the boxes (" boxes<base>/<anchors>") without records of their own
        # take those of the same conv storing its own output.
        shipped_keys = set()
        with open(nhwc_only) as f:
            for line in f:
                shipped_keys.add(json.loads(line).get("key", ""))
        twin_scores = sum((" scores" in t["key"] or " boxes" in t["key"]) and
                          t["key"] not in shipped_keys for t in twin_tasks)
        untuned = [t["key"] for t in twin_tasks if not t.get("tuned")]
        if twin_nchw == 0 or twin_ups != 2 or untuned or \
                f"{twin_nchw + twin_ups + twin_scores} from the records of their twin" \
                not in twins.stdout:
            problems.append(f"{twin_nchw} NCHW-output convs, {twin_ups} convs with an upsampled "
                            f"copy and {twin_scores} convs storing class scores without records "
                            "of their own but not all took their twin's tuned config (untuned: "
                            f"{untuned}):\n" + twins.stdout)
        # --io-precision fp16: the image in and the output out as float16, the stem reading the
        # fp16 image itself and the detect tail writing fp16, in as many launches (no casts).
        io = common.run([args.yoloc, "compile", args.model, "-o", artifact + ".io16.ycm",
                         "--force", "--target", "cuda", "--precision", "fp16",
                         "--io-precision", "fp16"], "yoloc compile --io-precision fp16")
        m16 = common.read_artifact(artifact + ".io16.ycm")[0]
        io_launches = [launch["task"] for launch in m16["program"]["launches"]]
        dtypes = [s["dtype"] for s in m16["inputs"] + m16["outputs"]]
        if dtypes != ["float16", "float16"] or \
                not io_launches[0]["key"].endswith(" in-nchw-f16 direct") or \
                not io_launches[-1]["key"].startswith("cuda_detect_tail f16->f16 ") or \
                len(io_launches) != len(single_launches):
            problems.append(f"--io-precision fp16: I/O {dtypes}, first launch "
                            f"{io_launches[0]['key']}, last {io_launches[-1]['key']}, "
                            f"{len(io_launches)} launches against {len(single_launches)}:\n" +
                            io.stdout)
        mismatch = subprocess.run([args.yoloc, "compile", args.model, "-o",
                                   artifact + ".bad.ycm", "--force", "--target", "cuda",
                                   "--precision", "bf16", "--io-precision", "fp16"],
                                  capture_output=True, text=True)
        if mismatch.returncode != 1 or "--io-precision fp16" not in mismatch.stderr or "--precision fp16" not in \
                mismatch.stderr or os.path.exists(artifact + ".bad.ycm"):
            problems.append("--io-precision fp16 with --precision bf16: unclear error:\n" +
                            mismatch.stderr)
        # Batch 128 (the dynamic-batch twin, as bench/gpu_vs_torch.py compiles it): above
        # kUpsampleMaxBatch the two Resizes have no launch either, for another reason: the 1x1
        # convs reading their concats read their sources (" upin"), tuned by their own records
        # or by those of the same conv reading the whole concat.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "bench"))
        from onnx_twin import dynamic_batch_twin
        twin = dynamic_batch_twin(args.model, args.work)
        big = common.run([args.yoloc, "compile", twin, "-o", artifact + ".b128.ycm", "--force",
                          "--target", "cuda", "--precision", "fp16", "--batch", "128"],
                         "yoloc compile --batch 128")
        big_tasks = [launch["task"] for launch in
                     common.read_artifact(artifact + ".b128.ycm")[0]["program"]["launches"]]
        up_in = [t for t in big_tasks if " upin" in t["key"]]
        resizes = [t["key"] for t in big_tasks if t["template"] == "upsample" or
                   "Resize" in t["group"] or " up2x2 out" in t["key"]]
        want_keys = [" upin0+256 2x2 from384+128", " upin0+128 2x2 from192+64"]
        if [k for k in want_keys if not any(k in t["key"] for t in up_in)] or len(up_in) != 2 \
                or resizes or not all(t.get("tuned") for t in up_in):
            problems.append(f"batch 128: convs reading an upsampled input {up_in} (expected the "
                            f"two with {want_keys}, tuned), Resize launches {resizes}:\n" +
                            big.stdout)
        # --batch 2 --lanes 2: every task launched once per lane (in turn), the artifact's input
        # and output of batch 2.
        common.run([args.yoloc, "compile", args.model, "-o", artifact + ".lanes.ycm", "--force",
                    "--target", "cuda", "--precision", "fp16", "--batch", "2", "--lanes", "2"],
                   "yoloc compile --batch 2 --lanes 2")
        lm = common.read_artifact(artifact + ".lanes.ycm")[0]
        lane_of = [launch["task"].get("lane") for launch in lm["program"]["launches"]]
        if lm["program"].get("lanes") != 2 or lane_of != [0, 1] * (len(lane_of) // 2) or \
                len(lane_of) != 2 * len(prog["launches"]) or \
                [lm["inputs"][0]["shape"][0], lm["outputs"][0]["shape"][0]] != [2, 2]:
            problems.append(f"--batch 2 --lanes 2: program lanes {lm['program'].get('lanes')}, "
                            f"{len(lane_of)} launches of lanes {lane_of[:6]}... (batch 1: "
                            f"{len(prog['launches'])}), input {lm['inputs'][0]['shape']}")
        untuned = common.run([args.yoloc, "compile", args.model, "-o", artifact, "--force",
                              "--target", "cuda", "--precision", "fp16", "--no-records"],
                             "yoloc compile --target cuda --no-records")
        if not re.search(r"; 0 tuned, \d+ heuristic defaults", untuned.stdout) or \
                "records" in untuned.stdout:
            problems.append("--no-records still applied tuning records:\n" + untuned.stdout)
    print(f"{len(prog.get('launches', []))} launches in {len(modules)} modules, detection "
          f"kernels: {detector}, arena {arena} bytes")
    for pr in problems:
        print(f"FAIL: {pr}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""`yoloc devices`: lists the CPU as /proc/cpuinfo names it, one OpenCL device per device of
the installed ICDs' platforms (PoCL on a CI machine: its CPU device), and for a GPU kind that
cannot be asked (no driver, no library) says why in one line and still exits 0; --json - gives
the same list.

usage: check_devices.py --yoloc BIN
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def devices(yoloc, env=None):
    p = subprocess.run([yoloc, "devices", "--json", "-"], capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: yoloc devices exited {p.returncode}: {p.stderr.strip()}")
    return {k["target"]: k for k in json.loads(p.stdout)}, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    a = ap.parse_args()
    problems = []
    kinds, text = devices(a.yoloc)
    cpu_names = [line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                 if line.startswith("model name")]
    cpu = kinds.get("cpu", {}).get("devices", [])
    if len(cpu) != 1 or cpu_names and cpu[0].get("name") != cpu_names[0]:
        problems.append(f"the CPU is listed as {cpu}, /proc/cpuinfo says {cpu_names[:1]}")
    if cpu and cpu[0].get("threads") != os.cpu_count():
        problems.append(f"{cpu[0].get('threads')} CPU threads listed, the machine has "
                        f"{os.cpu_count()}")
    if "cpu" not in text:
        problems.append("the text listing (stderr with --json -) does not name the cpu")
    pocl = any("pocl" in open(f).read() for f in glob.glob("/etc/OpenCL/vendors/*.icd"))
    if "opencl" in kinds and pocl:
        cl = kinds["opencl"]["devices"]
        if not any(d.get("platform") == "Portable Computing Language" for d in cl):
            problems.append(f"PoCL is installed but not listed: {kinds['opencl']}")
        if [d.get("device") for d in cl] != [str(i) for i in range(len(cl))]:
            problems.append(f"the OpenCL --device indices are not 0..N-1: {cl}")
    for target, var in (("opencl", "YOLOC_OPENCL_LIBRARY"), ("cuda", "YOLOC_LIBCUDA")):
        if target not in kinds:
            continue
        missing, _ = devices(a.yoloc, {var: "/nonexistent/libmissing.so"})
        why = missing.get(target, {}).get("unavailable", "")
        if "/nonexistent/libmissing.so" not in why or missing[target]["devices"]:
            problems.append(f"{target} with {var} pointing nowhere: {missing.get(target)}")
    for p in problems:
        print(f"FAIL {p}")
    if not problems:
        counts = ", ".join(f"{k}: {len(v['devices'])}" for k, v in kinds.items())
        print(f"ok   yoloc devices lists {counts}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

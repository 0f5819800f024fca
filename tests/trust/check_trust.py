#!/usr/bin/env python3
"""Hostile and untrusted artifacts are refused: exit code 1 and one stderr line `error: ...`
naming the problem, never a signal, a hang, foreign code or a run on garbage.

One compiled artifact (yolov8n, cpu) is reused: each case edits a copy as an attacker would,
recomputing the SHA-256 digest so that only the checks behind the digest stand in the way (the
kernel table, the bindings, the caps, the ELF check, the JSON depth limit), and then runs the
commands that load it. The trust cases sign a small compile (yolov8n's first two convs, a few
seconds: a signed compile builds its kernels afresh) with `yoloc compile --sign` and check
that, with --trust or YOLOC_TRUSTED_KEYS, only artifacts signed by a trusted key load.

usage: check_trust.py --yoloc BIN --shared DIR --work DIR [--case NAME ...]
"""
import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

SKIP = 77
MAGIC = b"YOLOCM\x00\x01"
HEADER = 64
ALIGN = 64
DIGEST = 32
SIGNATURE = 64
FLAG_SIGNED = 1


def align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Artifact:
    """A .ycm file taken apart: header flags, manifest (dict), blobs in order, signature."""

    def __init__(self, data):
        assert data[:8] == MAGIC, "not an artifact"
        (self.version, self.flags, moff, msize, boff, bsize, doff,
         _size) = struct.unpack_from("<IIQQQQQQ", data, 8)
        self.manifest = json.loads(data[moff:moff + msize])
        self.blobs = []
        for b in self.manifest["blobs"]:
            start = boff + b["offset"]
            self.blobs.append([b["name"], b["kind"], data[start:start + b["size"]]])
        self.signature = data[doff + DIGEST:] if self.flags & FLAG_SIGNED else b""

    def blob(self, name):
        return next(b for b in self.blobs if b[0] == name)

    def pack(self, manifest_text=None):
        """The file, laid out as the writer does, with a fresh digest; a signed artifact keeps
        its old signature (which no longer matches when anything changed)."""
        section = b""
        entries = []
        for name, kind, data in self.blobs:
            section += b"\0" * (align(len(section)) - len(section))
            entries.append({"name": name, "kind": kind, "offset": len(section),
                            "size": len(data)})
            section += data
        self.manifest["blobs"] = entries
        text = manifest_text if manifest_text is not None else json.dumps(self.manifest).encode()
        boff = align(HEADER + len(text))
        doff = boff + len(section)
        size = doff + DIGEST + (SIGNATURE if self.flags & FLAG_SIGNED else 0)
        header = MAGIC + struct.pack("<IIQQQQQQ", self.version, self.flags, HEADER, len(text),
                                     boff, len(section), doff, size)
        body = header + text + b"\0" * (boff - HEADER - len(text)) + section
        return body + hashlib.sha256(body).digest() + self.signature


class Cases:
    def __init__(self, args):
        self.yoloc, self.shared, self.work = args.yoloc, args.shared, args.work
        self.model = os.path.join(self.shared, "models", "yolov8n.onnx")
        self.image = os.path.join(self.shared, "data", "images", "bus.jpg")
        if not os.path.isfile(self.model) or not os.path.isfile(self.image):
            print(f"skipped: {self.model} or {self.image} not found")
            sys.exit(SKIP)
        self.failures = []
        self._plain = None
        self.env = dict(os.environ)
        self.env.pop("YOLOC_TRUSTED_KEYS", None)

    # --- running and judging ---------------------------------------------------------------

    def run(self, cmd, env=None):
        shown = " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                           env=env or self.env)
        return shown, p

    def refused(self, name, cmd, needles, env=None):
        shown, p = self.run(cmd, env)
        err = p.stderr.strip()
        print(f"[{name}] $ {shown}\n  exit {p.returncode}: {err}")
        problems = []
        if p.returncode < 0:
            problems.append(f"killed by signal {-p.returncode}")
        elif p.returncode != 1:
            problems.append(f"exit code {p.returncode}, expected 1")
        if len(err.splitlines()) != 1 or not err.startswith("error: "):
            problems.append("stderr is not one line 'error: ...'")
        problems += [f"the message lacks {n!r}" for n in needles if n not in err]
        for problem in problems:
            self.failures.append(f"{name}: {problem}")
            print(f"  FAIL: {problem}")

    def succeeds(self, name, cmd, needles=(), env=None):
        shown, p = self.run(cmd, env)
        print(f"[{name}] $ {shown}\n  exit {p.returncode}")
        if p.returncode != 0:
            self.failures.append(f"{name}: exit {p.returncode}: {p.stderr.strip()}")
            print(f"  FAIL: {p.stderr.strip()}")
        for n in needles:
            if n not in p.stdout:
                self.failures.append(f"{name}: the output lacks {n!r}")
                print(f"  FAIL: the output lacks {n!r}:\n{p.stdout}")
        return p.stdout

    def write(self, name, data):
        path = os.path.join(self.work, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def loaders(self, path, *extra):
        """The commands that load and run an artifact."""
        npy = os.path.join(self.work, "images.npy")
        if not os.path.isfile(npy):  # a zero tensor in .npy format (version 1.0)
            head = ("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 640, 640), }"
                    .encode())
            head += b" " * (63 - (10 + len(head)) % 64) + b"\n"
            with open(npy, "wb") as f:
                f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head +
                        b"\0" * (4 * 3 * 640 * 640))
        return [[self.yoloc, "run", path, self.image, *extra],
                [self.yoloc, "exec", path, "--input", f"images={npy}", "--output-dir",
                 os.path.join(self.work, "out"), *extra],
                [self.yoloc, "bench", path, "--iters", "1", "--warmup", "0", *extra]]

    # --- the artifacts ---------------------------------------------------------------------

    def plain(self):
        """The unsigned artifact's bytes (compiled once)."""
        if self._plain is None:
            path = os.path.join(self.work, "plain.ycm")
            if not os.path.isfile(path):
                shown, p = self.run([self.yoloc, "compile", self.model, "-o", path])
                if p.returncode != 0:
                    raise SystemExit(f"FAIL: {shown}: {p.stderr}")
            with open(path, "rb") as f:
                self._plain = f.read()
        return self._plain

    def crafted(self, name, edit):
        """A copy of the plain artifact with `edit` applied to its parsed form, re-digested."""
        a = Artifact(self.plain())
        text = edit(a)
        return self.write(name, a.pack(text))

    # --- defence in depth: hostile manifests behind a valid digest --------------------------

    def case_call_symbol_system(self):
        def edit(a):
            a.manifest["program"]["calls"][0]["symbol"] = "system"
        path = self.crafted("system.ycm", edit)
        for cmd in self.loaders(path):
            self.refused("call_symbol_system", cmd, ["system.ycm", "'system'"])

    def _output_arg(self, call):
        """The index of the binding call 0 writes through: its last arena binding."""
        return max(i for i, b in enumerate(call["args"]) if b["buffer"] == "arena")

    def case_binding_shorter_than_written(self):
        def edit(a):
            call = a.manifest["program"]["calls"][0]
            call["args"][self._output_arg(call)]["bytes"] = 64
        path = self.crafted("short.ycm", edit)
        for cmd in self.loaders(path):
            self.refused("binding_shorter_than_written", cmd, ["short.ycm", "touches"])

    def case_output_bound_to_weights(self):
        def edit(a):
            call = a.manifest["program"]["calls"][0]
            out = call["args"][self._output_arg(call)]
            weights = len(a.blob("weights")[2])
            assert out["bytes"] <= weights, "the first output must fit in the weights"
            call["args"][self._output_arg(call)] = {"buffer": "weights", "offset": 0,
                                                    "bytes": out["bytes"]}
        path = self.crafted("weights_out.ycm", edit)
        for cmd in self.loaders(path):
            self.refused("output_bound_to_weights", cmd, ["weights_out.ycm", "read-only"])

    def case_fewer_args(self):
        def edit(a):
            a.manifest["program"]["calls"][0]["args"].pop()
        path = self.crafted("fewer.ycm", edit)
        for cmd in self.loaders(path):
            self.refused("fewer_args", cmd, ["fewer.ycm", "arguments"])

    def case_extra_params(self):
        def edit(a):
            a.manifest["program"]["calls"][0]["params"] = [1, 2, 3]
        path = self.crafted("params.ycm", edit)
        self.refused("extra_params", self.loaders(path)[0], ["params.ycm", "parameters"])

    def case_emptied_calls(self):
        def edit(a):
            a.manifest["program"]["calls"] = []
        path = self.crafted("empty_calls.ycm", edit)
        for cmd in self.loaders(path):
            self.refused("emptied_calls", cmd, ["empty_calls.ycm", "makes 0 calls"])

    def case_reversed_calls(self):
        def edit(a):
            a.manifest["program"]["calls"].reverse()
        path = self.crafted("reversed.ycm", edit)
        for cmd in self.loaders(path):
            self.refused("reversed_calls", cmd, ["reversed.ycm", "call 0"])

    def case_truncated_kernel_library(self):
        def edit(a):
            so = a.blob("kernels.so")
            so[2] = so[2][:len(so[2]) // 2]
        path = self.crafted("short_so.ycm", edit)
        for cmd in self.loaders(path):
            self.refused("truncated_kernel_library", cmd, ["short_so.ycm", "truncated"])

    def case_deeply_nested_json(self):
        a = Artifact(self.plain())
        path = self.write("deep.ycm", a.pack(b"[" * 1000000 + b"]" * 1000000))
        for cmd in self.loaders(path) + [[self.yoloc, "inspect", path]]:
            self.refused("deeply_nested_json", cmd, ["deep.ycm", "nests deeper"])

    def case_huge_arena(self):
        def edit(a):
            a.manifest["program"]["arena_bytes"] = 3000000000
        path = self.crafted("arena.ycm", edit)
        for cmd in self.loaders(path, "--max-memory", "1G"):
            self.refused("huge_arena", cmd, ["arena.ycm", "memory cap", "--max-memory"])

        def absurd(a):
            a.manifest["program"]["arena_bytes"] = 10 ** 15
        path = self.crafted("absurd_arena.ycm", absurd)
        self.refused("huge_arena_default_cap", self.loaders(path)[0],
                     ["absurd_arena.ycm", "memory cap"])

    def case_untouched_copy_runs(self):
        """The crafting itself is sound: a re-packed, unedited copy still runs."""
        path = self.crafted("repacked.ycm", lambda a: None)
        self.succeeds("untouched_copy_runs", self.loaders(path)[0])

    # --- the trust model ---------------------------------------------------------------------

    def case_trust(self):
        keys = os.path.join(self.work, "keys")
        shutil.rmtree(keys, ignore_errors=True)
        os.makedirs(keys)
        k, other = os.path.join(keys, "line"), os.path.join(keys, "other")
        self.succeeds("keygen", [self.yoloc, "keygen", k], ["line.key", "line.pub"])
        self.succeeds("keygen_other", [self.yoloc, "keygen", other])
        pub = open(k + ".pub").read()
        self.refused("keygen_refuses_to_overwrite", [self.yoloc, "keygen", k], ["exists"])
        if open(k + ".pub").read() != pub:
            self.failures.append("keygen overwrote an existing key")
        if os.stat(k + ".key").st_mode & 0o077:
            self.failures.append("the secret key is readable by others")

        signed = os.path.join(self.work, "signed.ycm")
        if os.path.exists(signed):
            os.remove(signed)
        self.succeeds("compile_sign", [self.yoloc, "compile", self.model, "-o", signed,
                                       "--outputs", "/model.1/act/Mul_output_0",
                                       "--sign", k + ".key"])
        # A key that cannot sign is refused before any kernel is built.
        out = os.path.join(self.work, "never.ycm")
        self.refused("sign_with_public_key",
                     [self.yoloc, "compile", self.model, "-o", out, "--sign", k + ".pub"],
                     ["line.pub", "secret"])
        plain = self.write("unsigned.ycm", self.plain())
        trust = ["--trust", k + ".pub"]

        # Signed by the trusted key: loads and runs, and inspect says by which key.
        exec_signed, bench_signed = self.loaders(signed)[1:]
        self.succeeds("signed_runs", exec_signed + trust)
        self.succeeds("signed_runs_with_either_key",
                      bench_signed + ["--trust", other + ".pub", *trust])
        self.succeeds("inspect_verified", [self.yoloc, "inspect", signed, *trust],
                      [f"verified with {k}.pub"])
        self.succeeds("inspect_not_verified", [self.yoloc, "inspect", signed],
                      ["signed, not verified"])
        self.succeeds("inspect_unsigned", [self.yoloc, "inspect", plain], ["signature unsigned"])

        # Unsigned, wrongly signed and tampered artifacts: refused by every loader.
        for cmd in self.loaders(plain, *trust) + [[self.yoloc, "inspect", plain, *trust]]:
            self.refused("unsigned_refused", cmd, ["unsigned.ycm", "not signed"])
        for cmd in self.loaders(signed, "--trust", other + ".pub"):
            self.refused("wrong_key_refused", cmd, ["signed.ycm", "bad signature"])
        a = Artifact(open(signed, "rb").read())
        a.manifest["program"]["calls"][0]["symbol"] = "system"
        tampered = self.write("tampered.ycm", a.pack())
        for cmd in self.loaders(tampered, *trust):
            self.refused("tampered_refused", cmd, ["tampered.ycm", "bad signature"])
        # Without a trusted key the same tampered file is still refused, by the kernel table.
        self.refused("tampered_untrusted", self.loaders(tampered)[1], ["tampered.ycm", "system"])

        # The environment's keys hold for every command, and cannot be emptied silently.
        env = dict(self.env, YOLOC_TRUSTED_KEYS=f"{other}.pub:{k}.pub")
        self.succeeds("env_signed_runs", exec_signed, env=env)
        self.refused("env_unsigned_refused", self.loaders(plain)[0], ["not signed"], env=env)
        self.refused("env_set_empty", self.loaders(signed)[0], ["YOLOC_TRUSTED_KEYS"],
                     env=dict(self.env, YOLOC_TRUSTED_KEYS=""))
        self.refused("trust_missing_key_file",
                     [self.yoloc, "run", signed, self.image, "--trust",
                      os.path.join(keys, "absent.pub")], ["absent.pub"])
        self.refused("trust_secret_key_given",
                     [self.yoloc, "run", signed, self.image, "--trust", k + ".key"],
                     ["line.key", "public"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--case", action="append", help="run only these cases (default: all)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    cases = Cases(args)
    names = args.case or [n[len("case_"):] for n in dir(cases) if n.startswith("case_")]
    failed = []
    for name in names:
        before = len(cases.failures)
        getattr(cases, "case_" + name)()
        if len(cases.failures) > before:
            failed.append(name)
    for f in cases.failures:
        print("FAIL:", f)
    print(f"{len(names) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

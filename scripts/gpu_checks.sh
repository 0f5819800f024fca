#!/usr/bin/env bash
# The CUDA checks and benchmarks, run on the GPU machine from the repository root with the
# bundle scripts/gpu_bundle.sh made here (carried as build/gpu_bundle.tar.xz):
#
#   scripts/gpu_checks.sh STEP...     STEP: tests (the GPU unit tests), models (every carried
#                                     model compiled for cuda vs ONNX Runtime, fp32 and fp16),
#                                     detect (detections fp32 / fp16 vs ONNX Runtime),
#                                     bench (yoloc bench of yolov8n and yolox-nano, batch 1),
#                                     profile (per-kernel times; at batch 1 also inside the graph,
#                                     profile --in-graph), eval (mAP fp32 vs fp16),
#                                     pdl (yolov8n with programmatic dependent launch on / off),
#                                     streams (yolov8n with its kernels over 1..4 streams),
#                                     branches (the memory plan's reuse, sequential / ordered),
#                                     tune-run (one tuning run, see the step's comment),
#                                     tunecmp (benches of untuned vs tuned records),
#                                     tunedev (one tuning run on one GPU and on several),
#                                     versus (bench/gpu_vs_torch.py: yoloc and the PyTorch peer at
#                                     batch 1..128; RECORDS=FILE applies tuning records,
#                                     NO_PEER=1 skips the peer, VERSUS_MODELS=yolov8n.onnx
#                                     runs only that model, VERSUS_BATCHES=1,128 only those
#                                     batches, VERSUS_IO=fp32,fp16 also with fp16 I/O)
#
# COMPILE_OPTIONS (e.g. "--b2b on") adds options to the compiles of models, detect and eval.
#
# $OUT (default ./gpu_out) receives checks.log and results.tgz (the GPU test logs, bench/*.json,
# tuning records): the device tool returns at most 8 files.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
final=${OUT:-$root/gpu_out}
mkdir -p "$final"
out=$(mktemp -d)
mkdir -p "$out/bench"
log=$final/checks.log
# The device machine keeps ignored build outputs between calls: extract the carried bundle again
# unless the folder came from this very tarball (a stale one would run the previous yoloc).
if [[ -f build/gpu_bundle.tar.xz ]]; then
  sum=$(cksum < build/gpu_bundle.tar.xz)
  if [[ "$(cat build/gpu_bundle/.tarball 2>/dev/null)" != "$sum" ]]; then
    rm -rf build/gpu_bundle build/cuda_gpu
    tar -C build -xJf build/gpu_bundle.tar.xz && echo "$sum" > build/gpu_bundle/.tarball
  fi
fi
B=$root/build/gpu_bundle
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu; do
  [[ -e $d/libcuda.so.1 ]] && { export YOLOC_LIBCUDA=$d/libcuda.so.1; break; }
done
Y=$B/bin/yoloc
S=$B/shared
work=$(mktemp -d)
status=0
step() { echo "==== $* ($(date +%T))" | tee -a "$log"; }
check() {  # runs a command, logs it, remembers a failure
  "$@" >>"$log" 2>&1
  local rc=$?
  [[ $rc -eq 0 ]] || { echo "FAILED ($rc): $*" | tee -a "$log"; status=1; }
}

for s in "$@"; do
  case $s in
    tests)
      step "GPU unit tests"
      OUT=$out/tests bash scripts/gpu_smoke.sh build/cuda_gpu >>"$log" 2>&1 || { echo "FAILED: GPU tests" | tee -a "$log"; status=1; }
      ;;
    models)
      for m in ${MODELS:-yolov8n yolox-nano-facemask yolov5n-fp16-dynbatch yolo11n-dynint8-320 yolov10n-dynint8-e2e yolov8n-dynint8 yolov8n-dynint8-dynshape}; do
        for p in ${PRECISIONS:-fp32 fp16}; do
          step "compiled $m $p vs ONNX Runtime"
          check python3 tests/e2e/check_compiled.py --yoloc "$Y" --model "$S/models/$m.onnx" \
            --work "$work/$m-$p" --target cuda --precision "$p"
        done
      done
      ;;
    detect)
      for m in ${DETECT_MODELS:-yolov8n yolox-nano-facemask yolov10n-dynint8-e2e}; do
        for p in fp32 fp16; do
          step "detections $m $p"
          check python3 tests/e2e/check_detections.py --yoloc "$Y" --decoder "$B/bin/yoloc_test_decode_image" \
            --model "$S/models/$m.onnx" --images "$S"/data/images/{bus,zidane}.jpg \
            --work "$work/det-$m-$p" --compile --target cuda --precision "$p"
        done
      done
      ;;
    bench)
      for spec in yolov8n:1 yolox-nano-facemask:1; do
        m=${spec%%:*}; b=${spec##*:}
        fam=(); [[ $m == yolox* ]] && fam=(--family yolox)
        step "bench $m fp16 batch $b"
        check "$Y" compile "$S/models/$m.onnx" --target cuda --precision fp16 --batch "$b" "${fam[@]}" \
          -o "$work/$m-b$b.ycm" --force
        check "$Y" bench "$work/$m-b$b.ycm" --iters 200 --warmup 20 --image "$S/data/images/bus.jpg" \
          --streams 2 --json "$out/bench/yoloc-$m-b$b.json"
        tail -6 "$log"
      done
      ;;
    pdl)  # programmatic dependent launch on and off (YOLOC_CUDA_PDL=0), yolov8n fp16
      for b in ${BATCHES:-1 32 128}; do
        check "$Y" compile "$S/models/yolov8n.onnx" --target cuda --precision fp16 --batch "$b" \
          -o "$work/pdl-b$b.ycm" --force
        for pdl in 0 1; do
          step "bench yolov8n fp16 batch $b, YOLOC_CUDA_PDL=$pdl"
          YOLOC_CUDA_PDL=$pdl check "$Y" bench "$work/pdl-b$b.ycm" --iters 300 --warmup 30 \
            --image "$S/data/images/bus.jpg" --json "$out/bench/pdl$pdl-b$b.json"
          tail -5 "$log"
        done
      done
      ;;
    streams)  # the network's kernels over 1..4 streams (YOLOC_CUDA_STREAMS), yolov8n fp16
      for b in ${BATCHES:-1 128}; do
        model=$S/models/yolov8n.onnx
        [[ $b == 1 ]] || model=$(python3 -c "import sys; sys.path.insert(0, 'bench'); from onnx_twin import dynamic_batch_twin as t; print(t('$model', '$work'))")
        check "$Y" compile "$model" --target cuda --precision fp16 --batch "$b" -o "$work/st-b$b.ycm" --force
        for n in ${STREAMS:-1 2 3 4}; do
          step "bench yolov8n fp16 batch $b, YOLOC_CUDA_STREAMS=$n"
          YOLOC_CUDA_STREAMS=$n check "$Y" bench "$work/st-b$b.ycm" --iters $((b > 8 ? 60 : 400)) \
            --warmup 30 --image "$S/data/images/bus.jpg" --json "$out/bench/streams$n-b$b.json"
          tail -7 "$log" | grep -E "network alone|pinned"
        done
      done
      ;;
    branches)  # the memory plan's reuse (compile --memory-reuse), network alone, fp16; ROUNDS
      # alternations of the two, to see the spread between runs
      for m in ${BRANCH_MODELS:-yolov8n yolox-nano-facemask}; do
        for b in ${BATCHES:-1}; do
          fam=(); [[ $m == yolox* ]] && fam=(--family yolox)
          model=$S/models/$m.onnx
          [[ $b == 1 ]] || model=$(python3 -c "import sys; sys.path.insert(0, 'bench'); from onnx_twin import dynamic_batch_twin as t; print(t('$model', '$work'))")
          for reuse in sequential ordered; do
            check "$Y" compile "$model" --target cuda --precision fp16 --batch "$b" "${fam[@]}" \
              --memory-reuse "$reuse" -o "$work/br-$m-b$b-$reuse.ycm" --force
          done
          for r in $(seq 1 "${ROUNDS:-2}"); do
            for reuse in sequential ordered; do
              step "bench $m fp16 batch $b, memory reuse $reuse, round $r"
              check "$Y" bench "$work/br-$m-b$b-$reuse.ycm" --network-only \
                --iters $((b > 8 ? 60 : 400)) --warmup 30 \
                --json "$out/bench/branches-$m-b$b-$reuse-r$r.json"
              tail -4 "$log" | grep -E "network alone \(one"
            done
          done
        done
      done
      ;;
    profile)
      for m in ${PROFILE_MODELS:-yolov8n yolox-nano-facemask}; do
        for b in ${BATCHES:-1}; do
          fam=(); [[ $m == yolox* ]] && fam=(--family yolox)
          model=$S/models/$m.onnx
          [[ $b == 1 ]] || model=$(python3 -c "import sys; sys.path.insert(0, 'bench'); from onnx_twin import dynamic_batch_twin as t; print(t('$model', '$work'))")
          step "profile $m fp16 batch $b"
          check "$Y" compile "$model" --target cuda --precision fp16 --batch "$b" "${fam[@]}" \
            -o "$work/$m-b$b-prof.ycm" --force
          ig=(); [[ $b == 1 ]] && ig=(--in-graph)
          check "$Y" profile "$work/$m-b$b-prof.ycm" --iters 20 --top 40 "${ig[@]}" \
            --json "$out/bench/profile-$m-b$b.json"
          [[ $b == 1 ]] && check python3 tests/e2e/check_in_graph_profile.py "$out/bench/profile-$m-b$b.json"
        done
      done
      ;;
    eval)
      for v in fp32 fp16 fp16-io16; do  # fp16-io16: --io-precision fp16
        p=${v%%-*} io=fp32
        [[ $v == *-io16 ]] && io=fp16
        step "eval yolov8n $v on coco-eval"
        check "$Y" compile "$S/models/yolov8n.onnx" --target cuda --precision "$p" --io-precision "$io" ${COMPILE_OPTIONS:-} -o "$work/eval-$v.ycm" --force
        check "$Y" eval "$work/eval-$v.ycm" --data "$S/data/coco-eval" --json "$out/bench/eval-yolov8n-$v.json"
        tail -3 "$log"
      done
      ;;
    tunecmp)  # yolov8n fp16 at batch 1 and 32: untuned defaults vs the records of tuning runs
      # carried as $TUNE_IN/b<batch>-<name>.jsonl (TUNE_IN default build/tune_in), one bench each
      for b in ${BATCHES:-1 32}; do
        model=$S/models/yolov8n.onnx
        [[ $b == 1 ]] || model=$(python3 -c "import sys; sys.path.insert(0, 'bench'); from onnx_twin import dynamic_batch_twin as t; print(t('$model', '$work'))")
        for r in none $(cd "${TUNE_IN:-build/tune_in}" && ls b$b-*.jsonl | sed "s/^b$b-//; s/.jsonl$//"); do
          rec=(--no-records); [[ $r == none ]] || rec=(--records "${TUNE_IN:-build/tune_in}/b$b-$r.jsonl")
          step "bench yolov8n fp16 batch $b, records $r"
          check "$Y" compile "$model" --target cuda --precision fp16 --batch "$b" "${rec[@]}" -o "$work/t-$b-$r.ycm" --force
          nets=(); [[ $b -gt 32 ]] && nets=(--network-only)  # end to end at batch 128: minutes
          check "$Y" bench "$work/t-$b-$r.ycm" --iters 300 --warmup 30 --image "$S/data/images/bus.jpg" "${nets[@]}" --json "$out/bench/tuned-b$b-$r.json"
          tail -7 "$log" | grep -E "records|network alone"
        done
      done
      ;;
    tune-run)  # one tuning run, fp16: TUNE_MODEL (yolov8n), TUNE_BATCH (1), TUNE_BUDGET (3m),
      # TUNE_NAME (the records file under bench/), TUNE_FROM (records to resume from), DEVICE (0),
      # TUNE_JOBS (NVRTC builds at once; default: every core, give each of two concurrent runs half)
      b=${TUNE_BATCH:-1}; tm=${TUNE_MODEL:-yolov8n}; name=${TUNE_NAME:-tune-$tm-b$b}
      model=$S/models/$tm.onnx
      fam=(); [[ $tm == yolox* ]] && fam=(--family yolox)
      [[ $b == 1 ]] || model=$(python3 -c "import sys; sys.path.insert(0, 'bench'); from onnx_twin import dynamic_batch_twin as t; print(t('$model', '$work'))")
      recs=$out/bench/$name.jsonl
      [[ -n ${TUNE_FROM:-} ]] && cp "$TUNE_FROM" "$recs"
      step "tune $tm fp16 batch $b, ${TUNE_BUDGET:-3m} on device ${DEVICE:-0} -> $name"
      check "$Y" tune "$model" --target cuda --precision fp16 --batch "$b" --devices "${DEVICE:-0}" \
        "${fam[@]}" --records "$recs" --time-budget "${TUNE_BUDGET:-3m}" ${TUNE_JOBS:+--build-jobs "$TUNE_JOBS"}
      grep -E "trials|latency|tuned" "$log" | tail -4
      ;;
    tunedev)  # the same tuning run (yolov8n fp16 batch 1, TUNE_TRIALS trials, fresh records) on
      # one GPU and on DEVICES (default 0,1): wall time and worker starts of each
      for devs in 0 ${DEVICES:-0,1}; do
        step "tune yolov8n fp16 batch 1, ${TUNE_TRIALS:-192} trials on devices $devs"
        start=$(date +%s.%N)
        check "$Y" tune "$S/models/yolov8n.onnx" --target cuda --precision fp16 --batch 1 \
          --devices "$devs" --records "$work/tunedev-${devs/,/-}.jsonl" --trials "${TUNE_TRIALS:-192}"
        echo "devices $devs: $(python3 -c "import time; print(round(time.time() - $start, 1))") s wall" | tee -a "$log"
        grep -E "worker start|trials" "$log" | tail -2
      done
      ;;
    versus)  # yoloc and the PyTorch peer in one run: bench/gpu_vs_torch.py
      step "yoloc vs PyTorch (eager, torch.compile)"
      check python3 bench/gpu_vs_torch.py --yoloc "$Y" --models "$S/models" --peers "$S/peers" \
        --image "$S/data/images/bus.jpg" --json "$out/bench/h200.json" ${RECORDS:+--records "$RECORDS"} \
        ${NO_PEER:+--no-peer} ${VERSUS_MODELS:+--only "$VERSUS_MODELS"} \
        ${VERSUS_BATCHES:+--batches "$VERSUS_BATCHES"} ${VERSUS_IO:+--io "$VERSUS_IO"}
      ;;
    *) echo "unknown step $s"; exit 2 ;;
  esac
  tar -C "$out" -czf "$final/results.tgz" .  # after every step: a call cut short keeps its results
done
step "done, status $status"
tar -C "$out" -czf "$final/results.tgz" .
exit $status

#!/usr/bin/env bash
# One GPU session's work in one command (device time is scarce): set up, then the phases named
# as arguments, each bounded by `timeout`, logs under $OUT (or ./gpu-out), a summary last.
#   bash bench/gpu_session.sh env tests profile bench jax train
# MNIST is read from $COREJAX_DATA_DIR (default .devwork/mnist, a folder carried to the GPU
# machine). Phases: env (driver, toolkit, packages), install (pip install -e . as README says,
# offline), tests (the CUDA tests without the simulator), profile (bench_cuda.py --profile),
# bench (bench_cuda.py, compile times included), jax (JAX's MLP and CNN epochs on the GPU),
# train (train.py's MLP and CNN on the GPU), cnnprobe (100 CNN steps on the GPU).
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export COREJAX_DATA_DIR="${COREJAX_DATA_DIR:-$PWD/.devwork/mnist}"
export COREJAX_CACHE_DIR="${COREJAX_CACHE_DIR:-$(mktemp -d)}"
PY="${PY:-python3}"
if compgen -G ".whl/*.whl" >/dev/null; then   # wheels carried for an offline GPU machine
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
summary="$OUT/summary.txt"
: >"$summary"
phase() {  # phase NAME SECONDS CMD...: run with a time limit, log, and note the outcome
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$summary"
}
for p in "$@"; do
  case $p in
    env)
      phase env 60 bash -c "nvidia-smi; $PY -V; $PY -m pip list 2>/dev/null | grep -i -E \
'^(numba|numba-cuda|numpy|llvmlite|cupy|jax|jaxlib|flax|optax|cuda-|nvidia-cu)'; \
$PY -c 'from numba import cuda; cuda.detect()'"
      tail -n 25 "$OUT/env.log" >>"$summary" ;;
    install)
      phase install 120 $PY -m pip install --no-deps --no-build-isolation -q -e .
      tail -n 5 "$OUT/install.log" >>"$summary" ;;
    tests)
      phase tests 300 $PY -m pytest -q -p no:cacheprovider -n 12 tests/test_cuda_compiler.py \
        tests/test_cuda_device.py tests/test_cuda_loops.py tests/test_cuda_random.py \
        tests/test_ptx.py
      grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.log" | tail -n 40 >>"$summary" ;;
    profile)
      phase profile 180 $PY bench/bench_cuda.py --profile
      tail -n 45 "$OUT/profile.log" >>"$summary" ;;
    bench)
      phase bench 300 $PY bench/bench_cuda.py --repeats 3 --compile-times
      tail -n 15 "$OUT/bench.log" >>"$summary" ;;
    jax)
      phase jax_mlp 150 $PY bench/bench_cuda_jax.py --config configs/mlp.yaml --epochs 3
      phase jax_cnn 200 $PY bench/bench_cuda_jax.py --config configs/cnn.yaml
      tail -n 8 "$OUT/jax_mlp.log" "$OUT/jax_cnn.log" >>"$summary" ;;
    train)
      phase train_mlp 200 $PY train.py --config configs/mlp.yaml --set backend=cuda \
        --set output.dir="$OUT/run_mlp"
      phase train_cnn 340 $PY train.py --config configs/cnn.yaml --set backend=cuda \
        --set output.dir="$OUT/run_cnn"
      grep -h -E "Epoch|accuracy|Error" "$OUT/train_mlp.log" "$OUT/train_cnn.log" \
        | tail -n 30 >>"$summary" ;;
    cnnprobe)
      phase cnnprobe 200 $PY train.py --config configs/cnn.yaml --set backend=cuda \
        --set train.epochs=1 --set data.limit=12800 --set output.dir="$OUT/run_cnnprobe"
      grep -h -E "Epoch|accuracy|Error" "$OUT/cnnprobe.log" | tail -n 10 >>"$summary" ;;
    *) echo "unknown phase $p" | tee -a "$summary" ;;
  esac
done
cat "$summary"

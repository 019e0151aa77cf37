#!/usr/bin/env bash
# One GPU session's work in one command (device time is scarce): set up, then the phases named
# as arguments, each bounded by `timeout`; logs packed in $OUT/logs.tgz (or ./gpu-out), the
# summary in $OUT/summary.txt and printed last.
#   bash bench/gpu_session.sh env tests profile bench jax train
# MNIST is read from $COREJAX_DATA_DIR (default .devwork/mnist, a folder carried to the GPU
# machine). Phases: env (driver, toolkit, packages), install (pip install -e . as README says,
# offline), tests (the CUDA tests without the simulator; $TESTS names other files), profile / cnnprofile (bench_cuda.py
# --profile: the MLP / CNN step's program steps timed one by one), bench (bench_cuda.py,
# compile times included), jax = jaxmlp jaxcnn (JAX's MLP and CNN epochs on the GPU),
# train = trainmlp traincnn (train.py's MLP and CNN on the GPU), cnnprobe (100 CNN steps).
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
# Logs go to one folder, packed into $OUT/logs.tgz after every phase (the device tool brings
# back at most 8 files; a run stopped at its limit still brings back the phases it finished).
LOGS="$(mktemp -d)"
RUNS="$(mktemp -d)"                    # train.py's output folders (checkpoints) stay there
phase() {  # phase NAME SECONDS CMD...: run with a time limit, log, and note the outcome
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$summary"
  tar czf "$OUT/logs.tgz" -C "$LOGS" .
}
# "jax" and "train" name both models' phases
set -- $(for p in "$@"; do case $p in jax) echo jaxmlp jaxcnn ;; train) echo trainmlp traincnn ;;
  *) echo "$p" ;; esac; done)
for p in "$@"; do
  case $p in
    env)
      phase env 60 bash -c "nvidia-smi; $PY -V; $PY -m pip list 2>/dev/null | grep -i -E \
'^(numba|numba-cuda|numpy|llvmlite|cupy|jax|jaxlib|flax|optax|cuda-|nvidia-cu)'; \
$PY -c 'from numba import cuda; cuda.detect()'"
      tail -n 25 "$LOGS/env.log" >>"$summary" ;;
    install)
      phase install 120 $PY -m pip install --no-deps --no-build-isolation -q -e .
      tail -n 5 "$LOGS/install.log" >>"$summary" ;;
    tests)
      # shellcheck disable=SC2086  # TESTS: test files, split on spaces
      phase tests 300 $PY -m pytest -q -p no:cacheprovider -n 14 \
        ${TESTS:-tests/test_cuda*.py tests/test_ptx.py}
      grep -E "^(FAILED|ERROR)|passed|failed" "$LOGS/tests.log" | tail -n 40 >>"$summary" ;;
    profile)
      phase profile 180 $PY bench/bench_cuda.py --profile
      tail -n 45 "$LOGS/profile.log" >>"$summary" ;;
    cnnprofile)
      phase cnnprofile 150 $PY bench/bench_cuda.py --profile cnn
      head -n 24 "$LOGS/cnnprofile.log" >>"$summary" ;;
    bench)
      phase bench 300 $PY bench/bench_cuda.py --repeats 3 --compile-times
      tail -n 15 "$LOGS/bench.log" >>"$summary" ;;
    jaxmlp)
      phase jax_mlp 150 $PY bench/bench_cuda_jax.py --config configs/mlp.yaml --epochs 3
      tail -n 8 "$LOGS/jax_mlp.log" >>"$summary" ;;
    jaxcnn)
      phase jax_cnn 200 $PY bench/bench_cuda_jax.py --config configs/cnn.yaml
      tail -n 8 "$LOGS/jax_cnn.log" >>"$summary" ;;
    trainmlp)
      phase train_mlp 200 $PY train.py --config configs/mlp.yaml --set backend=cuda \
        --set output.dir="$RUNS/run_mlp"
      grep -h -E "Epoch|accuracy|Error" "$LOGS/train_mlp.log" | tail -n 30 >>"$summary" ;;
    traincnn)
      phase train_cnn 340 $PY train.py --config configs/cnn.yaml --set backend=cuda \
        --set output.dir="$RUNS/run_cnn"
      grep -h -E "Epoch|accuracy|Error" "$LOGS/train_cnn.log" | tail -n 30 >>"$summary" ;;
    cnnprobe)
      phase cnnprobe 200 $PY train.py --config configs/cnn.yaml --set backend=cuda \
        --set train.epochs=1 --set data.limit=12800 --set output.dir="$RUNS/run_cnnprobe"
      grep -h -E "Epoch|accuracy|Error" "$LOGS/cnnprobe.log" | tail -n 10 >>"$summary" ;;
    *) echo "unknown phase $p" | tee -a "$summary" ;;
  esac
done
cat "$summary"

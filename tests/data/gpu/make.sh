#!/bin/bash
# Makes this folder's GPU files: bash tests/data/gpu/make.sh OUTDIR
# Needs one NVIDIA GPU, Nsight Compute (`ncu`) on PATH, torch built with CUDA, and rooflake[torch] installed.
# Clocks are left as found (--clock-control none): the machines this ran on are shared.
# Each step goes on when the one before fails, so one run on a lent GPU shows every result.
set -u
out=$(realpath "${1:-.}")
export RL_STORE=${RL_STORE:-/tmp/rl-gpu-store}
cd "$(dirname "$0")" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
ncu --version | tail -1
python3 -c 'import torch, pyarrow; print("torch", torch.__version__, "pyarrow", pyarrow.__version__)'
rl ceilings measure --device cuda -o "$out/ceilings_cuda.json"
# A whole training step of either model is 49-64 kernels and 61-121 MB of report (ncu keeps each kernel's
# module): these profile the forward's first kernels of interest only.
rl profile --ncu --clock-control none --kernel 'nvjet|cudnn_generated|vectorized_layer_norm' --launch-count 4 \
    -o "$out/block_fwd" -l model=block -- python3 block.py
rl profile --ncu --clock-control none --kernel 'fprop_implicit|bn_fw|max_pool_forward|gemm_f32f32' \
    --launch-count 9 -o "$out/cnn_fwd" -l model=cnn -- python3 cnn.py
# every GEMM and fused-attention kernel of the block's whole training step: the backward's, launched from the
# autograd engine's thread, fall in annotate's backward ranges
rl profile --ncu --clock-control none --kernel 'nvjet|cudnn_generated' -o "$out/block_train" -l model=block \
    -- python3 block.py
for r in block_fwd cnn_fwd block_train; do  # NVIDIA's own export of every value: the oracle the tests compare with
    ncu --import "$out/$r.ncu-rep" --csv --page raw --print-units base > "$out/$r.raw.csv"
done
rl runs
# the measured roofs beside the report's and the datasheet's, for the block's GPU (joined by the run's gpu label)
rl ceilings "$(rl sql -f csv "SELECT run_id FROM runs WHERE source_path LIKE '%block_fwd.ncu-rep'" | tail -1 | tr -d '"')" -f csv

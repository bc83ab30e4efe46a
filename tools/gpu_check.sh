#!/usr/bin/env bash
# The device check for a lent GPU machine: every part under its own timeout, results under $OUT
# (gpu_check.log, bench.jsonl, one log per part). Prepared and rehearsed on the CPU first
# (GPU_CHECK_DEVICE=cpu bash tools/gpu_check.sh runs the same parts small on Warp's CPU device).
#
# Here, before the device calls (docs/gpu.md):
#   bash ../shared/gpu/pack.sh && python tools/gpu_prebuild.py --fresh   # .gpu1/ .gpu2/ and .gpu_kcache/ (cubins)
#   GBX_EMU_MAX_REGISTERS=128 python tools/gpu_prebuild.py --no-cpu   # the capped kernel's cubin (part emu_maxreg128)
#   GBX_EMU_CUDA_DOTS=0 python tools/gpu_prebuild.py --no-cpu         # the kernel without the per-dot path (emu_nodots)
#   GBX_EMU_LAYOUT=soa python tools/gpu_prebuild.py --no-cpu          # the soa layout's kernels (parity_soa, emu_soa)
#   GBX_EMU_STAGED=0 python tools/gpu_prebuild.py --no-cpu            # the CPU shape for CUDA (emu_cpushape, parity_cpushape)
# Device call 1, carry [".gpu1"]:
#   mkdir -p /root/gpu && cp .gpu1/* /root/gpu/
# Device call 2 at once (within 30 s), carry [".gpu2", ".gpu_kcache"], timeout_s 600:
#   bash tools/gpu_check.sh
# Parts the budget skipped (listed in gpu_check.log), in a further call while the machine is warm:
#   GPU_CHECK_PARTS="emu_soa parity_cpushape" bash tools/gpu_check.sh
# The kernel cache travels compiled (cubin for sm_90: the device's driver may refuse PTX from a newer NVRTC),
# so no device minute goes to compiling the CUDA kernels; the CPU kernels compile there (~15 s).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_check_out}
mkdir -p "$OUT"
DEV=${GPU_CHECK_DEVICE:-cuda}
LOG="$OUT/gpu_check.log"
JSON="$OUT/bench.jsonl"
say() { echo "[$(date +%T)] $*" | tee -a "$LOG"; }

if [ "$DEV" = cuda ] && ! python3 -c "import warp, jsonargparse" 2>/dev/null; then
    say "unpacking warp-lang and jsonargparse"
    cat /root/gpu/part.00 .gpu2/part.01 | xz -d | tar -x -C /tmp \
        && python3 -m pip install -q --no-index --no-deps --target /tmp/site /root/gpu/*.whl >> "$LOG" 2>&1
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
[ "$DEV" = cuda ] && [ -d .gpu_kcache ] && export WARP_CACHE_PATH=$PWD/.gpu_kcache
export PYTHONDONTWRITEBYTECODE=1

# GPU_CHECK_BUDGET: seconds this call may take in all (default 570 on a device, whose calls stop at
# 600 s); a part whose timeout would run past it is skipped and listed, to run in a later call with
# GPU_CHECK_PARTS="name ..." (only the parts named run; the order below stays).
if [ "$DEV" = cuda ]; then BUDGET=${GPU_CHECK_BUDGET:-570}; else BUDGET=${GPU_CHECK_BUDGET:-3600}; fi
ONLY=${GPU_CHECK_PARTS:-}
part() {   # part NAME SECONDS COMMAND...: one part, its own log, its exit status in the main log
    local name=$1 secs=$2; shift 2
    if [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]]; then return 0; fi
    if [ $((SECONDS + secs)) -gt "$BUDGET" ]; then
        say "== $name skipped: its ${secs}s would pass the ${BUDGET}s budget (${SECONDS}s used)"
        echo "{\"part\": \"status\", \"name\": \"$name\", \"skipped\": true}" >> "$JSON"
        return 0
    fi
    local t0=$SECONDS
    say "== $name (timeout ${secs}s): $*"
    timeout -k 5 "$secs" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    tail -n 25 "$OUT/$name.log" >> "$LOG"
    say "== $name rc=$rc in $((SECONDS - t0))s"
    echo "{\"part\": \"status\", \"name\": \"$name\", \"rc\": $rc, \"seconds\": $((SECONDS - t0))}" >> "$JSON"
}

if [ "$DEV" = cuda ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >> "$LOG" 2>&1
    lscpu | grep -E "Model name|^CPU\(s\)" >> "$LOG" 2>&1
    part env 60 python3 -c "import warp as wp, torch; wp.init(); print(wp.__version__, torch.__version__, torch.cuda.get_device_name(), wp.get_device('cuda').arch)"
    part tests 150 python3 -m pytest -q -m cuda -p no:cacheprovider tests/test_gameboy_env.py tests/test_foraging.py tests/test_bridge.py
    part parity 60 python3 tools/bench_gpu.py parity --frames 120 --out "$JSON"
    part emu 100 python3 tools/bench_gpu.py emu --seconds 2 --out "$JSON"
    # the CPU shape on CUDA (GBX_EMU_STAGED=0, the kernel the first lent GPU ran): what the footprint work bought
    part emu_cpushape 45 env GBX_EMU_STAGED=0 python3 tools/bench_gpu.py emu --seconds 2 --envs 16384 65536 --out "$JSON"
    part fit_gpu 90 python3 tools/bench_gpu.py fit --runs gpu:4096 gpu:16384 --out "$JSON"
    part fit_hybrid 120 python3 tools/bench_gpu.py fit --runs cpu:4096:1 cpu:4096:16 cpu:16384:16 --out "$JSON"
    part cpu_cores 45 python3 tools/bench_env.py --envs 1024 --shards 1 16 --steps 10 --repeats 1
    # the shipped GPU config as a user runs it: its speed and learning curve on this machine (train.jsonl)
    part config 120 python3 -m gbx_lightning fit --config configs/ppo_gpu.yaml --runs_dir "$OUT/runs" \
        --trainer.max_time 00:00:01:30
    # the knobs only a device can judge, each against part emu (docs/gpu.md), their cubins prebuilt too:
    # the register cap, the per-dot PPU path compiled out, the register file env-fastest (soa)
    part emu_maxreg128 45 env GBX_EMU_MAX_REGISTERS=128 python3 tools/bench_gpu.py emu --seconds 2 --envs 16384 65536 --out "$JSON"
    part emu_nodots 45 env GBX_EMU_CUDA_DOTS=0 python3 tools/bench_gpu.py emu --seconds 2 --envs 16384 65536 --out "$JSON"
    part parity_soa 90 env GBX_EMU_LAYOUT=soa python3 tools/bench_gpu.py parity --frames 48 --roms workload orchard ppu_m3_lcdc_win --out "$JSON"
    part emu_soa 45 env GBX_EMU_LAYOUT=soa python3 tools/bench_gpu.py emu --seconds 2 --envs 16384 65536 --out "$JSON"
    part parity_cpushape 60 env GBX_EMU_STAGED=0 python3 tools/bench_gpu.py parity --frames 48 --roms workload orchard ppu_m3_lcdc_win --out "$JSON"
else   # rehearsal: the same parts, small, on the CPU device
    part tests 600 python3 -m pytest -q -p no:cacheprovider tests/test_bridge.py tests/test_cuda_codegen.py tests/test_gpu_shape.py
    part parity 120 python3 tools/bench_gpu.py parity --device cpu --frames 48 --parity_envs 4 --roms workload orchard --out "$JSON"
    part emu 120 python3 tools/bench_gpu.py emu --device cpu --envs 16 64 --seconds 0.5 --out "$JSON"
    part fit_gpu 120 python3 tools/bench_gpu.py fit --accelerator cpu --runs cpu:16 --rollout_steps 4 --out "$JSON"
    part fit_hybrid 120 python3 tools/bench_gpu.py fit --accelerator cpu --runs cpu:16:1 cpu:16:2 --rollout_steps 4 --out "$JSON"
    part cpu_cores 120 python3 tools/bench_env.py --envs 32 --shards 1 2 --steps 10 --repeats 1
    part emu_cpushape 300 env GBX_EMU_STAGED=0 python3 tools/bench_gpu.py emu --device cpu --envs 16 --seconds 0.5 --out "$JSON"
    part emu_maxreg128 300 env GBX_EMU_MAX_REGISTERS=128 python3 tools/bench_gpu.py emu --device cpu --envs 16 --seconds 0.5 --out "$JSON"
    part emu_nodots 300 env GBX_EMU_CUDA_DOTS=0 python3 tools/bench_gpu.py emu --device cpu --envs 16 --seconds 0.5 --out "$JSON"
    part parity_soa 300 env GBX_EMU_LAYOUT=soa python3 tools/bench_gpu.py parity --device cpu --frames 48 --parity_envs 4 --roms workload ppu_m3_lcdc_win --out "$JSON"
    part emu_soa 300 env GBX_EMU_LAYOUT=soa python3 tools/bench_gpu.py emu --device cpu --envs 16 --seconds 0.5 --out "$JSON"
    part parity_cpushape 300 env GBX_EMU_STAGED=0 python3 tools/bench_gpu.py parity --device cpu --frames 48 --parity_envs 4 --roms workload ppu_m3_lcdc_win --out "$JSON"
    part config 300 python3 -m gbx_lightning fit --config configs/ppo_gpu.yaml --runs_dir "$OUT/runs" \
        --model.init_args.num_envs 64 --trainer.max_steps 32 --trainer.max_time 00:00:02:00
fi
say "done"

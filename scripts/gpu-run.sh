#!/usr/bin/env bash
# gpu-run.sh: on a machine with an NVIDIA GPU, start llama-server on the GPU
# beside dcgm-exporter (or nvidia-smi), and run inferscope's one-shot report,
# a short --watch and a short bench against it, writing every output to a
# folder (issue 32). CI has no GPU and does not run it.
#
#   scripts/gpu-run.sh MODEL.gguf [OUT_DIR]
#
# Environment: LLAMA_SERVER (default: llama-server on PATH), DCGM_EXPORTER
# (default: dcgm-exporter on PATH; when absent, nvidia-smi is read),
# INFERSCOPE (default: go run ./cmd/inferscope), PORT (default 8080),
# WATCH (default 20s), BENCH (default 30s).
set -euo pipefail

model=${1:?usage: scripts/gpu-run.sh MODEL.gguf [OUT_DIR]}
out=${2:-gpu-run-$(date -u +%Y%m%dT%H%M%SZ)}
port=${PORT:-8080}
watch_for=${WATCH:-20s}
bench_for=${BENCH:-30s}
llama=${LLAMA_SERVER:-llama-server}
dcgm=${DCGM_EXPORTER:-dcgm-exporter}
mkdir -p "$out"

if [[ -n ${INFERSCOPE:-} ]]; then
	read -r -a inferscope <<<"$INFERSCOPE"
else
	inferscope=(go run ./cmd/inferscope)
fi

pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed: see $out/nvidia-smi.txt" >&2

"$llama" -m "$model" --metrics --host 127.0.0.1 --port "$port" -ngl 999 >"$out/llama-server.log" 2>&1 &
pids+=("$!")

gpu=(--gpu nvidia-smi)
if command -v "$dcgm" >/dev/null 2>&1; then
	"$dcgm" -a 127.0.0.1:9400 >"$out/dcgm-exporter.log" 2>&1 &
	pids+=("$!")
	gpu=(--gpu 127.0.0.1:9400)
fi

for _ in $(seq 1 120); do
	if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
		break
	fi
	sleep 1
done
if [[ ${gpu[1]} != nvidia-smi ]]; then
	curl -fsS http://127.0.0.1:9400/metrics >"$out/dcgm-exporter.prom" 2>&1 || true
fi

target=127.0.0.1:$port
"${inferscope[@]}" "${gpu[@]}" --save "$out/before.prom" "$target" >"$out/once.txt" 2>&1 || true
"${inferscope[@]}" "${gpu[@]}" --json "$target" >"$out/once.json" 2>"$out/once.json.err" || true
"${inferscope[@]}" bench --duration "$bench_for" --json "$target" >"$out/bench.json" 2>"$out/bench.err" &
bench=$!
timeout -s INT "$watch_for" "${inferscope[@]}" "${gpu[@]}" --watch 2s --width 140 "$target" >"$out/watch.txt" 2>&1 || true
wait "$bench" || true
"${inferscope[@]}" "${gpu[@]}" --since "$out/before.prom" "$target" >"$out/since.txt" 2>&1 || true
echo "outputs in $out" >&2

// Package gpu reads what the hardware did while an engine worked (issue
// 32): the GPUs beside an inference server, from NVIDIA's dcgm-exporter
// (its /metrics, or a scrape of it saved with --save), AMD's
// device-metrics-exporter where its names map one to one onto DCGM's, or
// local nvidia-smi run as a process (`--query-gpu=… --format=csv`), into
// one canonical reading, a [snapshot.GPUs]: the engine's pipeline has its
// dialects, and this is the GPU's. Every figure is under a GPU name
// declared in internal/snapshot (gpu.go), absent where the source does not
// publish it, never 0; what a source publishes that cannot be (DCGM's
// blank values, a share above 1) is named and left out.
//
// # Sources
//
//   - dcgm-exporter: DCGM_FI_* families keyed by the gpu and UUID labels
//     (a MIG instance by GPU_I_ID too), with the Kubernetes pod it maps the
//     device to (namespace, pod, container), which the fleet joins on.
//     Profiling fields (DCGM_FI_PROF_*: SM, DRAM and tensor activity,
//     PCIe and NVLink rates) need DCGM's profiling module; many fields
//     are not in the default counters file, and the reading says which
//     line of it would publish each figure it lacks.
//   - AMD's device-metrics-exporter: gpu_gfx_activity (utilization),
//     gpu_umc_activity (memory busy), gpu_power_usage, gpu_energy_consumed
//     (µJ), gpu_used_vram, gpu_free_vram and gpu_total_vram (MB, taken as
//     MiB as amd-smi counts them), gpu_junction_temperature (else
//     gpu_edge_temperature), gpu_clock and gpu_max_clock of clock_type
//     "system" (the gfx clock). Nothing else maps one to one: no SM, DRAM
//     or tensor activity, no throttle bitmask, no XID.
//   - nvidia-smi: the fields in [SMIFields], read by name from its CSV
//     (with or without a header, with or without units); "[N/A]" and
//     "[Not Supported]" are absent. A field the installed nvidia-smi does
//     not know is dropped and the query run again.
package gpu

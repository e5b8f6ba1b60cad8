package gpu

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/snapshot"
)

const root = "../../testdata/gpu/"

func readDCGM(t *testing.T, name string) *snapshot.GPUs {
	t.Helper()
	body, err := os.ReadFile(root + "dcgm/" + name)
	if err != nil {
		t.Fatal(err)
	}
	fams, err := exposition.Parse(body, exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	g, err := FromFamilies(fams)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// want is one figure of one device, as the README of testdata/gpu states
// it (checked by hand against the file).
type want struct {
	dev  int
	name string
	v    float64
}

func checkFigures(t *testing.T, g *snapshot.GPUs, wants []want) {
	t.Helper()
	for _, w := range wants {
		got, ok := g.Devices[w.dev].Scalar(w.name)
		if !ok {
			t.Errorf("device %d: %s absent, want %g", w.dev, w.name, w.v)
			continue
		}
		if math.Abs(got-w.v) > 1e-9*math.Max(1, math.Abs(w.v)) {
			t.Errorf("device %d: %s = %g, want %g", w.dev, w.name, got, w.v)
		}
	}
}

func TestDCGMRealExposition(t *testing.T) {
	g := readDCGM(t, "lke-rtx4000-ada.prom")
	if g.Kind != snapshot.GPUFromDCGM || len(g.Devices) != 1 {
		t.Fatalf("kind %q, %d devices", g.Kind, len(g.Devices))
	}
	d := g.Devices[0]
	if d.ID != "0" || d.Model != "NVIDIA RTX 4000 Ada Generation" || d.Pod != "cuda-75454ffb9f-8ljq7" || d.Namespace != "default" || d.Container != "cuda" {
		t.Errorf("device %+v", d)
	}
	checkFigures(t, g, []want{
		{0, snapshot.GPUPowerWatts, 40.979},
		{0, snapshot.GPUEnergyJoules, 455497.156},
		{0, snapshot.GPUSMClockHertz, 2310e6},
		{0, snapshot.GPUTemperatureCelsius, 48},
		{0, snapshot.GPUUtilization, 0},
		{0, snapshot.GPUMemoryUsedBytes, 1 << 20},
		{0, snapshot.GPUMemoryFreeBytes, 20015 << 20},
		{0, snapshot.GPUDRAMActive, 0.003074},
		{0, snapshot.GPUTensorActive, 0},
		{0, snapshot.GPUGraphicsActive, 0.004656},
		{0, snapshot.GPUPCIeTxBytesPerSecond, 78398480},
		{0, snapshot.GPUPCIeRxBytesPerSecond, 45987793},
		{0, snapshot.GPULastXID, 0},
	})
	// The default counters file has none of these: absent, never 0.
	for _, n := range []string{snapshot.GPUSMActive, snapshot.GPUPowerLimitWatts, snapshot.GPUSMClockMaxHertz, snapshot.GPUThrottleReasons} {
		if _, ok := d.Scalar(n); ok {
			t.Errorf("%s present; the exposition has no such series", n)
		}
	}
	for _, want := range []string{"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_MAX_SM_CLOCK", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"} {
		if !strings.Contains(strings.Join(g.Missing, "\n"), want) {
			t.Errorf("Missing does not say to add %s: %q", want, g.Missing)
		}
	}
	if len(g.Invalid) != 0 {
		t.Errorf("invalid: %v", g.Invalid)
	}
}

func TestDCGMMIGInstanceIsItsOwnDevice(t *testing.T) {
	g := readDCGM(t, "a100-mig.prom")
	if len(g.Devices) != 2 {
		t.Fatalf("%d devices, want the GPU and its instance", len(g.Devices))
	}
	if g.Devices[0].ID != "0" || !g.Devices[0].Whole() || g.Devices[1].ID != "0/13" || g.Devices[1].MIG != "1g.5gb" {
		t.Fatalf("devices %q %q %q", g.Devices[0].ID, g.Devices[1].ID, g.Devices[1].MIG)
	}
	checkFigures(t, g, []want{
		{0, snapshot.GPUPowerWatts, 409.692},
		{0, snapshot.GPUMemoryUsedBytes, 4845 << 20},
		{0, snapshot.GPUGraphicsActive, 0.995630},
		{0, snapshot.GPUTensorActive, 0.929260},
		{0, snapshot.GPUDRAMActive, 0.690789},
		{1, snapshot.GPUGraphicsActive, 0.995687},
		{1, snapshot.GPUTensorActive, 0.930433},
		{1, snapshot.GPUDRAMActive, 0.800339},
	})
	if _, ok := g.Devices[1].Scalar(snapshot.GPUPowerWatts); ok {
		t.Error("the MIG instance has a power of its own; only its GPU publishes one")
	}
}

func TestDCGMBlankAndImpossibleValuesAreNamed(t *testing.T) {
	body := `# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a"} 9223372036854775794
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a"} 2147483634
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a"} 140737488355330
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a"} 2147483634
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 250
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-a"} -0.5
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a"} 100
`
	fams, err := exposition.Parse([]byte(body), exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	g, err := FromFamilies(fams)
	if err != nil {
		t.Fatal(err)
	}
	d := g.Devices[0]
	for _, n := range []string{snapshot.GPUTemperatureCelsius, snapshot.GPUSMClockHertz, snapshot.GPUPowerWatts, snapshot.GPUUtilization, snapshot.GPUDRAMActive} {
		if v, ok := d.Scalar(n); ok {
			t.Errorf("%s = %g; a blank or impossible value must be absent", n, v)
		}
	}
	// An energy counter can hold int32's blank as a real count (2.1 MJ).
	if v, _ := d.Scalar(snapshot.GPUEnergyJoules); v != 2147483.634 {
		t.Errorf("energy %g, want 2147483.634 J", v)
	}
	if len(g.Invalid) != 5 {
		t.Errorf("%d invalid, want 5: %v", len(g.Invalid), g.Invalid)
	}
}

func TestNotGPU(t *testing.T) {
	fams, _ := exposition.Parse([]byte("vllm:num_requests_running 3\n"), exposition.Text)
	if _, err := FromFamilies(fams); !errors.Is(err, ErrNotGPU) {
		t.Fatalf("err %v, want ErrNotGPU", err)
	}
}

func TestAMDMapsOneToOne(t *testing.T) {
	// Made from device-metrics-exporter's names and labels
	// (ROCm/device-metrics-exporter, pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go):
	// no real exposition of it is published.
	body := `gpu_gfx_activity{gpu_id="0",gpu_uuid="u0",hostname="h",card_model="MI300X"} 75
gpu_umc_activity{gpu_id="0",gpu_uuid="u0",hostname="h",card_model="MI300X"} 40
gpu_power_usage{gpu_id="0",gpu_uuid="u0",hostname="h",card_model="MI300X"} 600
gpu_energy_consumed{gpu_id="0",gpu_uuid="u0",hostname="h",card_model="MI300X"} 5e12
gpu_used_vram{gpu_id="0",gpu_uuid="u0",hostname="h",card_model="MI300X"} 1024
gpu_clock{gpu_id="0",gpu_uuid="u0",hostname="h",clock_type="memory",clock_index="0"} 1300
gpu_clock{gpu_id="0",gpu_uuid="u0",hostname="h",clock_type="system",clock_index="0"} 2100
gpu_junction_temperature{gpu_id="0",gpu_uuid="u0",hostname="h"} 70
gpu_edge_temperature{gpu_id="0",gpu_uuid="u0",hostname="h"} 50
`
	fams, err := exposition.Parse([]byte(body), exposition.Text)
	if err != nil {
		t.Fatal(err)
	}
	g, err := FromFamilies(fams)
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind != snapshot.GPUFromAMD || len(g.Devices) != 1 {
		t.Fatalf("kind %q, %d devices", g.Kind, len(g.Devices))
	}
	checkFigures(t, g, []want{
		{0, snapshot.GPUUtilization, 0.75},
		{0, snapshot.GPUMemoryBusy, 0.40},
		{0, snapshot.GPUPowerWatts, 600},
		{0, snapshot.GPUEnergyJoules, 5e6},
		{0, snapshot.GPUMemoryUsedBytes, 1 << 30},
		{0, snapshot.GPUSMClockHertz, 2100e6},
		{0, snapshot.GPUTemperatureCelsius, 70},
	})
	if _, ok := g.Devices[0].Scalar(snapshot.GPUDRAMActive); ok {
		t.Error("AMD has no DRAM active")
	}
}

// smiFixture is a nvidia-smi fixture: the fields asked for and what it
// printed.
func smiFixture(t *testing.T, name string) ([]string, []byte) {
	t.Helper()
	raw, err := os.ReadFile(root + "nvidia-smi/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(l, "# fields: "):
			fields = strings.Split(strings.TrimPrefix(l, "# fields: "), ",")
		case strings.HasPrefix(l, "#"):
		default:
			out = append(out, l)
		}
	}
	return fields, []byte(strings.Join(out, "\n"))
}

func TestSMIRealOutputs(t *testing.T) {
	fields, body := smiFixture(t, "rtx2080-noheader.csv")
	g, err := ParseSMI(fields, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Devices) != 1 || g.Devices[0].Model != "GeForce RTX 2080" || g.Devices[0].UUID != "GPU-22b2c6ac-2d49-4863-197c-9c469071178a" {
		t.Fatalf("devices %+v", g.Devices)
	}
	checkFigures(t, g, []want{
		{0, snapshot.GPUPowerWatts, 176.98},
		{0, snapshot.GPUPowerLimitWatts, 200},
		{0, snapshot.GPUTemperatureCelsius, 45},
		{0, snapshot.GPUSMClockHertz, 1965e6},
		{0, snapshot.GPUUtilization, 0.86},
		{0, snapshot.GPUMemoryBusy, 0.55},
		{0, snapshot.GPUMemoryTotalBytes, 7979 << 20},
	})

	fields, body = smiFixture(t, "gtx1080ti-1060-header-units.csv")
	g, err = ParseSMI(fields, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Devices) != 2 {
		t.Fatalf("%d devices", len(g.Devices))
	}
	checkFigures(t, g, []want{
		{0, snapshot.GPUMemoryUsedBytes, 2856 << 20},
		{0, snapshot.GPUMemoryTotalBytes, 11175 << 20},
		{0, snapshot.GPUUtilization, 0.36},
		{0, snapshot.GPUPowerWatts, 106.56},
		{1, snapshot.GPUMemoryUsedBytes, 4 << 20},
		{1, snapshot.GPUUtilization, 0},
		{1, snapshot.GPUPowerWatts, 5.68},
	})
	if g.Devices[1].ID != "1" {
		t.Errorf("second GPU's id %q, want its row, 1", g.Devices[1].ID)
	}
}

func TestSMIThrottleAndNotAvailable(t *testing.T) {
	out := "0, GPU-x, NVIDIA H100 80GB HBM3, 97, 80, 70000, 11000, 81559, 699.10, 700.00, 1755, 1980, 74, 0x0000000000000004\n" +
		"1, GPU-y, NVIDIA H100 80GB HBM3, [N/A], [Not Supported], 100, 81459, 81559, [N/A], 700.00, 345, 1980, 30, 0x0000000000000001\n"
	g, err := ParseSMI(SMIFields, []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	checkFigures(t, g, []want{
		{0, snapshot.GPUThrottleReasons, 4},
		{0, snapshot.GPUSMClockMaxHertz, 1980e6},
		{0, snapshot.GPUMemoryFreeBytes, 11000 << 20},
		{1, snapshot.GPUThrottleReasons, 1},
	})
	for _, n := range []string{snapshot.GPUUtilization, snapshot.GPUMemoryBusy, snapshot.GPUPowerWatts} {
		if _, ok := g.Devices[1].Scalar(n); ok {
			t.Errorf("%s present where nvidia-smi said N/A", n)
		}
	}
	reasons, unknown := snapshot.DecodeThrottle(4 | 0x40 | 0x1000)
	if len(reasons) != 2 || reasons[0].Name != "power_cap" || reasons[1].Name != "hw_thermal" || unknown != 0x1000 {
		t.Errorf("decoded %v, unknown %#x", reasons, unknown)
	}
}

func TestSMIGarbage(t *testing.T) {
	for _, body := range []string{"", "hello world\n", "0, GPU-x, name, lots, 1\n", "0, GPU-x\n"} {
		if _, err := ParseSMI(SMIFields, []byte(body)); err == nil {
			t.Errorf("%q: no error", body)
		}
	}
}

// standIn puts a nvidia-smi script on PATH for the test.
func standIn(t *testing.T, script string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in is a shell script")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/usr/bin:/bin")
}

func TestRunSMIStandIn(t *testing.T) {
	out := "0, GPU-x, NVIDIA L4, 50, 20, 1000, 22000, 23034, 40.5, 72.00, 2040, 2040, 55, 0x0000000000000000"
	cases := []struct {
		name, script, kind string
		timeout            time.Duration
	}{
		{"answers", "echo '" + out + "'\n", "", time.Second},
		{"failing", "echo 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate with the NVIDIA driver.' >&2\nexit 9\n", "failed", time.Second},
		{"garbage", "echo 'Segmentation fault'\n", "garbage", time.Second},
		{"slow", "exec sleep 5\n", "timeout", 200 * time.Millisecond},
		// An old nvidia-smi refuses a field it does not know: it is
		// dropped and the query run again.
		{"old driver", `case "$1" in *clocks_throttle_reasons*) echo 'Field "clocks_throttle_reasons.active" is not a valid field to query.'; exit 2;; esac
echo '0, GPU-x, NVIDIA L4, 50, 20, 1000, 22000, 23034, 40.5, 72.00, 2040, 2040, 55'
`, "", time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			standIn(t, c.script)
			start := time.Now()
			g, err := RunSMI(context.Background(), SMIOptions{Timeout: c.timeout})
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("took %s", took)
			}
			if c.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
				if v, _ := g.Devices[0].Scalar(snapshot.GPUPowerWatts); v != 40.5 {
					t.Errorf("power %g", v)
				}
				return
			}
			var se *SMIError
			if !errors.As(err, &se) || se.Kind != c.kind || se.Hint == "" {
				t.Fatalf("err %v, want an SMIError of kind %q with a hint", err, c.kind)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := RunSMI(context.Background(), SMIOptions{})
		var se *SMIError
		if !errors.As(err, &se) || se.Kind != "missing" {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		standIn(t, "exec sleep 5\n")
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := RunSMI(ctx, SMIOptions{})
		if err == nil || time.Since(start) > 3*time.Second {
			t.Fatalf("err %v after %s", err, time.Since(start))
		}
	})
}

func FuzzParseSMI(f *testing.F) {
	for _, name := range []string{"rtx2080-noheader.csv", "gtx1080ti-1060-header-units.csv"} {
		raw, err := os.ReadFile(root + "nvidia-smi/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte("0, GPU-x, NVIDIA L4, [N/A], 20, 1000, 22000, 23034, 40.5, 72.00, 2040, 2040, 55, 0x4\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		g, err := ParseSMI(SMIFields, body)
		if err != nil {
			return
		}
		for _, d := range g.Devices {
			for name, v := range d.Scalars {
				if math.IsNaN(v) || v < 0 {
					t.Fatalf("%s = %g", name, v)
				}
			}
		}
	})
}

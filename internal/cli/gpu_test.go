package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/exporter"
	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/gpu"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/sim"
)

// reading is the simulated engine and its GPU read as inferscope reads a
// server and its dcgm-exporter, at the simulator's clock.
func reading(t *testing.T, s *sim.Sim, m *exporter.Metrics, g *sim.GPU) *snapshot.Snapshot {
	t.Helper()
	var b, gb bytes.Buffer
	if err := m.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteText(&gb); err != nil {
		t.Fatal(err)
	}
	now := s.Now()
	snap, err := parse(context.Background(), &scrape.Result{Source: "sim", Body: b.Bytes(), ScrapedAt: now}, dialect.Options{Dialect: "tabbyapi"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.GPU, err = gpu.Parse(context.Background(), &scrape.Result{Source: "sim:gpu", Body: gb.Bytes(), ScrapedAt: now}); err != nil {
		t.Fatal(err)
	}
	return snap
}

// The GPU's window figures against the simulator's own totals: the energy
// over a --since window is the GPU model's energy between the two times,
// and the energy per generated token that over the tokens the simulator
// generated between them (the figures are computed from the exposition,
// the truth from sim.Totals and the GPU's configuration).
func TestGPUFiguresAgainstTheSimulator(t *testing.T) {
	for _, scenario := range []string{"chat", "offload-thrash"} {
		t.Run(scenario, func(t *testing.T) {
			cfg, err := sim.Scenario(scenario, 1)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Epoch = sim.DefaultEpoch
			s, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			m := exporter.New(exporter.Options{Engine: s, MaxSeqLen: cfg.MaxSeqLen, StartTime: sim.DefaultEpoch})
			s.SetRecorder(m)
			g := sim.NewGPU(s, sim.DefaultGPU())
			s.RunUntil(3 * time.Minute)
			before := reading(t, s, m, g)
			t0, e0 := s.Totals(), s.Elapsed()
			s.RunUntil(8 * time.Minute)
			after := reading(t, s, m, g)
			t1, e1 := s.Totals(), s.Elapsed()

			c := g.Config()
			energy := c.EnergyJoules(t1, e1) - c.EnergyJoules(t0, e0)
			tokens := float64(t1.GeneratedTokens - t0.GeneratedTokens)
			secs := (e1 - e0).Seconds()
			pre, dec := (t1.PrefillBusy - t0.PrefillBusy).Seconds(), (t1.DecodeBusy - t0.DecodeBusy).Seconds()

			r := rates.SinceReport(analysis.Analyze(after, analysis.Options{}), before, after)
			// The earlier reading's shares are of the time before: the
			// window's are the later one's, over its sample period.
			if r.GPU == nil || r.GPU.Readings != 1 {
				t.Fatalf("gpu %+v", r.GPU)
			}
			near := func(name string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Errorf("%s = %.9g, the simulator says %.9g", name, got, want)
				}
			}
			near("energy_joules", float64(r.GPU.Figures["energy_joules"]), energy)
			near("power_watts", float64(r.GPU.Figures["power_watts"]), energy/secs)
			near("joules_per_token", float64(r.GPU.Figures["joules_per_token"]), energy/tokens)
			near("tokens_per_second_per_watt", float64(r.GPU.Figures["tokens_per_second_per_watt"]), tokens/energy)
			// The later reading's shares are over the time since the
			// earlier (its sample period): busy and DRAM as the steps ran.
			end := analysis.GPUState(after.GPU)
			near("utilization at the end", *end.Utilization, (pre+dec)/secs)
			near("utilization over the window", float64(r.GPU.Figures["utilization"]), (pre+dec)/secs)
			near("DRAM active over the window", float64(r.GPU.Figures["dram_active"]), (c.Prefill.DRAM*pre+c.Decode.DRAM*dec)/secs)
			near("DRAM active at the end", *end.DRAMActive, (c.Prefill.DRAM*pre+c.Decode.DRAM*dec)/secs)
			// Bandwidth-bound where decode dominates and DRAM was active at
			// least half the window (docs/notes.md), by the simulator's own
			// account: offload-thrash's engine idles a fifth of the time,
			// which holds its DRAM just under.
			dram := (c.Prefill.DRAM*pre + c.Decode.DRAM*dec) / secs
			if want := dec > pre && dram >= 0.5; want != (r.GPU.DecodeBound == string(analysis.BoundBandwidth)) {
				t.Errorf("decode %.0f s against prefill %.0f s, DRAM active %.3f: the bound is %q", dec, pre, dram, r.GPU.DecodeBound)
			}
			if scenario == "offload-thrash" {
				wrote := float64((t1.Offload.Stores-t0.Offload.Stores)+(t1.Offload.Restores-t0.Offload.Restores)) * float64(t1.Offload.SlotBytes)
				near("PCIe at the end", float64(*end.PCIe), wrote/secs)
			}
		})
	}
}

// standInSMI puts a nvidia-smi script on PATH for the test.
func standInSMI(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/usr/bin:/bin")
}

// --gpu nvidia-smi: a missing, slow, failing or garbage-printing nvidia-smi
// is one clear line in the report, with what to do; the engine's report is
// whole and the run succeeds.
func TestGPUFromSMIFailuresAreOneLine(t *testing.T) {
	cases := []struct{ name, script, want string }{
		{"missing", "", "nvidia-smi is not on PATH"},
		{"slow", "exec sleep 10\n", "did not answer within"},
		{"failing", "echo 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate with the NVIDIA driver.'\nexit 9\n", "NVIDIA-SMI has failed"},
		{"garbage", "echo 'No devices were found'\n", "is not a CSV of the fields asked for"},
		{"answers", "echo '0, GPU-x, NVIDIA L4, 97, 60, 20000, 3034, 23034, 70.5, 72.00, 2040, 2040, 80, 0x0000000000000004'\n", "power cap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.script == "" {
				t.Setenv("PATH", t.TempDir())
			} else {
				standInSMI(t, c.script)
			}
			start := time.Now()
			out, errOut, code := runCLI(t, "", "--gpu", "nvidia-smi", "--timeout", "1s", "--width", "200", "../../testdata/dialects/vllm-new.prom")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("the report does not say %q:\n%s", c.want, out)
			}
			if !strings.Contains(out, "Live") {
				t.Error("the engine's report is not whole")
			}
		})
	}
}

func TestGPUFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--gpu", "nvidia-smi", "--no-gpu", "../../testdata/dialects/vllm-new.prom"},
		{"--gpu", "-", "../../testdata/dialects/vllm-new.prom"},
	} {
		_, errOut, code := runCLI(t, "", args...)
		if code != ExitError || !strings.Contains(errOut, "inferscope: error:") || !strings.Contains(errOut, "hint:") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

// A dcgm-exporter beside the target on port 9400 is found and read; a
// target whose host has none reads nothing and says nothing.
func TestGPUBesideTheTarget(t *testing.T) {
	body, err := os.ReadFile("../../testdata/gpu/dcgm/lke-rtx4000-ada.prom")
	if err != nil {
		t.Fatal(err)
	}
	eng, _ := url.Parse("http://gpu-box:8000/metrics")
	u := gpu.Beside(eng)
	if u != "http://gpu-box:9400/metrics" {
		t.Errorf("beside %q", u)
	}
	dcgm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	defer dcgm.Close()
	engine, err := os.ReadFile("../../testdata/dialects/vllm-new.prom")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(engine) }))
	defer srv.Close()
	// Given as --gpu: read, JSON has it.
	out, errOut, code := runCLI(t, "", "--gpu", dcgm.URL, "--json", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.GPU == nil || r.GPU.Kind != "dcgm" || len(r.GPU.Devices) != 1 || r.GPU.Devices[0].Pod != "cuda-75454ffb9f-8ljq7" {
		t.Fatalf("gpu %+v", r.GPU)
	}
	// No --gpu: the engine's host on port 9400, where (in this test)
	// nothing dcgm-like answers: no GPU section, no note.
	out, _, code = runCLI(t, "", "--width", "120", srv.URL)
	if code != 0 || strings.Contains(out, "\nGPU\n") || strings.Contains(out, "gpu_not_read") {
		t.Errorf("exit %d; a GPU section or failure where none was asked for:\n%s", code, out)
	}
}

// --save keeps the GPU reading beside the scrape (FILE.gpu), and --since
// reads it back: the window's energy is the counters' increase between the
// two readings (1,500 J here), never absent for want of the earlier one.
func TestGPUSaveAndSince(t *testing.T) {
	engine, err := os.ReadFile("../../testdata/dialects/vllm-new.prom")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(engine) }))
	defer srv.Close()
	energy := 1000000.0 // mJ
	dcgm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\"} %g\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 300\n", energy)
	}))
	defer dcgm.Close()
	saved := filepath.Join(t.TempDir(), "before.prom")
	if _, errOut, code := runCLI(t, "", "--gpu", dcgm.URL, "--save", saved, srv.URL); code != 0 || !strings.Contains(errOut, "saved the GPU reading") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	energy += 1500000
	time.Sleep(20 * time.Millisecond)
	out, errOut, code := runCLI(t, "", "--gpu", dcgm.URL, "--since", saved, "--json", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.GPU == nil || r.GPU.Readings != 1 || float64(r.GPU.Figures["energy_joules"]) != 1500 {
		t.Fatalf("gpu %+v", r.GPU)
	}
}

package cli

import (
	"context"
	"os"
	"time"

	"github.com/inferscope/inferscope/internal/gpu"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// flagGPU and flagNoGPU are where the GPUs beside the engine are read
// from (issue 32).
var (
	flagGPU   = flagDef{name: "gpu", usage: "read the GPUs beside the engine from `SOURCE`: a dcgm-exporter's URL or host:port, a saved scrape of one, or nvidia-smi (run locally); without it, a dcgm-exporter on the target's host at port 9400 is read where one answers"}
	flagNoGPU = flagDef{name: "no-gpu", usage: "do not look for a dcgm-exporter beside the target"}
	// flagDCGM adds the GPU's figures to rules and dashboards.
	flagDCGM = flagDef{name: "dcgm", usage: "also write the GPU's figures over dcgm-exporter's names beside the server's: recording rules and the GPU alerts (throttled under load, XID, memory nearly full), or a dashboard's GPU row"}
)

// gpuSource is where this run reads the GPUs from, and whether it was
// given (a failure is then said) or guessed beside the target (a failure
// is then silence: there was nothing to find).
func (o *inspectOptions) gpuSource(target string) (source string, given bool) {
	if o.gpu != "" {
		return o.gpu, true
	}
	if o.noGPU {
		return "", false
	}
	t, err := scrape.Resolve(target)
	switch {
	case err != nil:
		return "", false
	case t.Path != "":
		// A scrape saved with --save keeps its GPU reading beside it.
		if _, err := os.Stat(t.Path + gpuSuffix); err == nil {
			return t.Path + gpuSuffix, true
		}
		return "", false
	case t.URL == nil:
		return "", false
	}
	return gpu.Beside(t.URL), false
}

// gpuSuffix names the GPU reading --save keeps beside a scrape.
const gpuSuffix = ".gpu"

// saveGPU keeps the GPU reading beside a saved scrape (path + ".gpu"),
// where there is one to keep.
func saveGPU(io *iostreams.IO, path string, g *snapshot.GPUs) error {
	if g == nil || g.Status != snapshot.GPUsRead || len(g.Raw) == 0 || g.At.IsZero() {
		return nil
	}
	if err := saveScrape(path+gpuSuffix, &scrape.Result{Source: g.Source, Body: g.Raw, ScrapedAt: g.At}); err != nil {
		return err
	}
	notice(io.Err, "saved the GPU reading to %s", path+gpuSuffix)
	return nil
}

// readGPU reads the GPUs beside a scrape of target into snap.GPU: a given
// source's failure is said in the report (GPUsFailed), never an exit; a
// guessed one's is nothing. The engine's scrape has been read: the GPU's
// reading is bounded by the scrape's own options.
func (o *inspectOptions) readGPU(ctx context.Context, snap *snapshot.Snapshot, target string, so scrape.Options) {
	source, given := o.gpuSource(target)
	if source == "" || snap == nil {
		return
	}
	// Half of what is left of --timeout: a GPU source that hangs is said
	// within it, and the engine's report still comes.
	limit := o.timeout / 2
	if !given {
		limit = gpu.BesideTimeout
	}
	if limit > 0 {
		so.Timeout = limit
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	g, err := gpu.Read(ctx, source, gpu.Options{Scrape: so, SMI: gpu.SMIOptions{Timeout: limit, Now: so.Now}})
	switch {
	case err == nil:
		if o.clock != nil {
			g.At = o.clock() // the demo's simulated clock, as the scrape's
		}
		snap.GPU = g
	case given:
		now := time.Now()
		if so.Now != nil {
			now = so.Now()
		}
		snap.GPU = gpu.Failed(source, err, now)
	}
}

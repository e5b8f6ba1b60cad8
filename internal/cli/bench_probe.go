package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/bench"
	benchload "github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/probe"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/version"
)

// The probe's defaults (`bench --probe`): prompt lengths from short to
// long (those past the model's context are left out), batch sizes in
// doublings, and the decode requests' lengths: a prompt short enough that
// its prefill barely interrupts the others' decode, an answer long
// enough that its first token (prefill's) is a small part of it.
const (
	defaultProbeLengths = "128,512,2048,8192"
	defaultProbeBatches = "1,2,4,8"
	defaultProbePrompt  = 64
	defaultProbeOutput  = 256
	maxProbePoints      = 64
	maxProbeBatch       = 1024
)

// probeFlags are `bench --probe`'s.
type probeFlags struct {
	kinds, lengths, batches string
	repeat                  int

	// Set by check.
	seedGiven      bool
	probes         []string
	lengthList     []int
	lengthsGiven   bool
	batchList      []int
	prompt, output int
}

func (p *probeFlags) define(cmd *cobra.Command) {
	p.lengths, p.batches, p.repeat = defaultProbeLengths, defaultProbeBatches, probe.DefaultRepeat
	f := func(name, usage string) flagDef { return flagDef{name: name, noFiles: true, usage: usage} }
	flagDef{name: "probe", choices: fixed("prefill", "decode", "prefill,decode"),
		usage: "measure prefill or decode speed under control instead of a load: `P` is prefill (prompts of --probe-lengths one at a time), " +
			"decode (rounds of --probe-batches requests of --prompt-tokens and --output-tokens, default " +
			strconv.Itoa(defaultProbePrompt) + " and " + strconv.Itoa(defaultProbeOutput) + " here, started together) or prefill,decode"}.string(cmd, &p.kinds)
	f("probe-lengths", "the prefill probe's prompt lengths `LIST`, in tokens: 128,512,2048 (those past the model's context are left out of the default)").string(cmd, &p.lengths)
	f("probe-batches", "the decode probe's batch sizes `LIST`: 1,2,4,8, or 1..8 for every size from 1 to 8").string(cmd, &p.batches)
	f("probe-repeat", "measure `N` requests a prompt length, and N rounds a batch size, after a cold one set aside").int(cmd, &p.repeat)
}

// probeOnly are the flags only a probe reads; probeRefuses those a load
// reads that a probe does not.
var (
	probeOnly    = []string{"probe-lengths", "probe-batches", "probe-repeat"}
	probeRefuses = []string{"concurrency", "rate", "arrival", "burstiness", "requests", "duration", "warmup", "warmup-max", "drain",
		"slo", "interval", "dataset", "prefix-tokens", "prefix-share", "defeat-cache", "let-stop"}
)

// check reads the probe's flags; w is the workload's, whose lengths the
// decode probe takes where given.
func (p *probeFlags) check(set map[string]bool, w *workloadFlags) error {
	if p.kinds == "" {
		for _, name := range probeOnly {
			if set[name] {
				return usagef("add --probe prefill or --probe decode", "--%s is the probe's", name)
			}
		}
		return nil
	}
	for _, name := range probeRefuses {
		if set[name] {
			return usagef("leave out --"+name+", or --probe for a load run", "--%s does not go with --probe: a probe sends its own requests (one at a time, or rounds started together), each prompt unique", name)
		}
	}
	seen := map[string]bool{}
	for _, k := range strings.Split(p.kinds, ",") {
		k = strings.TrimSpace(k)
		if k != probe.Prefill && k != probe.Decode {
			return usagef("use --probe prefill, --probe decode or --probe prefill,decode", "--probe %q is not a probe", p.kinds)
		}
		if !seen[k] {
			p.probes = append(p.probes, k)
			seen[k] = true
		}
	}
	if p.repeat < 1 || p.repeat > 1000 {
		return usagef("use --probe-repeat 1 to 1,000", "--probe-repeat %d is out of range", p.repeat)
	}
	var err error
	if p.lengthList, err = parseCounts(p.lengths, 1<<24); err != nil {
		return usagef("write the lengths as 128,512,2048", "--probe-lengths: %v", err)
	}
	p.lengthsGiven, p.seedGiven = set["probe-lengths"], set["seed"]
	if p.batchList, err = parseCounts(p.batches, maxProbeBatch); err != nil {
		return usagef("write the batch sizes as 1,2,4,8 or 1..8", "--probe-batches: %v", err)
	}
	switch {
	case set["probe-lengths"] && !seen[probe.Prefill]:
		return usagef("add --probe prefill", "--probe-lengths are the prefill probe's")
	case set["probe-batches"] && !seen[probe.Decode]:
		return usagef("add --probe decode", "--probe-batches are the decode probe's")
	case (set["prompt-tokens"] || set["output-tokens"]) && !seen[probe.Decode]:
		return usagef("leave them out: the prefill probe's prompts are --probe-lengths, its answers one token", "--prompt-tokens and --output-tokens are the decode probe's lengths")
	}
	p.prompt, p.output = defaultProbePrompt, defaultProbeOutput
	if set["prompt-tokens"] {
		if w.promptDist.Kind != workload.Fixed {
			return usagef("give one length, such as --prompt-tokens 64", "--prompt-tokens %s: a probe's prompts have one length", w.prompt)
		}
		p.prompt = w.promptDist.Mean
	}
	if set["output-tokens"] {
		if w.outputDist.Kind != workload.Fixed || w.outputDist.Mean < 2 {
			return usagef("give one length of 2 or more, such as --output-tokens 256", "--output-tokens %s: a probe's answers have one length, of two tokens or more (the first is prefill's)", w.output)
		}
		p.output = w.outputDist.Mean
	}
	return nil
}

// parseCounts reads a list of positive counts: "1,2,4" or "1..8" (every
// count from 1 to 8), at most maxProbePoints of them, each at most most.
func parseCounts(s string, most int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "..")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range low..high", part)
			}
		}
		if a < 1 || b > most {
			return nil, fmt.Errorf("%q: each must be from 1 to %s", part, units.Integer(float64(most)))
		}
		for n := a; n <= b; n++ {
			if len(out) == maxProbePoints {
				return nil, fmt.Errorf("more than %d points", maxProbePoints)
			}
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// runProbe runs `bench --probe`: the model chosen and the prompts
// calibrated as a load's are, one request checked, then the probe.
func (o *benchOptions) runProbe(ctx context.Context, io *iostreams.IO) error {
	headers, pre, err := o.chooseModel(ctx, io)
	if err != nil {
		return err
	}
	p := &o.probe
	lengths := p.lengthList
	if pre.Context > 0 && slices.Contains(p.probes, probe.Decode) && p.prompt+p.output > pre.Context {
		return usagef("ask for shorter decode requests (--prompt-tokens, --output-tokens)", "the decode probe's requests reach %s tokens, more than the model's context of %s",
			units.Integer(float64(p.prompt+p.output)), units.Integer(float64(pre.Context)))
	}
	if pre.Context > 0 && slices.Contains(p.probes, probe.Prefill) {
		if lengths, err = p.fit(pre.Context); err != nil {
			return err
		}
	}
	target := benchload.Target{Base: o.base, API: o.api, Model: pre.ID, Headers: headers, Timeout: o.requestTimeout}
	cal, err := o.workload.calibrate(ctx, target, workload.Shape{API: o.api, Model: pre.ID})
	if err != nil {
		return err
	}
	seed := o.seed
	if !p.seedGiven {
		// A probe's prompts must be new to the server's cache: a probe
		// of the same server with the seed of an earlier one would find
		// them there.
		seed = uint64(time.Now().UnixNano())
	}
	cfg := probe.Config{Target: target, Probes: p.probes, Lengths: lengths, Batches: p.batchList, Repeat: p.repeat,
		PromptTokens: p.prompt, OutputTokens: p.output, Calibration: cal, Seed: seed,
		Describe: probe.Describe{Target: o.base.Redacted(), API: o.api.String(), Model: pre.ID, Made: calibrationWords(cal.Method), Version: version.String()}}
	check, err := bounded(ctx, 5*time.Minute, func(ctx context.Context) (bench.Probe, error) {
		return bench.ProbeServer(ctx, target, probe.Preflight(cfg).Body)
	})
	var pe *bench.PreflightError
	if err != nil && !(o.tokensEvents && errors.As(err, &pe) && check.Streamed && !check.Usage) {
		return err
	}
	var bc bench.Config
	if err := o.metrics(ctx, &bc, headers, pre.ID); err != nil {
		return err
	}
	cfg.Scrape, cfg.Metrics = bc.Scrape, bc.Metrics
	var rw *bench.RecordWriter
	var recErr error
	if o.records != "" {
		f, err := os.Create(o.records)
		if err != nil {
			return usagef("check that the folder exists and is writable", "cannot write the records: %v", termsafe.Text(err.Error()))
		}
		defer f.Close()
		rw = bench.NewRecordWriter(f, o.recFmt)
		cfg.Record = func(r benchload.Record) {
			if recErr == nil {
				recErr = rw.Write(r)
			}
		}
	}
	var line *bench.ProgressLine
	if io.OutTTY && io.Getenv("TERM") != "dumb" {
		line = bench.NewProgressLine(io.Err, o.layoutWidth(io))
		cfg.Progress = func(s probe.Step) {
			line.Say(fmt.Sprintf("probe: %s %d of %d (%s): %s %d of %d (the first cold)", s.Probe, s.Point, s.Points, s.What,
				map[string]string{probe.Prefill: "request", probe.Decode: "round"}[s.Probe], s.Done+1, s.Of))
		}
	}
	res, err := probe.Run(ctx, cfg)
	line.Clear()
	if err != nil {
		return err
	}
	if rw != nil && recErr == nil {
		recErr = rw.Flush()
	}
	if recErr != nil {
		return fmt.Errorf("writing the records: %w", recErr)
	}
	switch {
	case o.html:
		return writeHTML(io, res)
	case o.json:
		err = probe.JSON(io.Out, res)
	default:
		err = probe.Text(io.Out, res, o.renderOptions(io, o.layoutWidth(io)))
	}
	if err != nil {
		return writeError(err)
	}
	return nil
}

// fit keeps the prompt lengths that leave room for an answer in a model
// context of n tokens: a length given past it is refused, the defaults
// past it left out.
func (p *probeFlags) fit(n int) ([]int, error) {
	var out []int
	for _, l := range p.lengthList {
		switch {
		case l+1 <= n:
			out = append(out, l)
		case p.lengthsGiven:
			return nil, usagef("ask for shorter prompts (--probe-lengths)", "a prompt of %s tokens leaves no room for an answer in the model's context of %s",
				units.Integer(float64(l)), units.Integer(float64(n)))
		}
	}
	if len(out) == 0 {
		return nil, usagef("give --probe-lengths that fit", "none of the prompt lengths fits the model's context of %s", units.Integer(float64(n)))
	}
	return out, nil
}

// readProbes reads --probe-file's probes into the speeds the phase trade
// weighs.
func (o *inspectOptions) readProbes() error {
	if len(o.probeFiles) == 0 {
		return nil
	}
	hint := "write one with inferscope bench --probe prefill,decode -o json > probe.json"
	if len(o.probeFiles) > 2 {
		return usagef("give one probe of both phases, or a prefill probe and a decode probe", "--probe-file given %d times", len(o.probeFiles))
	}
	var rs []*probe.Result
	for _, name := range o.probeFiles {
		f, err := os.Open(name)
		if err != nil {
			return usagef(hint, "cannot read --probe-file: %s", termsafe.Text(err.Error()))
		}
		r, err := probe.Read(f)
		f.Close()
		if err != nil {
			return usagef(hint, "--probe-file %s: %s", termsafe.Quote(name), termsafe.Text(err.Error()))
		}
		rs = append(rs, r)
	}
	s, err := probe.Weigh(rs)
	if err != nil {
		return usagef(hint, "--probe-file: %s", termsafe.Text(err.Error()))
	}
	o.probe = s
	return nil
}

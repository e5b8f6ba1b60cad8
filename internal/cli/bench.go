package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/bench"
	benchload "github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/page"
	"github.com/inferscope/inferscope/internal/bench/probe"
	"github.com/inferscope/inferscope/internal/bench/sweep"
	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/report"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/stream"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/version"
	"github.com/inferscope/inferscope/internal/watch"
)

var benchLong = `Loads an inference server's OpenAI-compatible API (chat or completions,
streamed) or Ollama's (/api/chat, /api/generate) and diagnoses the window it
loaded: the client's figures by measurement point (TTFB, TTFT, E2E, TPOT,
ITL, throughput, goodput under --slo), the server's own /metrics over the
same window read as --since reads two scrapes (sampled every --interval
between them), a verdict (saturated, KV-bound, prefill- or decode-bound,
client-bound, time outside the engine), a self-check of the generator against
the server's counters, and flags on what makes the figures other than they
seem. docs/bench.md defines every figure against vLLM's, GuideLLM's and
AIPerf's.

TARGET is the server's base URL (or host:port); its path may name the API
(.../v1/chat/completions, /api/generate), else --endpoint does (default
chat). The server's /metrics is read at TARGET's /metrics unless
--metrics-url says where; a server with none (Ollama) is measured by the
bench itself.

Load: a closed loop (--concurrency N in flight), or an open loop (--rate R
per second, Poisson, gamma with --burstiness, or constant arrivals), capped
by --concurrency where both are given (the time a request waited for a slot
is reported). --requests or --duration end the measured part; --warmup sends
requests before it that no figure counts (N requests, a duration, or settle:
until the server's running requests and KV usage settle).

A sweep (--sweep) runs a series of steps, each a run reported whole:
concurrency=LIST (closed loops), rate=LIST (open loops), or auto (one
request at a time, the ceiling, then rates between). With --slo, auto
searches for the knee: the highest rate at which --slo-share of the
requests meet every limit, bracketed and halved, and the server's reason
where it broke (the KV cache, the queue, prefill or decode time). Before
each run the server is read until its running and waiting requests are
zero (at most --drain). --repeat runs each step several times and states
each figure's spread; bench compare A.json B.json says what moved beyond
it. --csv writes the steps as CSV.

Probes (--probe prefill, decode, or prefill,decode) measure speeds under
control instead of a load: prefill at each of --probe-lengths, one request
at a time, each prompt unique from its first words; decode at each of
--probe-batches, rounds of that many requests started together; a cold
first request (or round) at each set aside, --probe-repeat measured after
it; speeds from the client and from the server's own time where it
publishes one. -o json saves a probe for inferscope --probe-file, which
weighs the report's exchange rate and break-even with it.

On a terminal a progress line shows the run; on a pipe nothing but the
report is written. Ctrl-C stops sending, lets requests in flight finish
within --drain, and reports what completed, marked partial.

-o html writes the report of a run, a sweep or a probe as one page to
look at, a self-contained file read offline (its charts, the verdict and
notes in words, its tables): redirect it to a file and open that in a
browser.`

const benchExample = `  inferscope bench http://gpu-box:8000 -c 16 -n 500
  inferscope bench http://gpu-box:8000 --rate 20 --duration 2m --warmup settle --slo ttft=500ms,tpot=50ms
  inferscope bench http://127.0.0.1:11434 --endpoint ollama-chat --model llama3.2 -c 4 -n 100
  inferscope bench gpu-box:8000 -c 32 --duration 1m -o json --records run.jsonl
  inferscope bench gpu-box:8000 --sweep auto --slo ttft=500ms,tpot=50ms -d 1m --arrival constant
  inferscope bench gpu-box:8000 --sweep concurrency=1,4,16,64 --repeat 3 -o json > before.json
  inferscope bench gpu-box:8000 --rate 20 --duration 1m --slo ttft=500ms -o html > run.html
  inferscope bench gpu-box:8000 --probe prefill,decode -o json > probe.json
  inferscope gpu-box:8000 --probe-file probe.json`

// Defaults and bounds of the bench's flags.
const (
	defaultBenchRequests    = 100
	defaultBenchDrain       = 30 * time.Second
	defaultBenchSettle      = 2 * time.Minute
	defaultBenchScrapeLimit = 10 * time.Second
	maxBenchConcurrency     = 100_000
)

// benchEndpoints are --endpoint's values, in stream.API's order.
var benchEndpoints = []string{"chat", "completions", "ollama-chat", "ollama-generate"}

// benchOptions are the bench's flags.
type benchOptions struct {
	outputFlags
	target         string
	endpoint       string
	model          string
	headers        []string
	httpHeaders    http.Header
	concurrency    int
	rate           float64
	arrival        string
	burstiness     float64
	requests       int
	duration       time.Duration
	warmup         string
	warmupMax      time.Duration
	drain          time.Duration
	requestTimeout time.Duration
	seed           uint64
	slo            string
	metricsURL     string
	interval       time.Duration
	records        string
	tokensEvents   bool
	workload       workloadFlags
	sweepFlags     sweepFlags
	probe          probeFlags

	// Set by check.
	base     *url.URL
	api      benchload.API
	plan     benchload.Plan
	warm     warmupSpec
	sloValue bench.SLO
	recFmt   bench.RecordFormat
}

// warmupSpec is --warmup read: a number of requests, a duration, or
// until the server settles.
type warmupSpec struct {
	requests int
	duration time.Duration
	settle   bool
}

func newBenchCmd(io *iostreams.IO) *cobra.Command {
	o := &benchOptions{concurrency: 1, drain: defaultBenchDrain, warmupMax: defaultBenchSettle, interval: bench.DefaultInterval,
		arrival: "poisson", seed: 1}
	o.htmlOK = true
	cmd := newCommand(commandSpec{
		use:     "bench TARGET [flags]",
		short:   "load a server and diagnose the window it loaded",
		long:    benchLong,
		example: benchExample,
		exits:   []exitStatus{{ExitOK, "the run's report written"}},
		signals: []exitStatus{
			{ExitInterrupted, "Ctrl-C: sending stopped, the requests in flight given --drain, and the report of what completed written, marked partial (a second Ctrl-C ends at once)"},
			{ExitTerminated, "terminated (SIGTERM), as a shell reports it"},
		},
		args: benchArgs,
		run: func(cmd *cobra.Command, pos []string) error {
			o.target = pos[0]
			set := given(cmd)
			if err := o.check(set); err != nil {
				return err
			}
			return o.run(cmd.Context(), io, set)
		},
	})
	o.define(cmd)
	cmd.AddCommand(newBenchCompareCmd(io))
	return cmd
}

func benchArgs(_ *cobra.Command, args []string) error {
	switch len(args) {
	case 0:
		return usagef("give the server's base URL: inferscope bench http://host:8000", "bench needs a TARGET")
	case 1:
		return nil
	}
	return usagef("give one server's base URL", "too many targets: %s", strings.Join(args, " "))
}

func (o *benchOptions) define(cmd *cobra.Command) {
	f := func(name, usage string) flagDef { return flagDef{name: name, noFiles: true, usage: usage} }
	// Where, and which model.
	flagDef{name: "endpoint", choices: fixed(benchEndpoints...), usage: "the API `E` to load: chat (/v1/chat/completions), completions (/v1/completions), " +
		"ollama-chat (/api/chat) or ollama-generate (/api/generate) (default: TARGET's path says, else chat)"}.string(cmd, &o.endpoint)
	flagModel.string(cmd, &o.model)
	flagHeader.list(cmd, &o.headers)
	f("metrics-url", "read the server's metrics at `URL` (default: TARGET's /metrics; a server with none is measured by the bench itself)").string(cmd, &o.metricsURL)
	f("interval", "read the server's metrics every `D` while the load runs, at least "+units.Duration(watch.MinInterval)).duration(cmd, &o.interval)
	// The load.
	flagDef{name: "concurrency", short: "c", noFiles: true, usage: "keep `N` requests in flight (a closed loop); with --rate, at most N"}.int(cmd, &o.concurrency)
	flagDef{name: "rate", short: "r", noFiles: true, usage: "send `R` requests a second (an open loop), arrivals as --arrival says"}.float(cmd, &o.rate)
	flagDef{name: "arrival", choices: fixed("poisson", "gamma", "constant"), usage: "space --rate's arrivals as `A`: poisson, gamma (with --burstiness) or constant"}.string(cmd, &o.arrival)
	f("burstiness", "the gamma arrivals' shape `B`: below 1 burstier than Poisson, above 1 smoother (sets --arrival gamma)").float(cmd, &o.burstiness)
	flagDef{name: "requests", short: "n", noFiles: true, usage: "measure `N` requests (default " + strconv.Itoa(defaultBenchRequests) + " unless --duration)"}.int(cmd, &o.requests)
	flagDef{name: "duration", short: "d", noFiles: true, usage: "measure for `D` instead of a number of requests"}.duration(cmd, &o.duration)
	f("warmup", "first send requests no figure counts: `W` requests, a duration, or settle (until the server's running requests and KV usage settle)").string(cmd, &o.warmup)
	f("warmup-max", "end a --warmup settle after `D` if the server has not settled").duration(cmd, &o.warmupMax)
	f("drain", "once sending stops (the end, or Ctrl-C), let requests in flight take `D` to finish; between the runs of a sweep, wait at most D for the server to be idle").duration(cmd, &o.drain)
	f("request-timeout", "give up on a request after `D` (default: none)").duration(cmd, &o.requestTimeout)
	flagSeed.uint64(cmd, &o.seed)
	// What is sent.
	o.workload.define(cmd)
	o.probe.define(cmd)
	f("tokens-from-events", "count output tokens from streamed events where the server sends no usage (exact only where each event carries one token)").bool(cmd, &o.tokensEvents)
	// What is said.
	f("slo", "count goodput against `LIMITS`: ttft, tpot and e2e as durations, comma-separated (ttft=500ms,tpot=50ms,e2e=10s)").string(cmd, &o.slo)
	flagDef{name: "records", usage: "also write every request to `FILE`, as it ends: JSON lines (.jsonl) or CSV (.csv)"}.string(cmd, &o.records)
	// A series of runs.
	o.sweepFlags.define(cmd)
	o.outputFlags.define(cmd)
}

// check reads and refuses the flags before anything is sent.
func (o *benchOptions) check(set map[string]bool) error {
	for _, step := range []func() error{
		func() error { return o.outputFlags.check(set) },
		o.checkTarget,
		func() error { return o.checkLoad(set) },
		func() error { return o.checkWarmup(set) },
		o.checkOutput,
		func() error { return o.workload.check(set) },
		func() error { return o.sweepFlags.check(o, set) },
		func() error { return o.probe.check(set, &o.workload) },
		o.setHeaders,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// checkTarget reads TARGET and --endpoint.
func (o *benchOptions) checkTarget() error {
	raw := o.target
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return usagef("give the server's base URL, such as http://127.0.0.1:8000", "TARGET %s is not an http:// or https:// URL", termsafe.ShellQuote(o.target))
	}
	o.base = u
	api, named := stream.Classify(strings.TrimSuffix(u.Path, "/"))
	switch {
	case o.endpoint != "":
		i := indexOf(benchEndpoints, o.endpoint)
		if i < 0 {
			return usagef("use --endpoint "+orList(benchEndpoints), "--endpoint %q is not an API the bench loads", o.endpoint)
		}
		if named && int(api) != i {
			return usagef("leave out --endpoint, or the API's path from TARGET", "TARGET's path is the %s API and --endpoint says %s", benchEndpoints[api], o.endpoint)
		}
		o.api = benchload.API(i)
	case named:
		o.api = api
	default:
		o.api = benchload.ChatCompletions
	}
	if o.metricsURL != "" {
		t, err := scrape.Resolve(o.metricsURL)
		if err != nil || t.URL == nil {
			return usagef("give the URL of the server's metrics, such as http://host:8000/metrics", "--metrics-url %s is not a URL", termsafe.ShellQuote(o.metricsURL))
		}
	}
	if o.interval < watch.MinInterval {
		return usagef("use --interval "+units.Duration(watch.MinInterval)+" or longer", "--interval %s is shorter than the shortest scrape interval (%s)",
			units.Duration(o.interval), units.Duration(watch.MinInterval))
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// checkLoad reads the load's flags into the plan.
func (o *benchOptions) checkLoad(set map[string]bool) error {
	p := benchload.Plan{Concurrency: o.concurrency, Drain: o.drain, Seed: o.seed}
	switch {
	case set["rate"] && (math.IsNaN(o.rate) || math.IsInf(o.rate, 0) || o.rate <= 0):
		return usagef("give a positive rate such as --rate 10, or --concurrency N for a closed loop", "--rate %s: a rate must be above 0", strconv.FormatFloat(o.rate, 'g', -1, 64))
	case o.concurrency < 1 || o.concurrency > maxBenchConcurrency:
		return usagef(fmt.Sprintf("use --concurrency 1 to %s", units.Integer(maxBenchConcurrency)), "--concurrency %d is out of range", o.concurrency)
	case set["requests"] && o.requests < 1:
		return usagef("use --requests 1 or more, or --duration", "--requests %d: at least one request is measured", o.requests)
	case set["duration"] && o.duration <= 0:
		return usagef("give a positive duration such as --duration 1m", "--duration %s: a run lasts a positive time", units.Duration(o.duration))
	case set["requests"] && set["duration"]:
		return usagef("give one of them: the run ends after --requests, or after --duration", "--requests and --duration do not go together")
	case o.drain < 0:
		return usagef("give --drain 0 or more", "--drain %s is negative", units.Duration(o.drain))
	case o.requestTimeout < 0:
		return usagef("give a positive --request-timeout, or leave it out", "--request-timeout %s is negative", units.Duration(o.requestTimeout))
	case set["burstiness"] && !(o.burstiness > 0) || math.IsInf(o.burstiness, 0):
		return usagef("give a positive shape such as --burstiness 0.5", "--burstiness %s must be above 0", strconv.FormatFloat(o.burstiness, 'g', -1, 64))
	case (set["arrival"] || set["burstiness"]) && !set["rate"] && !o.sweepFlags.open():
		return usagef("add --rate R: arrivals are spaced only in an open loop", "--arrival and --burstiness space --rate's arrivals")
	case set["burstiness"] && set["arrival"] && o.arrival != "gamma":
		return usagef("leave out --arrival, or use --arrival gamma", "--burstiness shapes gamma arrivals, and --arrival says %s", o.arrival)
	}
	if set["rate"] || o.sweepFlags.open() {
		if set["rate"] {
			p.Rate = o.rate
			if !set["concurrency"] {
				p.Concurrency = 0
			}
		}
		switch {
		case set["burstiness"] || o.arrival == "gamma":
			p.Arrival, p.Burstiness = benchload.Gamma, o.burstiness
			if p.Burstiness == 0 {
				p.Burstiness = 1
			}
		case o.arrival == "constant":
			p.Arrival = benchload.Constant
		case o.arrival == "poisson":
			p.Arrival = benchload.Poisson
		default:
			return usagef("use --arrival poisson, gamma or constant", "--arrival %q is not an arrival process", o.arrival)
		}
	}
	switch {
	case set["duration"]:
		p.Duration = o.duration
	case set["requests"]:
		p.Requests = o.requests
	default:
		p.Requests = defaultBenchRequests
	}
	o.plan = p
	return nil
}

// checkWarmup reads --warmup: N requests, a duration, or settle.
func (o *benchOptions) checkWarmup(set map[string]bool) error {
	hint := "give --warmup a number of requests (20), a duration (30s) or settle"
	w := strings.TrimSpace(o.warmup)
	switch {
	case w == "":
	case w == "settle":
		o.warm.settle = true
	default:
		if n, err := strconv.Atoi(w); err == nil {
			if n < 0 {
				return usagef(hint, "--warmup %d is negative", n)
			}
			o.warm.requests = n
			break
		}
		d, err := units.ParseDuration(w)
		if err != nil {
			return usagef(hint, "--warmup %q is not a count, a duration or settle", o.warmup)
		}
		if d < 0 {
			return usagef(hint, "--warmup %s is negative", w)
		}
		o.warm.duration = d
	}
	switch {
	case set["warmup-max"] && !o.warm.settle:
		return usagef("add --warmup settle, or leave out --warmup-max", "--warmup-max bounds --warmup settle")
	case o.warmupMax <= 0:
		return usagef("give a positive --warmup-max such as 2m", "--warmup-max must be positive")
	}
	o.plan.Warmup = benchload.Warmup{Requests: o.warm.requests, Duration: o.warm.duration}
	return nil
}

// warmupWords says the warm-up as the report names it.
func (o *benchOptions) warmupWords() string {
	switch {
	case o.warm.settle:
		return "until the server settles, at most " + units.Duration(o.warmupMax)
	case o.warm.requests > 0:
		return units.Integer(float64(o.warm.requests)) + " requests"
	case o.warm.duration > 0:
		return units.Duration(o.warm.duration)
	}
	return ""
}

// checkOutput reads --slo and --records.
func (o *benchOptions) checkOutput() error {
	if o.slo != "" {
		s, err := bench.ParseSLO(o.slo)
		if err != nil {
			return usagef("write it as --slo ttft=500ms,tpot=50ms,e2e=10s (any of the three)", "--slo: %v", err)
		}
		o.sloValue = s
	}
	if o.records != "" {
		f, err := bench.RecordFormatOf(o.records)
		if err != nil {
			return usagef("name the file .jsonl (JSON lines) or .csv", "--records %s: the extension says the format", termsafe.Text(o.records))
		}
		o.recFmt = f
	}
	return nil
}

func (o *benchOptions) setHeaders() error {
	o.httpHeaders = http.Header{}
	for _, h := range o.headers {
		k, v, err := scrape.ParseHeader(h)
		if err != nil {
			return usagef("write it as --header 'Name: value'", "--header %q: %v", h, err)
		}
		o.httpHeaders.Add(k, v)
	}
	return nil
}

// requestHeaders are --header's, with INFERSCOPE_BEARER_TOKEN's where
// they give no Authorization.
func (o *benchOptions) requestHeaders(io *iostreams.IO) (http.Header, error) {
	headers := o.httpHeaders.Clone()
	if tok := io.Getenv("INFERSCOPE_BEARER_TOKEN"); tok != "" && headers.Get("Authorization") == "" {
		if err := checkToken(tok); err != nil {
			return nil, err
		}
		headers.Set("Authorization", "Bearer "+tok)
	}
	return headers, nil
}

// run checks the server, then loads it (or probes it) and writes the
// report.
func (o *benchOptions) run(ctx context.Context, io *iostreams.IO, set map[string]bool) error {
	if err := o.checkHTML(io); err != nil {
		return err
	}
	if len(o.probe.probes) > 0 {
		return o.runProbe(ctx, io)
	}
	headers, pre, err := o.chooseModel(ctx, io)
	if err != nil {
		return err
	}
	target := benchload.Target{Base: o.base, API: o.api, Model: pre.ID, Headers: headers, Timeout: o.requestTimeout}
	if most := o.workload.maxTokens(); pre.Context > 0 && most > pre.Context {
		return usagef("ask for shorter prompts or answers (--prompt-tokens, --output-tokens)",
			"the requests can reach %s tokens, more than the model's context of %s", units.Integer(float64(most)), units.Integer(float64(pre.Context)))
	}
	src, info, err := o.workload.source(ctx, target, o.seed)
	if err != nil {
		return err
	}
	probe, err := bounded(ctx, 5*time.Minute, func(ctx context.Context) (bench.Probe, error) {
		return bench.ProbeServer(ctx, target, src.Next(0).Body)
	})
	var pe *bench.PreflightError
	if err != nil && !(o.tokensEvents && errors.As(err, &pe) && probe.Streamed && !probe.Usage) {
		return err
	}

	cfg := bench.Config{
		Generate: benchload.Run,
		Build: func(s *snapshot.Snapshot, now time.Time) *report.Report {
			r := analysis.Analyze(s, analysis.Options{Now: now, Hist: o.hist, Raw: o.json, WithRates: true})
			r.Version = version.String()
			return r
		},
		Interval: o.interval, SLO: o.sloValue, PrefixMeant: info.prefixMeant, FixedOutput: info.fixedOutput,
		Describe: bench.Describe{Target: o.base.Redacted(), API: o.api.String(), Model: target.Model, Workload: info.words, WorkloadNote: info.note,
			Warmup: o.warmupWords(), Version: version.String()},
	}
	cfg.Plan = o.plan
	cfg.Plan.Target = target
	cfg.Plan.Source = src
	if o.warm.settle {
		cfg.Settle = o.warmupMax
	}
	if err := o.metrics(ctx, &cfg, headers, target.Model); err != nil {
		return err
	}
	if o.records != "" {
		f, err := os.Create(o.records)
		if err != nil {
			return usagef("check that the folder exists and is writable", "cannot write the records: %v", termsafe.Text(err.Error()))
		}
		defer f.Close()
		cfg.Records = bench.NewRecordWriter(f, o.recFmt)
	}
	if o.sweepFlags.sweeping() {
		return o.runSweep(ctx, io, cfg, set)
	}
	var line *bench.ProgressLine
	if io.OutTTY && io.Getenv("TERM") != "dumb" {
		line = bench.NewProgressLine(io.Err, o.layoutWidth(io))
		cfg.Progress = line.Draw
	}
	rep, err := bench.Run(ctx, cfg)
	line.Clear()
	if err != nil {
		return err
	}
	return o.write(io, rep)
}

// metrics chooses where the server's figures come from: --metrics-url,
// else TARGET's /metrics where it serves one, else the bench's own
// measurements.
func (o *benchOptions) metrics(ctx context.Context, cfg *bench.Config, headers http.Header, model string) error {
	target := o.metricsURL
	if target == "" {
		u := bench.Root(o.base)
		u.Path += "/metrics"
		target = u.String()
	}
	so := scrape.Options{Timeout: defaultBenchScrapeLimit, MaxBytes: scrape.DefaultMaxBytes, UserAgent: userAgent()}
	if t, err := scrape.Resolve(target); err == nil && t.URL != nil {
		target = t.URL.String() // host:port said in full
		if httpsafe.SameHost(t.URL, o.base) {
			so.Headers = headers // the server's credentials, to the server only
		}
	}
	do := inspectOptions{}
	read := func(ctx context.Context) (*snapshot.Snapshot, error) {
		return bounded(ctx, so.Timeout, func(ctx context.Context) (*snapshot.Snapshot, error) {
			s, _, err := load(ctx, target, so, do.dialectOptions(), time.Time{})
			return s, err
		})
	}
	first, err := read(ctx)
	if err != nil {
		if o.metricsURL != "" {
			return fmt.Errorf("--metrics-url: %w", err)
		}
		return nil // no /metrics: the bench measures its own
	}
	if len(first.Models) > 1 && slices.Contains(first.Models, model) {
		// The server's figures of the model loaded, where it serves several.
		do.model = model
	}
	cfg.Scrape, cfg.Metrics = read, redactURL(target)
	return nil
}

// redactURL writes a URL without its password.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return s
}

// write writes the report as -o says.
func (o *benchOptions) write(io *iostreams.IO, rep *bench.Report) error {
	var err error
	if o.html {
		return writeHTML(io, rep)
	}
	if o.json {
		err = bench.JSON(io.Out, rep)
	} else {
		err = bench.Text(io.Out, rep, bench.TextOptions{Render: o.renderOptions(io, o.layoutWidth(io)), Server: watch.ForText})
	}
	if err != nil {
		return writeError(err)
	}
	return nil
}

// checkHTML refuses -o html to a terminal, before any load: a page is for
// a file and a browser.
func (o *benchOptions) checkHTML(io *iostreams.IO) error {
	if o.html && io.OutTTY {
		return usagef("redirect it to a file, such as -o html > run.html, and open that in a browser",
			"-o html writes a page of HTML, not for a terminal")
	}
	return nil
}

// writeHTML writes -o html: a run's page, a sweep's or a probe's, one
// self-contained file (docs/bench.md).
func writeHTML(io *iostreams.IO, v any) error {
	var err error
	switch v := v.(type) {
	case *bench.Report:
		err = page.Run(io.Out, v)
	case *sweep.Result:
		err = page.Sweep(io.Out, v)
	case *probe.Result:
		err = page.Probe(io.Out, v)
	default:
		err = fmt.Errorf("no page for a %T", v)
	}
	if err != nil {
		return writeError(err)
	}
	return nil
}

// flagSeed is the random seed of the demo and the bench.
var flagSeed = flagDef{name: "seed", noFiles: true, usage: "the random seed, `N`: the same seed gives the same run"}

// chooseModel asks the server, within the default timeout, for its models
// and picks the one --model names (or the only one): what the server can
// be asked before any load, the model and its context. It returns the
// request headers too.
func (o *benchOptions) chooseModel(ctx context.Context, io *iostreams.IO) (http.Header, bench.Model, error) {
	headers, err := o.requestHeaders(io)
	if err != nil {
		return nil, bench.Model{}, err
	}
	client := httpsafe.NewClient(httpsafe.Options{Origin: o.base, Headers: headers, MaxBytes: 64 << 20})
	pre, err := bounded(ctx, defaultTimeout, func(ctx context.Context) (bench.Model, error) {
		models, err := bench.Models(ctx, client, o.base, o.api)
		if err != nil {
			return bench.Model{}, err
		}
		return bench.ChooseModel(o.model, models)
	})
	return headers, pre, err
}

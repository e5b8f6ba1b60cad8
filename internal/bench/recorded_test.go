package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/bench/load"
	"github.com/inferscope/inferscope/internal/bench/workload"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/rates"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/snapshot"
)

// Runs recorded against real servers (testdata/recorded/*: each the
// server's /metrics before any load and after the last request, and every
// request's record, with how it was recorded in its README.md): the
// self-check's arithmetic on a real server's counters, held to exact
// agreement. Recording one again, against a server running as its
// README.md says:
//
//	INFERSCOPE_RECORD='name base-url [metrics-url]' INFERSCOPE_RECORD_ARGS='concurrency requests prompt output' \
//	    go test ./internal/bench -run TestRecord -v
func TestRecordedSelfCheck(t *testing.T) {
	dirs, err := filepath.Glob("testdata/recorded/*/records.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 2 {
		t.Fatalf("%d recorded runs: the testdata moved", len(dirs))
	}
	for _, rec := range dirs {
		dir := filepath.Dir(rec)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			before, after := readScrape(t, filepath.Join(dir, "baseline.prom")), readScrape(t, filepath.Join(dir, "end.prom"))
			d, ok := rates.Between(before, after)
			if !ok {
				t.Fatal("the server restarted between the scrapes")
			}
			completed, tokens, fromUsage, failed := tally(t, filepath.Join(dir, "records.jsonl"))
			if completed == 0 {
				t.Fatal("no request completed")
			}
			if v, ok := d.Counters[snapshot.RequestsTotal]; ok && v != float64(completed) {
				t.Errorf("the server finished %v requests, the records %d completed", v, completed)
			}
			v, ok := d.Counters[snapshot.TokensPredictedTotal]
			if !ok || !fromUsage || v != float64(tokens) {
				t.Errorf("the server generated %v tokens (%v), the records %d by usage (%v)", v, ok, tokens, fromUsage)
			}
			t.Logf("%d completed (%d failed), %d tokens: the server's counters agree", completed, failed, tokens)
		})
	}
}

// readScrape reads a scrape saved with scrape.Save, as --since reads one.
func readScrape(t *testing.T, path string) *snapshot.Snapshot {
	t.Helper()
	res, err := scrape.Fetch(context.Background(), path, scrape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshotOf(res)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func snapshotOf(res *scrape.Result) (*snapshot.Snapshot, error) {
	f, err := exposition.DetectFormat(res.ContentType, res.Body)
	if err != nil {
		return nil, err
	}
	fams, err := exposition.Parse(res.Body, f)
	if err != nil {
		return nil, err
	}
	s, err := dialect.Map(fams, dialect.Options{StartHeader: res.HeaderStart})
	if err != nil {
		return nil, err
	}
	s.Source, s.ScrapedAt, s.TimeSource, s.StartToken = res.Source, res.ScrapedAt, res.TimeSource, res.StartToken
	return s, nil
}

// tally counts a records file's completed requests and their output
// tokens; fromUsage says every count was the server's usage.
func tally(t *testing.T, path string) (completed, tokens int, fromUsage bool, failed int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fromUsage = true
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Error        string `json:"error"`
			OutputTokens *int   `json:"output_tokens"`
			TokenSource  string `json:"token_source"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Error != "" {
			failed++
			continue
		}
		completed++
		if r.OutputTokens == nil || r.TokenSource != "usage" {
			fromUsage = false
			continue
		}
		tokens += *r.OutputTokens
	}
	return completed, tokens, fromUsage, failed
}

// TestRecord records a run against a real server into testdata/recorded:
// see TestRecordedSelfCheck.
func TestRecord(t *testing.T) {
	spec := strings.Fields(os.Getenv("INFERSCOPE_RECORD"))
	if len(spec) < 2 {
		t.Skip("set INFERSCOPE_RECORD='name base-url [metrics-url]'")
	}
	var c, n, prompt, output int
	if _, err := fmt.Sscan(os.Getenv("INFERSCOPE_RECORD_ARGS"), &c, &n, &prompt, &output); err != nil {
		t.Fatalf("INFERSCOPE_RECORD_ARGS='concurrency requests prompt output': %v", err)
	}
	name, base := spec[0], spec[1]
	metrics := strings.TrimSuffix(base, "/") + "/metrics"
	if len(spec) > 2 {
		metrics = spec[2]
	}
	dir := filepath.Join("testdata", "recorded", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	models, err := Models(context.Background(), load.Client(load.Target{Base: u}), u, load.ChatCompletions)
	if err != nil || len(models) == 0 {
		t.Fatalf("models %v: %v", models, err)
	}
	model := models[0].ID
	var mu sync.Mutex
	var first, last *scrape.Result
	read := func(ctx context.Context) (*snapshot.Snapshot, error) {
		res, err := scrape.Fetch(ctx, metrics, scrape.Options{Timeout: 5 * time.Second})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		if first == nil {
			first = res
		}
		last = res
		mu.Unlock()
		return snapshotOf(res)
	}
	rec, err := os.Create(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	src := &workload.Synthetic{Shape: workload.Shape{API: load.ChatCompletions, Model: model}, Prompt: workload.Dist{Mean: prompt, Min: prompt, Max: prompt},
		Output: workload.Dist{Mean: output, Min: output, Max: output}, FixedOutput: true, UniqueFirst: true, Seed: 1}
	cfg := Config{
		Plan:   load.Plan{Concurrency: c, Requests: n, Target: load.Target{Base: u, API: load.ChatCompletions, Model: model}, Source: src, Seed: 1},
		Scrape: read, Metrics: metrics, Build: build, Interval: 250 * time.Millisecond, Records: NewRecordWriter(rec, JSONL),
		Describe: Describe{Target: base, API: "chat_completions", Model: model},
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for file, res := range map[string]*scrape.Result{"baseline.prom": first, "end.prom": last} {
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := scrape.Save(f, res); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var b strings.Builder
	if err := JSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("self-check: %+v", rep.SelfCheck)
}

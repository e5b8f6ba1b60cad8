package fleet

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/promapi"
	"github.com/inferscope/inferscope/internal/storetest"
)

var record = flag.Bool("record", false, "record the store's answers to testdata/recorded/ from a backfilled Prometheus instead of replaying them")

// recording is every answer a store gave one report: what the unit tests
// replay, so that grouping, totals and rendering are tested without a
// store.
type recording struct {
	// At is when a live recording was read ("now"), in ms; From the
	// window's start, where it is not At less the default window; Sent
	// what the recording sent its servers.
	At       int64                         `json:"at,omitempty"`
	From     int64                         `json:"from,omitempty"`
	Sent     int                           `json:"sent,omitempty"`
	Backend  promapi.Backend               `json:"backend"`
	Metadata map[string][]promapi.Metadata `json:"metadata"`
	Calls    []call                        `json:"calls"`
}

type call struct {
	Kind    string          `json:"kind"` // query, series, label_values, targets_metadata
	Text    string          `json:"text"`
	At      int64           `json:"at,omitempty"` // ms; queries
	Start   int64           `json:"start,omitempty"`
	End     int64           `json:"end,omitempty"`
	Type    string          `json:"type,omitempty"` // the value type of a query's answer
	Result  json.RawMessage `json:"result"`
	ErrText string          `json:"error,omitempty"`
}

func (c call) key() string {
	return fmt.Sprintf("%s|%s|%d|%d|%d", c.Kind, c.Text, c.At, c.Start, c.End)
}

// recorder passes every call to a store and keeps its answer.
type recorder struct {
	promapi.API
	mu  sync.Mutex
	rec recording
}

func (r *recorder) add(c call, v any, err error) {
	if err != nil {
		c.ErrText = err.Error()
	} else {
		b, merr := json.Marshal(v)
		if merr != nil {
			panic(merr)
		}
		c.Result = b
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Calls = append(r.rec.Calls, c)
}

func (r *recorder) Query(ctx context.Context, q string, at time.Time) (model.Value, error) {
	v, err := r.API.Query(ctx, q, at)
	c := call{Kind: "query", Text: q, At: at.UnixMilli()}
	if v != nil {
		c.Type = v.Type().String()
	}
	r.add(c, v, err)
	return v, err
}

func (r *recorder) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	v, err := r.API.QueryRange(ctx, q, start, end, step)
	r.add(call{Kind: "query_range", Text: q, At: step.Milliseconds(), Start: start.UnixMilli(), End: end.UnixMilli(), Type: "matrix"}, v, err)
	return v, err
}

func (r *recorder) Series(ctx context.Context, m []string, start, end time.Time) ([]model.LabelSet, error) {
	v, err := r.API.Series(ctx, m, start, end)
	r.add(call{Kind: "series", Text: strings.Join(m, " "), Start: start.UnixMilli(), End: end.UnixMilli()}, v, err)
	return v, err
}

func (r *recorder) LabelValues(ctx context.Context, l string, m []string, start, end time.Time) ([]string, error) {
	v, err := r.API.LabelValues(ctx, l, m, start, end)
	r.add(call{Kind: "label_values", Text: l + " " + strings.Join(m, " "), Start: start.UnixMilli(), End: end.UnixMilli()}, v, err)
	return v, err
}

func (r *recorder) Metadata(ctx context.Context) (map[string][]promapi.Metadata, error) {
	v, err := r.API.Metadata(ctx)
	r.mu.Lock()
	r.rec.Metadata = v
	r.mu.Unlock()
	return v, err
}

func (r *recorder) TargetsMetadata(ctx context.Context, metric string) ([]promapi.TargetMetadata, error) {
	v, err := r.API.TargetsMetadata(ctx, metric)
	r.add(call{Kind: "targets_metadata", Text: metric}, v, err)
	return v, err
}

// replayer answers from a recording, and fails a call it has no answer
// for (the queries changed: record again).
type replayer struct {
	rec   recording
	calls map[string]call
}

func newReplayer(t *testing.T, path string) *replayer {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (record it: go test ./internal/fleet -run %s -record)", err, t.Name())
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	p := &replayer{calls: map[string]call{}}
	if err := json.NewDecoder(zr).Decode(&p.rec); err != nil {
		t.Fatal(err)
	}
	for _, c := range p.rec.Calls {
		p.calls[c.key()] = c
	}
	return p
}

func (p *replayer) find(c call) (call, error) {
	got, ok := p.calls[c.key()]
	if !ok {
		return call{}, fmt.Errorf("not recorded: %s %q (record again with -record)", c.Kind, c.Text)
	}
	if got.ErrText != "" {
		return call{}, fmt.Errorf("%s", got.ErrText)
	}
	return got, nil
}

func (p *replayer) Query(_ context.Context, q string, at time.Time) (model.Value, error) {
	c, err := p.find(call{Kind: "query", Text: q, At: at.UnixMilli()})
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "vector":
		var v model.Vector
		err = json.Unmarshal(c.Result, &v)
		return v, err
	case "matrix":
		var v model.Matrix
		err = json.Unmarshal(c.Result, &v)
		return v, err
	}
	return nil, fmt.Errorf("recorded type %q", c.Type)
}

func (p *replayer) QueryRange(_ context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	c, err := p.find(call{Kind: "query_range", Text: q, At: step.Milliseconds(), Start: start.UnixMilli(), End: end.UnixMilli()})
	if err != nil {
		return nil, err
	}
	var v model.Matrix
	return v, json.Unmarshal(c.Result, &v)
}

func (p *replayer) Series(_ context.Context, m []string, start, end time.Time) ([]model.LabelSet, error) {
	c, err := p.find(call{Kind: "series", Text: strings.Join(m, " "), Start: start.UnixMilli(), End: end.UnixMilli()})
	if err != nil {
		return nil, err
	}
	var v []model.LabelSet
	return v, json.Unmarshal(c.Result, &v)
}

func (p *replayer) LabelValues(_ context.Context, l string, m []string, start, end time.Time) ([]string, error) {
	c, err := p.find(call{Kind: "label_values", Text: l + " " + strings.Join(m, " "), Start: start.UnixMilli(), End: end.UnixMilli()})
	if err != nil {
		return nil, err
	}
	var v []string
	return v, json.Unmarshal(c.Result, &v)
}

func (p *replayer) Metadata(context.Context) (map[string][]promapi.Metadata, error) {
	if len(p.rec.Metadata) == 0 {
		return nil, promapi.ErrNoMetadata
	}
	return p.rec.Metadata, nil
}

func (p *replayer) TargetsMetadata(_ context.Context, metric string) ([]promapi.TargetMetadata, error) {
	c, err := p.find(call{Kind: "targets_metadata", Text: metric})
	if err != nil {
		return nil, err
	}
	var v []promapi.TargetMetadata
	return v, json.Unmarshal(c.Result, &v)
}

func (p *replayer) Backend() promapi.Backend { return p.rec.Backend }

// recordedAPI is the API a recorded test reads: a replay of
// testdata/recorded/<name>.json.gz, or, under -record, a backfilled
// Prometheus whose answers are written there when the test ends: the
// range fixture with the GPU fixture's dcgm-exporter series beside it
// (gpu_test.go), so that the recorded tables show the GPU columns.
func recordedAPI(t *testing.T, name string) promapi.API {
	t.Helper()
	if !*record {
		return newReplayer(t, recordedPath(name))
	}
	s := storetest.Prometheus(t, storetest.Config{Backfill: writeFixtureOf(t, t.TempDir(), fixPods(), writeGPUs)})
	return recordingOf(t, name, client(t, s), time.Time{})
}

func recordedPath(name string) string { return filepath.Join("testdata", "recorded", name+".json.gz") }

// recordingOf records every answer c gives to testdata/recorded/<name>.json.gz
// when the test ends, with at, the time read as "now" (zero: none).
func recordingOf(t *testing.T, name string, c *promapi.Client, at time.Time) *recorder {
	t.Helper()
	path := recordedPath(name)
	r := &recorder{API: c, rec: recording{Backend: c.Backend()}}
	if !at.IsZero() {
		r.rec.At = at.UnixMilli()
	}
	// A store's version is not the test's business.
	r.rec.Backend.Version = "2.42.0"
	t.Cleanup(func() {
		sort.Slice(r.rec.Calls, func(i, j int) bool { return r.rec.Calls[i].key() < r.rec.Calls[j].key() })
		b, err := json.MarshalIndent(r.rec, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(append(b, '\n'))
		zw.Close()
		if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	return r
}

// TestRecordedRange replays what a backfilled Prometheus answered for the
// fixture's window: the grouping, each instance's window and the totals
// (the same hand-worked values as TestRangeBackfilled), and the table and
// JSON as golden files.
func TestRecordedRange(t *testing.T) {
	api := recordedAPI(t, "range")
	push, f := both(t, api, Options{From: fixFrom, To: fixTo, Range: true, By: k8s, Trend: true})
	got := byInstance(f)
	want := []string{"llm/sglang-a", "llm/vllm-a", "llm/vllm-b", "llm/vllm-c", "llm/vllm-d"}
	if ids := keys(got); len(ids) != len(want) {
		t.Fatalf("instances %v, want %v", ids, want)
	}
	for i, in := range f.Instances {
		if in.ID != want[i] {
			t.Errorf("instance %d is %s, want %s (sorted by id)", i, in.ID, want[i])
		}
		if in.Labels["namespace"] != "llm" || in.Labels["pod"] != strings.TrimPrefix(want[i], "llm/") {
			t.Errorf("%s: labels %v, want namespace and pod", in.ID, in.Labels)
		}
	}
	if in := got["llm/vllm-a"]; in.Dialect != "vllm" || len(in.Targets) != 1 || in.Targets[0] != (Target{"vllm", "10.0.0.1:8000"}) {
		t.Errorf("vllm-a: dialect %s targets %v", in.Dialect, in.Targets)
	}
	if got["llm/sglang-a"].Dialect != "sglang" {
		t.Errorf("sglang-a read as %s", got["llm/sglang-a"].Dialect)
	}
	checkTotals(t, f)
	f.Store = "http://prometheus:9090" // the recording's store had a random port
	push.Store = f.Store
	// The table and its rows in JSON as the pushdown reads them (the
	// command line's), the JSON as the rebuild does (--read-whole: every
	// figure of every report).
	var b bytes.Buffer
	if err := push.Text(&b, TextOptions{Width: 160}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "range.txt", b.String())
	b.Reset()
	if err := push.Text(&b, TextOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "range-80.txt", b.String())
	b.Reset()
	if err := f.JSON(&b, false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "range.json", b.String())
	// -o json: the table's rows, from the table's read.
	b.Reset()
	if err := push.JSON(&b, false); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "range-rows.json", b.String())
	// Sorted by a figure: the busiest first, those without it last.
	if err := f.Sort("requests"); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, in := range f.Instances {
		order = append(order, in.ID)
	}
	if strings.Join(order, " ") != "llm/vllm-a llm/sglang-a llm/vllm-d llm/vllm-b llm/vllm-c" {
		t.Errorf("sorted by requests: %v", order)
	}
	if err := f.Sort("speed"); err == nil {
		t.Error("--sort speed: no error")
	}
	// --model: the instances that serve it, read for it alone.
	f, err := Run(context.Background(), api, Options{From: fixFrom, To: fixTo, Range: true, Model: "mistral", By: k8s})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Instances) != 1 || f.Instances[0].ID != "llm/vllm-c" || f.Instances[0].snap.Model != "mistral" {
		t.Errorf("--model mistral: %v", keys(byInstance(f)))
	}
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/analysis"
	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/render"
)

const fixtures = "../../testdata/tabbyapi/"

// runCLI runs inferscope with args and returns stdout, stderr and the exit code.
func runCLI(t testing.TB, stdin string, args ...string) (string, string, int) {
	t.Helper()
	io, out, errb := iostreams.Test(stdin, false, 0)
	code := run(context.Background(), args, io)
	return out.String(), errb.String(), code
}

var reportFixtures = []string{
	"idle", "no-requests", "busy", "drafter", "offload-thrashing", "offload-healthy",
	"hybrid-raise", "hybrid-kv-constraint", "hybrid-not-budget", "hybrid-negligible",
	"overlap", "prefill-only", "long-context", "split-93-7", "split-50-50", "utilization",
}

// Every fixture rendered as text (one column at 100 cells, two at 160) and
// JSON, through the command line as a user runs it on a saved scrape.
func TestGoldenReports(t *testing.T) {
	for _, name := range reportFixtures {
		file := fixtures + name + ".prom"
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "", file, "--width", "100")
			if code != ExitOK || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden.Check(t, name+".txt", out)
			out, _, _ = runCLI(t, "", "--width", "160", file)
			golden.Check(t, name+".2col.txt", out)
			out, _, _ = runCLI(t, "", "--json", file)
			golden.Check(t, name+".json", out)
			if !json.Valid([]byte(out)) {
				t.Fatal("invalid JSON")
			}
		})
	}
	out, _, _ := runCLI(t, "", fixtures+"long-context.prom", "--hist", "--width", "120", "--columns", "2")
	golden.Check(t, "long-context.hist.txt", out)
}

var dialectFixtures = []string{
	"vllm-0.8", "vllm-0.10", "vllm-new", "vllm-0.15", "vllm-0.32", "vllm-asleep", "aphrodite", "llamacpp-old", "llamacpp-new",
	"sglang-old", "sglang-new", "sglang-44cedc2", "sglang-2026", "sglang-2026-spec", "tgi", "tgi-3.3",
	"trtllm-1.2", "trtllm-new", "dynamo-frontend", "lmdeploy-0.12", "lmdeploy-new",
}

// Every dialect fixture as text and JSON, and vLLM's two models one at a time.
func TestGoldenDialects(t *testing.T) {
	for _, name := range dialectFixtures {
		file := "../../testdata/dialects/" + name + ".prom"
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "", file, "--width", "160")
			if code != ExitOK || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden.Check(t, name+".2col.txt", out)
			out, _, _ = runCLI(t, "", "--json", file)
			golden.Check(t, name+".json", out)
		})
	}
	_, errOut, code := runCLI(t, "", "../../testdata/dialects/vllm-new.prom", "--model", "nope")
	if code != ExitError || !strings.Contains(errOut, "--model takes one of: ") {
		t.Fatalf("unknown model: exit %d: %s", code, errOut)
	}
}

// Text and JSON are two renderings of one report: every row value of the
// text appears in the JSON sections, and the JSON has the schema's fields.
func TestJSONSchema(t *testing.T) {
	out, _, code := runCLI(t, "", "--json", fixtures+"offload-thrashing.prom")
	if code != ExitOK {
		t.Fatal(code)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "inferscope_version", "source", "dialect", "source_kind", "scraped_at", "scrape_seconds", "scalars", "histograms", "figures", "sections", "notes"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if doc["schema"] != 2.0 || doc["dialect"] != "tabbyapi" || doc["source_kind"] != "server" || doc["scraped_at"] != "2026-11-30T12:00:00Z" {
		t.Errorf("header fields: %v %v %v", doc["schema"], doc["dialect"], doc["scraped_at"])
	}
	figs := doc["figures"].(map[string]any)
	for _, k := range []string{"prefix_cache_hit_ratio", "request_seconds", "mean_in_flight", "busy_at_most", "engine_busy_seconds", "utilization",
		"prefill_share", "decode_share",
		"dominant_phase", "exchange_rate", "break_even", "spec_decode_acceptance", "spec_decode_tokens_per_step",
		"kv_offload_hit_share", "kv_offload_payback", "recurrent_capped_share"} {
		if _, ok := figs[k]; !ok {
			t.Errorf("figures lacks %q", k)
		}
	}
	// No drafter here: null, never a made-up 0.
	if figs["spec_decode_acceptance"] != nil {
		t.Errorf("spec_decode_acceptance = %v, want null", figs["spec_decode_acceptance"])
	}
	h := doc["histograms"].(map[string]any)["request_prompt_tokens"].(map[string]any)
	buckets := h["buckets"].([]any)
	if last := buckets[len(buckets)-1].(map[string]any); last["le"] != "+Inf" {
		t.Errorf("last bucket le = %v", last["le"])
	}
	notes := doc["notes"].([]any)
	if len(notes) != 1 || notes[0].(map[string]any)["id"] != "kv_offload_thrashing" {
		t.Errorf("notes = %v", notes)
	}
}

func TestNoRequestsJSONNulls(t *testing.T) {
	out, _, _ := runCLI(t, "", "--json", fixtures+"no-requests.prom")
	var doc struct {
		Histograms map[string]struct {
			Mean, P50 *float64
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if h := doc.Histograms["e2e_request_latency_seconds"]; h.Mean != nil || h.P50 != nil {
		t.Errorf("empty histogram mean/p50 = %v/%v, want null", h.Mean, h.P50)
	}
}

// --fail-on exits 1 when a note that severe fires, and says on stderr
// which: its id and severity (issue 21: one-shot was silent).
func TestFailOn(t *testing.T) {
	tests := []struct {
		fixture, level string
		code           int
		stderr         string
	}{
		{"offload-thrashing", "warn", ExitFailOn, "inferscope: --fail-on warn tripped: kv_offload_thrashing (warn)\n"},
		{"offload-thrashing", "bad", ExitOK, ""},
		{"hybrid-raise", "bad", ExitFailOn, "inferscope: --fail-on bad tripped: recurrent_raise_budget (bad)\n"},
		{"hybrid-raise", "warn", ExitFailOn, "inferscope: --fail-on warn tripped: recurrent_raise_budget (bad), recurrent_live_kv_evictions (warn)\n"},
		{"hybrid-not-budget", "warn", ExitOK, ""}, // info notes never trip it
		{"idle", "warn", ExitOK, ""},
	}
	for _, tt := range tests {
		for _, json := range []bool{false, true} {
			args := []string{"--fail-on", tt.level, fixtures + tt.fixture + ".prom"}
			if json {
				args = append(args, "-o", "json")
			}
			out, errOut, code := runCLI(t, "", args...)
			if code != tt.code || errOut != tt.stderr || out == "" {
				t.Errorf("%v: exit %d, stderr %q; want %d, %q, and the report", args, code, errOut, tt.code, tt.stderr)
			}
		}
	}
}

// The one version string: what inferscope version prints first, what the
// JSON report carries and what a scrape sends as its User-Agent.
func TestOneVersionString(t *testing.T) {
	var agent string
	body := readFile(t, fixtures+"idle.prom")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent = r.Header.Get("User-Agent")
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	defer srv.Close()
	out, _, code := runCLI(t, "", "version")
	first, _, _ := strings.Cut(out, "\n")
	v := strings.TrimPrefix(first, "inferscope ")
	if code != ExitOK || v == first || v == "" {
		t.Fatalf("version: exit %d, %q", code, out)
	}
	if vflag, _, _ := runCLI(t, "", "--version"); vflag != out {
		t.Errorf("--version %q, version %q", vflag, out)
	}
	rep, errOut, code := runCLI(t, "", "-o", "json", srv.URL)
	var doc struct {
		Version string `json:"inferscope_version"`
	}
	if err := json.Unmarshal([]byte(rep), &doc); err != nil || code != ExitOK {
		t.Fatalf("exit %d: %v %s", code, err, errOut)
	}
	if doc.Version != v || agent != "inferscope/"+v {
		t.Errorf("JSON %q, User-Agent %q; version %q", doc.Version, agent, v)
	}
	help, _, _ := runCLI(t, "", "--help")
	if !strings.Contains(help, "-v, --version") {
		t.Error("--help does not list --version")
	}
}

// A report whose time nobody knows (the demo's --once runs on the
// simulator's clock) leaves time_source out, as docs/json.md says: never
// null.
func TestTimeSourceAbsent(t *testing.T) {
	out, errOut, code := runCLI(t, "", "demo", "--once", "--sim-time", "1m", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if v, ok := doc["time_source"]; ok {
		t.Errorf("time_source = %v, want the key left out", v)
	}
}

func TestStdinAndInterspersedFlags(t *testing.T) {
	body, err := os.ReadFile(fixtures + "split-50-50.prom")
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, string(body), "-", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Figures struct {
			ExchangeRate *float64 `json:"exchange_rate"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Figures.ExchangeRate == nil || *doc.Figures.ExchangeRate != 1 {
		t.Fatalf("exchange rate from stdin: %v %v", doc.Figures.ExchangeRate, err)
	}
}

func TestSaveAndSince(t *testing.T) {
	dir := t.TempDir()
	before := filepath.Join(dir, "before.prom")
	// --save writes the raw scrape with its time; reading it back gives the
	// same report.
	out1, errOut, code := runCLI(t, "", "--save", before, "--json", fixtures+"split-50-50.prom")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out2, _, _ := runCLI(t, "", "--json", before)
	var a, b map[string]any
	json.Unmarshal([]byte(out1), &a)
	json.Unmarshal([]byte(out2), &b)
	if a["scraped_at"] != b["scraped_at"] || a["scraped_at"] != "2026-11-30T12:00:00Z" {
		t.Fatalf("saved scrape time %v → %v", a["scraped_at"], b["scraped_at"])
	}
	// A later scrape: 10 more requests of 1000 prompt tokens, 60 s later.
	later := strings.Replace(string(readFile(t, fixtures+"split-50-50.prom")), "scraped_at=2026-11-30T12:00:00Z", "scraped_at=2026-11-30T12:01:00Z", 1)
	later = strings.Replace(later, "tabbyapi:prompt_tokens_total 20000.0", "tabbyapi:prompt_tokens_total 30000.0", 1)
	later = strings.Replace(later, "tabbyapi:requests_total 20.0", "tabbyapi:requests_total 30.0", 1)
	after := filepath.Join(dir, "after.prom")
	os.WriteFile(after, []byte(later), 0o644)
	out, errOut, code := runCLI(t, "", "--json", "--since", before, after)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Rates map[string]map[string]*float64
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var col map[string]*float64
	for _, c := range doc.Rates {
		col = c
	}
	// 10000 tokens and 10 requests over 60 s.
	if col == nil || col["prompt_computed"] == nil || *col["prompt_computed"] != 10000.0/60 || *col["requests"] != 10.0/60 {
		t.Fatalf("rates = %v", doc.Rates)
	}
	// The wrong way round is an error, not negative rates.
	_, errOut, code = runCLI(t, "", "--since", after, before)
	if code != ExitError || !strings.Contains(errOut, "earlier scrape") {
		t.Fatalf("reversed --since: exit %d: %s", code, errOut)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestColorRule(t *testing.T) {
	io, out, _ := iostreams.Test("", true, 120)
	run(context.Background(), []string{fixtures + "busy.prom"}, io)
	if !strings.Contains(out.String(), "\x1b[") {
		t.Error("no colour on a terminal")
	}
	io, out, _ = iostreams.Test("", true, 120)
	io.Getenv = func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}
	run(context.Background(), []string{fixtures + "busy.prom"}, io)
	if strings.Contains(out.String(), "\x1b") {
		t.Error("colour under NO_COLOR")
	}
	io, out, _ = iostreams.Test("", true, 120)
	run(context.Background(), []string{"--no-color", fixtures + "busy.prom"}, io)
	if strings.Contains(out.String(), "\x1b") {
		t.Error("colour under --no-color")
	}
}

// FuzzPipeline: parse + analyze + render never panics on any body, and the
// text never carries an escape byte when colour is off.
func FuzzPipeline(f *testing.F) {
	for _, name := range []string{"idle", "drafter", "hybrid-raise", "offload-healthy", "no-requests"} {
		body, err := os.ReadFile(fixtures + name + ".prom")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add([]byte("tabbyapi:requests_total -nan\ntabbyapi:kv_cache_max_tokens 0\ntabbyapi:kv_cache_tokens 5\n"))
	f.Add([]byte("tabbyapi:prompt_seconds_total -1\ntabbyapi:tokens_predicted_seconds_total 1e308\ntabbyapi:process_start_time_seconds +Inf\n"))
	f.Add([]byte("# TYPE tabbyapi:request_prompt_tokens histogram\ntabbyapi:request_prompt_tokens_bucket{le=\"10\"} 5\ntabbyapi:request_prompt_tokens_bucket{le=\"+Inf\"} 3\ntabbyapi:request_prompt_tokens_count 3\ntabbyapi:request_prompt_tokens_sum NaN\ntabbyapi:n_tokens_max 2\n"))
	f.Add([]byte("tabbyapi:x{model=\"\x1b]0;pwned\x07\"} 1\n"))
	// Real servers' expositions, and the invalid values of issue 15.
	real, _ := filepath.Glob(realDir + "*.prom")
	for _, file := range real {
		body, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add([]byte("tabbyapi:requests_total -180\ntabbyapi:prompt_tokens_total -208000\ntabbyapi:prompt_seconds_total 84\ntabbyapi:tokens_predicted_seconds_total 600\n"))
	f.Add([]byte("tabbyapi:kv_cache_tokens 1.3732910156250000e16\ntabbyapi:kv_cache_max_tokens 100000\ntabbyapi:kv_offload_bytes 1e300\ntabbyapi:kv_offload_max_bytes 1\ntabbyapi:kv_offload_max_tokens 1\n"))
	f.Add([]byte("tabbyapi:spec_decode_num_draft_tokens_total NaN\ntabbyapi:spec_decode_num_accepted_tokens_total +Inf\ntabbyapi:spec_decode_requests_total 3\ntabbyapi:kv_offload_written_bytes_total -Inf\n"))
	f.Add([]byte("# TYPE tabbyapi:time_to_first_token_seconds histogram\ntabbyapi:time_to_first_token_seconds_bucket{le=\"1\"} 5\ntabbyapi:time_to_first_token_seconds_bucket{le=\"2\"} 3\ntabbyapi:time_to_first_token_seconds_count 2\ntabbyapi:time_to_first_token_seconds_sum -4\n"))
	f.Add([]byte("tabbyapi:requests_total 180\ntabbyapi:requests_total 999\n"))
	f.Add([]byte("a{" + strings.Repeat("l=\"v\",", 100) + "} 1\n"))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		format, err := exposition.DetectFormat("", body)
		if err != nil {
			return
		}
		fams, err := exposition.Parse(body, format)
		if err != nil {
			return
		}
		snap, err := dialect.Map(fams, dialect.Options{})
		if err != nil {
			return
		}
		snap.ScrapedAt = now
		rep := analysis.Analyze(snap, analysis.Options{Hist: true, Raw: true})
		// A figure built from a non-finite input is absent, never NaN.
		for _, sec := range rep.Sections {
			for _, rw := range sec.Rows {
				if strings.Contains(rw.Value, "NaN") {
					t.Fatalf("%s/%s shows %q", sec.ID, rw.ID, rw.Value)
				}
			}
		}
		var buf bytes.Buffer
		if err := render.Text(&buf, rep, render.Options{Width: 100}); err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(buf.Bytes(), 0x1b) >= 0 {
			t.Fatal("escape byte in colourless output")
		}
		buf.Reset()
		if err := render.JSON(&buf, rep); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(buf.Bytes()) {
			t.Fatal("invalid JSON")
		}
	})
}

func TestAuthHeaders(t *testing.T) {
	body := readFile(t, fixtures+"idle.prom")
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	defer srv.Close()
	env := func(k string) string {
		if k == "INFERSCOPE_BEARER_TOKEN" {
			return "from-env"
		}
		return ""
	}
	for _, args := range [][]string{{srv.URL}, {"--header", "Authorization: Bearer from-flag", srv.URL}} {
		io, _, errb := iostreams.Test("", false, 0)
		io.Getenv = env
		if code := run(context.Background(), args, io); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errb)
		}
	}
	if len(got) != 2 || got[0] != "Bearer from-env" || got[1] != "Bearer from-flag" {
		t.Fatalf("Authorization sent: %q", got)
	}
}

// JSON keeps the server's own series with their labels under "raw", next to
// the canonical figures.
func TestJSONRaw(t *testing.T) {
	out, _, code := runCLI(t, "", "--json", "../../testdata/dialects/vllm-new.prom")
	if code != ExitOK {
		t.Fatal(code)
	}
	var doc struct {
		Raw []struct {
			Name, Type string
			Series     []struct {
				Labels  map[string]string
				Value   *float64
				Buckets []struct{ LE string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var hist, preempt bool
	for _, f := range doc.Raw {
		switch f.Name {
		case "vllm:num_preemptions_total":
			preempt = true
			if len(f.Series) == 0 || f.Series[0].Labels["model_name"] == "" || f.Series[0].Labels["engine"] == "" || f.Series[0].Value == nil {
				t.Errorf("preemptions series lost its labels or value: %+v", f.Series)
			}
		case "vllm:e2e_request_latency_seconds":
			hist = true
			b := f.Series[0].Buckets
			if f.Type != "histogram" || len(b) == 0 || b[len(b)-1].LE != "+Inf" {
				t.Errorf("histogram raw: %s %+v", f.Type, b)
			}
		}
	}
	if !hist || !preempt {
		t.Fatalf("raw lacks families (histogram %v, preemptions %v)", hist, preempt)
	}
}

// Rates read canonical counters, so they work for every dialect: two vLLM
// scrapes 100 s apart, with engine 0 of one model generating 30,000 more
// tokens and finishing 50 more requests (and a model filter respected).
func TestSinceVLLM(t *testing.T) {
	dir := t.TempDir()
	before := readFile(t, "../../testdata/dialects/vllm-new.prom")
	after := strings.Replace(string(before), "scraped_at=2026-05-29T05:59:50Z", "scraped_at=2026-05-29T06:01:30Z", 1)
	after = strings.Replace(after,
		`vllm:generation_tokens_total{model_name="meta-llama/Llama-3.3-70B-Instruct",engine="0"} 820000.0`,
		`vllm:generation_tokens_total{model_name="meta-llama/Llama-3.3-70B-Instruct",engine="0"} 850000.0`, 1)
	after = strings.Replace(after,
		`vllm:request_success_total{model_name="meta-llama/Llama-3.3-70B-Instruct",engine="0",finished_reason="stop"} 4100.0`,
		`vllm:request_success_total{model_name="meta-llama/Llama-3.3-70B-Instruct",engine="0",finished_reason="stop"} 4150.0`, 1)
	b, a := filepath.Join(dir, "b.prom"), filepath.Join(dir, "a.prom")
	os.WriteFile(b, before, 0o644)
	os.WriteFile(a, []byte(after), 0o644)
	rates := func(args ...string) map[string]*float64 {
		t.Helper()
		out, errOut, code := runCLI(t, "", append([]string{"--json", "--since", b, a}, args...)...)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var doc struct {
			Rates map[string]map[string]*float64
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Rates["since"]
	}
	all := rates()
	if g := all["generation"]; g == nil || *g != 300 { // 30,000 tokens / 100 s
		t.Errorf("generation rate %v, want 300", g)
	}
	if r := all["requests"]; r == nil || *r != 0.5 { // 50 requests / 100 s
		t.Errorf("request rate %v, want 0.5", r)
	}
	qwen := rates("--model", "Qwen/Qwen3-Next-80B-A3B-Instruct")
	if g := qwen["generation"]; g == nil || *g != 0 {
		t.Errorf("the other model's generation rate %v, want 0", g)
	}
}

// Refusals at admission over a window (issue 28): two scrapes of vLLM at
// its admission limit 100 s apart, 40 more refused by the request cap and
// 500 engine steps of 60 tokens: 0.4 refused a second, the note made on
// the window; and a window with none refused says the 312 were before it.
func TestSinceVLLMRefused(t *testing.T) {
	dir := t.TempDir()
	before := string(readFile(t, "../../testdata/dialects/vllm-0.32.prom"))
	later := func(refused, steps, stepTokens string) string {
		s := strings.Replace(before, "scraped_at=2026-12-04T10:00:00Z", "scraped_at=2026-12-04T10:01:40Z", 1)
		s = strings.Replace(s, `vllm:admission_rejections_total{model_name="Qwen/Qwen3-8B",reason="max_num_queued_reqs"} 290.0`,
			`vllm:admission_rejections_total{model_name="Qwen/Qwen3-8B",reason="max_num_queued_reqs"} `+refused, 1)
		s = strings.Replace(s, `vllm:iteration_tokens_total_count{model_name="Qwen/Qwen3-8B",engine="0"} 45000.0`,
			`vllm:iteration_tokens_total_count{model_name="Qwen/Qwen3-8B",engine="0"} `+steps, 1)
		s = strings.Replace(s, `vllm:iteration_tokens_total_bucket{model_name="Qwen/Qwen3-8B",engine="0",le="+Inf"} 45000.0`,
			`vllm:iteration_tokens_total_bucket{model_name="Qwen/Qwen3-8B",engine="0",le="+Inf"} `+steps, 1)
		return strings.Replace(s, `vllm:iteration_tokens_total_sum{model_name="Qwen/Qwen3-8B",engine="0"} 2930000.0`,
			`vllm:iteration_tokens_total_sum{model_name="Qwen/Qwen3-8B",engine="0"} `+stepTokens, 1)
	}
	b := filepath.Join(dir, "b.prom")
	os.WriteFile(b, []byte(before), 0o644)
	report := func(after string) (map[string]*float64, []string) {
		t.Helper()
		a := filepath.Join(dir, "a.prom")
		os.WriteFile(a, []byte(after), 0o644)
		out, errOut, code := runCLI(t, "", "--json", "--since", b, a)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var doc struct {
			Rates map[string]map[string]*float64
			Notes []struct{ ID, Text string }
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		var notes []string
		for _, n := range doc.Notes {
			notes = append(notes, n.ID+": "+n.Text)
		}
		return doc.Rates["since"], notes
	}
	has := func(notes []string, prefix string) bool {
		for _, n := range notes {
			if strings.HasPrefix(n, prefix) {
				return true
			}
		}
		return false
	}
	rates, notes := report(later("330.0", "45500.0", "2960000.0"))
	if r := rates["refused"]; r == nil || *r != 0.4 { // 40 refused / 100 s
		t.Errorf("refused rate %v, want 0.4", r)
	}
	if r := rates["step_tokens"]; r == nil || *r != 60 { // 30,000 tokens / 500 steps
		t.Errorf("tokens per step %v, want 60", r)
	}
	if !has(notes, "requests_refused: in the 1m40s between the two scrapes: 40 requests were refused") {
		t.Errorf("no windowed refusal note: %q", notes)
	}
	rates, notes = report(later("290.0", "45000.0", "2930000.0"))
	if r := rates["refused"]; r == nil || *r != 0 {
		t.Errorf("refused rate with none %v, want 0", r)
	}
	if has(notes, "requests_refused") || !has(notes, "before_window: not in the 1m40s between the two scrapes, only before it: 312 requests were refused") {
		t.Errorf("a window with none refused: %q", notes)
	}
}

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	io2 "io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/demo"
	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/httpsafe/hostiletest"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/storetest"
	"github.com/inferscope/inferscope/internal/version"
)

func TestFleetHelp(t *testing.T) {
	for _, args := range [][]string{{"fleet", "--help"}, {"fleet", "--prometheus", "x", "-h"}} {
		io, out, _ := iostreams.Test("", false, 0)
		if code := run(context.Background(), args, io); code != ExitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		golden.Check(t, "fleet-help.txt", out.String())
	}
}

// Each mistake on the command line is one error line and a hint, exit 2.
func TestFleetFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
		hint string
	}{
		{[]string{}, "needs --prometheus URL", "--prometheus http://prometheus:9090"},
		{[]string{"--prometheus", "p:9090", "extra"}, `unexpected argument "extra"`, "flags only"},
		{[]string{"--prometheus", "p:9090", "--last", "1h", "--from", "2026-01-01T00:00Z"}, "--last does not go with --from", "either --last"},
		{[]string{"--prometheus", "p:9090", "--to", "2026-01-01T00:00Z"}, "--to needs --from", "--from T"},
		{[]string{"--prometheus", "p:9090", "--from", "2026-01-01T02:00"}, "has no time zone", "add Z for UTC"},
		{[]string{"--prometheus", "p:9090", "--from", "yesterday"}, "not a time", "RFC 3339"},
		{[]string{"--prometheus", "p:9090", "--from", "2026-01-01T03:00Z", "--to", "2026-01-01T02:00Z"}, "is not before --to", "after --from"},
		{[]string{"--prometheus", "p:9090", "--from", "2999-01-01T03:00Z"}, "in the future", "RFC 3339"},
		{[]string{"--prometheus", "p:9090", "--last", "90d"}, "longer than inferscope reads", "--last 7d"},
		{[]string{"--prometheus", "p:9090", "--last", "1h", "--window", "1m"}, "--window sets the window", "leave out --window"},
		// A window the store cannot take ([0ms]) is the flag's fault, not --selector's.
		{[]string{"--prometheus", "p:9090", "--last", "1ns"}, "--last 1ns is shorter than the shortest range a store reads (1ms)", "at least 1ms, such as --last 1h"},
		{[]string{"--prometheus", "p:9090", "--window", "1ns"}, "--window 1ns is shorter than the shortest range", "such as --window 5m"},
		{[]string{"--prometheus", "p:9090", "--window", "999us"}, "--window 999µs is shorter", "at least 1ms"},
		{[]string{"--prometheus", "p:9090", "--from", "2026-01-01T02:00:00.0000001Z", "--to", "2026-01-01T02:00:00.0000002Z"}, "the range --from to --to (100ns) is shorter", "at least 1ms"},
		{[]string{"--prometheus", "p:9090", "--selector", `up{job="x"}`}, "not a query or a metric name", "inside braces"},
		{[]string{"--prometheus", "p:9090", "--instance", "vllm-7"}, "expected label=value", "--instance pod=vllm-7"},
		{[]string{"--prometheus", "p:9090", "--by", "name space"}, "is not a label name", "--by namespace,pod"},
		{[]string{"--prometheus", "p:9090", "--sort", "speed"}, `--sort "speed" is not a column`, "req"},
		{[]string{"--prometheus", "p:9090", "--watch", "100ms"}, "shorter than the shortest refresh interval (200ms)", "--watch 200ms"},
		{[]string{"--prometheus", "p:9090", "--watch", "10s", "--last", "1h"}, "does not go with a past range", "once"},
		{[]string{"--prometheus", "p:9090", "--fail-on", "info"}, `"info" is not a severity`, "--fail-on warn"},
		{[]string{"--prometheus", "p:9090", "--header", "nocolon"}, "--header", "Name: value"},
		{[]string{"--prometheus", "ftp://p"}, "scheme must be http or https", "API base"},
		{[]string{"--prometheus", "p:9090", "--timeout", "0s"}, "--timeout must be positive", "30s"},
		{[]string{"--prometheus", "p:9090", "--max-bytes", "0"}, "--max-bytes must be positive", "--max-bytes 256M"},
		{[]string{"--prometheus", "p:9090", "--max-bytes", "2G"}, "--max-bytes 2G is more than inferscope reads (at most 1G)", "64M"},
		{[]string{"--prometheus", "p:9090", "--max-bytes", "lots"}, "not a size", "fleet --help"},
		{[]string{"--prometheus", "p:9090", "--max-instances", "0"}, "--max-instances must be positive", "--max-instances 2000"},
		{[]string{"--prometheus", "p:9090", "--max-instances", "1000000"}, "more than inferscope reads at once", "--selector"},
		{[]string{"--prometheus", "p:9090", "--selector", "{" + strings.Repeat(`pod!="vllm-00001",`, 667)}, "missing } at byte 12008 of 12007", "inside braces"},
	} {
		io, out, errb := iostreams.Test("", false, 0)
		code := run(context.Background(), append([]string{"fleet"}, tc.args...), io)
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if code != ExitError || len(lines) < 2 || !strings.Contains(lines[0], tc.err) || !strings.Contains(lines[1], tc.hint) ||
			!strings.HasPrefix(lines[0], "inferscope: error: ") || !strings.HasPrefix(lines[1], "inferscope: hint: ") || out.Len() > 0 {
			t.Errorf("%v: exit %d\n%s\nwant error with %q, hint with %q", tc.args, code, errb, tc.err, tc.hint)
		}
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-12-01T02:00Z":         time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC),
		"2026-12-01T02:00:30+01:00": time.Date(2026, 12, 1, 1, 0, 30, 0, time.UTC),
		"2026-12-01 02:00Z":         time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC),
		"1764554400":                time.Unix(1764554400, 0),
		"1764554400.5":              time.Unix(1764554400, 5e8),
	} {
		got, err := parseTime("from", in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
}

// A store's refusals, through the one way out: the store's words, and
// what to try.
func TestFleetStoreErrors(t *testing.T) {
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		args   []string
		err    string
		hint   string
	}{
		{"down", 0, "", nil, "cannot reach the store", "check --prometheus"},
		{"tenant", 401, "no org id", nil, "wants a tenant", "X-Scope-OrgID"},
		{"not the API", 404, "404 page not found", nil, "answered HTTP 404", "/prometheus"},
		{"sample limit", 422, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`,
			[]string{"--last", "1h"}, "too many samples", "--last 30m instead of 1h"},
		{"the store's series limit", 422, `{"status":"error","errorType":"422","error":"cannot fetch time series for \"filters=[{__name__=~\\\"(?:vllm:|ray_vllm:|ray_vllm_).+\\\",__name__!~\\\".+_bucket\\\"}], timeRange=[2026-12-06T09:33:02Z..2026-12-06T09:38:02Z]\": cannot find metric names: error when searching tsids: the number of matching timeseries exceeds 30000; either narrow down the search or increase -search.max* command-line flag values at vmselect; see https://docs.victoriametrics.com/#resource-usage-limits"}`,
			nil, "exceeds 30000", "VictoriaMetrics' -search.maxUniqueTimeseries"},
		{"server error", 503, `{"status":"error","errorType":"unavailable","error":"TSDB not ready"}`, nil, "TSDB not ready", "its log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := "http://" + deadAddr
			if tc.status != 0 {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if strings.HasSuffix(r.URL.Path, "/buildinfo") && tc.status == 422 {
						w.Write([]byte(`{"status":"success","data":{"version":"2.42.0"}}`))
						return
					}
					w.WriteHeader(tc.status)
					w.Write([]byte(tc.body))
				}))
				defer srv.Close()
				url = srv.URL
			}
			io, _, errb := iostreams.Test("", false, 0)
			code := run(context.Background(), append([]string{"fleet", "--prometheus", url}, tc.args...), io)
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			if code != ExitError || len(lines) != 2 || !strings.Contains(lines[0], tc.err) || !strings.Contains(lines[1], tc.hint) {
				t.Errorf("exit %d\n%s\nwant error with %q, hint with %q", code, errb, tc.err, tc.hint)
			}
		})
	}
}

func TestDemoFleetFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		err, hint string
	}{
		{[]string{"--prometheus-config", "p.yml"}, "--prometheus-config goes with --servers", "--servers N"},
		{[]string{"--servers", "0"}, "--servers 0 is out of range", "1 to 64"},
		{[]string{"--servers", "65"}, "--servers 65 is out of range", "1 to 64"},
		{[]string{"--servers", "2", "--once"}, "--once does nothing with --servers", "demo --help"},
		{[]string{"--servers", "2", "--scenario", "chat"}, "--scenario does nothing with --servers", "demo --help"},
		{[]string{"--servers", "2", "--heat"}, "--heat does nothing with --servers", "demo --help"},
		{[]string{"--servers", "2", "--ascii"}, "--ascii does nothing with --servers", "demo --help"},
	} {
		io, _, errb := iostreams.Test("", false, 0)
		code := run(context.Background(), append([]string{"demo"}, tc.args...), io)
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if code != ExitError || len(lines) != 2 || !strings.Contains(lines[0], tc.err) || !strings.Contains(lines[1], tc.hint) {
			t.Errorf("%v: exit %d\n%s\nwant %q, hint %q", tc.args, code, errb, tc.err, tc.hint)
		}
	}
}

// demo --servers writes a prometheus.yml whose every target serves
// metrics, and serves until Ctrl-C.
func TestDemoFleet(t *testing.T) {
	path := t.TempDir() + "/prometheus.yml"
	ctx, cancel := context.WithCancel(context.Background())
	io, _, errb := iostreams.Test("", false, 0)
	done := make(chan int)
	go func() { done <- run(ctx, []string{"demo", "--servers", "3", "--prometheus-config", path}, io) }()
	var conf []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			conf = b
			break
		}
	}
	// Each server twice: its engine, then its simulated dcgm-exporter
	// (job inferscope-demo-gpu, /gpu/metrics), whose GPU is given to its
	// pod.
	targets := regexp.MustCompile(`targets: \["([^"]+)"\]`).FindAllStringSubmatch(string(conf), -1)
	if len(targets) != 6 || !strings.Contains(string(conf), "pod: \"chat-0\"") || !strings.Contains(string(conf), "metrics_path: /gpu/metrics") {
		t.Fatalf("config:\n%s", conf)
	}
	for _, m := range targets[3:] {
		resp, err := http.Get("http://" + m[1] + "/gpu/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io2.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{") || !strings.Contains(string(body), `namespace="demo"`) {
			t.Errorf("%s serves no GPU given to a demo pod:\n%s", m[1], body)
		}
	}
	for _, m := range targets[:3] {
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io2.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "tabbyapi:requests_total") {
			t.Errorf("%s serves no metrics", m[1])
		}
	}
	cancel()
	if code := <-done; code != ExitInterrupted {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, ExitInterrupted, errb)
	}
	// The next step, printed and in the file, is one command, which runs,
	// and whose --by names the servers by the labels the file gives them
	// (not job,instance: every row would be the job and a port).
	next := "inferscope: demo:   " + demo.FleetCommand + "\n"
	if !strings.Contains(errb.String(), next) || !strings.Contains(string(conf), "then "+demo.FleetCommand+"\n") {
		t.Errorf("the next step is not %q in both; stderr:\n%s\nconfig:\n%s", demo.FleetCommand, errb, conf)
	}
	if err := Check(strings.Fields(strings.TrimPrefix(demo.FleetCommand, "inferscope "))); err != nil {
		t.Errorf("%s: %v", demo.FleetCommand, err)
	}
	var labels []string
	for _, m := range regexp.MustCompile(`labels: \{(\w+): [^,]+, (\w+): `).FindAllStringSubmatch(string(conf), -1) {
		labels = []string{m[1], m[2]}
	}
	if by := strings.Join(labels, ","); !strings.HasSuffix(demo.FleetCommand, "--by "+by) {
		t.Errorf("the targets are labelled %q, the next step reads %q", by, demo.FleetCommand)
	}
}

// liveStore is four simulated servers scraped every second by a real
// VictoriaMetrics (it starts in a second), flushed as the test goes so
// that fresh samples are searchable at once.
func liveStore(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	servers, err := demo.StartFleet(ctx, 4, demo.Options{Speed: 50, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var targets []storetest.Target
	for _, s := range servers {
		targets = append(targets, storetest.Target{Addr: s.Addr(), Job: "demo", Labels: map[string]string{"namespace": "demo", "pod": s.Pod()}})
	}
	s := storetest.VictoriaMetrics(t, storetest.Config{Targets: targets, ScrapeInterval: time.Second})
	go func() {
		for ctx.Err() == nil {
			s.Flush()
			time.Sleep(200 * time.Millisecond)
		}
	}()
	s.WaitFor(t, `count(tabbyapi:requests_total)`, 20*time.Second, func(b []byte) bool { return strings.Contains(string(b), `"4"`) })
	time.Sleep(2 * time.Second) // a few samples each
	return s.URL
}

// The fleet command end to end against a real store: JSON, one
// instance's report, --fail-on, --sort, and the watch.
func TestFleetLive(t *testing.T) {
	t.Parallel()
	url := liveStore(t)
	runFleetCLI := func(args ...string) (int, string, string) {
		io, out, errb := iostreams.Test("", false, 0)
		code := run(context.Background(), append([]string{"fleet", "--prometheus", url, "--by", "namespace,pod"}, args...), io)
		return code, out.String(), errb.String()
	}
	t.Run("json", func(t *testing.T) {
		// The table's rows, from the same read as the table (the store's
		// sums); each full report only where every instance is read whole.
		for _, whole := range []bool{false, true} {
			args := []string{"--json"}
			if whole {
				args = append(args, "--read-whole")
			}
			code, out, errs := runFleetCLI(args...)
			if code != ExitOK {
				t.Fatalf("%v: exit %d: %s", args, code, errs)
			}
			var doc struct {
				Version string `json:"inferscope_version"`
				Schema  int    `json:"schema"`
				Backend struct {
					Kind string `json:"kind"`
				} `json:"backend"`
				At        string `json:"at"`
				Read      string `json:"read"`
				Instances []struct {
					ID       string              `json:"id"`
					Instance map[string]string   `json:"instance"`
					State    string              `json:"state"`
					Dialect  string              `json:"dialect"`
					Rates    map[string]*float64 `json:"rates"`
					Report   *struct {
						Sections []struct{ ID string } `json:"sections"`
					} `json:"report"`
				} `json:"instances"`
				Totals struct {
					Rates    map[string]*float64 `json:"rates"`
					Up       int                 `json:"up"`
					Coverage map[string]struct{ Over, Of int }
				} `json:"totals"`
				Notes []struct{ ID string } `json:"notes"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			read := map[bool]string{false: "pushdown", true: "rebuild"}[whole]
			if doc.Schema != 2 || doc.Version != version.String() || doc.Backend.Kind != "victoriametrics" || doc.At == "" || len(doc.Instances) != 4 || doc.Read != read {
				t.Fatalf("%v: document: %+v", args, doc)
			}
			sum := 0.0
			for _, in := range doc.Instances {
				r := in.Rates["requests"]
				if in.Instance["pod"] == "" || in.ID != "demo/"+in.Instance["pod"] || in.Dialect != "tabbyapi" || r == nil || *r <= 0 ||
					(in.Report != nil) != whole || whole && in.Report.Sections[0].ID != "rates" {
					t.Errorf("%v: instance %+v", args, in)
					continue
				}
				sum += *r
			}
			// A total is its rows' arithmetic: the rates as the rows show them, added.
			if tot := doc.Totals.Rates["requests"]; tot == nil || !approxRel(*tot, sum) || doc.Totals.Coverage["requests"].Of != 4 {
				t.Errorf("%v: totals' requests %v (%+v), want the instances' %v", args, tot, doc.Totals, sum)
			}
			ids := ""
			for _, n := range doc.Notes {
				ids += n.ID + " "
			}
			if !strings.Contains(ids, "fleet_metadata_missing") {
				t.Errorf("%v: notes %s", args, ids)
			}
		}
	})
	t.Run("instance", func(t *testing.T) {
		code, out, errs := runFleetCLI("--instance", "pod=chat-0", "--width", "100")
		if code != ExitOK || !strings.HasPrefix(out, "inferscope · tabbyapi · {namespace=\"demo\",pod=\"chat-0\"}") ||
			!strings.Contains(out, "Rates over the last 5m") || !strings.Contains(out, "requests /s") {
			t.Errorf("exit %d, stderr %s\n%s", code, errs, out)
		}
	})
	t.Run("fail-on", func(t *testing.T) {
		// offload-thrash-3 thrashes its KV offload: warn notes.
		code, out, _ := runFleetCLI("--fail-on", "warn", "--sort", "requests")
		if code != ExitFailOn || !strings.Contains(out, "demo/offload-thrash-3") || !strings.Contains(out, "kv_offload") {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
	t.Run("watch", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pr, pw := io2.Pipe()
		io, _, errb := iostreams.Test("", false, 0)
		io.Out = pw
		done := make(chan int)
		go func() {
			done <- run(ctx, []string{"fleet", "--prometheus", url, "--watch", "5s", "--json"}, io)
			pw.Close()
		}()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var ats []string
		for len(ats) < 2 && sc.Scan() {
			var d struct{ At string }
			if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
				t.Fatalf("a frame is not one JSON document per line: %v", err)
			}
			ats = append(ats, d.At)
		}
		cancel()
		go io2.Copy(io2.Discard, pr)
		if code := <-done; code != ExitInterrupted {
			t.Errorf("exit %d, want %d: %s", code, ExitInterrupted, errb)
		}
		if len(ats) != 2 || ats[0] >= ats[1] {
			t.Errorf("frames at %v, want two, later each", ats)
		}
	})
	t.Run("watch fail-on", func(t *testing.T) {
		code, out, _ := runFleetCLI("--watch", "5s", "--fail-on", "warn")
		if code != ExitFailOn || strings.Count(out, "inferscope fleet ·") != 1 {
			t.Errorf("exit %d after %d frames", code, strings.Count(out, "inferscope fleet ·"))
		}
	})
}

func approxRel(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// What a hostile store does, through the one way out: a redirect to
// another host with credentials, an answer past --max-bytes, a fleet read
// whole past --max-instances; each an error on one line with what to try,
// exit 2.
func TestFleetHostileStore(t *testing.T) {
	other := &hostiletest.Recorder{Body: `{"status":"success","data":{"version":"2.42.0"}}`}
	otherURL := hostiletest.OtherHost(t, other)
	away := httptest.NewServer(hostiletest.RedirectTo(otherURL))
	defer away.Close()
	huge := httptest.NewServer(hostiletest.Stream(`{"status":"success","data":{"version":"`, "9", 1<<30, 0))
	defer huge.Close()
	many := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/series":
			var b strings.Builder
			b.WriteString(`{"status":"success","data":[`)
			for i := range 30 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"__name__":"vllm:num_requests_running","job":"vllm","instance":"10.0.0.%d:8000","namespace":"ns-%d","pod":"vllm-%d"}`, i, i%3/2, i)
			}
			w.Write([]byte(b.String() + `]}`))
		case "/api/v1/label/__name__/values":
			w.Write([]byte(`{"status":"success","data":["vllm:num_requests_running"]}`))
		case "/api/v1/metadata":
			w.Write([]byte(`{"status":"success","data":{}}`))
		case "/api/v1/query":
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
		default:
			w.Write([]byte(`{"status":"success","data":{"version":"2.42.0"}}`))
		}
	}))
	defer many.Close()
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		err, hint string
	}{
		{"redirect with credentials", []string{"--prometheus", away.URL, "--header", "X-Scope-OrgID: team"}, map[string]string{"INFERSCOPE_BEARER_TOKEN": "tok"},
			away.URL + "/api/v1/status/buildinfo redirected to another host, " + otherURL + "/api/v1/status/buildinfo", "if you trust the other host"},
		{"an answer past --max-bytes", []string{"--prometheus", huge.URL, "--max-bytes", "1M"}, nil,
			huge.URL + "/api/v1/status/buildinfo is larger than the 1.0 MiB cap", "--max-bytes 2M"},
		// --max-instances bounds what is read whole: here every instance.
		{"a fleet past --max-instances", []string{"--prometheus", many.URL, "--max-instances", "10", "--read-whole"}, nil,
			"the store holds 30 inference-server instances, more than the 10 read whole at once",
			`narrow with --selector '{namespace="ns-0"}' (20 instances) or '{namespace="ns-1"}' (10 instances); or raise --max-instances`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			io, out, errb := iostreams.Test("", false, 0)
			io.Getenv = func(k string) string { return tc.env[k] }
			code := run(context.Background(), append([]string{"fleet"}, tc.args...), io)
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			if code != ExitError || out.Len() != 0 || len(lines) != 2 || !strings.Contains(lines[0], tc.err) || !strings.Contains(lines[1], tc.hint) {
				t.Errorf("exit %d\n%s\nwant error with %q, hint with %q", code, errb, tc.err, tc.hint)
			}
		})
	}
	if n := len(other.Requests()); n != 0 {
		t.Errorf("the other host was sent %d requests", n)
	}
}

// A store with nothing in the window says so with the window, and a past
// range is pointed at as the likely mistake (and the selector with it),
// not the store's scraping.
func TestFleetNoSeriesInRange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	s := storetest.Prometheus(t, storetest.Config{})
	for _, tc := range []struct {
		args      []string
		err, hint string
	}{
		{[]string{"--from", "2026-11-01T00:00Z", "--to", "2026-11-01T01:00Z"},
			"no series at all in the window, 2026-11-01T00:00:00Z to 2026-11-01T01:00:00Z", "hint: check the range: the store holds nothing then"},
		{[]string{"--at", "2026-11-01T00:00Z", "--selector", `{namespace="llm"}`},
			`matching {namespace="llm"} (and no series at all in the window, 2026-10-31T23:55:00Z to 2026-11-01T00:00:00Z)`, "hint: check the range (within the store's retention, after the servers were first scraped) and --selector"},
		{nil, "no series at all in the window", "is the store scraping the servers' /metrics?"},
	} {
		io, _, errb := iostreams.Test("", false, 0)
		code := run(context.Background(), append([]string{"fleet", "--prometheus", s.URL}, tc.args...), io)
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if code != ExitError || len(lines) != 2 || !strings.Contains(lines[0], tc.err) || !strings.Contains(lines[1], tc.hint) {
			t.Errorf("%q: exit %d\n%s\nwant error with %q, hint with %q", tc.args, code, errb, tc.err, tc.hint)
		}
	}
}

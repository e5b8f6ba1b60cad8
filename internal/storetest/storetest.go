// Package storetest starts real metric stores for tests: Debian's
// prometheus (2.42, with promtool) and victoria-metrics, each on a free
// loopback port with a temporary data directory, scraping the targets a
// test gives or holding an OpenMetrics fixture backfilled into it; and
// stops them when the test ends.
//
// A test that needs a binary this machine lacks is skipped with a message
// saying which package to install, except under INFERSCOPE_CI=1 (.ci/run
// sets it, and CI installs both packages), where it fails: CI must never
// pass by skipping the tests that read a real store.
package storetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// CIEnv is the environment variable that turns a missing binary from a
// skip into a failure.
const CIEnv = "INFERSCOPE_CI"

// readyWithin is how long a store may take to start.
const readyWithin = 30 * time.Second

// Target is one scrape target.
type Target struct {
	Addr   string            // host:port
	Path   string            // metrics path; "" is /metrics
	Job    string            // "" is "inference"
	Labels map[string]string // target labels (namespace, pod, …)
}

// Config says what a store scrapes or holds.
type Config struct {
	// Targets are scraped every ScrapeInterval (default 1 s).
	Targets        []Target
	ScrapeInterval time.Duration
	// Backfill is an OpenMetrics file loaded before the store serves:
	// with promtool tsdb create-blocks-from openmetrics for Prometheus,
	// through /api/v1/import/prometheus for VictoriaMetrics.
	Backfill string
	// DataDir, when set, is the data directory to serve (and keep): a
	// fixture backfilled once and read by many runs.
	DataDir string
	// Flags are added to the server's command line.
	Flags []string
}

// Store is a running store.
type Store struct {
	// URL is the store's HTTP API base, http://127.0.0.1:PORT.
	URL string
	// Kind is "prometheus" or "victoriametrics".
	Kind string
	// Dir is the data directory.
	Dir string

	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// Need returns the path of binary, or skips t (fails it under
// INFERSCOPE_CI=1) when the machine lacks it.
func Need(t testing.TB, binary, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(binary)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s is not installed: apt-get install %s (CI installs it, and %s=1 makes this a failure)", binary, pkg, CIEnv)
	if os.Getenv(CIEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Prometheus starts Debian's prometheus with cfg: its targets in a fresh
// prometheus.yml, and cfg.Backfill turned into blocks by promtool first.
func Prometheus(t testing.TB, cfg Config) *Store {
	t.Helper()
	bin := Need(t, "prometheus", "prometheus")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if cfg.DataDir != "" {
		data = cfg.DataDir
	}
	if cfg.Backfill != "" {
		promtool := Need(t, "promtool", "prometheus")
		out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", cfg.Backfill, data).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool tsdb create-blocks-from openmetrics %s: %v\n%s", cfg.Backfill, err, out)
		}
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte(PrometheusConfig(cfg.Targets, cfg.ScrapeInterval)), 0o644); err != nil {
		t.Fatal(err)
	}
	return start(t, "prometheus", dir, func(addr string) []string {
		return append([]string{bin,
			"--config.file=" + conf,
			"--storage.tsdb.path=" + data,
			"--storage.tsdb.retention.time=100y",
			"--web.listen-address=" + addr,
			"--log.level=warn",
		}, cfg.Flags...)
	}, "/-/ready", nil)
}

// VictoriaMetrics starts Debian's victoria-metrics with cfg: its targets
// scraped by its own promscrape, and cfg.Backfill imported once it is up.
func VictoriaMetrics(t testing.TB, cfg Config) *Store {
	t.Helper()
	bin := Need(t, "victoria-metrics", "victoria-metrics")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if cfg.DataDir != "" {
		data = cfg.DataDir
	}
	args := func(addr string) []string {
		a := []string{bin,
			"-storageDataPath=" + data,
			"-httpListenAddr=" + addr,
			"-retentionPeriod=100y",
			"-search.disableCache",
			"-loggerLevel=ERROR",
		}
		if len(cfg.Targets) > 0 {
			conf := filepath.Join(dir, "scrape.yml")
			if err := os.WriteFile(conf, []byte(PrometheusConfig(cfg.Targets, cfg.ScrapeInterval)), 0o644); err != nil {
				t.Fatal(err)
			}
			a = append(a, "-promscrape.config="+conf)
		}
		return append(a, cfg.Flags...)
	}
	s := start(t, "victoriametrics", dir, args, "/health", nil)
	if cfg.Backfill != "" {
		s.importOpenMetrics(t, cfg.Backfill)
	}
	return s
}

// start runs a store on a free loopback port, retrying with another port
// when the one picked was taken in between, and waits until ready answers
// 200.
func start(t testing.TB, kind, dir string, args func(addr string) []string, ready string, env []string) *Store {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		a := args(addr)
		s := &Store{URL: "http://" + addr, Kind: kind, Dir: dir, log: &bytes.Buffer{}, done: make(chan struct{})}
		s.cmd = exec.Command(a[0], a[1:]...)
		s.cmd.Dir = dir
		s.cmd.Env = append(os.Environ(), env...)
		s.cmd.Stdout, s.cmd.Stderr = syncWriter(s.log), syncWriter(s.log)
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", a[0], err)
		}
		go func() { s.cmd.Wait(); close(s.done) }()
		if err := s.waitReady(ready); err != nil {
			s.stop()
			lastErr = err
			if strings.Contains(s.Log(), "address already in use") {
				continue
			}
			t.Fatalf("%s did not start: %v\n%s", kind, err, s.Log())
		}
		t.Cleanup(func() {
			s.stop()
			if t.Failed() {
				t.Logf("%s log:\n%s", kind, tail(s.Log(), 4000))
			}
		})
		return s
	}
	t.Fatalf("%s did not start: %v", kind, lastErr)
	return nil
}

var logMu sync.Mutex

type lockedWriter struct{ b *bytes.Buffer }

func (w lockedWriter) Write(p []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	return w.b.Write(p)
}

func syncWriter(b *bytes.Buffer) io.Writer { return lockedWriter{b} }

// Log is what the store has written so far.
func (s *Store) Log() string {
	logMu.Lock()
	defer logMu.Unlock()
	return s.log.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (s *Store) waitReady(path string) error {
	deadline := time.Now().Add(readyWithin)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("exited: %v", s.cmd.ProcessState)
		default:
		}
		resp, err := http.Get(s.URL + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready within %v", readyWithin)
}

// stop ends the store: SIGTERM, then SIGKILL after a few seconds.
func (s *Store) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Stop ends the store now (a test of a store that is down).
func (s *Store) Stop() { s.stop() }

// CPU is the CPU time the store's process has used so far (user and
// system, from /proc): what a benchmark charges the store per call.
func (s *Store) CPU() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command's name, which ends at the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", s.cmd.Process.Pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: no CPU times", s.cmd.Process.Pid)
	}
	// Clock ticks of 1/100 s (USER_HZ on Linux).
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// PrometheusConfig is a prometheus.yml scraping targets every interval
// (1 s when 0), one scrape job per job name.
func PrometheusConfig(targets []Target, interval time.Duration) string {
	if interval <= 0 {
		interval = time.Second
	}
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n", promDuration(interval), promDuration(interval))
	jobs := map[string][]Target{}
	paths := map[string]string{}
	for _, t := range targets {
		job := t.Job
		if job == "" {
			job = "inference"
		}
		jobs[job] = append(jobs[job], t)
		if t.Path != "" {
			paths[job] = t.Path
		}
	}
	names := make([]string, 0, len(jobs))
	for j := range jobs {
		names = append(names, j)
	}
	sort.Strings(names)
	for _, job := range names {
		fmt.Fprintf(&b, "  - job_name: %q\n", job)
		if p := paths[job]; p != "" {
			fmt.Fprintf(&b, "    metrics_path: %q\n", p)
		}
		b.WriteString("    static_configs:\n")
		for _, t := range jobs[job] {
			fmt.Fprintf(&b, "      - targets: [%q]\n", t.Addr)
			if len(t.Labels) > 0 {
				keys := make([]string, 0, len(t.Labels))
				for k := range t.Labels {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				b.WriteString("        labels:\n")
				for _, k := range keys {
					fmt.Fprintf(&b, "          %s: %q\n", k, t.Labels[k])
				}
			}
		}
	}
	return b.String()
}

// promDuration writes d as Prometheus reads durations ("1s", "500ms").
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

// importOpenMetrics loads an OpenMetrics fixture into VictoriaMetrics:
// each sample line rewritten in the text format VictoriaMetrics imports
// (timestamps in milliseconds), then a flush so that queries see it.
func (s *Store) importOpenMetrics(t testing.TB, path string) {
	t.Helper()
	body, err := OpenMetricsToText(path)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.URL+"/api/v1/import/prometheus", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("importing %s: %v", path, err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("importing %s: HTTP %d: %s", path, resp.StatusCode, msg)
	}
	s.Flush()
}

// Flush makes what VictoriaMetrics has ingested searchable now, instead of
// within its flush interval (seconds); Prometheus needs nothing.
func (s *Store) Flush() {
	if s.Kind != "victoriametrics" {
		return
	}
	if resp, err := http.Get(s.URL + "/internal/force_flush"); err == nil {
		resp.Body.Close()
	}
}

// OpenMetricsToText rewrites an OpenMetrics fixture's samples in the
// Prometheus text format with millisecond timestamps (comments dropped):
// what VictoriaMetrics' /api/v1/import/prometheus reads.
func OpenMetricsToText(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// The series, then exactly a value and a timestamp.
		series := line
		if j := strings.LastIndexByte(line, '}'); j >= 0 {
			series = line[:j+1]
		} else if j := strings.IndexByte(line, ' '); j >= 0 {
			series = line[:j]
		}
		fields := strings.Fields(line[len(series):])
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want a value and a timestamp after the series", path, n)
		}
		ts, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: timestamp %q: %v", path, n, fields[1], err)
		}
		fmt.Fprintf(&out, "%s %s %d\n", series, fields[0], int64(ts*1000+0.5))
	}
	return out.Bytes(), sc.Err()
}

// Query runs an instant PromQL query at now and returns the body (for a
// test's own checks, apart from the code under test); VictoriaMetrics is
// asked for its freshest samples too.
func (s *Store) Query(ctx context.Context, q string) ([]byte, error) {
	u := s.URL + "/api/v1/query?query=" + url.QueryEscape(q)
	if s.Kind == "victoriametrics" {
		// Its freshest 30 s are hidden by default (-search.latencyOffset).
		u += "&latency_offset=0s&nocache=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// WaitFor polls the store's instant query q until ok accepts its body, or
// fails t after within.
func (s *Store) WaitFor(t testing.TB, q string, within time.Duration, ok func(body []byte) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last []byte
	for time.Now().Before(deadline) {
		s.Flush()
		b, err := s.Query(context.Background(), q)
		if err == nil && ok(b) {
			return
		}
		last = b
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %s not as wanted within %v; last answer: %s", s.Kind, q, within, tail(string(last), 500))
}

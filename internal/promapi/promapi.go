// Package promapi reads a Prometheus-compatible store (Prometheus, Thanos,
// Mimir, VictoriaMetrics) through its HTTP API: instant and range queries,
// series, metadata, and which backend answered. It is the one place that
// imports github.com/prometheus/client_golang/api/prometheus/v1, whose
// signatures change between minor releases; the rest of inferscope sees
// [API].
//
// # What each backend needs
//
//   - Every request goes through inferscope's HTTP policy
//     (internal/httpsafe): the headers given and basic auth taken from the
//     URL's user:password (removed from every URL this package prints) go
//     to the store's host only, and a redirect to another host is refused
//     while there are any; every answer is capped at [Options.MaxBytes]
//     after decompression. Each carries a User-Agent and runs within
//     [Options.Timeout].
//   - Answers are decoded by this package's own JSON reader, which refuses
//     nesting deeper than encoding/json does (10,000), and stops a
//     /api/v1/series answer past [Options.MaxSeries] as it reads it.
//   - A path prefix in the URL (Mimir's /prometheus, vmselect's
//     /select/0/prometheus) is kept: every endpoint is resolved under it.
//   - Thanos: [Options.Dedup] sends dedup=true and [Options.ReplicaLabels]
//     replicaLabels[] on every query, so that an HA pair is read once.
//   - VictoriaMetrics: [Client.Detect] recognises it (its buildinfo is
//     empty, or a fixed Prometheus version, and it answers
//     /api/v1/status/top_queries) and from then on sends latency_offset=0s
//     and nocache=1, so that the freshest 30 s it hides by default
//     (-search.latencyOffset) are read, and no cached result of an earlier
//     query is served. It has no metadata: [Client.Metadata] says so with
//     [ErrNoMetadata].
//
// Errors are [*Error] with a [Kind] a caller can branch on (unreachable, a
// timeout, an HTTP status, a query over the server's sample limit, a
// tenant missing, an answer over a cap, a redirect refused), the endpoint,
// and the server's own message, cleaned and clipped to one line.
package promapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/internal/httpsafe"
)

// Defaults of [Options].
const (
	// DefaultTimeout is how long one request may take.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxBytes caps each answer, after decompression. The largest
	// answer of a fleet report, the state of every instance at the end of
	// its window, is about 82 kB per vLLM pod (16.5 MB for 200).
	DefaultMaxBytes int64 = 128 << 20
)

// Options say how to reach the store.
type Options struct {
	// URL is the API's base: scheme, host, port and any path prefix before
	// /api/v1 (http://mimir:8080/prometheus). user:password in it becomes
	// basic auth.
	URL string
	// Headers are sent with every request (X-Scope-OrgID for Mimir,
	// Authorization for a bearer token).
	Headers http.Header
	// UserAgent is sent as the User-Agent header.
	UserAgent string
	// Timeout bounds each request, and is passed to the server as its
	// query timeout; 0 is DefaultTimeout.
	Timeout time.Duration
	// Dedup asks a Thanos querier to merge HA replicas (dedup=true).
	Dedup bool
	// ReplicaLabels are the labels a Thanos querier deduplicates on
	// (replicaLabels[]); given, they imply Dedup.
	ReplicaLabels []string
	// MaxBytes caps each answer's body, after decompression: an answer
	// over it is an *Error of Kind TooLarge. 0 is DefaultMaxBytes.
	MaxBytes int64
	// MaxSeries bounds the series one /api/v1/series answer may list: the
	// store is asked for one more (limit=, which recent Prometheus and
	// VictoriaMetrics honour), and an answer that lists more is an *Error
	// of Kind TooManySeries as soon as the reader counts past it. 0: no
	// bound.
	MaxSeries int
}

// API is what inferscope asks of a store. [*Client] implements it; tests
// implement it over recorded answers.
type API interface {
	// Query evaluates an instant query at at.
	Query(ctx context.Context, query string, at time.Time) (model.Value, error)
	// QueryRange evaluates a query at every step from start to end.
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error)
	// Series lists the label sets of the series matching any of matches
	// that have samples between start and end.
	Series(ctx context.Context, matches []string, start, end time.Time) ([]model.LabelSet, error)
	// LabelValues lists the values of a label among the series matching
	// matches (all series when empty) between start and end.
	LabelValues(ctx context.Context, label string, matches []string, start, end time.Time) ([]string, error)
	// Metadata returns each metric family's type, help and unit as the
	// store's targets declared them; [ErrNoMetadata] where the backend
	// keeps none.
	Metadata(ctx context.Context) (map[string][]Metadata, error)
	// TargetsMetadata returns what each target declared for one metric.
	TargetsMetadata(ctx context.Context, metric string) ([]TargetMetadata, error)
	// Backend says which store answered ([Client.Detect]).
	Backend() Backend
}

// Metadata is one declaration of a metric family.
type Metadata struct {
	Type string // counter, gauge, histogram, summary, unknown, …
	Help string
	Unit string
}

// TargetMetadata is one target's declaration of a metric family.
type TargetMetadata struct {
	Target model.LabelSet // the target's labels (job, instance, …)
	Metadata
}

// ErrNoMetadata is the answer of a backend that keeps no metadata
// (VictoriaMetrics returns an empty object).
var ErrNoMetadata = errors.New("the store keeps no metric metadata")

// Client is a connection to one store.
type Client struct {
	api       v1.API
	raw       api.Client   // for URLs, and for c.api
	hc        *http.Client // the policy's client
	maxBytes  int64
	base      *url.URL // without userinfo: safe to print
	timeout   time.Duration
	maxSeries int

	mu      sync.Mutex
	backend Backend
	params  url.Values // added to every request
	warn    []string

	requests atomic.Int64
}

// New checks o and returns a client; it sends nothing until asked.
func New(o Options) (*Client, error) {
	u, err := parseBase(o.URL)
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	maxBytes := o.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	c := &Client{timeout: timeout, maxSeries: max(o.MaxSeries, 0), params: url.Values{}}
	if o.Dedup || len(o.ReplicaLabels) > 0 {
		c.params.Set("dedup", "true")
	}
	for _, l := range o.ReplicaLabels {
		c.params.Add("replicaLabels[]", l)
	}
	origin := *u
	u.User = nil
	c.base = u
	c.maxBytes = maxBytes
	c.hc = httpsafe.NewClient(httpsafe.Options{Origin: &origin, Headers: o.Headers, MaxBytes: maxBytes, Gzip: true,
		Transport: &transport{c: c, agent: o.UserAgent, base: httpsafe.Transport()}})
	cl, err := api.NewClient(api.Config{Address: u.String(), Client: c.hc})
	if err != nil {
		return nil, &Error{Kind: BadURL, URL: u.String(), Err: err}
	}
	c.raw = cl
	c.api = v1.NewAPI(cl)
	c.backend = Backend{Kind: Unknown}
	return c, nil
}

// parseBase reads the store's URL: http or https with a host; a trailing
// /api/v1 (pasted from a query URL) is dropped.
func parseBase(raw string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, &Error{Kind: BadURL, Msg: "no store URL given"}
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, &Error{Kind: BadURL, URL: redact(raw), Msg: "not a URL"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &Error{Kind: BadURL, URL: u.Redacted(), Msg: "the scheme must be http or https"}
	}
	if u.Host == "" {
		return nil, &Error{Kind: BadURL, URL: u.Redacted(), Msg: "no host"}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, &Error{Kind: BadURL, URL: u.Redacted(), Msg: "the URL must not carry a query or fragment"}
	}
	u.Path = strings.TrimRight(u.Path, "/")
	for _, tail := range []string{"/api/v1/query", "/api/v1"} {
		u.Path = strings.TrimSuffix(u.Path, tail)
	}
	u.RawPath = ""
	return u, nil
}

// redact hides a password in a URL that did not parse.
func redact(s string) string {
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		if i := strings.Index(s, "://"); i >= 0 && i < at {
			return s[:i+3] + "…@" + s[at+1:]
		}
		return "…@" + s[at+1:]
	}
	return s
}

// URL is the store's base URL, without credentials.
func (c *Client) URL() string { return c.base.String() }

// Requests is how many HTTP requests the client has sent.
func (c *Client) Requests() int64 { return c.requests.Load() }

// Warnings returns the warnings the store sent with its answers so far
// (a Thanos partial response, a VictoriaMetrics limit), each once.
func (c *Client) Warnings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.warn...)
}

func (c *Client) addWarnings(ws v1.Warnings) {
	if len(ws) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range ws {
		dup := false
		for _, have := range c.warn {
			dup = dup || have == w
		}
		if !dup {
			c.warn = append(c.warn, w)
		}
	}
}

// Backend is the store last detected.
func (c *Client) Backend() Backend {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.backend
}

func (c *Client) setParam(k, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.params.Set(k, v)
}

func (c *Client) extraParams() url.Values {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.params
}

// within runs one request under the client's timeout.
func (c *Client) within(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// Query evaluates an instant query at at.
func (c *Client) Query(ctx context.Context, query string, at time.Time) (model.Value, error) {
	args := url.Values{"query": {query}, "time": {formatTime(at)}}
	return c.query(ctx, "/api/v1/query", args)
}

// QueryRange evaluates a query at every step from start to end.
func (c *Client) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	args := url.Values{"query": {query}, "start": {formatTime(start)}, "end": {formatTime(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	v, err := c.query(ctx, "/api/v1/query_range", args)
	if err != nil {
		return nil, err
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, &Error{Kind: BadAnswer, Endpoint: "/api/v1/query_range", URL: c.URL(), Query: query, Msg: "the answer is a " + v.Type().String() + ", not a matrix"}
	}
	return m, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)
}

// query sends a query as a form and decodes the answer with decodeAnswer.
func (c *Client) query(ctx context.Context, endpoint string, args url.Values) (model.Value, error) {
	ctx, cancel := c.within(ctx)
	defer cancel()
	args.Set("timeout", c.timeout.String())
	q := args.Get("query")
	resp, body, err := c.post(ctx, endpoint, args)
	if err != nil {
		return nil, c.wrap(ctx, endpoint, q, err)
	}
	defer recycle(body)
	a, derr := decodeAnswer(body)
	if err := c.refused(ctx, endpoint, q, resp.StatusCode, body, a, derr); err != nil {
		return nil, err
	}
	if a.value == nil {
		return nil, &Error{Kind: BadAnswer, Endpoint: endpoint, URL: c.URL(), Query: q, Msg: "the answer has no result"}
	}
	return a.value, nil
}

// post sends a form, as a GET where the store refuses POST (as
// client_golang does).
func (c *Client) post(ctx context.Context, endpoint string, args url.Values) (*http.Response, []byte, error) {
	u := c.raw.URL(endpoint, nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(args.Encode()))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body, err := c.do(req)
	if err == nil && (resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented) {
		u.RawQuery = args.Encode()
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil); err != nil {
			return nil, nil, err
		}
		resp, body, err = c.do(req)
	}
	return resp, body, err
}

// do sends req and reads its whole answer within the cap: growing the
// buffer no further than the cap, where client_golang's reader doubles it
// past (128 MB allocated to read 32 MiB).
func (c *Client) do(req *http.Request) (*http.Response, []byte, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := httpsafe.ReadAllInto(reuse(), resp.Body, c.maxBytes, resp.ContentLength)
	return resp, body, err
}

// bodies are answers' buffers, handed back once their answer is decoded
// (every value decoded is a copy, TestDecodedOutlivesItsBuffer): a fleet
// report reads dozens of answers of a few MB in turn, and a buffer grown by
// doubling for each one was a quarter of what it allocated.
var bodies sync.Pool

// maxKept bounds the buffers bodies keeps: a rare answer of hundreds of
// MB is not held for the next.
const maxKept = 16 << 20

// reuse is a buffer an answer was read into before, or nil.
func reuse() []byte {
	if b, ok := bodies.Get().(*[]byte); ok {
		return *b
	}
	return nil
}

// recycle hands back an answer's buffer once nothing reads it.
func recycle(b []byte) {
	if c := cap(b); c > 0 && c <= maxKept {
		b = b[:0]
		bodies.Put(&b)
	}
}

// refused turns an answer that is not a success into an *Error: the
// store's own error where it sent one, else the HTTP status.
func (c *Client) refused(ctx context.Context, endpoint, q string, code int, body []byte, a *answer, derr error) error {
	if code/100 != 2 {
		ae := &v1.Error{Type: v1.ErrClient, Msg: fmt.Sprintf("client error: %d", code), Detail: string(body)}
		if code/100 == 5 {
			ae.Type, ae.Msg = v1.ErrServer, fmt.Sprintf("server error: %d", code)
		}
		if (code == http.StatusBadRequest || code == http.StatusUnprocessableEntity) && derr == nil && a.status == "error" {
			ae = &v1.Error{Type: v1.ErrorType(a.errorType), Msg: a.err}
		}
		return c.wrap(ctx, endpoint, q, ae)
	}
	if derr != nil {
		return &Error{Kind: BadAnswer, Endpoint: endpoint, URL: c.URL(), Query: q, Msg: clip(derr.Error())}
	}
	c.addWarnings(a.warnings)
	if a.status != "success" {
		return c.wrap(ctx, endpoint, q, &v1.Error{Type: v1.ErrorType(a.errorType), Msg: a.err})
	}
	return nil
}

// Series lists the label sets of the series matching any of matches with
// samples between start and end (EachSeries, kept).
func (c *Client) Series(ctx context.Context, matches []string, start, end time.Time) ([]model.LabelSet, error) {
	var sets []model.LabelSet
	err := c.EachSeries(ctx, matches, start, end, func(m model.Metric) error {
		sets = append(sets, model.LabelSet(m.Clone()))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sets, nil
}

// EachSeries calls fn with the labels of each series matching any of
// matches with samples between start and end, as the answer is decoded:
// m is reused, and fn must not keep it. An answer that lists more than
// Options.MaxSeries is an *Error of Kind TooManySeries; an error of fn
// stops the reading and is returned as it is.
func (c *Client) EachSeries(ctx context.Context, matches []string, start, end time.Time, fn func(m model.Metric) error) error {
	ctx, cancel := c.within(ctx)
	defer cancel()
	const endpoint = "/api/v1/series"
	args := url.Values{"match[]": matches, "start": {formatTime(start)}, "end": {formatTime(end)}}
	if c.maxSeries > 0 {
		args.Set("limit", strconv.Itoa(c.maxSeries+1))
	}
	q := strings.Join(matches, " ")
	resp, body, err := c.post(ctx, endpoint, args)
	if err != nil {
		return c.wrap(ctx, endpoint, q, err)
	}
	var stopped error
	each := func(m model.Metric) error {
		if resp.StatusCode/100 != 2 {
			return nil // an error's body: only its envelope is read
		}
		stopped = fn(m)
		return stopped
	}
	defer recycle(body)
	a, derr := decodeSeries(body, c.maxSeries, each)
	switch {
	case stopped != nil:
		return stopped
	case errors.Is(derr, errTooManySeries) && resp.StatusCode/100 == 2:
		return &Error{Kind: TooManySeries, Endpoint: endpoint, URL: c.URL(), Query: q, Limit: c.maxSeries,
			Msg: fmt.Sprintf("more than %d series", c.maxSeries)}
	}
	return c.refused(ctx, endpoint, q, resp.StatusCode, body, a, derr)
}

// LabelValues lists a label's values among the series matching matches.
func (c *Client) LabelValues(ctx context.Context, label string, matches []string, start, end time.Time) ([]string, error) {
	ctx, cancel := c.within(ctx)
	defer cancel()
	v, warn, _, err := c.api.LabelValues(ctx, label, matches, start, end)
	c.addWarnings(warn)
	if err != nil {
		return nil, c.wrap(ctx, "/api/v1/label/"+label+"/values", strings.Join(matches, " "), err)
	}
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = string(s)
	}
	return out, nil
}

// Metadata returns every metric family's declarations; [ErrNoMetadata]
// where the store keeps none (an empty answer).
func (c *Client) Metadata(ctx context.Context) (map[string][]Metadata, error) {
	ctx, cancel := c.within(ctx)
	defer cancel()
	m, err := c.api.Metadata(ctx, "", "")
	if err != nil {
		return nil, c.wrap(ctx, "/api/v1/metadata", "", err)
	}
	if len(m) == 0 {
		return nil, ErrNoMetadata
	}
	out := make(map[string][]Metadata, len(m))
	for name, ms := range m {
		for _, md := range ms {
			out[name] = append(out[name], Metadata{Type: string(md.Type), Help: md.Help, Unit: md.Unit})
		}
	}
	return out, nil
}

// TargetsMetadata returns what each target declared for metric.
func (c *Client) TargetsMetadata(ctx context.Context, metric string) ([]TargetMetadata, error) {
	ctx, cancel := c.within(ctx)
	defer cancel()
	ms, err := c.api.TargetsMetadata(ctx, "", metric, "")
	if err != nil {
		return nil, c.wrap(ctx, "/api/v1/targets/metadata", metric, err)
	}
	out := make([]TargetMetadata, len(ms))
	for i, m := range ms {
		t := model.LabelSet{}
		for k, v := range m.Target {
			t[model.LabelName(k)] = model.LabelValue(v)
		}
		out[i] = TargetMetadata{Target: t, Metadata: Metadata{Type: string(m.Type), Help: m.Help, Unit: m.Unit}}
	}
	return out, nil
}

// transport adds what every request carries: the User-Agent, and the
// backend's extra parameters; and counts requests. The headers given and
// basic auth are the policy's to add (httpsafe), to the store's host only.
type transport struct {
	c     *Client
	agent string
	base  http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.c.requests.Add(1)
	r := req.Clone(req.Context())
	if t.agent != "" {
		r.Header.Set("User-Agent", t.agent)
	}
	if extra := t.c.extraParams(); len(extra) > 0 && strings.Contains(r.URL.Path, "/api/v1/") {
		q := r.URL.Query()
		for k, vs := range extra {
			for _, v := range vs {
				q.Add(k, v)
			}
		}
		r.URL.RawQuery = q.Encode()
	}
	return t.base.RoundTrip(r)
}

// get sends a GET to an endpoint under the base URL and returns the body
// of a 2xx answer.
func (c *Client) get(ctx context.Context, endpoint string) ([]byte, error) {
	ctx, cancel := c.within(ctx)
	defer cancel()
	u := c.raw.URL(endpoint, nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &Error{Kind: BadURL, URL: c.URL(), Err: err}
	}
	resp, body, err := c.do(req)
	if err != nil {
		return nil, c.wrap(ctx, endpoint, "", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, c.wrap(ctx, endpoint, "", &v1.Error{Type: v1.ErrClient, Msg: fmt.Sprintf("HTTP %d", resp.StatusCode), Detail: string(body)})
	}
	return body, nil
}

// Package discover finds the inference servers answering on one host's
// default ports and tells what each is, so that inferscope given no target,
// or `inferscope discover HOST`, can say which server to read and how.
//
// # What is probed
//
// Only the host given, and on it only the ports of [DefaultPorts] (or the
// ports an [Options] names): never a range of addresses. Every port is
// probed at once, and the whole probe ends within [Options.Timeout]
// ([DefaultTimeout], 300 ms, unless told), whatever the ports do: a port
// that accepts a connection and never answers is [Silent], not waited for.
// Every request goes through internal/httpsafe (the scrape's policy): the
// headers given go to that host only, and each answer is capped.
//
// # How a server is told
//
// Of each port, GET /metrics first. An answer in the Prometheus text
// format is parsed and read by dialect.Map, as a report reads it: the
// dialect that reads it names the server, so a dialect added to
// internal/dialect is found here with no change. Its models come from the
// series' labels where the dialect reads them. Then, by dialect, the
// server's own API says its version (and the model where the series do
// not): vLLM's and TensorRT-LLM's GET /version, llama.cpp's /props
// (build_info, model_alias), TGI's /info (version, model_id), SGLang's
// /server_info or, before it, /get_server_info (version); a server of
// another dialect is asked /version, and the OpenAI-compatible /v1/models
// gives the models where nothing else did.
//
// A /metrics that answers JSON is trtllm-serve's: its Prometheus text is
// at /prometheus/metrics, which is read instead (this package's own
// fallback, kept apart from internal/scrape's so that discovery does not
// depend on it).
//
// A port whose /metrics is refused is asked what it is instead: a
// llama.cpp router's 400 names it ([RouterModels] lists its models); an
// Ollama answers GET /api/version; llama.cpp started without --metrics
// answers 501 and its /props; any OpenAI-compatible API (LM Studio,
// tabbyAPI without its metrics) lists /v1/models. These publish no metrics
// inferscope reads: [NoMetrics], which inferscope proxy measures.
package discover

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/scrape"
)

// DefaultTimeout bounds a whole probe of a host: every port at once, and
// every request each makes.
const DefaultTimeout = 300 * time.Millisecond

// Loopback is the host probed when none is given: this machine, as
// tabbyAPI's default address names it.
const Loopback = "127.0.0.1"

// Port is a port servers listen on unless told otherwise.
type Port struct {
	Number int
	// Servers listen here by default, as people spell them.
	Servers []string
}

// DefaultPorts are the ports probed, in the order they are listed:
// tabbyAPI's first, as it is inferscope's default target.
var DefaultPorts = []Port{
	{5000, []string{"tabbyAPI"}},
	{8000, []string{"vLLM", "TensorRT-LLM"}},
	{8080, []string{"llama.cpp", "TGI"}},
	{30000, []string{"SGLang"}},
	{3000, []string{"TGI"}},
	{23333, []string{"LMDeploy"}},
	{11434, []string{"Ollama"}},
	{1234, []string{"LM Studio"}},
	{8002, []string{"Triton"}},
}

// Options say what a probe sends and how long it may take. The zero value
// probes DefaultPorts within DefaultTimeout.
type Options struct {
	// Ports are probed instead of DefaultPorts (tests, where the ports are
	// a listener's).
	Ports []Port
	// Timeout bounds the whole probe (DefaultTimeout when ≤ 0); the
	// context's deadline bounds it too.
	Timeout time.Duration
	// Headers are sent with every request, to the host probed only.
	Headers http.Header
	// MaxBytes caps each /metrics answer (scrape.DefaultMaxBytes when ≤
	// 0); an API's JSON answer is capped at the smaller of it and 4 MiB.
	MaxBytes int64
	// UserAgent is sent as the User-Agent header.
	UserAgent string
	// Transport carries the requests; nil is a transport of the probe's
	// own, its connections closed when it ends.
	Transport http.RoundTripper
}

// jsonCap bounds an API's JSON answer: a /get_server_info with every
// server argument is tens of kilobytes.
const jsonCap = 4 << 20

func (o Options) withDefaults() Options {
	if len(o.Ports) == 0 {
		o.Ports = DefaultPorts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = scrape.DefaultMaxBytes
	}
	if o.UserAgent == "" {
		o.UserAgent = scrape.DefaultUserAgent
	}
	return o
}

// Kind says what answered on a port.
type Kind string

// The kinds of answer, from a report to nothing at all.
const (
	// Metrics: a dialect reads its /metrics; inferscope reports on it.
	Metrics Kind = "metrics"
	// Router: a llama.cpp router, whose /metrics is one model's: inferscope
	// reports on it with --model.
	Router Kind = "router"
	// NoMetrics: an inference server or API that publishes no metrics
	// (Ollama, LM Studio, llama.cpp without --metrics): inferscope proxy
	// measures it from in front.
	NoMetrics Kind = "no_metrics"
	// Unread: Prometheus metrics no dialect reads (Triton's nv_ series).
	Unread Kind = "unread"
	// Refused: /metrics asks for credentials.
	Refused Kind = "refused"
	// Other: something answers that is none of these.
	Other Kind = "other"
	// Silent: a connection was taken, and no answer came in time.
	Silent Kind = "silent"
	// Closed: nothing took the connection.
	Closed Kind = "closed"
)

// Reportable reports a kind inferscope reports on (with --model for a
// router).
func (k Kind) Reportable() bool { return k == Metrics || k == Router }

// Model is one model a server serves.
type Model struct {
	ID string `json:"id"`
	// Status is a llama.cpp router's word for it ("loaded", "loading",
	// "unloaded", "sleeping"…); "" where the server does not say.
	Status string `json:"status,omitempty"`
}

// Running reports a router's model that has a process to answer for it: a
// model that is not running has no metrics until a request loads it.
func (m Model) Running() bool {
	switch m.Status {
	case "loaded", "loading", "sleeping":
		return true
	}
	return false
}

// Server is what answered on one port. Every string in it that a server
// sent is cleaned for a terminal and cut short.
type Server struct {
	Host    string
	Port    int
	Address string // host:port, as a target names it
	Kind    Kind
	// Expected are the servers that listen on this port by default.
	Expected []string
	// Dialect is the dialect that reads its metrics (Metrics, and a
	// router's models); Name is the server as people spell it ("vLLM",
	// "Ollama", "OpenAI-compatible API"), "" where it is not known.
	Dialect, Name string
	// Version is the server's version as its API says it; "" where it
	// does not.
	Version string
	// Models it serves, as the series label them or its API lists them.
	Models []Model
	// MetricsURL is where its metrics were read (/metrics, or
	// trtllm-serve's /prometheus/metrics); "" for a port without them.
	MetricsURL string
	// Proxy is set where the metrics are inferscope proxy's, in front of
	// a server of the dialect Upstream names ("" when its answers did not
	// say).
	Proxy    bool
	Upstream string
	// Status is the HTTP status /metrics answered with, where it refused.
	Status int
	// Why says in a few words what kept a server from a report, or what
	// answered on a port of kind Other, Unread, Refused or NoMetrics.
	Why string
	// Prefixes are the name prefixes of metrics no dialect reads (Unread).
	Prefixes []string
}

// Answered reports a port where something answered: all but Closed and
// Silent.
func (s Server) Answered() bool { return s.Kind != Closed && s.Kind != Silent }

// Result is a probe of one host.
type Result struct {
	Host    string
	Timeout time.Duration // the bound it ran within
	// Ports are every port probed, in the order of the table.
	Ports []Server
}

// Answering are the ports where something answered, in the table's order.
func (r *Result) Answering() []Server {
	var out []Server
	for _, s := range r.Ports {
		if s.Answered() {
			out = append(out, s)
		}
	}
	return out
}

// Reportable are the servers inferscope reports on, in the table's order.
func (r *Result) Reportable() []Server {
	var out []Server
	for _, s := range r.Ports {
		if s.Kind.Reportable() {
			out = append(out, s)
		}
	}
	return out
}

// HostError is a host that cannot be probed as given.
type HostError struct{ Host, Why string }

func (e *HostError) Error() string { return e.Why }

// CheckHost refuses what is not one host: a port, a scheme, a path or a
// network (discovery probes one host's default ports, never a range).
func CheckHost(host string) error {
	h := host
	if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
		if ip := net.ParseIP(h); ip == nil || ip.To4() != nil {
			return &HostError{host, "not an IPv6 address in brackets"}
		}
		return nil
	}
	if scrape.ValidHost(h) {
		return nil
	}
	why := "not a host name or an IP address"
	switch {
	case h == "":
		why = "empty"
	case containsAny(h, "/"):
		why = "a network or a path, not one host"
	case containsAny(h, ":"):
		why = "a host with a port: discovery tries the default ports itself"
	}
	return &HostError{host, why}
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

// Probe asks every port of host at once what answers there, within
// o.Timeout, and returns every port's answer in the order of the table
// (an answer that arrived within the bound is read whole, however long
// its parse takes: the bound is on waiting for servers). It
// fails only on a host it cannot probe, or when ctx is canceled (the
// caller's Ctrl-C): a deadline passing, the bound's or ctx's, is a result,
// the ports still silent said so.
func Probe(ctx context.Context, host string, o Options) (*Result, error) {
	if err := CheckHost(host); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	tr := o.Transport
	if tr == nil {
		own := httpsafe.NewTransport()
		defer own.CloseIdleConnections()
		tr = own
	}
	bounded, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	p := &prober{host: trimBrackets(host), o: o, client: &http.Client{Transport: tr}, caller: ctx}
	out := &Result{Host: host, Timeout: o.Timeout, Ports: make([]Server, len(o.Ports))}
	var wg sync.WaitGroup
	for i, port := range o.Ports {
		wg.Go(func() { out.Ports[i] = p.probe(bounded, port) })
	}
	wg.Wait()
	if err := ctx.Err(); errors.Is(err, context.Canceled) {
		return nil, err
	}
	return out, nil
}

// Listening reports whether anything takes a TCP connection on host:port
// within ctx: a dial and nothing sent, so that a server holding its
// scrapes for seconds (a busy tabbyAPI) is not asked twice.
func Listening(ctx context.Context, host string, port int) bool {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(trimBrackets(host), strconv.Itoa(port)))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func trimBrackets(h string) string {
	if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// URL is the base URL of a server found at address.
func URL(address string) *url.URL { return &url.URL{Scheme: "http", Host: address} }

package discover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// prober probes the ports of one host.
type prober struct {
	host   string
	o      Options
	client *http.Client
	// caller is the caller's context, without the probe's bound: an
	// answer that arrived is parsed within it.
	caller context.Context
}

// probe says what answers on one port. It never fails: what went wrong
// is the port's Kind and Why.
func (p *prober) probe(ctx context.Context, port Port) Server {
	s := Server{Host: p.host, Port: port.Number, Address: net.JoinHostPort(p.host, strconv.Itoa(port.Number)), Expected: port.Servers}
	// A connection taken tells a silent server from no server at all.
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	metrics := URL(s.Address).JoinPath("metrics").String()
	res, err := p.scrape(ctx, metrics)
	if err == nil {
		p.fromMetrics(ctx, &s, metrics, res)
		return s
	}
	var se *scrape.Error
	if !errors.As(err, &se) {
		s.Kind, s.Why = Other, termsafe.Line(err.Error(), 120)
		return s
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		s.Kind = Closed
	case se.Kind == scrape.Timeout || se.Kind == scrape.Canceled || ctx.Err() != nil:
		s.Kind = Closed
		if connected.Load() {
			s.Kind, s.Why = Silent, "took the connection, and did not answer within "+p.o.Timeout.String()
		}
	case se.Kind == scrape.Unauthorized:
		s.Kind, s.Status = Refused, se.Status
		s.Why = fmt.Sprintf("/metrics answered %d: it wants credentials", se.Status)
		if len(p.o.Headers) > 0 {
			s.Why = fmt.Sprintf("/metrics answered %d to the credentials sent", se.Status)
		}
	case se.Status == http.StatusBadRequest && NeedsModel(err):
		p.router(ctx, &s)
	case se.Kind == scrape.NotFound || se.Kind == scrape.HTTPStatus:
		s.Status = se.Status
		p.withoutMetrics(ctx, &s)
	case se.Kind == scrape.TooLarge:
		s.Kind, s.Why = Other, "its /metrics is larger than the byte cap (--max-bytes)"
	default:
		s.Kind, s.Why = Other, termsafe.Line(se.Msg, 120)
	}
	return s
}

// scrape reads a /metrics as a report would, within ctx.
func (p *prober) scrape(ctx context.Context, target string) (*scrape.Result, error) {
	return scrape.Fetch(ctx, target, scrape.Options{
		Timeout: p.o.Timeout, MaxBytes: p.o.MaxBytes, Headers: p.o.Headers, Client: p.client, UserAgent: p.o.UserAgent,
	})
}

// fromMetrics reads a /metrics answer through the parser and the dialects.
func (p *prober) fromMetrics(ctx context.Context, s *Server, at string, res *scrape.Result) {
	f, err := exposition.DetectFormat(res.ContentType, res.Body)
	if err != nil && isJSON(res.Body) {
		// trtllm-serve answers /metrics with JSON iteration stats; its
		// Prometheus text is at /prometheus/metrics.
		alt := URL(s.Address).JoinPath("prometheus", "metrics").String()
		if r2, err2 := p.scrape(ctx, alt); err2 == nil {
			if f2, err3 := exposition.DetectFormat(r2.ContentType, r2.Body); err3 == nil {
				at, res, f, err = alt, r2, f2, nil
			}
		}
	}
	if err != nil {
		s.Kind, s.Why = Other, "/metrics answers, but not in the Prometheus text format"
		if isJSON(res.Body) {
			s.Kind, s.Why = Other, "/metrics answers JSON, and /prometheus/metrics no Prometheus text"
		}
		return
	}
	fams, err := exposition.ParseContext(p.caller, res.Body, f)
	if err != nil {
		s.Kind, s.Why = Other, "/metrics cannot be read: "+termsafe.Line(err.Error(), 100)
		return
	}
	s.MetricsURL = at
	snap, err := dialect.Map(fams, dialect.Options{})
	if err != nil {
		s.Kind = Unread
		s.Prefixes = dialect.Prefixes(fams)
		s.Why = "publishes metrics no dialect reads"
		if len(s.Prefixes) > 0 {
			s.Why += " (" + strings.Join(firstN(s.Prefixes, 4), ", ") + ")"
		}
		return
	}
	s.Kind, s.Dialect, s.Name = Metrics, snap.Dialect, Title(snap.Dialect)
	for _, m := range snap.Models {
		s.Models = append(s.Models, Model{ID: termsafe.Line(m, maxModelRunes)})
	}
	if snap.Via != "" {
		// inferscope proxy publishes the tabbyAPI set; what it measures
		// is the server behind it.
		s.Proxy, s.Upstream, s.Name = true, snap.Upstream, "inferscope proxy"
		return
	}
	p.identify(ctx, s)
}

// identify asks a server whose metrics a dialect read for its version,
// and for its models where the series named none.
func (p *prober) identify(ctx context.Context, s *Server) {
	base := URL(s.Address)
	switch s.Dialect {
	case "tabbyapi":
		// tabbyAPI publishes no version; its series name the model.
	case "llamacpp":
		if body, ok := p.get(ctx, base.JoinPath("props")); ok {
			pr := parseProps(body)
			s.Version = pr.build
			if len(s.Models) == 0 && pr.model != "" {
				s.Models = []Model{{ID: pr.model}}
			}
		}
	case "tgi":
		if body, ok := p.get(ctx, base.JoinPath("info")); ok {
			var model string
			s.Version, model = parseInfo(body)
			if len(s.Models) == 0 && model != "" {
				s.Models = []Model{{ID: model}}
			}
		}
	case "sglang":
		for _, path := range []string{"server_info", "get_server_info"} {
			if body, ok := p.get(ctx, base.JoinPath(path)); ok {
				if s.Version = parseVersion(body); s.Version != "" {
					break
				}
			}
		}
	default:
		// vLLM, TensorRT-LLM, and any server read by a dialect added
		// since: /version is the common answer.
		if body, ok := p.get(ctx, base.JoinPath("version")); ok {
			s.Version = parseVersion(body)
		}
	}
	if len(s.Models) == 0 && s.Dialect != "tabbyapi" {
		if body, ok := p.get(ctx, base.JoinPath("v1", "models")); ok {
			s.Models, _ = parseModels(body)
		}
	}
}

// router fills in a llama.cpp router: its build and the models it serves.
func (p *prober) router(ctx context.Context, s *Server) {
	s.Kind, s.Dialect, s.Name, s.Status = Router, "llamacpp", "llama.cpp router", http.StatusBadRequest
	s.Why = "one llama-server serving several models: /metrics is one model's, asked with --model"
	base := URL(s.Address)
	s.MetricsURL = base.JoinPath("metrics").String()
	if body, ok := p.get(ctx, base.JoinPath("props")); ok {
		s.Version = parseProps(body).build
	}
	if body, ok := p.get(ctx, base.JoinPath("v1", "models")); ok {
		s.Models, _ = parseModels(body)
	}
}

// withoutMetrics asks a port whose /metrics was refused what answers there.
func (p *prober) withoutMetrics(ctx context.Context, s *Server) {
	base := URL(s.Address)
	if s.Status == http.StatusNotImplemented {
		// llama-server started without --metrics answers 501.
		if body, ok := p.get(ctx, base.JoinPath("props")); ok {
			if pr := parseProps(body); pr.build != "" {
				s.Kind, s.Dialect, s.Name, s.Version = NoMetrics, "llamacpp", "llama.cpp", pr.build
				s.Why = "started without --metrics"
				if pr.model != "" {
					s.Models = []Model{{ID: pr.model}}
				}
				return
			}
		}
	}
	if body, ok := p.get(ctx, base.JoinPath("api", "version")); ok {
		if v := parseVersion(body); v != "" {
			s.Kind, s.Name, s.Version = NoMetrics, "Ollama", v
			s.Why = "publishes no metrics"
			if body, ok := p.get(ctx, base.JoinPath("api", "ps")); ok {
				s.Models = parseOllamaPS(body)
			}
			return
		}
	}
	if body, ok := p.get(ctx, base.JoinPath("v1", "models")); ok {
		if models, ok := parseModels(body); ok {
			s.Kind, s.Name, s.Models = NoMetrics, "OpenAI-compatible API", models
			s.Why = fmt.Sprintf("no /metrics (HTTP %d)", s.Status)
			return
		}
	}
	s.Kind, s.Why = Other, fmt.Sprintf("answers HTTP %d at /metrics, and no inference API", s.Status)
}

// get asks for a JSON answer within the cap: ok only for a 2xx answer
// read whole.
func (p *prober) get(ctx context.Context, u *url.URL) ([]byte, bool) {
	body, status, err := getJSON(ctx, u, p.o, p.client.Transport)
	return body, err == nil && status >= 200 && status <= 299
}

// getJSON fetches u through httpsafe with o's headers (and u's user info
// as basic auth), within the JSON cap.
func getJSON(ctx context.Context, u *url.URL, o Options, tr http.RoundTripper) ([]byte, int, error) {
	c := httpsafe.NewClient(httpsafe.Options{Origin: u, Headers: o.Headers, MaxBytes: min(o.MaxBytes, jsonCap), Gzip: true, Transport: tr})
	bare := *u
	bare.User = nil // the policy sends it as basic auth, to u's host only
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, bare.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	if o.UserAgent != "" {
		req.Header.Set("User-Agent", o.UserAgent)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := httpsafe.ReadAll(resp.Body, min(o.MaxBytes, jsonCap), resp.ContentLength)
	return body, resp.StatusCode, err
}

// isJSON reports a body that starts as a JSON object or array.
func isJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n\ufeff")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

func firstN(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(xs[:n:n], "…")
}

// Title is a dialect's server as people spell it ("vLLM"); the name itself
// for one the dialects do not list.
func Title(name string) string {
	names, titles := dialect.Names(), dialect.Titles()
	for i, n := range names {
		if n == name {
			return titles[i]
		}
	}
	return name
}

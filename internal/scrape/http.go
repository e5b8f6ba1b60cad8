package scrape

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// snippetBytes is how much of an error page is read to quote from it.
const snippetBytes = 4 << 10

// phase is how far a request got, for saying where it stopped.
type phase int32

const (
	phaseConnect phase = iota // dialling
	phaseTLS                  // in the TLS handshake
	phaseWait                 // connected, request sent or being sent: no answer yet
	phaseHeaders              // the answer has begun: reading its status line and headers
	phaseBody                 // headers read: reading the body
)

// tracePhases follows a request through its phases.
func tracePhases(ctx context.Context, p *atomic.Int32) context.Context {
	set := func(ph phase) { p.Store(int32(ph)) }
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:           func(string) { set(phaseConnect) },
		TLSHandshakeStart: func() { set(phaseTLS) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				set(phaseConnect)
			}
		},
		GotConn:              func(httptrace.GotConnInfo) { set(phaseWait) },
		GotFirstResponseByte: func() { set(phaseHeaders) },
	})
}

// newRequest builds the GET for t with the headers inferscope sends unless
// o gives its own (the client's policy adds o's over them).
func newRequest(ctx context.Context, t Target, o Options) (*http.Request, error) {
	u := *t.URL
	u.User = nil // the policy sends it as basic auth, to t's host only
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, newError(BadTarget, err, "cannot build a request for "+sourceOf(t)+": "+clean(err.Error(), 120),
			"write the target as http://host:port/metrics")
	}
	req.Header.Set("Accept", Accept)
	req.Header.Set("User-Agent", o.UserAgent)
	// Only gzip and identity are decoded, so nothing else is offered.
	req.Header.Set("Accept-Encoding", "gzip")
	return req, nil
}

// client is the HTTP client of one scrape: inferscope's policy
// (internal/httpsafe) over the transport of o.Client, if given. The body
// is decoded here, not by the policy: a gzip body without
// Content-Encoding is a pre-compressed file, and says so.
func client(t Target, o Options) *http.Client {
	h := o.Headers.Clone()
	h.Del("Accept-Encoding")
	p := httpsafe.Options{Origin: t.URL, Headers: h, MaxBytes: o.MaxBytes}
	if o.Client != nil {
		p.Transport = o.Client.Transport
	}
	return httpsafe.NewClient(p)
}

func fetchHTTP(parent context.Context, t Target, o Options) (*Result, error) {
	src := sourceOf(t)
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()

	var at atomic.Int32
	req, err := newRequest(tracePhases(ctx, &at), t, o)
	if err != nil {
		return nil, err
	}

	start := o.Now()
	waited := func() time.Duration { return o.Now().Sub(start) }
	resp, err := client(t, o).Do(req)
	if err != nil {
		return nil, requestError(parent, ctx, t, o, err, waited(), phase(at.Load()))
	}
	defer resp.Body.Close()
	scrapedAt := o.Now()
	at.Store(int32(phaseBody))

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := statusError(t, o, resp)
		e.Waited = waited()
		return nil, e
	}
	wire, err := httpsafe.ReadAll(resp.Body, o.MaxBytes, resp.ContentLength)
	if err != nil {
		if errors.Is(err, errCap) {
			size := resp.ContentLength // the body's, where it came unencoded
			if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
				size = 0
			}
			e := tooLarge("the answer from "+src, o.MaxBytes, size, false)
			e.Waited = waited()
			return nil, e
		}
		return nil, bodyError(parent, ctx, t, o, err, waited(), int64(len(wire)), resp.ContentLength)
	}
	body, err := decode(wire, resp.Header.Get("Content-Encoding"), o.MaxBytes)
	if err != nil {
		e := decodeError("the answer from "+src, o.MaxBytes, err,
			"scrape again, and compare: curl -s --compressed "+termsafe.ShellQuote(src)+" | head")
		e.Waited = waited()
		return nil, e
	}
	r := &Result{
		Source:      src,
		Body:        body,
		ContentType: resp.Header.Get("Content-Type"),
		Header:      resp.Header,
		ScrapedAt:   scrapedAt,
		TimeSource:  TimeScrape,
		Waited:      waited(),
	}
	if raw := resp.Header.Get("Process-Start-Time-Unix"); raw != "" {
		r.StartToken = clean(raw, 64)
		r.HeaderStart = ParseStartHeader(raw, scrapedAt)
	}
	return r, nil
}

// snippet returns a short, cleaned quote from an error page: the message of
// a JSON error ({"detail"}, {"message"}, {"error":{"message"}}), the <title>
// of an HTML page, or the first words of plain text.
func snippet(resp *http.Response) string {
	if enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc != "" && enc != "identity" {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, snippetBytes))
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" || b[0] == '{' {
		if s := jsonMessage(b); s != "" {
			return clean(s, 120)
		}
	}
	if mt == "text/html" || bytes.HasPrefix(bytes.ToLower(b), []byte("<!doctype")) || bytes.HasPrefix(bytes.ToLower(b), []byte("<html")) {
		lower := bytes.ToLower(b)
		i := bytes.Index(lower, []byte("<title>"))
		j := bytes.Index(lower, []byte("</title>"))
		if i >= 0 && j > i {
			return clean(string(b[i+len("<title>"):j]), 120)
		}
		return ""
	}
	return clean(string(b), 120)
}

func jsonMessage(b []byte) string {
	var v struct {
		Detail  any    `json:"detail"`
		Message string `json:"message"`
		Error   any    `json:"error"`
	}
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	if s, ok := v.Detail.(string); ok && s != "" {
		return s
	}
	if v.Message != "" {
		return v.Message
	}
	switch e := v.Error.(type) {
	case string:
		return e
	case map[string]any:
		if s, ok := e["message"].(string); ok {
			return s
		}
	}
	return ""
}

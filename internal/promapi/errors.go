package promapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// Kind says what went wrong with a request.
type Kind int

const (
	// BadURL: the store's URL cannot be used.
	BadURL Kind = iota
	// Unreachable: no connection (refused, no such host, TLS).
	Unreachable
	// Timeout: the request ran past Options.Timeout.
	Timeout
	// Status: an HTTP error status without a Prometheus error in the body
	// (a proxy's 502, a wrong path's 404).
	Status
	// Query: the store refused the query with its own error (bad_data,
	// execution).
	Query
	// TooMuchData: the query would read more samples or series than the
	// store allows (Prometheus --query.max-samples, VictoriaMetrics
	// -search.maxSamplesPerQuery, -search.maxUniqueTimeseries, -search.maxSeries).
	TooMuchData
	// Unauthorized: 401 or 403.
	Unauthorized
	// NoTenant: a multi-tenant store (Mimir, Cortex) wants X-Scope-OrgID.
	NoTenant
	// BadAnswer: a 2xx answer that is not the API's JSON (an HTML page, a
	// login form).
	BadAnswer
	// Canceled: the caller's context ended.
	Canceled
	// Redirect: the store redirected to another host while the request
	// carried credentials, or redirected too many times (httpsafe).
	Redirect
	// TooLarge: an answer over Options.MaxBytes, on the wire or after
	// decompression.
	TooLarge
	// TooManySeries: a /api/v1/series answer listing more than
	// Options.MaxSeries series (Limit).
	TooManySeries
)

// Error is a request the store did not answer as asked.
type Error struct {
	Kind     Kind
	URL      string // the store's base URL, without credentials
	Endpoint string // /api/v1/query, …
	Query    string // the query or matchers sent, when there was one
	Status   int    // HTTP status, 0 when none came
	Type     string // the API's errorType (bad_data, execution, …)
	Msg      string // the store's message, or ours
	Limit    int    // TooManySeries: the bound passed
	Err      error
}

func (e *Error) Error() string {
	// The URL is the user's, and may be as long as they typed it.
	store := termsafe.Line(e.URL, urlRunes)
	where := store + e.Endpoint
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = clip(e.Err.Error())
	}
	switch e.Kind {
	case BadURL:
		if e.URL == "" {
			return "store URL: " + msg
		}
		return fmt.Sprintf("store URL %s: %s", store, msg)
	case Unreachable:
		return fmt.Sprintf("cannot reach the store at %s: %s", store, msg)
	case Timeout:
		return fmt.Sprintf("the store at %s did not answer %s in time", store, e.Endpoint)
	case Redirect, TooLarge:
		return msg // the policy's own words name the endpoint, and the other host or the cap
	case TooManySeries:
		return fmt.Sprintf("%s lists %s", where, msg)
	case Status:
		return fmt.Sprintf("%s answered HTTP %d: %s", where, e.Status, msg)
	case Unauthorized:
		return fmt.Sprintf("%s refused the request (HTTP %d): %s", where, e.Status, msg)
	case NoTenant:
		return fmt.Sprintf("%s wants a tenant (HTTP %d): %s", where, e.Status, msg)
	case BadAnswer:
		return fmt.Sprintf("%s did not answer with the Prometheus API's JSON: %s", where, msg)
	case Canceled:
		return "interrupted"
	}
	return fmt.Sprintf("%s refused the query: %s", where, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// maxMsg bounds a server's message in an error, in runes; urlRunes the
// store's URL.
const (
	maxMsg   = 300
	urlRunes = 200
)

var statusMsg = regexp.MustCompile(`^(?:client|server) error: (\d{3})$|^bad response code (\d{3})$|^HTTP (\d{3})$`)

// wrap turns what the client library returned into an *Error.
func (c *Client) wrap(ctx context.Context, endpoint, query string, err error) error {
	e := &Error{URL: c.URL(), Endpoint: endpoint, Query: query, Err: err}
	var (
		ae *v1.Error
		ne net.Error
		re *httpsafe.RedirectError
		te *httpsafe.TooLargeError
		ge *httpsafe.GzipError
	)
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.Kind = Canceled
	case errors.As(err, &re):
		e.Kind, e.Msg = Redirect, re.Error()
	case errors.As(err, &te):
		e.Kind, e.Msg = TooLarge, te.Error()
	case errors.As(err, &ge):
		e.Kind, e.Msg = BadAnswer, clip(ge.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		e.Kind = Timeout
	case errors.As(err, &ae):
		classify(e, ae)
	default:
		e.Kind, e.Msg = Unreachable, reason(err)
	}
	return e
}

// reason says why a connection failed in a few words.
func reason(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns):
		return "no such host " + dns.Name
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		msg = msg[i+2:]
	}
	return clip(msg)
}

// classify reads an API error: the status, the store's errorType and
// message, and what kind of failure they say it is.
func classify(e *Error, ae *v1.Error) {
	e.Type, e.Msg = string(ae.Type), ae.Msg
	if m := statusMsg.FindStringSubmatch(ae.Msg); m != nil {
		e.Status, _ = strconv.Atoi(m[1] + m[2] + m[3])
		e.Type, e.Msg = "", bodyMessage(ae.Detail)
	}
	if e.Status == 0 {
		// An API error without its status: the one Prometheus sends.
		switch ae.Type {
		case v1.ErrBadData:
			e.Status = 400
		case v1.ErrExec, v1.ErrTimeout, v1.ErrCanceled:
			e.Status = 422
		}
	}
	e.Kind = kindOf(e, ae)
	if e.Kind == TooMuchData {
		// The store's words about its limit, where they come after a long
		// cause (VictoriaMetrics repeats every filter first).
		e.Msg = fromLimit(e.Msg)
	}
	e.Msg = clip(e.Msg)
}

// limitWords are each store's words for a query over its limits.
var limitWords = []string{
	"too many samples",                  // Prometheus: query processing would load too many samples
	"maxsamplesperquery",                // VictoriaMetrics
	"maxuniquetimeseries",               // VictoriaMetrics
	"search.maxseries",                  // VictoriaMetrics /api/v1/series
	"the number of matching timeseries", // VictoriaMetrics 1.79: "… exceeds N; … increase -search.max* …"
	"the query hit the max number",      // Mimir, Cortex: max number of chunks/series
	"exceeded the limit",
}

// fromLimit is msg from where it names a limit, where that is past the
// start; msg otherwise.
func fromLimit(msg string) string {
	low := strings.ToLower(msg)
	at := len(msg)
	for _, w := range limitWords {
		if i := strings.Index(low, w); i >= 0 && i < at {
			at = i
		}
	}
	if at == len(msg) || at < maxMsg/2 {
		return msg
	}
	return "…" + msg[at:]
}

// kindOf is what an API error says went wrong.
func kindOf(e *Error, ae *v1.Error) Kind {
	low := strings.ToLower(e.Msg + " " + ae.Detail)
	switch {
	case ae.Type == v1.ErrBadResponse && e.Status == 0:
		return BadAnswer
	case tooMuch(low):
		return TooMuchData
	case strings.Contains(low, "org id") || strings.Contains(low, "tenant"):
		return NoTenant
	case e.Status == 401 || e.Status == 403:
		return Unauthorized
	case ae.Type == v1.ErrTimeout:
		return Timeout
	case ae.Type == v1.ErrBadResponse:
		return BadAnswer
	case e.Status == 0 || e.Status == 400 || e.Status == 422:
		return Query
	}
	return Status
}

// tooMuch recognises each store's words for a query over its limits.
func tooMuch(low string) bool {
	for _, s := range limitWords {
		if strings.Contains(low, s) {
			return true
		}
	}
	return false
}

// bodyMessage is the message in an error body: the API's JSON error when it
// is one, else the text cut to a line.
func bodyMessage(body string) string {
	var r struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}
	if json.Unmarshal([]byte(body), &r) == nil && r.Error != "" {
		return r.Error
	}
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, "<") {
		return "an HTML page"
	}
	if body == "" {
		return "no message"
	}
	return body
}

// clip keeps a server's message to one clean line of at most maxMsg
// runes.
func clip(s string) string { return termsafe.Line(s, maxMsg) }

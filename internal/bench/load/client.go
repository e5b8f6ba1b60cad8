package load

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"strings"

	"github.com/inferscope/inferscope/internal/httpsafe"
)

// MaxAnswer bounds one answer's body: a stream of 100,000 tokens in
// chunks of a few hundred bytes is about 30 MB.
const MaxAnswer = 256 << 20

// Endpoint is the URL requests for t go to: Base as it is when its path
// already ends with the API's path, Base plus the rest of an OpenAI path
// when it ends in /v1, else Base plus the API's path.
func Endpoint(t Target) *url.URL {
	u := *t.Base
	u.RawQuery, u.Fragment = "", ""
	p := strings.TrimSuffix(u.Path, "/")
	full := t.API.Path()
	switch {
	case strings.HasSuffix(p, full):
	case t.API.OpenAI() && strings.HasSuffix(p, "/v1"):
		p += strings.TrimPrefix(full, "/v1")
	default:
		p += full
	}
	u.Path, u.RawPath = p, ""
	return &u
}

// newClient is the generator's client for t under httpsafe's policy
// (credentials to their origin only, answers capped, no compression),
// over a transport of its own: HTTP/1.1, one stream a connection as a
// server's own clients open them (HTTP/2 would multiplex the streams on
// one connection and pool their flow control), and as many idle
// connections kept as requests may be in flight, so that a closed loop
// does not dial for every request.
func newClient(t Target, idle int) (*http.Client, *http.Transport) {
	tr := httpsafe.NewTransport()
	tr.ForceAttemptHTTP2 = false
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = idle
	tr.MaxConnsPerHost = 0
	c := httpsafe.NewClient(httpsafe.Options{Origin: t.Base, Headers: t.Headers, MaxBytes: MaxAnswer, Transport: tr})
	return c, tr
}

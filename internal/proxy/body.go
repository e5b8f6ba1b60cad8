package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// flow is what the proxy keeps of one request, whatever its endpoint,
// in the request's context.
type flow struct {
	x *exchange // nil: a request that is not measured
	// stream: the request asks for a streamed answer (OpenAI "stream":
	// true; Ollama unless "stream": false), as far as its body was read.
	stream bool
	// models: a request for the model list, read for context lengths.
	models bool
	// bodyLate: the client did not send its body within the body timeout
	// (set on the goroutine that forwards the body).
	bodyLate atomic.Bool
}

type flowKey struct{}

func flowOf(r *http.Request) *flow {
	f, _ := r.Context().Value(flowKey{}).(*flow)
	return f
}

// errBodyLate is a request body that did not arrive within the body
// timeout.
var errBodyLate = errors.New("the request body did not arrive in time")

// readBody reads a request body up to MaxInspect bytes, which must arrive within
// the body timeout. A body read whole is put back as a buffer the transport
// can send again (head is its bytes, whole is true); a larger one is put
// back as what was read followed by the rest, which is forwarded as it
// arrives and must keep arriving: no wait between two reads longer than the
// timeout (nginx's client_body_timeout), so that an upload of gigabytes on
// a slow link is not cut. errBodyLate is a body that did not arrive in
// time; any other error leaves the body to fail where it is forwarded.
func (p *Proxy) readBody(rc *http.ResponseController, r *http.Request, f *flow) (head []byte, whole bool, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, false, nil
	}
	max := p.o.MaxInspect
	deadline := rc.SetReadDeadline(time.Now().Add(p.o.BodyTimeout)) == nil
	head, err = io.ReadAll(io.LimitReader(r.Body, int64(max)+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, false, errBodyLate
	case err == nil && len(head) <= max:
		if deadline {
			rc.SetReadDeadline(time.Time{})
		}
		r.Body.Close()
		return head, true, nil
	}
	// Too large (or broken): forwarded as it is, uninspected, the rest of
	// it still within the deadline.
	rest := io.Reader(r.Body)
	if deadline {
		rest = &lateBody{r: r.Body, rc: rc, f: f, timeout: p.o.BodyTimeout}
	}
	r.Body = readCloser{io.MultiReader(bytes.NewReader(head), rest), r.Body}
	return head, false, nil
}

// setBody makes body the request's, from memory, so that the transport
// writes its length and can send it again.
func setBody(r *http.Request, body []byte) {
	r.ContentLength = int64(len(body))
	r.Header.Del("Content-Length") // the transport writes it from ContentLength
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
}

// lateBody is the rest of a body too large to buffer, read by the
// transport: each read that brings bytes moves the deadline on, a read
// past it is noted, and the deadline is lifted once the body has ended
// (net/http keeps reading the connection after it, to see the client go
// away).
type lateBody struct {
	r       io.Reader
	rc      *http.ResponseController
	f       *flow
	timeout time.Duration
}

func (b *lateBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	switch {
	case err == io.EOF:
		b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.f.bodyLate.Store(true)
	case n > 0:
		b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	}
	return n, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// bodyLate answers 408 to a request whose body did not arrive in time,
// and closes the connection, whose next request cannot be found.
func (p *Proxy) bodyLate(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusRequestTimeout)
	fmt.Fprintf(w, "inferscope proxy: the request body did not arrive within %s\n", p.o.BodyTimeout)
}

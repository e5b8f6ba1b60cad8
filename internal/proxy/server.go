package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of [Server].
const (
	// DefaultDrainTimeout is how long a drain waits for requests in
	// flight: under Kubernetes' default grace period of 30 s.
	DefaultDrainTimeout = 25 * time.Second
	// IdleTimeout closes a client's keep-alive connection idle this long:
	// longer than the idle timeouts of common clients' pools (Go's 90 s,
	// Python's httpx 5 s), so that they close first and do not send on a
	// connection the proxy is closing.
	IdleTimeout = 2 * time.Minute
	// MaxIdleConns bounds the clients' keep-alive connections held idle;
	// beyond it the longest idle is closed. About 20 KB each.
	MaxIdleConns = 1024
	// ReadHeaderTimeout bounds the time a client takes to send a request's
	// headers.
	ReadHeaderTimeout = 30 * time.Second
)

// Server serves a proxy to clients and its metrics, with the timeouts a
// server needs, and drains: a drain stops accepting, turns /readyz
// unready at once, and lets requests and streams in flight finish.
//
// /metrics, /healthz (200 while the process serves) and /readyz (200
// until a drain starts, then 503) are served on the metrics listener, or
// on the clients' listener when there is none (they then shadow the
// upstream's paths of those names).
type Server struct {
	p       *Proxy
	clients *http.Server
	metrics *http.Server // nil: the metrics are on clients
	ready   atomic.Bool
	idle    idleConns
	serving sync.WaitGroup
}

// NewServer prepares a server for p; Serve starts it.
func NewServer(p *Proxy) *Server {
	s := &Server{p: p}
	s.idle.max = MaxIdleConns
	s.clients = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		ConnState:         s.idle.track,
		ErrorLog:          quietLog,
	}
	return s
}

// Serve serves clients on clients and the metrics on metrics, or on
// clients when metrics is nil, until [Server.Drain] or [Server.Close].
func (s *Server) Serve(clients, metrics net.Listener) {
	own := http.NewServeMux()
	own.Handle("GET /metrics", s.p.MetricsHandler())
	own.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { answer(w, true, "ok") })
	own.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.ready.Load() {
			answer(w, true, "ready")
		} else {
			answer(w, false, "draining")
		}
	})
	if metrics == nil {
		mux := http.NewServeMux()
		mux.Handle("/", s.p)
		for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
			mux.Handle(path, own)
		}
		s.clients.Handler = mux
	} else {
		s.metrics = &http.Server{Handler: own, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: IdleTimeout, ErrorLog: quietLog}
		s.start(s.metrics, metrics)
	}
	s.ready.Store(true)
	s.start(s.clients, clients)
}

func (s *Server) start(srv *http.Server, ln net.Listener) {
	s.serving.Go(func() { srv.Serve(ln) }) // http.ErrServerClosed once drained or closed
}

func answer(w http.ResponseWriter, ok bool, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	w.Write([]byte(text + "\n"))
}

// Drain stops accepting clients, turns /readyz unready, and waits for the
// requests in flight to finish, until ctx ends; then it closes what is
// still open (those requests end as aborted). It returns the number of
// measured requests it cut. The metrics are served until the clients are
// done, then closed.
func (s *Server) Drain(ctx context.Context) (cut int64) {
	s.ready.Store(false)
	if err := s.clients.Shutdown(ctx); errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		cut = s.p.InFlight()
		s.clients.Close()
	}
	if s.metrics != nil {
		s.metrics.Close()
	}
	s.serving.Wait()
	s.p.CloseIdleConnections()
	return cut
}

// Close closes every listener and connection at once.
func (s *Server) Close() {
	s.ready.Store(false)
	s.clients.Close()
	if s.metrics != nil {
		s.metrics.Close()
	}
	s.serving.Wait()
}

// idleConns bounds the keep-alive connections held idle: when one more
// goes idle beyond max, the one idle longest is closed (the least likely
// to be in use again soon; a client's pool takes its most recent first).
type idleConns struct {
	mu    sync.Mutex
	max   int
	since map[net.Conn]time.Time
}

func (c *idleConns) track(nc net.Conn, state http.ConnState) {
	c.mu.Lock()
	if c.since == nil {
		c.since = map[net.Conn]time.Time{}
	}
	if state != http.StateIdle {
		delete(c.since, nc)
		c.mu.Unlock()
		return
	}
	c.since[nc] = time.Now()
	var oldest net.Conn
	if len(c.since) > c.max {
		var at time.Time
		for o, t := range c.since {
			if oldest == nil || t.Before(at) {
				oldest, at = o, t
			}
		}
		delete(c.since, oldest)
	}
	c.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
}

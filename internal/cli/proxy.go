package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/proxy"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/units"
	"github.com/inferscope/inferscope/internal/watch"
)

// proxyUsage is the proxy's help text.
var proxyUsage = fill(`inferscope proxy: measure a server that publishes no /metrics (Ollama, LM Studio,
any OpenAI-compatible API) by standing in front of it

Usage:
  inferscope proxy --upstream http://127.0.0.1:11434 --listen 127.0.0.1:11435
      clients talk to :11435 instead; the metric set is on http://127.0.0.1:11435/metrics,
      so "inferscope 127.0.0.1:11435" reports on the server behind it
  inferscope proxy ... --watch 2s       the proxy and the live view in one terminal

Flags:
  --upstream URL     the server's base URL: http:// or https://, or host:port (http:// is
                     added); user:password@ in it is sent to the server as basic auth,
                     in place of any Authorization header a client sends
  --listen ADDR      where clients connect (host:port)
  --metrics ADDR     serve /metrics, /healthz and /readyz on ADDR instead; /metrics on
                     --listen then goes to the upstream like any other path
  --inject-usage     ask the upstream for usage on OpenAI streams that did not
                     (stream_options.include_usage), and remove the chunk this adds
                     before the client sees it; without it such streams give no token counts
  --drain-timeout D  on SIGTERM or Ctrl-C, how long requests and streams in flight may
                     take to finish (default {drain}; at most {max-wait}); a second signal
                     stops at once
  --upstream-header-timeout D
                     answer 504 when the upstream sends no answer D after taking a
                     request (default: wait as long as it takes, a long prefill is legitimate)
  --watch D          also open the live view on the metrics, refreshed every D
                     (at least {min-interval})
  --windows LIST     rate windows of the view
  --json, --hist, --width, --columns, --no-color   as for inferscope itself

Measured: POST .../chat/completions, .../completions, /api/chat, /api/generate;
everything else is passed through. docs/proxy.md says what each API lets it measure.
SIGTERM drains and exits 0; Ctrl-C drains and exits {interrupted}; docs/limits.md lists
the proxy's timeouts and bounds, and deploy/ holds a systemd unit, a container build
and a Kubernetes sidecar.
`,
	"min-interval", seconds(watch.MinInterval),
	"interrupted", fmt.Sprint(ExitInterrupted),
	"drain", seconds(proxy.DefaultDrainTimeout),
	"max-wait", units.Duration(maxProxyWait),
)

// maxProxyWait bounds --drain-timeout and --upstream-header-timeout.
const maxProxyWait = 24 * time.Hour

// proxyOptions are the proxy's flags.
type proxyOptions struct {
	upstream, listen, metrics string
	inject                    bool
	drain, headerTimeout      time.Duration
	view                      inspectOptions
}

func runProxy(ctx context.Context, args []string, io *iostreams.IO) error {
	if wantsHelp(args) {
		fmt.Fprint(io.Out, proxyUsage)
		return nil
	}
	o, up, err := parseProxy(args)
	if err != nil {
		return err
	}
	// SIGTERM (systemd, Kubernetes, docker stop) drains as Ctrl-C does;
	// Main has SIGINT.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	p, err := proxy.New(proxy.Options{Upstream: up, InjectUsage: o.inject, UpstreamHeaderTimeout: o.headerTimeout,
		Notice: func(s string) { fmt.Fprintf(io.Err, "inferscope: proxy: %s\n", s) }})
	if err != nil {
		return usagef("give the server's base URL, such as --upstream http://127.0.0.1:11434", "%v", err)
	}
	clients, err := listen("--listen", o.listen)
	if err != nil {
		return err
	}
	var ml net.Listener
	metricsAddr := clients.Addr()
	if o.metrics != "" {
		if ml, err = listen("--metrics", o.metrics); err != nil {
			clients.Close()
			return err
		}
		metricsAddr = ml.Addr()
	}
	srv := proxy.NewServer(p)
	srv.Serve(clients, ml)
	metricsURL := "http://" + reachable(metricsAddr) + "/metrics"
	fmt.Fprintf(io.Err, "inferscope: proxy: http://%s -> %s (metrics: %s)\n", reachable(clients.Addr()), redact(up), metricsURL)

	run, stop := context.WithCancel(ctx)
	defer stop()
	var terminated atomic.Bool
	first := make(chan struct{}) // closed once the first signal is no longer awaited
	go func() {
		defer close(first)
		select {
		case <-term:
			terminated.Store(true)
			stop()
		case <-run.Done():
		}
	}()
	if o.view.watch == 0 {
		fmt.Fprintf(io.Err, "inferscope: proxy: serving until SIGTERM or Ctrl-C; try: inferscope %s\n", metricsURL)
		<-run.Done()
	} else {
		// The report says it is the proxy's, in its title and header line.
		o.view.target = metricsURL
		so := scrape.Options{Timeout: o.view.timeout, MaxBytes: o.view.maxBytes, UserAgent: userAgent()}
		err = o.view.runWatch(run, io, so)
	}
	stop()
	<-first // a SIGTERM from now on is the drain's second signal
	drain(ctx, srv, p, o.drain, term, io)
	if terminated.Load() {
		return nil // asked to stop, and stopped: exit 0
	}
	return err
}

// parseProxy reads the proxy's flags and refuses what it cannot do as
// asked.
func parseProxy(args []string) (*proxyOptions, *url.URL, error) {
	o := &proxyOptions{view: defaultOptions(), drain: proxy.DefaultDrainTimeout}
	fs := newFlagSet("proxy")
	fs.StringVar(&o.upstream, "upstream", "", "")
	fs.StringVar(&o.listen, "listen", "", "")
	fs.StringVar(&o.metrics, "metrics", "", "")
	fs.BoolVar(&o.inject, "inject-usage", false, "")
	fs.Var(durationFlag{&o.drain}, "drain-timeout", "")
	fs.Var(durationFlag{&o.headerTimeout}, "upstream-header-timeout", "")
	o.view.outputFlags.define(fs)
	o.view.watchFlags.define(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, nil, flagError(err, "proxy")
	}
	up, err := o.check(pos, given(fs))
	return o, up, err
}

// drain stops the proxy as a service manager expects: unready at once,
// then the requests in flight finish within timeout. The first signal
// started it; a second one stops it at once: a SIGTERM, or a Ctrl-C after
// a SIGTERM, closes every connection now, and a second Ctrl-C kills the
// process (Main gives SIGINT back its default action after the first).
func drain(ctx context.Context, srv *proxy.Server, p *proxy.Proxy, timeout time.Duration, term chan os.Signal, io *iostreams.IO) {
	dctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var interrupt <-chan struct{} // nil, which never fires, when Ctrl-C started the drain
	if ctx.Err() == nil {
		interrupt = ctx.Done()
	}
	go func() {
		select {
		case <-term:
		case <-interrupt:
		case <-dctx.Done():
		}
		cancel()
	}()
	if n := p.InFlight(); n > 0 {
		fmt.Fprintf(io.Err, "inferscope: proxy: draining: %d requests in flight may take up to %s to finish; a second signal stops at once\n", n, units.Duration(timeout))
	}
	if cut := srv.Drain(dctx); cut > 0 {
		fmt.Fprintf(io.Err, "inferscope: proxy: stopped with %d requests still in flight, cut\n", cut)
	}
}

// check refuses what the proxy cannot do as asked, and returns the
// upstream URL.
func (o *proxyOptions) check(pos []string, set map[string]bool) (*url.URL, error) {
	const help = "inferscope proxy --help lists the flags"
	if len(pos) > 0 {
		return nil, usagef("inferscope proxy takes flags only; "+help, "unexpected argument %q", pos[0])
	}
	if o.upstream == "" {
		return nil, usagef("name the server to stand in front of, such as --upstream http://127.0.0.1:11434 (Ollama)", "--upstream is required")
	}
	if o.listen == "" {
		return nil, usagef("say where clients connect, such as --listen 127.0.0.1:11435, and point them there", "--listen is required")
	}
	up, err := proxy.ParseUpstream(o.upstream)
	if err != nil {
		var ue *proxy.UpstreamError
		if errors.As(err, &ue) {
			return nil, usagef(ue.Hint, "%s", ue.Msg)
		}
		return nil, err
	}
	if o.metrics != "" && o.metrics == o.listen {
		return nil, usagef("leave --metrics out to serve /metrics on --listen, or give another address", "--metrics and --listen are the same address")
	}
	for _, w := range []struct {
		flag string
		d    time.Duration
	}{{"drain-timeout", o.drain}, {"upstream-header-timeout", o.headerTimeout}} {
		if w.d < 0 || w.d > maxProxyWait {
			return nil, usagef("give a duration from 0 to "+units.Duration(maxProxyWait)+", such as --"+w.flag+" 30s",
				"--%s %s is out of range", w.flag, units.Duration(w.d))
		}
	}
	if err := viewFlagsNeedWatch(set); err != nil {
		return nil, err
	}
	if err := o.view.outputFlags.check(); err != nil {
		return nil, err
	}
	return up, o.view.watchFlags.check(set)
}

// viewFlagsNeedWatch refuses the view's flags without --watch: the proxy
// alone draws nothing.
func viewFlagsNeedWatch(set map[string]bool) error {
	if set["watch"] {
		return nil
	}
	for _, f := range []string{"windows", "json", "hist", "width", "columns", "no-color"} {
		if set[f] {
			return usagef("add --watch 2s to open the live view, or leave --"+f+" out", "--%s is for the live view, which needs --watch", f)
		}
	}
	return nil
}

// listen opens a listener, with a hint when the address is taken or bad.
func listen(flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		return ln, nil
	case errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use"):
		return nil, usagef("pick a free port, or stop what holds it", "cannot listen on %s (%s): the address is already in use", addr, flag)
	}
	return nil, usagef("give host:port, such as "+flag+" 127.0.0.1:11435", "cannot listen on %s (%s): %v", addr, flag, err)
}

// reachable is how a client on this machine reaches a listener: an
// unspecified host is reached on loopback.
func reachable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// redact is the upstream without credentials, for printing.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

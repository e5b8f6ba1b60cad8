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

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/proxy"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/units"
)

var proxyLong = `Stands in front of a server that publishes no /metrics (Ollama, LM Studio,
any OpenAI-compatible API), passes every request and response through
unchanged (streams flushed event by event), measures each generation, and
publishes the metric set any server does, so that inferscope, --watch and
--since report on it.

Measured: POST .../chat/completions, .../completions, /api/chat and
/api/generate; everything else is passed through. docs/proxy.md says what
each API lets it measure. --upstream and --listen are required.

SIGTERM or Ctrl-C drains: /readyz turns unready at once, no new connection is
taken, and the requests and streams in flight finish within --drain-timeout;
a second signal stops at once. docs/limits.md lists the proxy's timeouts and
bounds, and deploy/ holds a systemd unit, a container build and a Kubernetes
sidecar.

` + watchKeys

const proxyExample = `  inferscope proxy --upstream http://127.0.0.1:11434 --listen 127.0.0.1:11435
      clients talk to :11435 instead; the metric set is on http://127.0.0.1:11435/metrics,
      so "inferscope 127.0.0.1:11435" reports on the server behind it
  inferscope proxy --upstream 127.0.0.1:8080 --listen :8081 --metrics 127.0.0.1:9101
      llama.cpp's server behind it; /metrics, /healthz and /readyz on their own port
  inferscope proxy ... -w 2s     the proxy and the live view in one terminal`

// maxProxyWait bounds --drain-timeout and --upstream-header-timeout.
const maxProxyWait = 24 * time.Hour

// proxyOptions are the proxy's flags.
type proxyOptions struct {
	upstream, listen, metrics string
	inject                    bool
	drain, headerTimeout      time.Duration
	view                      inspectOptions
}

// The proxy's exit statuses: a service that drains on its signal and
// stops has done what it was asked.
var (
	proxyExits   = []exitStatus{{ExitOK, "stopped by SIGTERM or Ctrl-C after the drain (requests in flight finished, or --drain-timeout cut them), or the view closed with q"}}
	proxySignals = []exitStatus{
		{ExitInterrupted, "Ctrl-C during a drain: ended at once"},
		{ExitTerminated, "SIGTERM before the proxy was serving, as a shell reports it (once serving, SIGTERM drains and exits 0)"},
	}
)

// newProxyCmd is inferscope proxy.
func newProxyCmd(io *iostreams.IO) *cobra.Command {
	o := &proxyOptions{view: defaultOptions(), drain: proxy.DefaultDrainTimeout}
	cmd := newCommand(commandSpec{
		use:     "proxy --upstream URL --listen ADDR [flags]",
		short:   "measure a server without /metrics (Ollama, LM Studio) from in front",
		long:    proxyLong,
		example: proxyExample,
		exits:   proxyExits,
		signals: proxySignals,
		args:    noArgs,
		moved:   map[string]string{"windows": "--windows is now --watch-windows"},
		run: func(cmd *cobra.Command, _ []string) error {
			up, err := o.check(given(cmd))
			if err != nil {
				return err
			}
			return o.run(cmd.Context(), io, up)
		},
	})
	o.define(cmd)
	return cmd
}

func (o *proxyOptions) define(cmd *cobra.Command) {
	flagDef{name: "upstream", noFiles: true, usage: "the server's base `URL`: http:// or https://, or host:port (http:// is added); " +
		"user:password@ in it is sent to the server as basic auth, in place of any Authorization header a client sends"}.string(cmd, &o.upstream)
	flagListen.string(cmd, &o.listen)
	flagDef{name: "metrics", noFiles: true, usage: "serve /metrics, /healthz and /readyz on `ADDR` instead; " +
		"/metrics on --listen then goes to the upstream like any other path"}.string(cmd, &o.metrics)
	flagDef{name: "inject-usage", usage: "ask the upstream for usage on OpenAI streams that did not (stream_options.include_usage), " +
		"and remove the chunk this adds before the client sees it; without it such streams give no token counts"}.bool(cmd, &o.inject)
	flagDef{name: "drain-timeout", noFiles: true, usage: "on SIGTERM or Ctrl-C, let requests and streams in flight take up to `D` to finish " +
		"(at most " + units.Duration(maxProxyWait) + "); a second signal stops at once"}.duration(cmd, &o.drain)
	flagDef{name: "upstream-header-timeout", noFiles: true, usage: "answer 504 when the upstream sends no answer `D` after taking a request " +
		"(default: wait as long as it takes, a long prefill is legitimate; at most " + units.Duration(maxProxyWait) + ")"}.duration(cmd, &o.headerTimeout)
	o.view.watchFlags.define(cmd)
	o.view.outputFlags.define(cmd)
}

// parseProxy reads the proxy's command line as inferscope proxy does, and
// refuses what it cannot do as asked (deploy/'s files are checked with
// it).
func parseProxy(args []string) (*proxyOptions, *url.URL, error) {
	o := &proxyOptions{view: defaultOptions(), drain: proxy.DefaultDrainTimeout}
	cmd := newCommand(commandSpec{use: "proxy", args: noArgs})
	o.define(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		return nil, nil, flagError(cmd, err, args)
	}
	if err := noArgs(cmd, cmd.Flags().Args()); err != nil {
		return nil, nil, err
	}
	up, err := o.check(given(cmd))
	return o, up, err
}

// run serves until SIGTERM or Ctrl-C, then drains.
func (o *proxyOptions) run(ctx context.Context, io *iostreams.IO, up *url.URL) error {
	// SIGTERM (systemd, Kubernetes, docker stop) drains as Ctrl-C does;
	// Main has SIGINT.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	p, err := proxy.New(proxy.Options{Upstream: up, InjectUsage: o.inject, UpstreamHeaderTimeout: o.headerTimeout,
		Notice: func(s string) { notice(io.Err, "proxy: %s", whole(s)) }})
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
	interrupted := ctx.Err() != nil // Ctrl-C started the drain
	stop()
	<-first // a SIGTERM from now on is the drain's second signal
	drain(ctx, srv, p, o.drain, term, io)
	switch {
	case !interrupted && ctx.Err() != nil:
		return ctx.Err() // Ctrl-C after a SIGTERM: ended at once
	case interrupted || terminated.Load():
		// Asked to stop, drained and stopped: a service's clean exit,
		// after SIGTERM or Ctrl-C alike (a second Ctrl-C kills the
		// process instead).
		return errStopped
	}
	return err
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
		fmt.Fprintf(io.Err, "inferscope: proxy: draining: %s in flight may take up to %s to finish; a second signal stops at once\n", units.Plural(float64(n), "request"), units.Duration(timeout))
	}
	if cut := srv.Drain(dctx); cut > 0 {
		fmt.Fprintf(io.Err, "inferscope: proxy: stopped with %s still in flight, cut\n", units.Plural(float64(cut), "request"))
	}
}

// check refuses what the proxy cannot do as asked, and returns the
// upstream URL.
func (o *proxyOptions) check(set map[string]bool) (*url.URL, error) {
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
			return nil, usagef(ue.Hint, "%s", whole(ue.Msg))
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
	if err := o.view.outputFlags.check(set); err != nil {
		return nil, err
	}
	o.view.timeout = timeoutFor(set, 0, o.view.watch)
	o.view.withRates = true
	return up, o.view.watchFlags.check(set)
}

// viewFlagsNeedWatch refuses the view's flags without --watch: the proxy
// alone draws nothing.
func viewFlagsNeedWatch(set map[string]bool) error {
	if set["watch"] {
		return nil
	}
	for _, f := range viewFlags {
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

package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/proxy"
	"github.com/inferscope/inferscope/internal/scrape"
)

var proxyLong = `Stands in front of a server that publishes no /metrics (Ollama, LM Studio,
any OpenAI-compatible API), passes every request and response through
unchanged (streams flushed event by event), measures each generation, and
publishes the metric set any server does, so that inferscope, --watch and
--since report on it.

Measured: POST .../chat/completions, .../completions, /api/chat and
/api/generate; everything else is passed through. docs/proxy.md says what
each API lets it measure. --upstream and --listen are required.

` + watchKeys

const proxyExample = `  inferscope proxy --upstream http://127.0.0.1:11434 --listen 127.0.0.1:11435
      clients talk to :11435 instead; the metric set is on http://127.0.0.1:11435/metrics,
      so "inferscope 127.0.0.1:11435" reports on the server behind it
  inferscope proxy ... -w 2s     the proxy and the live view in one terminal`

// proxyOptions are the proxy's flags.
type proxyOptions struct {
	upstream, listen, metrics string
	inject                    bool
	view                      inspectOptions
}

// newProxyCmd is inferscope proxy.
func newProxyCmd(io *iostreams.IO) *cobra.Command {
	o := &proxyOptions{view: defaultOptions()}
	cmd := newCommand(commandSpec{
		use:     "proxy --upstream URL --listen ADDR [flags]",
		short:   "measure a server without /metrics (Ollama, LM Studio) from in front",
		long:    proxyLong,
		example: proxyExample,
		exits:   []exitStatus{{ExitOK, "the view closed with q (with --watch)"}},
		args:    noArgs,
		moved:   map[string]string{"windows": "--windows is now --watch-windows"},
		run: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), io, given(cmd))
		},
	})
	flagDef{name: "upstream", noFiles: true, usage: "the server's base `URL` (http:// or https://)"}.string(cmd, &o.upstream)
	flagListen.string(cmd, &o.listen)
	flagDef{name: "metrics", noFiles: true, usage: "serve /metrics on `ADDR` instead; /metrics on --listen then goes to the upstream like any other path"}.string(cmd, &o.metrics)
	flagDef{name: "inject-usage", usage: "ask the upstream for usage on OpenAI streams that did not (stream_options.include_usage), " +
		"and remove the chunk this adds before the client sees it; without it such streams give no token counts"}.bool(cmd, &o.inject)
	o.view.watchFlags.define(cmd, true)
	o.view.outputFlags.define(cmd)
	return cmd
}

// run serves until Ctrl-C (set holds the names of the flags given).
func (o *proxyOptions) run(ctx context.Context, io *iostreams.IO, set map[string]bool) error {
	up, err := o.check(set)
	if err != nil {
		return err
	}
	p, err := proxy.New(proxy.Options{Upstream: up, InjectUsage: o.inject})
	if err != nil {
		return usagef("give the server's base URL, such as --upstream http://127.0.0.1:11434", "%v", err)
	}

	mux := http.NewServeMux()
	if o.metrics == "" {
		mux.Handle("/metrics", p.MetricsHandler())
	}
	mux.Handle("/", p)
	clients, err := listen("--listen", o.listen)
	if err != nil {
		return err
	}
	servers := []*http.Server{{Handler: mux, ReadHeaderTimeout: 30 * time.Second}}
	lns := []net.Listener{clients}
	metricsURL := "http://" + reachable(clients.Addr()) + "/metrics"
	if o.metrics != "" {
		ml, err := listen("--metrics", o.metrics)
		if err != nil {
			clients.Close()
			return err
		}
		mm := http.NewServeMux()
		mm.Handle("/metrics", p.MetricsHandler())
		servers = append(servers, &http.Server{Handler: mm, ReadHeaderTimeout: 10 * time.Second})
		lns = append(lns, ml)
		metricsURL = "http://" + reachable(ml.Addr()) + "/metrics"
	}
	for i, s := range servers {
		go s.Serve(lns[i]) // returns http.ErrServerClosed on shutdown
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, s := range servers {
			if s.Shutdown(sctx) != nil {
				s.Close()
			}
		}
	}()

	fmt.Fprintf(io.Err, "inferscope: proxy: http://%s -> %s (metrics: %s)\n", reachable(clients.Addr()), redact(up), metricsURL)
	if o.view.watch == 0 {
		fmt.Fprintf(io.Err, "inferscope: proxy: serving until Ctrl-C; try: inferscope %s\n", metricsURL)
		<-ctx.Done()
		return ctx.Err()
	}
	o.view.target = metricsURL
	o.view.header = []string{"through inferscope proxy to " + redact(up) + ": requests as the proxy saw them; the server's own state (KV cache, queue) is not published"}
	so := scrape.Options{Timeout: o.view.timeout, MaxBytes: o.view.maxBytes, UserAgent: userAgent()}
	return o.view.runWatch(ctx, io, so)
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
	up, err := url.Parse(o.upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return nil, usagef("give a URL with its scheme, such as --upstream http://127.0.0.1:11434", "--upstream %q is not an http:// or https:// URL", o.upstream)
	}
	if up.RawQuery != "" || up.Fragment != "" {
		return nil, usagef("give the base URL only, such as --upstream http://127.0.0.1:11434", "--upstream has a query or fragment; clients' paths and queries are added to it")
	}
	if o.metrics != "" && o.metrics == o.listen {
		return nil, usagef("leave --metrics out to serve /metrics on --listen, or give another address", "--metrics and --listen are the same address")
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
	for _, f := range []string{"watch-windows", "output", "json", "hist", "width", "columns", "no-color"} {
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

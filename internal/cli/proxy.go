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

	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/proxy"
	"github.com/inferscope/inferscope/internal/scrape"
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
  --upstream URL     the server's base URL (http:// or https://)
  --listen ADDR      where clients connect (host:port)
  --metrics ADDR     serve /metrics on ADDR instead; /metrics on --listen then goes
                     to the upstream like any other path
  --inject-usage     ask the upstream for usage on OpenAI streams that did not
                     (stream_options.include_usage), and remove the chunk this adds
                     before the client sees it; without it such streams give no token counts
  --watch D          also open the live view on the metrics, refreshed every D
                     (at least {min-interval})
  --windows LIST     rate windows of the view
  --json, --hist, --width, --columns, --no-color   as for inferscope itself

Measured: POST .../chat/completions, .../completions, /api/chat, /api/generate;
everything else is passed through. docs/proxy.md says what each API lets it measure.
Ctrl-C stops it (exit status {interrupted}).
`,
	"min-interval", seconds(watch.MinInterval),
	"interrupted", fmt.Sprint(ExitInterrupted),
)

// proxyOptions are the proxy's flags.
type proxyOptions struct {
	upstream, listen, metrics string
	inject                    bool
	view                      inspectOptions
}

func runProxy(ctx context.Context, args []string, io *iostreams.IO) error {
	if wantsHelp(args) {
		fmt.Fprint(io.Out, proxyUsage)
		return nil
	}
	o := &proxyOptions{view: defaultOptions()}
	fs := newFlagSet("proxy")
	fs.StringVar(&o.upstream, "upstream", "", "")
	fs.StringVar(&o.listen, "listen", "", "")
	fs.StringVar(&o.metrics, "metrics", "", "")
	fs.BoolVar(&o.inject, "inject-usage", false, "")
	o.view.outputFlags.define(fs)
	o.view.watchFlags.define(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(err, "proxy")
	}
	up, err := o.check(pos, given(fs))
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
	// The report says it is the proxy's, in its title and header line.
	o.view.target = metricsURL
	so := scrape.Options{Timeout: o.view.timeout, MaxBytes: o.view.maxBytes, UserAgent: userAgent()}
	return o.view.runWatch(ctx, io, so)
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

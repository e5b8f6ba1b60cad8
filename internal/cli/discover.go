package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inferscope/inferscope/internal/discover"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

var discoverLong = `Tries one host's default ports at once, within ` + units.Duration(discover.DefaultTimeout) + ` unless --timeout says,
and lists what answers on each: the server its /metrics reads as (the dialect
that reads it), its version and models as its own API says them, and the
command that reports on it; a llama.cpp router with the --model its /metrics
needs; a server that publishes no metrics (Ollama, LM Studio, llama.cpp
without --metrics) with the inferscope proxy command that measures it.

` + strings.TrimSpace(wrap("", "HOST is a host name or an IP address (default "+discover.Loopback+", this machine). Only that host is probed, and only on these ports: "+portList(discover.DefaultPorts)+".", 0, helpWidth-2)) + `

inferscope given no target does the same on this machine where nothing
listens on tabbyAPI's port: one server found is reported, several are listed
as here.

With -o json: one object {host, timeout_seconds, ports}, each port {address,
port, kind, expected, server, dialect, version, models [{id, status}],
metrics_url, why, command}; kind is metrics, router, no_metrics, unread,
refused, other, silent or closed, and a field with nothing to say is left out.`

const discoverExample = `  inferscope discover                     this machine's default ports
  inferscope discover gpu-box             another machine's
  inferscope discover -o json | jq -r '.ports[] | select(.command) | .command'`

// discoverOptions are the flags of inferscope discover.
type discoverOptions struct {
	inspectOptions // the reading flags: --timeout, --max-bytes, --header
	host           string
}

// newDiscoverCmd is inferscope discover.
func newDiscoverCmd(io *iostreams.IO) *cobra.Command {
	o := &discoverOptions{inspectOptions: defaultOptions()}
	cmd := newCommand(commandSpec{
		use:     "discover [HOST] [flags]",
		short:   "list the inference servers answering on a host's default ports, each with the command that reads it",
		long:    discoverLong,
		example: discoverExample,
		exits:   []exitStatus{{ExitOK, "the listing written, also where nothing answers"}},
		args:    hostArg,
		run: func(cmd *cobra.Command, pos []string) error {
			if err := o.parse(cmd, pos); err != nil {
				return err
			}
			return o.run(cmd.Context(), io)
		},
	})
	o.output = "text"
	flagOutput.string(cmd, &o.output)
	flagJSON.bool(cmd, &o.jsonAlias)
	flagTimeout.duration(cmd, &o.timeout)
	flagMaxBytes.size(cmd, &o.maxBytes)
	flagHeader.list(cmd, &o.headers)
	return cmd
}

// hostArg takes at most one HOST.
func hostArg(_ *cobra.Command, args []string) error {
	if len(args) > 1 {
		return usagef("give one host: discovery probes one host's default ports", "too many hosts: %s", termsafe.Line(strings.Join(args, " "), 120))
	}
	return nil
}

func (o *discoverOptions) parse(cmd *cobra.Command, pos []string) error {
	set := given(cmd)
	o.host = discover.Loopback
	if len(pos) == 1 {
		o.host = pos[0]
	}
	if err := discover.CheckHost(o.host); err != nil {
		hint := "give a host name or an IP address: inferscope discover gpu-box"
		if strings.Contains(o.host, ":") && !strings.Contains(o.host, "/") {
			hint = "to read one port, give it as the target: inferscope " + termsafe.ShellQuote(o.host)
		}
		return usagef(hint, "%s cannot be probed: %v", termsafe.ShellQuote(termsafe.Line(o.host, 120)), err)
	}
	if !set["timeout"] {
		o.timeout = discover.DefaultTimeout
	}
	if err := checkTimeout(o.timeout); err != nil {
		return err
	}
	if err := o.outputFlags.check(set); err != nil {
		return err
	}
	if err := o.checkLimits(); err != nil {
		return err
	}
	return o.setHeaders()
}

func (o *discoverOptions) run(ctx context.Context, io *iostreams.IO) error {
	so, err := o.scrapeOptions(io)
	if err != nil {
		return err
	}
	res, err := discover.Probe(ctx, o.host, o.probeOptions(ctx, so))
	if err != nil {
		return err
	}
	return writeListing(io.Out, res, o.json)
}

// probeOptions are a probe's, from a scrape's: the same headers, cap and
// User-Agent, within --timeout.
func (o *inspectOptions) probeOptions(ctx context.Context, so scrape.Options) discover.Options {
	return discover.Options{Ports: portsFrom(ctx), Timeout: o.timeout, Headers: so.Headers, MaxBytes: so.MaxBytes, UserAgent: so.UserAgent}
}

// probeSeam is what a context may carry for tests: the ports to probe
// instead of the default table (their listeners'), and a bound for a run
// given no target instead of discover.DefaultTimeout (where a loaded
// machine's parse is not what is tested).
type probeSeam struct {
	ports []discover.Port
	bound time.Duration
}

type seamKey struct{}

// seamFrom is the seam a context carries; its zero value is no change.
func seamFrom(ctx context.Context) probeSeam {
	s, _ := ctx.Value(seamKey{}).(probeSeam)
	return s
}

// portsFrom is the port table a context carries, or nil for the default.
func portsFrom(ctx context.Context) []discover.Port { return seamFrom(ctx).ports }

// portList writes a port table for the help: "5000 tabbyAPI, 8000 vLLM and
// TensorRT-LLM, …".
func portList(ports []discover.Port) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = strconv.Itoa(p.Number) + " " + andList(p.Servers)
	}
	return strings.Join(parts, ", ")
}

// andList writes names as "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// command is the command that reads a server found, or measures it from
// in front; "" where there is none.
func command(s discover.Server) string {
	switch s.Kind {
	case discover.Metrics:
		return "inferscope " + termsafe.ShellQuote(targetOf(s))
	case discover.Router:
		return "inferscope --model " + termsafe.ShellQuote(routerModel(s.Models)) + " " + termsafe.ShellQuote(targetOf(s))
	case discover.NoMetrics:
		return "inferscope proxy --upstream " + termsafe.ShellQuote(discover.URL(s.Address).String()) + " --listen " + proxyListen(s)
	case discover.Refused:
		return "inferscope --header 'Authorization: Bearer KEY' " + termsafe.ShellQuote(s.Address)
	}
	return ""
}

// targetOf is a server's target as a user types it: host:port where its
// metrics are at /metrics, else their URL.
func targetOf(s discover.Server) string {
	if s.MetricsURL == "" || s.MetricsURL == discover.URL(s.Address).JoinPath("metrics").String() {
		return s.Address
	}
	return s.MetricsURL
}

// routerModel is the model a router's command names: the first running,
// else the first, else a placeholder.
func routerModel(models []discover.Model) string {
	for _, m := range models {
		if m.Running() {
			return m.ID
		}
	}
	if len(models) > 0 {
		return models[0].ID
	}
	return "NAME"
}

// proxyListen is where a proxy in front of s listens: this machine, the
// next port up.
func proxyListen(s discover.Server) string {
	return net.JoinHostPort(discover.Loopback, strconv.Itoa(s.Port+1))
}

// describe is a server found in a few words: what it is, its version, its
// models, and what keeps it from a report.
func describe(s discover.Server) string {
	what := s.Name
	switch {
	case s.Proxy && s.Upstream != "":
		what = "inferscope proxy in front of " + discover.Title(s.Upstream)
	case what == "" && len(s.Expected) > 0:
		what = "on " + possessive(s.Expected) + " port"
	case what == "":
		what = "something"
	case s.Kind == discover.NoMetrics && s.Dialect == "" && s.Name != "Ollama" && len(s.Expected) > 0:
		what += " on " + possessive(s.Expected) + " port"
	}
	parts := []string{strings.TrimSpace(what + " " + s.Version)}
	if m := modelsSaid(s); m != "" {
		parts = append(parts, m)
	}
	if s.Why != "" && s.Kind != discover.Router { // a router's command says it
		parts = append(parts, s.Why)
	}
	return strings.Join(parts, " · ")
}

// possessive writes a port's servers as "tabbyAPI's", "vLLM's or
// TensorRT-LLM's".
func possessive(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + "'s"
	}
	return strings.Join(out, " or ")
}

// maxListed is how many models a line of the listing names.
const maxListed = 4

// modelsSaid names a server's models, a router's with their status.
func modelsSaid(s discover.Server) string {
	if len(s.Models) == 0 {
		if s.Kind == discover.Router {
			return "no models listed"
		}
		return ""
	}
	names := make([]string, 0, maxListed+1)
	for i, m := range s.Models {
		if i == maxListed {
			names = append(names, fmt.Sprintf("and %d more", len(s.Models)-maxListed))
			break
		}
		if m.Status != "" && s.Kind == discover.Router {
			names = append(names, m.ID+" ("+m.Status+")")
		} else {
			names = append(names, m.ID)
		}
	}
	switch {
	case s.Name == "Ollama":
		return "loaded: " + strings.Join(names, ", ")
	case len(s.Models) > 1:
		return strconv.Itoa(len(s.Models)) + " models: " + strings.Join(names, ", ")
	}
	return "model " + names[0]
}

// writeListing writes a probe's result: as text, the ports that answered,
// each with its command, then those that did not; as JSON, every port.
func writeListing(w io.Writer, res *discover.Result, asJSON bool) error {
	var b strings.Builder
	if asJSON {
		writeListingJSON(&b, res)
	} else {
		writeListingText(&b, res)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return writeError(err)
	}
	return nil
}

func writeListingText(b *strings.Builder, res *discover.Result) {
	fmt.Fprintf(b, "inferscope discover · %s · %d ports probed at once within %s\n\n",
		termsafe.Text(res.Host), len(res.Ports), units.Duration(res.Timeout))
	answering := res.Answering()
	width := 0
	for _, s := range answering {
		width = max(width, len(s.Address))
	}
	proxied := false
	for _, s := range answering {
		fmt.Fprintf(b, "%-*s  %s\n", width, s.Address, termsafe.Line(describe(s), 0))
		if c := command(s); c != "" {
			fmt.Fprintf(b, "%*s  %s\n", width, "", c)
		}
		proxied = proxied || s.Kind == discover.NoMetrics
	}
	if len(answering) == 0 {
		b.WriteString("nothing answers\n")
	} else if proxied {
		b.WriteString("\nthe proxy measures what passes through it: point clients at its --listen address, and give inferscope that address\n")
	}
	if line := portsSaid(res, discover.Silent); line != "" {
		fmt.Fprintf(b, "\nno answer within %s on %s, though the connection was taken: a busy server? raise --timeout\n", units.Duration(res.Timeout), line)
	}
	if line := portsSaid(res, discover.Closed); line != "" {
		fmt.Fprintf(b, "\nnothing listens on %s\n", line)
	}
}

// portsSaid lists the ports of a kind with the servers expected there:
// "30000 (SGLang), 3000 (TGI)".
func portsSaid(res *discover.Result, k discover.Kind) string {
	var parts []string
	for _, s := range res.Ports {
		if s.Kind != k {
			continue
		}
		p := strconv.Itoa(s.Port)
		if len(s.Expected) > 0 {
			p += " (" + strings.Join(s.Expected, ", ") + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// listedPort is one port in the JSON listing.
type listedPort struct {
	Address    string           `json:"address"`
	Port       int              `json:"port"`
	Kind       discover.Kind    `json:"kind"`
	Expected   []string         `json:"expected,omitempty"`
	Server     string           `json:"server,omitempty"`
	Dialect    string           `json:"dialect,omitempty"`
	Version    string           `json:"version,omitempty"`
	Models     []discover.Model `json:"models,omitempty"`
	MetricsURL string           `json:"metrics_url,omitempty"`
	Why        string           `json:"why,omitempty"`
	Command    string           `json:"command,omitempty"`
}

func writeListingJSON(b *strings.Builder, res *discover.Result) {
	out := struct {
		Host    string       `json:"host"`
		Timeout float64      `json:"timeout_seconds"`
		Ports   []listedPort `json:"ports"`
	}{Host: res.Host, Timeout: res.Timeout.Seconds(), Ports: []listedPort{}}
	for _, s := range res.Ports {
		out.Ports = append(out.Ports, listedPort{
			Address: s.Address, Port: s.Port, Kind: s.Kind, Expected: s.Expected, Server: s.Name, Dialect: s.Dialect,
			Version: s.Version, Models: s.Models, MetricsURL: s.MetricsURL, Why: s.Why, Command: command(s),
		})
	}
	enc := json.NewEncoder(b)
	enc.SetIndent("", "  ")
	enc.Encode(out) // a strings.Builder does not fail, and every value encodes
}

// locate decides what a run given no target reads: tabbyAPI's default
// address where anything listens there (the first port of the table),
// else the one server with metrics answering on this machine's default
// ports, all probed at once within discover.DefaultTimeout (or --timeout
// where shorter). Several such servers are listed on stdout and none
// read (*severalError); none is an error that says what was tried.
func (o *inspectOptions) locate(ctx context.Context, io *iostreams.IO, so scrape.Options) error {
	if o.target != "" {
		return nil
	}
	ports := portsFrom(ctx)
	if ports == nil {
		ports = discover.DefaultPorts
	}
	bound := min(discover.DefaultTimeout, o.timeout)
	if b := seamFrom(ctx).bound; b > 0 {
		bound = b
	}
	bctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if discover.Listening(bctx, discover.Loopback, ports[0].Number) {
		if ports[0].Number != 5000 {
			// a table of the tests' own: its first port is the default
			o.target = net.JoinHostPort(discover.Loopback, strconv.Itoa(ports[0].Number))
		}
		return nil
	}
	po := o.probeOptions(ctx, so)
	po.Ports, po.Timeout = ports, bound
	res, err := discover.Probe(bctx, discover.Loopback, po)
	if err != nil {
		return err
	}
	found := res.Reportable()
	switch len(found) {
	case 0:
		return noneFound(res)
	case 1:
		s := found[0]
		o.target = targetOf(s)
		if s.Kind == discover.Router && o.model == "" {
			metrics, _ := url.Parse(s.MetricsURL)
			return &usageError{msg: "no target given; found a llama.cpp router at " + s.Address + ": its /metrics is one model's, and --model names which",
				hints: routerHints(o.target, metrics, s.Models, len(s.Models) > 0)}
		}
		o.header = append([]string{foundLine(s, res)}, o.header...)
		return nil
	}
	if err := writeListing(io.Out, res, o.json); err != nil {
		return err
	}
	return &severalError{n: len(found)}
}

// foundLine is the report's first header line when its server was found,
// not given.
func foundLine(s discover.Server, res *discover.Result) string {
	var others []string
	for _, a := range res.Answering() {
		if a.Address != s.Address {
			what := a.Name
			if what == "" {
				what = "something"
			}
			others = append(others, what+" on "+strconv.Itoa(a.Port))
		}
	}
	if len(others) == 0 {
		return "found at " + s.Address + ", not given: the one server answering on this machine's default ports"
	}
	return "found at " + s.Address + ", not given: the one server with metrics on this machine's default ports (also answering: " +
		strings.Join(others, ", ") + "; inferscope discover lists them)"
}

// noneFound is the error of a run given no target where no server with
// metrics answers: it names the ports tried, and what answered without
// metrics with the command that measures or reads it.
func noneFound(res *discover.Result) error {
	var hints []string
	for _, s := range res.Answering() {
		h := s.Address + ": " + describe(s)
		switch c := command(s); {
		case c == "":
		case s.Kind == discover.NoMetrics:
			h += "; measure it through the proxy: " + c
		default:
			h += ": " + c
		}
		hints = append(hints, h)
	}
	for _, s := range res.Ports {
		if s.Kind == discover.Silent {
			hints = append(hints, fmt.Sprintf("%s took the connection and did not answer within %s: a busy server? read it with its own timeout: inferscope %s",
				s.Address, units.Duration(res.Timeout), termsafe.ShellQuote(s.Address)))
		}
	}
	hints = append(hints, "give the server as the target: inferscope HOST:PORT, a URL, or a saved scrape",
		"inferscope discover HOST lists what answers on another machine's default ports")
	if len(res.Answering()) > 0 {
		return &usageError{msg: "no target given, and no server answering on this machine's default ports publishes metrics inferscope reads", hints: hints}
	}
	return &usageError{msg: "no target given, and no server answers on this machine's default ports (" + portList(portsOf(res)) + ")", hints: hints}
}

func portsOf(res *discover.Result) []discover.Port {
	out := make([]discover.Port, len(res.Ports))
	for i, s := range res.Ports {
		out[i] = discover.Port{Number: s.Port, Servers: s.Expected}
	}
	return out
}

// severalError is a run given no target where several servers with
// metrics answer: each was listed on stdout with its command, and none
// read.
type severalError struct{ n int }

func (e *severalError) Error() string {
	return fmt.Sprintf("no target given, and %d servers answer on this machine's default ports: give one as the target (each is listed on stdout with its command)", e.n)
}

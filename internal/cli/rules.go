package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/iostreams"
	"github.com/inferscope/inferscope/internal/promql"
	"github.com/inferscope/inferscope/internal/promql/promtool"
	"github.com/inferscope/inferscope/internal/rules"
	"github.com/inferscope/inferscope/internal/snapshot"
	"github.com/inferscope/inferscope/internal/termsafe"
	"github.com/inferscope/inferscope/internal/units"
)

// rulesUsage is the help text of inferscope rules.
var rulesUsage = fill(`inferscope rules: Prometheus recording rules and alerts from inferscope's notes,
for the series names one server publishes

Usage:
  inferscope rules --from TARGET [flags] > inference-rules.yml   names as that server publishes them
  inferscope rules --dialect NAME [flags]                        a server's newest names, without a scrape
  inferscope rules ... --tests > rules_test.yml                  promtool unit tests for the alerts

Flags:
{source-flags}
  --format F          prometheus (a rule file), operator (a PrometheusRule) or vmalert (default prometheus)
  --runbook-base URL  the page runbook_url points into, the note's id as the fragment
                      (default {runbook})
  --name NAME         the rule groups' prefix and the PrometheusRule's name (default inferscope-DIALECT)
  --tests             write promtool unit tests for the alerts instead of the rules
  --rules-file FILE   the rule file the tests load (default {rules-file})

Check them: promtool check rules inference-rules.yml; promtool test rules rules_test.yml
`,
	"source-flags", strings.Replace(sourceUsage, "{window-flag}", windowUsage, 1),
	"runbook", rules.DefaultRunbookBase,
	"rules-file", defaultRulesFile,
)

// windowUsage is the line of --window, which rules take and dashboards do
// not (their range is $__rate_interval).
var windowUsage = "  --window D          the range of the windowed expressions (default " + promql.DefaultWindow + ")\n"

// sourceUsage lists the flags that say which server's names to write for,
// shared by rules and dashboard; {window-flag} stands where rules list
// --window.
var sourceUsage = strings.TrimSuffix(fill(`  --from TARGET       a scrape of the server: URL, host:port, a saved scrape, or - for stdin
  --dialect NAME      the server: {dialects} (default: detected
                      from --from)
  --selector SEL      label matchers added to every series, e.g. '{namespace="llm"}'
  --by LABELS         the labels that tell instances apart, comma-separated (default: instance,
                      and model_name for vLLM and SGLang)
{window-flag}  --all-sections      also write the sections the report leaves out for this server (speculative
                      decode without a drafter that has served, KV offload without offload capacity,
                      recurrent state without a budget)
  --timeout D         how long the scrape may take (default {timeout})
  --max-bytes N       largest body accepted (default {max-bytes})
  --header 'K: V'     an HTTP header to send with the scrape (repeatable)
`,
	"dialects", orList(dialect.Names()),
	"timeout", units.Duration(defaultOptions().timeout),
	"max-bytes", spellSize(defaultOptions().maxBytes),
), "\n")

// defaultRulesFile is the rule file --tests loads unless told.
const defaultRulesFile = "inference-rules.yml"

// sourceOptions say which server's names to write for: a scrape of it
// (--from), or a dialect's newest names; and how every expression
// selects and aggregates.
type sourceOptions struct {
	from, dialect, selector, by string
	window                      time.Duration
	allSections                 bool
	scrape                      inspectOptions // --timeout, --max-bytes, --header
}

// define defines the flags; windowed adds --window.
func (o *sourceOptions) define(fs *flag.FlagSet, windowed bool) {
	o.scrape = defaultOptions()
	o.window = 5 * time.Minute
	fs.StringVar(&o.from, "from", "", "")
	fs.StringVar(&o.dialect, "dialect", "", "")
	fs.StringVar(&o.selector, "selector", "", "")
	fs.StringVar(&o.by, "by", "", "")
	fs.BoolVar(&o.allSections, "all-sections", false, "")
	if windowed {
		fs.Var(durationFlag{&o.window}, "window", "")
	}
	fs.Var(durationFlag{&o.scrape.timeout}, "timeout", "")
	fs.Var(sizeFlag{&o.scrape.maxBytes}, "max-bytes", "")
	fs.Var(&o.scrape.headers, "header", "")
}

// libraryOptions checks the flags and turns them into a library's
// options; cmd names the command for hints.
func (o *sourceOptions) libraryOptions(cmd string, set map[string]bool) (promql.Options, error) {
	var lo promql.Options
	switch {
	case o.from == "" && o.dialect == "":
		return lo, usagef("inferscope "+cmd+" --from host:port reads the names from a scrape; --dialect vllm writes a server's newest names",
			"give --from TARGET (a scrape of the server) or --dialect NAME")
	case o.dialect != "" && !slices.Contains(dialect.Names(), o.dialect):
		return lo, usagef("--dialect takes one of: "+strings.Join(dialect.Names(), ", "), "unknown dialect %q", o.dialect)
	case o.window < time.Second || o.window%time.Second != 0:
		return lo, usagef("use whole seconds of at least 1s, such as --window 5m", "--window %s cannot be a range", units.Duration(o.window))
	}
	if err := o.scrape.checkLimits(); err != nil {
		return lo, err
	}
	if err := o.scrape.setHeaders(); err != nil {
		return lo, err
	}
	sel, err := promql.ParseSelector(o.selector)
	if err != nil {
		return lo, usagef(`write label matchers in braces, such as --selector '{namespace="llm", pod=~"vllm-.*"}'`, "--selector: %v", err)
	}
	lo.Selector, lo.Window, lo.AllSections = sel, promDuration(o.window), o.allSections
	if set["by"] {
		lo.By = []string{}
		for _, b := range strings.Split(o.by, ",") {
			if b = strings.TrimSpace(b); b != "" {
				lo.By = append(lo.By, b)
			}
		}
	}
	return lo, nil
}

// promDuration writes a whole number of seconds as Prometheus spells a
// range: 5m, 90s, 1h.
func promDuration(d time.Duration) string { return promtool.Duration(int(d / time.Second)) }

// source is what a library was built from, for the summary line.
type source struct {
	lib    *promql.Library
	advice snapshot.Advice
	from   string // the scrape's source, "" for the newest names
}

// library builds the PromQL library: from the scrape --from names, or from
// the dialect's newest names.
func (o *sourceOptions) library(ctx context.Context, io *iostreams.IO, lo promql.Options) (*source, error) {
	if o.from == "" {
		body, err := promql.NewestExposition(o.dialect)
		if err != nil {
			return nil, err
		}
		fams, err := exposition.Parse(body, exposition.Text)
		if err != nil {
			return nil, fmt.Errorf("reading the newest %s names: %w", o.dialect, err)
		}
		s, err := dialect.Map(fams, dialect.Options{Dialect: o.dialect})
		if err != nil {
			return nil, fmt.Errorf("reading the newest %s names: %w", o.dialect, err)
		}
		l, err := promql.Newest(o.dialect, lo)
		if err != nil {
			return nil, libraryError(err)
		}
		return &source{lib: l, advice: s.Advice}, nil
	}
	o.scrape.target = o.from
	so, err := o.scrape.scrapeOptions(io)
	if err != nil {
		return nil, err
	}
	snap, err := bounded(ctx, o.scrape.timeout, func(ctx context.Context) (*snapshot.Snapshot, error) {
		snap, _, err := load(ctx, o.from, so, dialect.Options{Dialect: o.dialect}, time.Time{})
		return snap, err
	})
	if err != nil {
		return nil, err
	}
	l, err := promql.New(snap.Raw, snap.Dialect, lo)
	if err != nil {
		return nil, libraryError(err)
	}
	return &source{lib: l, advice: snap.Advice, from: snap.Source}, nil
}

// libraryError says what was wrong with the options a library refused.
func libraryError(err error) error {
	if errors.Is(err, promql.ErrUnknownDialect) {
		return usagef("--dialect takes one of: "+strings.Join(dialect.Names(), ", "), "%v", err)
	}
	return usagef("--by takes label names separated by commas, such as --by namespace,pod", "%v", err)
}

// rulesOptions are the flags of inferscope rules.
type rulesOptions struct {
	sourceOptions
	format, runbookBase, name, rulesFile string
	tests                                bool
}

func (o *rulesOptions) flags() *flag.FlagSet {
	fs := newFlagSet("rules")
	o.sourceOptions.define(fs, true)
	fs.StringVar(&o.format, "format", string(rules.Prometheus), "")
	fs.StringVar(&o.runbookBase, "runbook-base", rules.DefaultRunbookBase, "")
	fs.StringVar(&o.name, "name", "", "")
	fs.BoolVar(&o.tests, "tests", false, "")
	fs.StringVar(&o.rulesFile, "rules-file", defaultRulesFile, "")
	return fs
}

func parseRules(args []string) (*rulesOptions, promql.Options, error) {
	o := &rulesOptions{}
	fs := o.flags()
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, promql.Options{}, flagError(err, "rules")
	}
	if len(pos) > 0 {
		return nil, promql.Options{}, usagef("give the server with --from "+termsafe.ShellQuote(pos[0]), "inferscope rules takes no arguments, only flags: %s", strings.Join(pos, " "))
	}
	set := given(fs)
	lo, err := o.libraryOptions("rules", set)
	if err != nil {
		return nil, lo, err
	}
	switch {
	case !slices.Contains(formatNames(), o.format):
		return nil, lo, usagef("--format takes prometheus, operator or vmalert", "unknown rule format %q", o.format)
	case o.tests && o.format != string(rules.Prometheus):
		return nil, lo, usagef("write the rules with --format prometheus for promtool, and the tests from the same flags",
			"--tests writes promtool tests, which load a plain rule file, not --format %s", o.format)
	case o.tests && lo.Window != promql.DefaultWindow:
		return nil, lo, usagef("leave out --window (the tests' series are written for "+promql.DefaultWindow+")", "--tests needs the default --window %s", promql.DefaultWindow)
	case set["rules-file"] && !o.tests:
		return nil, lo, usagef("add --tests, or leave out --rules-file", "--rules-file names the rule file the tests load")
	case o.format == string(rules.Operator) && o.name != "" && !k8sName.MatchString(o.name):
		return nil, lo, usagef("a PrometheusRule's name is lower-case letters, digits and -, such as --name llm-rules",
			"--name %q cannot name a Kubernetes object", o.name)
	case !strings.HasPrefix(o.runbookBase, "http://") && !strings.HasPrefix(o.runbookBase, "https://"):
		return nil, lo, usagef("give a URL such as --runbook-base https://wiki.example.com/llm-alerts", "--runbook-base %q is not an http(s) URL", o.runbookBase)
	}
	return o, lo, nil
}

// k8sName is a Kubernetes object name (RFC 1123 label).
var k8sName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func formatNames() []string {
	out := make([]string, len(rules.Formats))
	for i, f := range rules.Formats {
		out[i] = string(f)
	}
	return out
}

func runRules(ctx context.Context, args []string, io *iostreams.IO) error {
	if wantsHelp(args) {
		fmt.Fprint(io.Out, rulesUsage)
		return nil
	}
	o, lo, err := parseRules(args)
	if err != nil {
		return err
	}
	src, err := o.library(ctx, io, lo)
	if err != nil {
		return err
	}
	set, err := rules.Generate(src.lib, rules.Options{Advice: src.advice, RunbookBase: o.runbookBase, Name: o.name})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	what := fmt.Sprintf("%d recording rules, %d alerts", len(set.Records), len(set.Alerts))
	if o.tests {
		file, err := set.Tests(src.lib, o.rulesFile)
		if err != nil {
			return usagef("the tests write series that every matcher of --selector accepts; loosen it, or write the tests without it", "%v", err)
		}
		if err := rules.Encode(&b, file); err != nil {
			return err
		}
		what = fmt.Sprintf("promtool tests for %d alerts, loading %s", len(set.Alerts), o.rulesFile)
	} else if err := set.Write(&b, rules.Format(o.format)); err != nil {
		return err
	}
	if _, err := io.Out.Write(b.Bytes()); err != nil {
		return writeError(err)
	}
	fmt.Fprintf(io.Err, "inferscope: %s for %s, %s\n", what, src.lib.Dialect(), src.names())
	return nil
}

// names says whose series names the output uses, and which of the
// report's sections it leaves out for that server.
func (s *source) names() string {
	if s.from == "" {
		return "its newest series names"
	}
	out := "the series names " + termsafe.Line(s.from, 200) + " publishes"
	if left := s.lib.LeftOut(); len(left) > 0 {
		out += " (without " + strings.Join(left, ", ") + ", as its report: --all-sections writes them)"
	}
	return out
}

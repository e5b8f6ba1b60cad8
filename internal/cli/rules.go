package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

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

const rulesLong = `Writes Prometheus recording rules and alerts from inferscope's notes, for the
series names one server publishes: TARGET is a scrape of it, as inferscope
reads one (a URL, host:port, a saved scrape, or - for stdin); without one,
--dialect writes for a server's newest names. --selector adds label matchers
to every series and --by names the labels that tell servers apart.

Check them: promtool check rules inference-rules.yml; promtool test rules rules_test.yml`

const rulesExample = `  inferscope rules gpu-box:8000 > inference-rules.yml          the names that server publishes
  inferscope rules --dialect vllm --selector '{namespace="llm"}' --by namespace,pod
  inferscope rules scrape.prom --format operator                 a prometheus-operator PrometheusRule
  inferscope rules scrape.prom --tests > rules_test.yml          promtool unit tests for the alerts`

// defaultRulesFile is the rule file --tests loads unless told.
const defaultRulesFile = "inference-rules.yml"

// sourceOptions say which server's names to write for: a scrape of it
// (TARGET), or a dialect's newest names; and how every expression selects
// and aggregates. Rules and dashboards share them.
type sourceOptions struct {
	target, dialect, selector, by string
	window                        time.Duration
	allSections                   bool
	scrape                        inspectOptions // --timeout, --max-bytes, --header
	format                        string
	command                       string // "rules" or "dashboard", for hints
}

// define defines the flags; windowed adds --window.
func (o *sourceOptions) define(cmd *cobra.Command, windowed bool) {
	o.command = cmd.Name()
	o.scrape = defaultOptions()
	o.window = defaultWindow
	flagDialect.string(cmd, &o.dialect)
	flagSelector.string(cmd, &o.selector)
	flagBy.string(cmd, &o.by)
	if windowed {
		flagWindow.duration(cmd, &o.window)
	}
	flagDef{name: "all-sections", usage: "also write the sections the report leaves out for this server (speculative decode without " +
		"a drafter that has served, KV offload without offload capacity, recurrent state without a budget)"}.bool(cmd, &o.allSections)
	flagFormat.string(cmd, &o.format)
	flagTimeout.duration(cmd, &o.scrape.timeout)
	flagMaxBytes.size(cmd, &o.scrape.maxBytes)
	flagHeader.list(cmd, &o.scrape.headers)
}

// targetArg takes at most one TARGET.
func targetArg(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return usagef("give one target: a URL, host:port, a saved scrape or -", "too many targets: %s", strings.Join(args, " "))
	}
	return nil
}

// libraryOptions checks the flags and the target and turns them into a
// library's options; formats are the command's, the first the default.
func (o *sourceOptions) libraryOptions(cmd *cobra.Command, pos []string, formats []string) (promql.Options, error) {
	var lo promql.Options
	set := given(cmd)
	if len(pos) == 1 {
		o.target = pos[0]
	}
	o.scrape.timeout = timeoutFor(set, o.scrape.timeout, 0)
	if o.format == "" {
		o.format = formats[0]
	}
	if err := o.checkSource(cmd.CommandPath(), formats); err != nil {
		return lo, err
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

// checkSource refuses a command (name) given neither a target nor a
// dialect, an unknown dialect, a window no range can be, or a format it
// does not write.
func (o *sourceOptions) checkSource(name string, formats []string) error {
	switch {
	case o.target == "" && o.dialect == "":
		return usagef(name+" host:port reads the names from a scrape; --dialect vllm writes a server's newest names",
			"give a TARGET (a scrape of the server) or --dialect NAME")
	case o.dialect != "" && !slices.Contains(dialect.Names(), o.dialect):
		return usagef("--dialect takes one of: "+strings.Join(dialect.Names(), ", "), "unknown dialect %q", o.dialect)
	case o.window < time.Second || o.window%time.Second != 0:
		return usagef("use whole seconds of at least 1s, such as --window 5m", "--window %s cannot be a range", units.Duration(o.window))
	case !slices.Contains(formats, o.format):
		return usagef("--format takes "+orList(formats)+" here", "%s cannot write --format %s", name, o.format)
	}
	return nil
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

// library builds the PromQL library: from the scrape of TARGET, or from
// the dialect's newest names.
func (o *sourceOptions) library(ctx context.Context, io *iostreams.IO, lo promql.Options) (*source, error) {
	if o.target == "" {
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
	o.scrape.target = o.target
	so, err := o.scrape.scrapeOptions(io)
	if err != nil {
		return nil, err
	}
	snap, err := bounded(ctx, o.scrape.timeout, func(ctx context.Context) (*snapshot.Snapshot, error) {
		snap, _, err := loadVia(ctx, o.target, so, dialect.Options{Dialect: o.dialect}, time.Time{}, o.command)
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
	runbookBase, name, rulesFile string
	tests                        bool
	// dcgm adds the GPU rules over dcgm-exporter's names (issue 32).
	dcgm bool
}

// newRulesCmd is inferscope rules.
func newRulesCmd(io *iostreams.IO) *cobra.Command {
	o := &rulesOptions{runbookBase: rules.DefaultRunbookBase, rulesFile: defaultRulesFile}
	cmd := newCommand(commandSpec{
		use:     "rules [TARGET] [flags]",
		short:   "Prometheus recording rules and alerts for the series names a server publishes",
		long:    rulesLong,
		example: rulesExample,
		exits:   []exitStatus{{ExitOK, "the rules (or tests) written, and a line on stderr saying what and for which names"}},
		args:    targetArg,
		moved:   map[string]string{"from": "the target is an argument now: inferscope rules TARGET"},
		run: func(cmd *cobra.Command, pos []string) error {
			lo, err := o.parse(cmd, pos)
			if err != nil {
				return err
			}
			return o.run(cmd.Context(), io, lo)
		},
	})
	o.sourceOptions.define(cmd, true)
	flagDef{name: "runbook-base", noFiles: true, usage: "the page runbook_url points into, `URL`, the note's id as the fragment"}.string(cmd, &o.runbookBase)
	flagDef{name: "name", noFiles: true, usage: "the rule groups' prefix and the PrometheusRule's name, `NAME` (default inferscope-DIALECT)"}.string(cmd, &o.name)
	flagDef{name: "tests", usage: "write promtool unit tests for the alerts instead of the rules"}.bool(cmd, &o.tests)
	flagDef{name: "rules-file", usage: "the rule `FILE` the tests load"}.string(cmd, &o.rulesFile)
	flagDCGM.bool(cmd, &o.dcgm)
	return cmd
}

func (o *rulesOptions) parse(cmd *cobra.Command, pos []string) (promql.Options, error) {
	lo, err := o.libraryOptions(cmd, pos, formatNames())
	if err != nil {
		return lo, err
	}
	set := given(cmd)
	switch {
	case o.tests && o.format != string(rules.Prometheus):
		return lo, usagef("write the rules with --format prometheus for promtool, and the tests from the same flags",
			"--tests writes promtool tests, which load a plain rule file, not --format %s", o.format)
	case o.tests && lo.Window != promql.DefaultWindow:
		return lo, usagef("leave out --window (the tests' series are written for "+promql.DefaultWindow+")", "--tests needs the default --window %s", promql.DefaultWindow)
	case o.tests && o.dcgm:
		return lo, usagef("write the tests without --dcgm: the GPU rules are proven by inferscope's own tests", "--tests writes tests for the server's alerts only")
	case set["rules-file"] && !o.tests:
		return lo, usagef("add --tests, or leave out --rules-file", "--rules-file names the rule file the tests load")
	case o.format == string(rules.Operator) && o.name != "" && !k8sName.MatchString(o.name):
		return lo, usagef("a PrometheusRule's name is lower-case letters, digits and -, such as --name llm-rules",
			"--name %q cannot name a Kubernetes object", o.name)
	case !strings.HasPrefix(o.runbookBase, "http://") && !strings.HasPrefix(o.runbookBase, "https://"):
		return lo, usagef("give a URL such as --runbook-base https://wiki.example.com/llm-alerts", "--runbook-base %q is not an http(s) URL", o.runbookBase)
	}
	return lo, nil
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

func (o *rulesOptions) run(ctx context.Context, io *iostreams.IO, lo promql.Options) error {
	src, err := o.library(ctx, io, lo)
	if err != nil {
		return err
	}
	set, err := rules.Generate(src.lib, rules.Options{Advice: src.advice, RunbookBase: o.runbookBase, Name: o.name})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	what := rulesSummary(len(set.Records), len(set.Alerts))
	if o.tests {
		file, err := set.Tests(src.lib, o.rulesFile)
		if err != nil {
			return usagef("the tests write series that every matcher of --selector accepts; loosen it, or write the tests without it", "%v", err)
		}
		if err := rules.Encode(&b, file); err != nil {
			return err
		}
		what = fmt.Sprintf("promtool tests for %s, loading %s", units.Plural(float64(len(set.Alerts)), "alert"), termsafe.Echo(o.rulesFile))
	} else if o.dcgm {
		g, err := promql.NewGPU(promql.Options{Selector: lo.Selector, Window: lo.Window})
		if err != nil {
			return err
		}
		gpuSet, err := rules.GenerateGPU(g, rules.Options{RunbookBase: o.runbookBase})
		if err != nil {
			return err
		}
		if err := set.Beside(&b, rules.Format(o.format), gpuSet); err != nil {
			return err
		}
		what += ", and " + rulesSummary(len(gpuSet.Records), len(gpuSet.Alerts)) + " over dcgm-exporter's names"
	} else if err := set.Write(&b, rules.Format(o.format)); err != nil {
		return err
	}
	if _, err := io.Out.Write(b.Bytes()); err != nil {
		return writeError(err)
	}
	notice(io.Err, "%s for %s, %s", whole(what), src.lib.Dialect(), whole(src.names()))
	return nil
}

// rulesSummary says how many rules of each kind were written.
func rulesSummary(records, alerts int) string {
	return units.Plural(float64(records), "recording rule") + ", " + units.Plural(float64(alerts), "alert")
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

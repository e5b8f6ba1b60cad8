package cli

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/rules"
)

const vllmFixture = "../../testdata/dialects/vllm-0.10.prom"

func TestRulesHelp(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		golden string
	}{
		{[]string{"rules", "--help"}, "rules-help.txt"},
		{[]string{"rules", "--dialect", "vllm", "-h"}, "rules-help.txt"},
		{[]string{"dashboard", "--help"}, "dashboard-help.txt"},
	} {
		out, errOut, code := runCLI(t, "", tt.args...)
		if code != ExitOK || errOut != "" {
			t.Fatalf("%v: exit %d: %s", tt.args, code, errOut)
		}
		golden.Check(t, tt.golden, out)
	}
}

// What a user gets wrong on the command line gets one error line and a
// hint, exit status 2, and nothing on stdout.
func TestRulesErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // part of the error line
	}{
		{[]string{"rules"}, "give a TARGET"},
		{[]string{"rules", "--from", vllmFixture}, "unknown flag --from"},
		{[]string{"rules", vllmFixture, vllmFixture}, "too many targets"},
		{[]string{"rules", "--dialect", "nginx"}, `unknown dialect "nginx"`},
		{[]string{"rules", "--dialect", "vllm", "--selector", "up{job=\"x\"}"}, "metric name"},
		{[]string{"rules", "--dialect", "vllm", "--selector", "{namespace=llm}"}, "quoted value"},
		{[]string{"rules", "--dialect", "vllm", "--by", "pod,le"}, `cannot aggregate by "le"`},
		{[]string{"rules", "--dialect", "vllm", "--window", "0.5s"}, "--window 500ms cannot be a range"},
		{[]string{"rules", "--dialect", "vllm", "--format", "thanos"}, "inferscope rules cannot write --format thanos"},
		{[]string{"rules", "--dialect", "vllm", "--format", "grafana"}, "inferscope rules cannot write --format grafana"},
		{[]string{"rules", "--dialect", "vllm", "--format", "operator", "--tests"}, "--tests writes promtool tests"},
		{[]string{"rules", "--dialect", "vllm", "--tests", "--window", "10m"}, "--tests needs the default --window 5m"},
		{[]string{"rules", "--dialect", "vllm", "--rules-file", "x.yml"}, "--rules-file names the rule file the tests load"},
		{[]string{"rules", "--dialect", "vllm", "--runbook-base", "wiki/llm"}, "is not an http(s) URL"},
		{[]string{"rules", "--dialect", "vllm", "--format", "operator", "--name", "LLM Rules"}, "cannot name a Kubernetes object"},
		{[]string{"rules", "--dialect", "vllm", "--nope"}, "unknown flag --nope"},
		{[]string{"rules", "no-such-file.prom"}, "no-such-file.prom"},
		{[]string{"rules", vllmFixture, "--dialect", "sglang"}, "no sglang series"},
		{[]string{"dashboard", "--dialect", "vllm", "--format", "kibana"}, "inferscope dashboard cannot write --format kibana"},
		{[]string{"dashboard", "--from", vllmFixture}, "unknown flag --from"},
		{[]string{"dashboard", "--dialect", "vllm", "--format", "grafana", "--uid", "a b"}, `--uid "a b" cannot name a dashboard`},
		{[]string{"dashboard", "--dialect", "vllm", "--format", "grafana", "--window", "5m"}, "unknown flag --window"},
	}
	for _, tt := range tests {
		out, errOut, code := runCLI(t, "", tt.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != ExitError || out != "" || len(lines) < 2 || !strings.HasPrefix(lines[0], "inferscope: error: ") ||
			!strings.HasPrefix(lines[1], "inferscope: hint: ") || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr:\n%s\nwant an error with %q and a hint", tt.args, code, len(out), errOut, tt.want)
		}
	}
}

// The rules as a user writes them from a saved scrape, from stdin, and
// for a dialect: the rule file on stdout, one line on stderr saying what
// it is and whose names it uses.
func TestRulesCommand(t *testing.T) {
	body, err := os.ReadFile(vllmFixture)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		stdin  string
		stderr string
		check  func(t *testing.T, out string)
	}{
		{[]string{"rules", vllmFixture}, "",
			"inferscope: 47 recording rules, 8 alerts for vllm, the series names " + vllmFixture + " publishes\n",
			func(t *testing.T, out string) {
				ruleFile(t, out)
				// vLLM 0.10's names, not the newest ones.
				if !strings.Contains(out, "vllm:time_per_output_token_seconds_bucket") || strings.Contains(out, "vllm:inter_token_latency") {
					t.Error("not the scrape's names")
				}
			}},
		{[]string{"rules", "-", "--format", "vmalert"}, string(body),
			"inferscope: 47 recording rules, 8 alerts for vllm, the series names - publishes\n",
			func(t *testing.T, out string) {
				ruleFile(t, out)
				if strings.Count(out, "type: prometheus") != 2 {
					t.Error("vmalert groups without their type")
				}
			}},
		{[]string{"rules", "--dialect", "tgi", "--by", "pod", "--runbook-base", "https://wiki.example/llm"}, "",
			"inferscope: 28 recording rules, 5 alerts for tgi, its newest series names\n",
			func(t *testing.T, out string) {
				ruleFile(t, out)
				if !strings.Contains(out, "runbook_url: https://wiki.example/llm#queue_pressure") || !strings.Contains(out, "sum by (pod)") {
					t.Error("--runbook-base or --by not applied")
				}
			}},
		{[]string{"rules", "--dialect", "vllm", "--tests", "--rules-file", "my-rules.yml"}, "",
			"inferscope: promtool tests for 10 alerts, loading my-rules.yml for vllm, its newest series names\n",
			func(t *testing.T, out string) {
				var doc map[string]any
				if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
					t.Errorf("stdout is not YAML: %v", err)
				}
				if !strings.HasPrefix(out, "rule_files:\n  - my-rules.yml\n") {
					t.Errorf("tests do not load --rules-file: %.80s", out)
				}
			}},
	}
	for _, tt := range tests {
		out, errOut, code := runCLI(t, tt.stdin, tt.args...)
		if code != ExitOK || errOut != tt.stderr {
			t.Errorf("%v: exit %d, stderr %q, want %q", tt.args, code, errOut, tt.stderr)
			continue
		}
		tt.check(t, out)
	}
}

// ruleFile checks that out is a rule file of two groups.
func ruleFile(t *testing.T, out string) {
	t.Helper()
	var f rules.File
	if err := yaml.Unmarshal([]byte(out), &f); err != nil || len(f.Groups) != 2 {
		t.Errorf("not a rule file of two groups: %v", err)
	}
}

func TestDashboardCommand(t *testing.T) {
	out, errOut, code := runCLI(t, "", "dashboard", vllmFixture, "--title", "LLM fleet")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type string `json:"type"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Title != "LLM fleet" || d.UID != "inferscope-vllm" || len(d.Panels) < 20 {
		t.Errorf("title %q uid %q, %d panels", d.Title, d.UID, len(d.Panels))
	}
	// The line counts the panels written: every one but the rows.
	panels := 0
	for _, p := range d.Panels {
		if p.Type != "row" {
			panels++
		}
	}
	if want := regexp.MustCompile(`^inferscope: a grafana dashboard of ` + strconv.Itoa(panels) + ` panels for vllm, the series names ` + regexp.QuoteMeta(vllmFixture) + ` publishes\n$`); !want.MatchString(errOut) {
		t.Errorf("stderr %q, want %d panels", errOut, panels)
	}
	out, errOut, code = runCLI(t, "", "dashboard", "--dialect", "sglang", "--format", "perses")
	if code != ExitOK || !strings.HasPrefix(out, "kind: Dashboard\n") || !strings.Contains(out, "inferscope · SGLang") || !strings.Contains(out, "${instance:regex}") {
		t.Errorf("perses: exit %d, stderr %s, stdout %.200s", code, errOut, out)
	}
}

// The summary line counts in words: "1 alert", not "1 alerts" (issue 21).
func TestRulesSummary(t *testing.T) {
	for _, tt := range []struct {
		records, alerts int
		want            string
	}{
		{45, 8, "45 recording rules, 8 alerts"},
		{1, 1, "1 recording rule, 1 alert"},
		{0, 0, "0 recording rules, 0 alerts"},
	} {
		if got := rulesSummary(tt.records, tt.alerts); got != tt.want {
			t.Errorf("rulesSummary(%d, %d) = %q, want %q", tt.records, tt.alerts, got, tt.want)
		}
	}
}

// --all-sections: a real llama-server without a draft model gets no
// spec-decode rules or panels (its report has no such section) unless
// asked, and the summary says what was left out.
func TestAllSections(t *testing.T) {
	const from = "../../testdata/real/llama-server/b10309-no-drafter.prom"
	for _, cmd := range [][]string{{"rules"}, {"dashboard", "--format", "grafana"}} {
		out, errOut, code := runCLI(t, "", append(cmd, from)...)
		if code != ExitOK || strings.Contains(out, "spec_decode") || !strings.Contains(errOut, "(without spec_decode, as its report: --all-sections writes them)") {
			t.Errorf("%v: exit %d, spec_decode written %v, stderr %q", cmd, code, strings.Contains(out, "spec_decode"), errOut)
		}
		out, errOut, code = runCLI(t, "", append(cmd, from, "--all-sections")...)
		if code != ExitOK || !strings.Contains(out, "spec_decode") || strings.Contains(errOut, "without") {
			t.Errorf("%v --all-sections: exit %d, spec_decode written %v, stderr %q", cmd, code, strings.Contains(out, "spec_decode"), errOut)
		}
	}
}

package promql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/promql"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in   string
		want string // the matchers written back, joined by ", "; "" for none
		err  string // part of the error, "" when it must parse
	}{
		{`{namespace="llm"}`, `namespace="llm"`, ""},
		{`namespace="llm"`, `namespace="llm"`, ""},
		{` { namespace = "llm" , pod=~"vllm-.*", } `, `namespace="llm", pod=~"vllm-.*"`, ""},
		{`{}`, ``, ""},
		{``, ``, ""},
		{`{job!="x",env!~'dev|test'}`, `job!="x", env!~"dev|test"`, ""},
		{"{a=`x\\y`}", `a="x\\y"`, ""},
		{`{a='it\'s "q"'}`, `a="it's \"q\""`, ""},
		{`{a="x",a="x"}`, `a="x"`, ""},
		{`{a="x\n"}`, `a="x\n"`, ""},

		{`vllm:num_requests_running{pod="a"}`, "", "metric name"},
		{`up`, "", "metric name"},
		{`{__name__="x"}`, "", "__name__"},
		{`{namespace="llm"`, "", "missing closing }"},
		{`{namespace="llm"} x`, "", "after the closing }"},
		{`{namespace "llm"}`, "", "expected =, !=, =~ or !~"},
		{`{namespace=llm}`, "", "quoted value"},
		{`{namespace="llm}`, "", "unterminated"},
		{`{9x="a"}`, "", "label name"},
		{`{a="b" c="d"}`, "", "comma"},
		{`{a=~"("}`, "", "regular expression"},
		{`{a="\q"}`, "", "escape"},
	}
	for _, tt := range tests {
		ms, err := promql.ParseSelector(tt.in)
		if tt.err != "" {
			var se *promql.SelectorError
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &se) {
				t.Errorf("ParseSelector(%q) = %v, %v; want an error with %q", tt.in, ms, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSelector(%q): %v", tt.in, err)
			continue
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.String())
		}
		if g := strings.Join(got, ", "); g != tt.want {
			t.Errorf("ParseSelector(%q) = %s, want %s", tt.in, g, tt.want)
		}
	}
}

// A selector that parses writes back as one that parses to the same
// matchers; none makes the parser panic.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{`{namespace="llm"}`, `a=~"x|y",b!="z"`, `{a='q\'s'}`, "{a=`b`}", `{a="\u00e9\x00"}`, `{`, `{a=~"["}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := promql.ParseSelector(s)
		if err != nil {
			return
		}
		var parts []string
		for _, m := range ms {
			parts = append(parts, m.String())
		}
		again, err := promql.ParseSelector("{" + strings.Join(parts, ",") + "}")
		if err != nil {
			t.Fatalf("%q parsed, its rewrite %q does not: %v", s, parts, err)
		}
		if len(again) != len(ms) {
			t.Fatalf("%q: %d matchers, rewritten %d", s, len(ms), len(again))
		}
		for i := range ms {
			if ms[i] != again[i] {
				t.Fatalf("%q: matcher %v rewritten as %v", s, ms[i], again[i])
			}
		}
	})
}

package fleet

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct{ in, want, bad string }{
		{`{namespace="llm"}`, `namespace="llm"`, ""},
		{`namespace="llm", pod=~"vllm-.*"`, `namespace="llm",pod=~"vllm-.*"`, ""},
		{` { a!="x" , b!~'y|z' } `, `a!="x",b!~"y|z"`, ""},
		{"{a=`raw\\d`}", `a="raw\\d"`, ""},
		{`{a="q\"uote"}`, `a="q\"uote"`, ""},
		{`{}`, ``, ""},
		{``, ``, ""},
		{`up{job="x"}`, "", "not a query or a metric name"},
		{`rate(x[5m])`, "", "not a query"},
		{`{a="x"`, "", "missing }"},
		{`{a=x}`, "", "quoted value"},
		{`{a=~"("}`, "", "not a regular expression"},
		{`{a="x" b="y"}`, "", "expected ,"},
		{`{1a="x"}`, "", "label"},
		{`{a="unterminated}`, "", "unterminated"},
		{`{a="bad\q"}`, "", "bad escape"},
	} {
		s, err := ParseSelector(tc.in)
		switch {
		case tc.bad != "":
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.bad)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case s.String() != tc.want:
			t.Errorf("%q: %q, want %q", tc.in, s.String(), tc.want)
		}
	}
}

// A huge selector's error quotes the text around the problem, on one
// short line (a 12 kB --selector with a missing } printed a 14,350-character
// line); so do the errors that name a selector.
func TestHugeSelector(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 667 {
		fmt.Fprintf(&b, `pod!="vllm-%05d",`, i)
	}
	huge := b.String() // 12 kB, no closing brace
	long := `{pod=~"` + strings.Repeat("(", 12000) + `"}`
	for _, tc := range []struct{ in, say string }{
		{huge, fmt.Sprintf(`missing } at byte %d of %d: …"64\",pod!=\"vllm-00665\",pod!=\"vllm-00666\","`, len(huge)+1, len(huge))},
		{long, "pod: not a regular expression (error parsing regexp: missing closing ): `"},
		{huge[:6000] + "\x1b[31m" + huge[6000:], `expected a quoted value ("…") at byte 6001 of 12012: …"`},
	} {
		_, err := ParseSelector(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("err = %v, want %q", err, tc.say)
			continue
		}
		if n := len(err.Error()); n > 300 || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("message of %d bytes: %q", n, err)
		}
	}
	sel, err := ParseSelector(huge + "}")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []error{&NoSeriesError{Selector: sel}, &LimitError{What: "instances", Limit: 1, Found: 2, Selector: sel}} {
		if n := len([]rune(e.Error())); n > 300 {
			t.Errorf("%T: message of %d runes", e, n)
		}
	}
}

func TestParseInstance(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"pod=vllm-7", `pod="vllm-7"`},
		{"namespace=llm, pod=vllm-7", `namespace="llm",pod="vllm-7"`},
		{`{pod="vllm-7"}`, `pod="vllm-7"`},
		{"job=x,instance=10.0.0.7:8000", `job="x",instance="10.0.0.7:8000"`},
	} {
		s, err := ParseInstance(tc.in)
		if err != nil || s.String() != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.in, s.String(), err, tc.want)
		}
	}
	for _, bad := range []string{"vllm-7", "pod", "=x", "pod=~x"} {
		if _, err := ParseInstance(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Whatever a user types, the parser answers without panicking, and what it
// accepts writes back as matchers it accepts again, unchanged.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{`{namespace="llm"}`, `a=~"x|y",b!="\n"`, "{a=`\\`}", `{a='it\'s'}`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSelector(in)
		if err != nil {
			return
		}
		again, err := ParseSelector(s.braces())
		if err != nil {
			t.Fatalf("%q → %q: %v", in, s.braces(), err)
		}
		if again.String() != s.String() {
			t.Errorf("%q → %q → %q", in, s.String(), again.String())
		}
	})
}

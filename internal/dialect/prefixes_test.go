package dialect

import (
	"strings"
	"testing"
)

// Every dialect's prefixes are the names it matches: a family under one
// of them is the dialect's, a family under none is nobody's.
func TestNamePrefixes(t *testing.T) {
	for _, d := range all {
		ps := namePrefixes[d.name]
		if len(ps) == 0 {
			t.Errorf("%s: no prefixes", d.name)
		}
		for _, p := range ps {
			if !d.match(p + "x") {
				t.Errorf("%s does not match its prefix %q", d.name, p)
			}
			if got := Owner(p + "requests_total"); got != d.name {
				t.Errorf("Owner(%q) = %q, want %q", p+"requests_total", got, d.name)
			}
		}
	}
	for _, name := range []string{"process_start_time_seconds", "go_goroutines", "vllm_requests", "tabbyapi_x", "ray_vllm"} {
		if got := Owner(name); got != "" {
			t.Errorf("Owner(%q) = %q, want none", name, got)
		}
		for _, p := range NamePrefixes() {
			if strings.HasPrefix(name, p) {
				t.Errorf("%q starts with prefix %q but no dialect owns it", name, p)
			}
		}
	}
	if n := len(NamePrefixes()); n != 17 {
		t.Errorf("%d prefixes, want 17: %v", n, NamePrefixes())
	}
}

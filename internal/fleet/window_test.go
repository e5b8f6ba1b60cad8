package fleet

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// covering dates each instance by a family every instance has one of: of
// those shared alike, one that is not an info series (an info series'
// many labels made its timestamp() several times a gauge's cost), an info
// series only where an instance has nothing else.
func TestCovering(t *testing.T) {
	fams := func(names ...string) *group {
		g := &group{families: map[string]bool{}}
		for _, n := range names {
			g.families[n] = true
		}
		return g
	}
	for _, tc := range []struct {
		name   string
		groups []*group
		want   []string
	}{
		{"shared alike", []*group{fams("vllm:cache_config_info", "vllm:num_requests_running"), fams("vllm:cache_config_info", "vllm:num_requests_running")},
			[]string{"vllm:num_requests_running"}},
		{"the most shared first", []*group{fams("a_info", "b"), fams("a_info", "c")}, []string{"a_info"}},
		{"an info series alone", []*group{fams("a_info"), fams("a_info", "b_created")}, []string{"a_info"}},
		{"by name among the rest", []*group{fams("x_info", "c", "b"), fams("x_info", "b", "c")}, []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := covering(tc.groups); !slices.Equal(got, tc.want) {
				t.Errorf("covering = %q, want %q", got, tc.want)
			}
		})
	}
}

// A window shorter than a store reads is refused before any query: its
// range would be written [0ms].
func TestRunRefusesSubMillisecondWindow(t *testing.T) {
	to := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	_, err := Run(context.Background(), nil, Options{From: to.Add(-999 * time.Microsecond), To: to})
	if err == nil || !strings.Contains(err.Error(), "shorter than a store reads") {
		t.Errorf("a 999µs window: %v", err)
	}
}

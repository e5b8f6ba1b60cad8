package promql

import (
	"testing"

	"github.com/inferscope/inferscope/internal/snapshot"
)

// TestBucketRates: one series per bound over every instance selected, the
// replicas' largest first (SGLang), nothing where the histogram is not
// published. promtool evaluates them in internal/dashboard's tests.
func TestBucketRates(t *testing.T) {
	for _, tc := range []struct{ dialect, want string }{
		{"vllm", `sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{model_name=~"$model"}[5m]))`},
		{"tabbyapi", `sum by (le) (rate(tabbyapi:time_to_first_token_seconds_bucket{model_name=~"$model"}[5m]))`},
	} {
		l, err := Newest(tc.dialect, Options{By: []string{"model_name"}, Selector: []Matcher{{Label: "model_name", Op: Match, Value: "$model"}}})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := l.BucketRates(snapshot.TimeToFirstTokenSeconds)
		if !ok || got != tc.want {
			t.Errorf("%s: %q, %v\nwant %q", tc.dialect, got, ok, tc.want)
		}
	}
	l, err := Newest("llamacpp", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := l.BucketRates(snapshot.TimeToFirstTokenSeconds); ok {
		t.Errorf("llama.cpp publishes no TTFT histogram: %q", got)
	}
}

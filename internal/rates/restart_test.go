package rates

import (
	"strings"
	"testing"
)

// TestRestartTimeUnknown: llama.cpp's start header is a monotonic clock
// (b10309 sends ggml_time_us()), new after a restart but no time: the
// restart is seen, and its time is said to be unknown, never "0 s before"
// the scrape that saw it.
func TestRestartTimeUnknown(t *testing.T) {
	before := snap(0, "tokens_predicted_total", 5000)
	before.ScrapedAt, before.StartToken = at(0), "259200123456"
	after := snap(0, "tokens_predicted_total", 800)
	after.ScrapedAt, after.StartToken = at(120), "259290004321"
	sec, figs := Since(before, after)
	if figs != nil || len(sec.Rows) != 1 {
		t.Fatalf("rates across a restart: %v %+v", figs, sec.Rows)
	}
	r := sec.Rows[0]
	if r.Value != "server restarted between the two scrapes" || !strings.Contains(r.Note, "start time is unknown") || strings.Contains(r.Note, " s before") {
		t.Errorf("row %+v", r)
	}
	h := NewHistory(0)
	h.Add(before, before.ScrapedAt)
	if h.Add(after, after.ScrapedAt) != Restarted || !h.RestartUnknown || !h.RestartedAt.Equal(at(120)) {
		t.Errorf("restart unknown %v at %v", h.RestartUnknown, h.RestartedAt)
	}
	// A start time that is one: known.
	k := NewHistory(0)
	k.Add(snap(start0, "requests_total", 5), at(0))
	if k.Add(snap(start0+60, "requests_total", 1), at(120)) != Restarted || k.RestartUnknown || !k.RestartedAt.Equal(at(60-3600)) {
		t.Errorf("restart known: unknown %v at %v", k.RestartUnknown, k.RestartedAt)
	}
}

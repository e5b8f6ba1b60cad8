package bench

import (
	"bytes"
	"testing"

	"github.com/inferscope/inferscope/internal/golden"
	"github.com/inferscope/inferscope/internal/render"
	"github.com/inferscope/inferscope/internal/report"
)

// The report of a run, drawn as text at two widths and as JSON; go test
// ./internal/bench -update rewrites the goldens (read the diff).
func TestRenderGolden(t *testing.T) {
	rep := fullReport()
	rep.Server = nil // the server's report is the inspector's, drawn by its own goldens
	rep.Notes = report.List[report.Note]{
		{ID: "bench_decode_bound", Severity: report.Info, Text: "decode took 66.7% of the requests' time in prefill or decode: generating tokens bounds this run"},
		{ID: "bench_client_bound", Severity: report.Warn, Text: "the generator could not keep up: its sends were 12 ms late at p99"},
	}
	for _, tt := range []struct {
		name  string
		width int
	}{{"report-160.txt", 160}, {"report-100.txt", 100}} {
		var b bytes.Buffer
		if err := Text(&b, rep, TextOptions{Render: render.Options{Width: tt.width}}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, tt.name, b.String())
	}
	var b bytes.Buffer
	if err := JSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "report.json", b.String())
}

package page

import (
	"bytes"
	"testing"

	"github.com/inferscope/inferscope/internal/bench"
)

// buildPages makes every kind of page from real runs against the
// simulator, each with the JSON of the same report.
func buildPages(t *testing.T) []testPage {
	t.Helper()
	rep := saturatedRun(t)
	var h, j bytes.Buffer
	if err := Run(&h, rep); err != nil {
		t.Fatal(err)
	}
	if err := bench.JSON(&j, rep); err != nil {
		t.Fatal(err)
	}
	return []testPage{{name: "run", html: h.Bytes(), json: j.Bytes(), charts: []string{"ttft", "queue", "kv"}}}
}

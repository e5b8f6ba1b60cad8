package page

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// writePage writes a page where a person can open it: under
// $INFERSCOPE_ARTIFACTS where set, else the test's own directory.
func writePage(t *testing.T, name string, b []byte) string {
	t.Helper()
	dir := os.Getenv("INFERSCOPE_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunPage(t *testing.T) {
	rep := saturatedRun(t)
	var b bytes.Buffer
	if err := Run(&b, rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("page: %s (%d bytes)", writePage(t, "run.html", b.Bytes()), b.Len())
}

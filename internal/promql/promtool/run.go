package promtool

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"
)

// TB is what [Require] needs of a test (testing.TB has it).
type TB interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// CI is the variable that makes a missing tool a failure, not a skip.
const CI = "INFERSCOPE_CI"

// Require returns the path of tool (promtool, vmalert), or skips t where
// it is not installed; under INFERSCOPE_CI=1 a missing tool fails t, so CI
// cannot pass by skipping what it is there to run.
func Require(t TB, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err == nil {
		return path
	}
	if os.Getenv(CI) == "1" {
		t.Fatalf("%s is not installed (INFERSCOPE_CI=1): install Debian's prometheus and victoria-metrics packages", tool)
	}
	t.Skipf("%s is not installed: install Debian's prometheus (promtool) or victoria-metrics (vmalert) package", tool)
	return ""
}

// timeout bounds one run of a tool.
const timeout = 3 * time.Minute

// Run runs a tool in dir and returns what it printed, stdout and stderr
// together; err is set when it exits non-zero.
func Run(dir, tool string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %v: %w", filepath.Base(tool), args, err)
	}
	return out.String(), nil
}

// Write marshals v as YAML into dir/name and returns its path.
func Write(dir, name string, v any) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("writing %s: %w", name, err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("writing %s: %w", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", name, err)
	}
	return path, nil
}

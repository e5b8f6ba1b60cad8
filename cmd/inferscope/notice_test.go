package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// NOTICE names every module the binary is built from, on every platform a
// release is built for (a module added to go.mod and linked in must be
// listed with its licence, and its notice carried if it has one).
func TestNoticeListsEveryModule(t *testing.T) {
	notice, err := os.ReadFile("../../NOTICE")
	if err != nil {
		t.Fatal(err)
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}{{end}}{{end}}", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (%s): %v", goos, err)
		}
		for _, mod := range strings.Fields(string(out)) {
			if !strings.Contains(string(notice), "\n  "+mod+"\n") && !strings.Contains(string(notice), "\n  "+mod+" (") {
				t.Errorf("NOTICE does not list %s (linked into the %s build)", mod, goos)
			}
		}
	}
}

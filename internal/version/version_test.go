package version

import (
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
)

func TestFromBuild(t *testing.T) {
	vcs := func(rev, at, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "1506ad5abcdef0123456789abcdef0123456789a"
	platform := "built with " + runtime.Version() + " for " + runtime.GOOS + "/" + runtime.GOARCH
	for _, tt := range []struct {
		name     string
		bi       *debug.BuildInfo
		override string
		version  string
		lines    []string
	}{
		{"go install of a release", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "", "v1.2.3",
			[]string{"inferscope v1.2.3", platform}},
		{"a clone, clean, at a tag", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}, Settings: vcs(rev, "2026-12-02T19:09:15Z", "false")}, "", "v0.2.0",
			[]string{"inferscope v0.2.0", "commit " + rev + ", 2026-12-02T19:09:15Z", platform}},
		{"a clone with changes", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202190915-1506ad5abcde+dirty"}, Settings: vcs(rev, "2026-12-02T19:09:15Z", "true")}, "",
			"v0.0.0-20261202190915-1506ad5abcde+dirty",
			[]string{"inferscope v0.0.0-20261202190915-1506ad5abcde+dirty", "commit " + rev + ", 2026-12-02T19:09:15Z, with uncommitted changes", platform}},
		{"a toolchain that sets no module version", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "2026-12-02T19:09:15Z", "true")}, "",
			"devel-1506ad5abcde+dirty", nil},
		{"no VCS (-buildvcs=false, a test binary)", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "devel",
			[]string{"inferscope devel", platform}},
		{"no build information", nil, "", "devel", nil},
		{"-ldflags -X wins", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202190915-1506ad5abcde"}, Settings: vcs(rev, "2026-12-02T19:09:15Z", "false")}, "v1.2.3",
			"v1.2.3", []string{"inferscope v1.2.3", "commit " + rev + ", 2026-12-02T19:09:15Z", platform}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := FromBuild(tt.bi, tt.override)
			if in.Version != tt.version {
				t.Errorf("version %q, want %q", in.Version, tt.version)
			}
			if in.UserAgent() != "inferscope/"+tt.version {
				t.Errorf("User-Agent %q", in.UserAgent())
			}
			if tt.lines != nil && !slices.Equal(in.Lines(), tt.lines) {
				t.Errorf("lines %q, want %q", in.Lines(), tt.lines)
			}
		})
	}
}

// The running binary's version is the one Current reads; a test binary
// records no module version, so it reads devel unless -X set one.
func TestCurrent(t *testing.T) {
	if got := String(); got != Current().Version || got == "" {
		t.Errorf("String() = %q, Current().Version = %q", got, Current().Version)
	}
	defer func(v string) { Version = v }(Version)
	Version = "v9.9.9"
	if got := String(); got != "v9.9.9" {
		t.Errorf("with Version set: %q", got)
	}
}

// Package version says which build of inferscope is running: the one
// string `inferscope version` prints first, every HTTP request sends in its
// User-Agent and every JSON report carries.
//
// The string comes from the build itself ([debug.ReadBuildInfo]): a binary
// that `go install` fetched carries its module version (v1.2.3); one built
// from a clone carries what the go command derives from the repository (a
// tag, or a pseudo-version naming the commit, with +dirty for uncommitted
// changes) and the commit, its time and whether the tree was modified. A
// release build may set [Version] with
//
//	go build -ldflags "-X github.com/inferscope/inferscope/internal/version.Version=v1.2.3"
//
// which wins over what the build recorded.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Version, when set at link time (-ldflags -X), is the version whatever the
// build recorded.
var Version = ""

// Info is what a build says about itself.
type Info struct {
	// Version is the one string: the -X override, else the module version,
	// else "devel" (with the short commit and +dirty where known).
	Version string
	// Revision, Time and Modified are the commit a build from a clone was
	// made at, its commit time (RFC 3339) and whether the tree had
	// uncommitted changes; empty when the build did not record them.
	Revision, Time string
	Modified       bool
	// Go is the toolchain, Platform GOOS/GOARCH.
	Go, Platform string
}

var read = sync.OnceValue(func() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
})

// Current is the running binary's Info.
func Current() Info { return FromBuild(read(), Version) }

// String is the running binary's version string (Current().Version).
func String() string { return Current().Version }

// FromBuild reads an Info from build information (nil when the binary has
// none) and a link-time override ("" for none).
func FromBuild(bi *debug.BuildInfo, override string) Info {
	in := Info{Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	mod := ""
	if bi != nil {
		mod = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.time":
				in.Time = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	switch {
	case override != "":
		in.Version = override
	case mod != "" && mod != "(devel)":
		in.Version = mod
	default:
		in.Version = "devel"
		if in.Revision != "" {
			in.Version += "-" + short(in.Revision)
		}
		if in.Modified {
			in.Version += "+dirty"
		}
	}
	return in
}

// short is a commit hash as git abbreviates it by default.
func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// Lines is Info as `inferscope version` prints it: the version, then the
// commit (where the build recorded one) and the toolchain.
func (in Info) Lines() []string {
	lines := []string{"inferscope " + in.Version}
	if in.Revision != "" {
		c := "commit " + in.Revision
		if in.Time != "" {
			c += ", " + in.Time
		}
		if in.Modified {
			c += ", with uncommitted changes"
		}
		lines = append(lines, c)
	}
	return append(lines, fmt.Sprintf("built with %s for %s", in.Go, in.Platform))
}

// UserAgent is the User-Agent of every HTTP request inferscope sends.
func (in Info) UserAgent() string { return "inferscope/" + in.Version }

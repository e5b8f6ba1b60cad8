package scrape

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type fakeInfo struct {
	name string
	dir  bool
}

func (f fakeInfo) Name() string       { return f.name }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return map[bool]fs.FileMode{true: fs.ModeDir}[f.dir] }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.dir }
func (f fakeInfo) Sys() any           { return nil }

// fakeStat pretends that exactly the given names exist ("name/" is a directory).
func fakeStat(names ...string) func(string) (fs.FileInfo, error) {
	return func(p string) (fs.FileInfo, error) {
		for _, n := range names {
			if n == p {
				return fakeInfo{name: n}, nil
			}
			if n == p+"/" {
				return fakeInfo{name: p, dir: true}, nil
			}
		}
		return nil, fs.ErrNotExist
	}
}

func TestResolve(t *testing.T) {
	home, _ := os.UserHomeDir()
	stat := fakeStat("saved", "box-file:5000", "somedir/")
	tests := []struct {
		in      string
		url     string // want an HTTP target with this URL
		path    string // want a file target with this path
		stdin   bool
		why     string // substring of Target.Why; "" = must be empty
		noPort  bool
		def     bool
		errKind Kind
		errMsg  string
	}{
		{in: "", url: "http://127.0.0.1:5000/metrics", def: true},
		{in: "-", stdin: true},

		// Full URLs: a missing path becomes /metrics, a present one stays.
		{in: "http://gpu-box:5000/metrics", url: "http://gpu-box:5000/metrics"},
		{in: "http://gpu-box:5000", url: "http://gpu-box:5000/metrics"},
		{in: "https://gpu-box", url: "https://gpu-box/metrics", noPort: true},
		{in: "http://gpu-box:5000/", url: "http://gpu-box:5000/"},
		{in: "http://gpu-box:5000/v1/metrics?model=a", url: "http://gpu-box:5000/v1/metrics?model=a"},
		{in: "HTTP://Gpu-Box:5000", url: "http://Gpu-Box:5000/metrics"},
		{in: "http://gpu-box:5000/metrics#top", url: "http://gpu-box:5000/metrics"},
		{in: "http://u:secret@gpu-box:5000", url: "http://u:secret@gpu-box:5000/metrics"},
		{in: "http://[::1]:8000", url: "http://[::1]:8000/metrics"},
		{in: "file:///srv/scrapes/a.prom", path: filepath.FromSlash("/srv/scrapes/a.prom")},

		// host[:port][/path]: scheme filled in, /metrics when no path.
		{in: "gpu-box:5000", url: "http://gpu-box:5000/metrics"},
		{in: "gpu-box:5000/custom", url: "http://gpu-box:5000/custom"},
		{in: "gpu-box:5000?x=1", url: "http://gpu-box:5000/metrics?x=1"},
		{in: "10.0.0.5:8000", url: "http://10.0.0.5:8000/metrics"},
		{in: "[::1]:5000", url: "http://[::1]:5000/metrics"},
		{in: "[fe80::1]", url: "http://[fe80::1]/metrics", noPort: true},
		{in: "::1", url: "http://[::1]/metrics", noPort: true},
		{in: ":5000", url: "http://127.0.0.1:5000/metrics"},
		{in: "localhost", url: "http://localhost/metrics", noPort: true},
		{in: "localhost/metrics", url: "http://localhost/metrics", noPort: true},
		{in: "metrics.example.com", url: "http://metrics.example.com/metrics", noPort: true},
		{in: "metrics.example.com/m", url: "http://metrics.example.com/m", noPort: true},
		{in: "tabby_api:5000", url: "http://tabby_api:5000/metrics"},
		{in: "gpu-box", url: "http://gpu-box/metrics", noPort: true, why: "no file of that name"},
		{in: "scrape.prom:5000", url: "http://scrape.prom:5000/metrics"},

		// Files: an existing name wins; a file-shaped missing name stays a file.
		{in: "saved", path: "saved"},
		{in: "box-file:5000", path: "box-file:5000"},
		{in: "scrape.prom", path: "scrape.prom", why: "ends in .prom"},
		{in: "SCRAPE.TXT", path: "SCRAPE.TXT", why: "ends in .txt"},
		{in: "runs/before.prom", path: "runs/before.prom", why: "ends in .prom"},
		{in: "example.com/before.prom", path: "example.com/before.prom", why: "ends in .prom"},
		{in: "scrape.prom.gz", path: "scrape.prom.gz", why: "ends in .gz"},
		{in: "data/scrape", path: "data/scrape", why: "path but no port"},
		{in: "gpu-box/metrics", path: "gpu-box/metrics", why: "path but no port"},
		{in: "./gpu-box", path: "./gpu-box", why: "written as a path"},
		{in: "/tmp/none", path: "/tmp/none", why: "written as a path"},
		{in: "../x", path: "../x", why: "written as a path"},
		{in: `C:\scrapes\a`, path: `C:\scrapes\a`, why: "written as a path"},
		{in: "my scrape", path: "my scrape", why: "characters a host name cannot"},
		{in: "bad!host", path: "bad!host", why: "cannot be a host name"},
		{in: "~/runs/a.prom", path: filepath.Join(home, "runs/a.prom"), why: "written as a path"},

		// Neither.
		{in: "somedir", errKind: BadTarget, errMsg: "somedir is a directory"},
		{in: "ftp://gpu-box/metrics", errKind: BadTarget, errMsg: `unsupported scheme "ftp"`},
		{in: "http://", errKind: BadTarget, errMsg: "has no host"},
		{in: "http://gpu-box:99999", errKind: BadTarget, errMsg: `invalid port "99999"`},
		{in: "http://gpu-box:0/metrics", errKind: BadTarget, errMsg: `invalid port "0"`},
		{in: "http://gpu box:5000", errKind: BadTarget, errMsg: "cannot read http://gpu box:5000 as a URL"},
		{in: "gpu-box:abc", errKind: BadTarget, errMsg: `invalid port "abc"`},
		{in: "gpu-box:0", errKind: BadTarget, errMsg: `invalid port "0"`},
		{in: "a:b:c", errKind: BadTarget, errMsg: "cannot read a:b:c as host:port"},
		{in: "[zz]", errKind: BadTarget, errMsg: "not an IPv6 address"},
		{in: "bad!host:5000", errKind: BadTarget, errMsg: `"bad!host" in bad!host:5000 is not a host name`},
		{in: "file://other/x.prom", errKind: BadTarget, errMsg: "names another machine"},
		{in: "http://evil\x1b[2J:5000", errKind: BadTarget, errMsg: "as a URL"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := resolve(tc.in, stat)
			if tc.errKind != 0 {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("err = %v, want *Error kind %v", err, tc.errKind)
				}
				if e.Kind != tc.errKind || !strings.Contains(e.Msg, tc.errMsg) {
					t.Fatalf("err = %v %q, want %v containing %q", e.Kind, e.Msg, tc.errKind, tc.errMsg)
				}
				if strings.ContainsRune(e.Msg, 0x1b) {
					t.Fatalf("message holds ESC: %q", e.Msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			var gotURL string
			if got.URL != nil {
				gotURL = got.URL.String()
			}
			if gotURL != tc.url || got.Path != tc.path || got.Stdin != tc.stdin {
				t.Fatalf("got url=%q path=%q stdin=%v, want url=%q path=%q stdin=%v", gotURL, got.Path, got.Stdin, tc.url, tc.path, tc.stdin)
			}
			if got.Default != tc.def || got.NoPort != tc.noPort {
				t.Errorf("default=%v noPort=%v, want %v %v", got.Default, got.NoPort, tc.def, tc.noPort)
			}
			if tc.why == "" && got.Why != "" || !strings.Contains(got.Why, tc.why) {
				t.Errorf("why = %q, want %q", got.Why, tc.why)
			}
		})
	}
}

// TestResolveRealFiles checks the os.Stat path: a real file, even one named
// like a host, wins over the host reading.
func TestResolveRealFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("gpu-box:5000", []byte("x 1\n"), 0o600); err != nil {
		t.Skipf("file system refuses ':' in names: %v", err)
	}
	got, err := Resolve("gpu-box:5000")
	if err != nil || got.Path != "gpu-box:5000" || got.URL != nil {
		t.Fatalf("Resolve = %+v, %v; want the file", got, err)
	}
	got, err = Resolve("gpu-box:5001")
	if err != nil || got.URL == nil || got.URL.String() != "http://gpu-box:5001/metrics" {
		t.Fatalf("Resolve = %+v, %v; want the host", got, err)
	}
}

package scrape

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultURL is scraped when no target is given: tabbyAPI's default address.
const DefaultURL = "http://127.0.0.1:5000/metrics"

// Target is a user's target resolved to exactly one source: a URL, a file
// path or stdin.
type Target struct {
	// Input is the target as the user gave it.
	Input string
	// URL is set for HTTP targets (scheme http or https, non-empty host).
	URL *url.URL
	// Path is set for file targets.
	Path string
	// Stdin is set for "-".
	Stdin bool
	// Default reports that no target was given and DefaultURL was used.
	Default bool
	// Why says how an ambiguous target was judged, for hints ("it ends in
	// .prom", "no file of that name exists"); empty when it was unambiguous.
	Why string
	// NoPort reports a host given without a port, so port 80 or 443 is used.
	NoPort bool
	// PathAdded reports an HTTP target given without a path, to which
	// /metrics was added: another path may be tried where that one answers
	// JSON ([TextPath]); a path the user gave is kept.
	PathAdded bool
}

// fileExts are endings that make a target a file even when no such file
// exists, so that a mistyped scrape.prom reports "no such file" instead of
// a DNS failure for the host "scrape.prom". Only .om (Oman) is also a
// top-level domain, and an explicit port still makes such a name a host.
var fileExts = map[string]bool{
	".prom": true, ".txt": true, ".text": true, ".metrics": true, ".om": true,
	".openmetrics": true, ".out": true, ".log": true, ".dump": true, ".scrape": true,
	".gz": true, ".bak": true, ".old": true,
}

// Resolve decides what a target names, in this order:
//
//   - "" is [DefaultURL]; "-" is stdin;
//   - anything with "://" is a URL (http, https or file); an http(s) URL
//     with no path gets /metrics, a URL with a path keeps it;
//   - a name that exists on disk is that file (a file wins over a host);
//   - a name shaped like a path (starting with /, ./, ../, ~/ or a drive
//     letter, holding a backslash or white space) or ending in a file
//     extension such as .prom or .txt without a port is a file, even if
//     missing, so the error says "no such file";
//   - host:port, [v6]:port, an IP, localhost or a dotted name, optionally
//     followed by a path, is a host: http:// is filled in, and /metrics when
//     there is no path;
//   - a bare word (gpu-box) is a host: nothing on disk has that name;
//   - a word followed by a path and no port (data/scrape) is a file.
func Resolve(target string) (Target, error) {
	return resolve(target, os.Stat)
}

func resolve(target string, stat func(string) (fs.FileInfo, error)) (Target, error) {
	t := Target{Input: target}
	switch target {
	case "":
		u, _ := url.Parse(DefaultURL)
		t.URL, t.Default, t.PathAdded = u, true, true
		return t, nil
	case "-":
		t.Stdin = true
		return t, nil
	}
	shown := clean(target, 120)
	if strings.Contains(target, "://") {
		return resolveURL(t, shown)
	}
	path := target
	if strings.HasPrefix(path, "~/") || strings.HasPrefix(path, `~\`) {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, path[2:])
		}
	}
	if fi, err := stat(path); err == nil {
		if fi.IsDir() {
			return t, newError(BadTarget, nil, fmt.Sprintf("%s is a directory, not a scrape file", shown),
				"give a file saved with --save, - for stdin, or host:port for a server")
		}
		t.Path = path
		return t, nil
	}
	if why := fileShape(target); why != "" {
		t.Path, t.Why = path, why
		return t, nil
	}
	return resolveHost(t, shown)
}

// fileShape says why a missing target must still be a file, or "" when its
// shape does not decide.
func fileShape(s string) string {
	switch {
	case strings.HasPrefix(s, "/"), strings.HasPrefix(s, "./"), strings.HasPrefix(s, "../"),
		strings.HasPrefix(s, "~"), s == ".", s == "..":
		return "it is written as a path"
	case len(s) >= 3 && isASCIILetter(s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/'):
		return "it is written as a path"
	case strings.ContainsRune(s, '\\'):
		return "it is written as a path"
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "it holds characters a host name cannot"
	}
	hostPart, _, _ := strings.Cut(s, "/")
	if _, port, err := net.SplitHostPort(hostPart); err == nil && port != "" {
		return "" // an explicit port makes it a host, whatever the name
	}
	base := s
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		base = s[i+1:]
	}
	if ext := strings.ToLower(filepath.Ext(base)); fileExts[ext] {
		return "it ends in " + ext
	}
	return ""
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func resolveURL(t Target, shown string) (Target, error) {
	u, err := url.Parse(t.Input)
	if err != nil {
		return t, newError(BadTarget, err, fmt.Sprintf("cannot read %s as a URL: %s", shown, urlErrReason(err)),
			"write it as http://host:port/metrics, host:port, or a file path")
	}
	switch u.Scheme {
	case "http", "https":
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return t, newError(BadTarget, nil, fmt.Sprintf("file URL %s names another machine", shown),
				"give the path of a local file")
		}
		if u.Path == "" {
			return t, newError(BadTarget, nil, fmt.Sprintf("file URL %s has no path", shown),
				"write it as file:///path/to/scrape.prom, or give the path alone")
		}
		t.Path = filepath.FromSlash(u.Path)
		return t, nil
	default:
		return t, newError(BadTarget, nil, fmt.Sprintf("unsupported scheme %q in %s", clean(u.Scheme, 20), shown),
			"inferscope scrapes http:// and https:// URLs, or reads a file")
	}
	if u.Host == "" || u.Hostname() == "" {
		return t, newError(BadTarget, nil, fmt.Sprintf("the URL %s has no host", shown),
			"write it as http://host:port/metrics")
	}
	if p := u.Port(); p != "" {
		if err := checkPort(p); err != nil {
			return t, newError(BadTarget, nil, fmt.Sprintf("invalid port %q in %s", clean(p, 20), shown),
				"a port is a number from 1 to 65535")
		}
	} else {
		t.NoPort = true
	}
	if u.Path == "" && u.Opaque == "" {
		u.Path, t.PathAdded = "/metrics", true
	}
	u.Fragment, u.RawFragment = "", ""
	t.URL = u
	return t, nil
}

func urlErrReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return clean(ue.Err.Error(), 80)
	}
	return clean(err.Error(), 80)
}

func checkPort(p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || strings.HasPrefix(p, "+") {
		return errors.New("bad port")
	}
	return nil
}

// resolveHost reads a target given without a scheme as host[:port][/path],
// or takes it for a file path (Why says why) when it cannot be a host.
func resolveHost(t Target, shown string) (Target, error) {
	hostPart, rest := t.Input, ""
	if i := strings.IndexAny(t.Input, "/?"); i >= 0 {
		hostPart, rest = t.Input[:i], t.Input[i:]
	}
	host, port, err := readHostPort(hostPart, shown)
	if err != nil {
		return t, err
	}
	if why := fileNotHost(host, port, rest); why != "" {
		return Target{Input: t.Input, Path: t.Input, Why: why}, nil
	}
	hostport := host
	if port != "" {
		hostport = net.JoinHostPort(strings.Trim(host, "[]"), port)
	} else {
		t.NoPort = true
	}
	u, err := url.Parse("http://" + hostport + rest)
	if err != nil || u.Host == "" {
		return t, newError(BadTarget, err, fmt.Sprintf("cannot read %s as host:port", shown),
			"write host:port (e.g. gpu-box:5000), a URL, or a file path")
	}
	if u.Path == "" {
		u.Path, t.PathAdded = "/metrics", true
	}
	u.Fragment, u.RawFragment = "", ""
	t.URL = u
	if port == "" && rest == "" && !dotted(host) {
		t.Why = "no file of that name exists"
	}
	return t, nil
}

// readHostPort reads the host part of a target without a scheme: a host, a
// bare or bracketed IPv6 address, or host:port. The host it returns has an
// IPv6 address in brackets; port is "" when none was given.
func readHostPort(hostPart, shown string) (host, port string, err error) {
	switch {
	case net.ParseIP(hostPart) != nil && strings.Contains(hostPart, ":"):
		return "[" + hostPart + "]", "", nil // bare IPv6 such as ::1
	case strings.HasPrefix(hostPart, "[") && strings.HasSuffix(hostPart, "]"):
		if net.ParseIP(hostPart[1:len(hostPart)-1]) == nil {
			return "", "", newError(BadTarget, nil, fmt.Sprintf("%s is not an IPv6 address", shown),
				"write [v6-address]:port, host:port, a URL, or a file path")
		}
		return hostPart, "", nil
	case !strings.Contains(hostPart, ":"):
		return hostPart, "", nil
	}
	h, p, err := net.SplitHostPort(hostPart)
	if err != nil {
		return "", "", newError(BadTarget, err, fmt.Sprintf("cannot read %s as host:port", shown),
			"write host:port (e.g. gpu-box:5000), [v6-address]:port, a URL, or a file path")
	}
	if err := checkPort(p); err != nil {
		return "", "", newError(BadTarget, nil, fmt.Sprintf("invalid port %q in %s", clean(p, 20), shown),
			"a port is a number from 1 to 65535")
	}
	if h == "" {
		h = "127.0.0.1" // :5000 means this machine, as in most tools
	}
	if !validHost(h) {
		return "", "", newError(BadTarget, nil, fmt.Sprintf("%q in %s is not a host name", clean(h, 60), shown),
			"write host:port (e.g. gpu-box:5000), a URL, or a file path")
	}
	if strings.Contains(h, ":") {
		return "[" + h + "]", p, nil
	}
	return h, p, nil
}

// fileNotHost says why a target read as host, port and the rest is taken
// for a file path instead, or "" when it is taken for a host.
func fileNotHost(host, port, rest string) string {
	switch {
	case port != "":
		return ""
	case !validHost(strings.Trim(host, "[]")):
		return "it cannot be a host name"
	case rest != "" && rest[0] == '/' && !dotted(host):
		// data/scrape: a directory and a file far more often than a host
		// called "data" serving on port 80.
		return "it has a path but no port"
	}
	return ""
}

// dotted reports a name that is clearly a network address: an IP, localhost
// or a name with a dot.
func dotted(host string) bool {
	h := strings.Trim(host, "[]")
	return net.ParseIP(h) != nil || strings.EqualFold(h, "localhost") || strings.Contains(h, ".")
}

// ValidHost reports whether h can be a host: a DNS-style name or an IP
// literal (without brackets or a port).
func ValidHost(h string) bool { return validHost(h) }

// validHost accepts DNS-style names (letters, digits, '-', '_' for container
// names, dots between non-empty labels) and IP literals.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(isASCIILetter(c) || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

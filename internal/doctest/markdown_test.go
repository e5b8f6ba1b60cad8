package doctest

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestBlocks(t *testing.T) {
	page := strings.Split("text\n<!-- doctest: numbers -->\n```console\n$ a\nout\n```\n\n````sh\ninferscope x\n````\n", "\n")
	bs, err := blocks(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].info != "console" || bs[0].options != "numbers" || bs[0].start != 3 || bs[0].end != 5 ||
		bs[1].info != "sh" || !slices.Equal(bs[1].lines, []string{"inferscope x"}) {
		t.Fatalf("blocks: %+v", bs)
	}
	if _, err := blocks([]string{"```sh", "never closed"}); err == nil {
		t.Error("an unclosed block was accepted")
	}
}

func TestSession(t *testing.T) {
	steps, err := session([]string{
		"$ inferscope a \\", "  --width 100", "first", "second",
		"$ cat > f <<'EOF'", "$ not a command", "EOF",
		"$ b",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []step{
		{command: "inferscope a \\\n  --width 100", shown: []string{"first", "second"}},
		{command: "cat > f <<'EOF'\n$ not a command\nEOF"},
		{command: "b"},
	}
	if len(steps) != len(want) {
		t.Fatalf("steps: %+v", steps)
	}
	for i := range want {
		if steps[i].command != want[i].command || !slices.Equal(steps[i].shown, want[i].shown) {
			t.Errorf("step %d: %+v, want %+v", i, steps[i], want[i])
		}
	}
	if _, err := session([]string{"output first"}); err == nil {
		t.Error("output before a command was accepted")
	}
}

func TestCommandLines(t *testing.T) {
	got := commandLines([]string{
		`inferscope fleet --selector '{job="vllm"}' --by pod   # a comment`,
		`inferscope demo --once  simulate once, one report`,
		`go run ./cmd/inferscope examples/tabbyapi.prom | head`,
		`inferscope proxy ... --watch 2s`,
		`curl -s x | inferscope -`,
		`inferscope rules \`, `  --tests`,
	})
	want := [][]string{
		{"fleet", "--selector", `{job="vllm"}`, "--by", "pod"},
		{"demo", "--once"},
		{"examples/tabbyapi.prom"},
		{"rules", "--tests"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("line %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		shown, got []string
		numbers    bool
		want       bool
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, false, true},
		{[]string{"a", "…", "z"}, []string{"a", "b", "c", "z"}, false, true},
		{[]string{"a", "…"}, []string{"a"}, false, true},
		{[]string{"a", "…", "z"}, []string{"a", "b"}, false, false},
		{[]string{"scraped 2026-11-30 15:42:10 UTC"}, []string{"scraped 2027-01-01 00:00:00 UTC"}, false, true},
		{[]string{"took 12 ms   n=3"}, []string{"took 9.5 ms  n=40"}, false, false},
		{[]string{"took 12 ms   n=3"}, []string{"took 9.5 ms  n=40"}, true, true},
		{[]string{"x"}, nil, false, false},
	} {
		if got := matches(c.shown, c.got, c.numbers); got != c.want {
			t.Errorf("matches(%q, %q, %v) = %v", c.shown, c.got, c.numbers, got)
		}
	}
}

func TestRemapPorts(t *testing.T) {
	steps := []step{{command: "inferscope demo --api 127.0.0.1:11434 &"}, {command: "curl localhost:11434/x 127.0.0.1:11435"}}
	m, err := ports(steps)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["11434"] == "" || m["11435"] == "" || m["11434"] == m["11435"] {
		t.Fatalf("ports: %v", m)
	}
	r := remap(steps[1].command, m)
	if strings.Contains(r, "11434") || !strings.Contains(r, "localhost:"+m["11434"]) {
		t.Errorf("remap: %q", r)
	}
	if back := remap(r, invert(m)); back != steps[1].command {
		t.Errorf("back: %q", back)
	}
}

func TestNormalVersions(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"inferscope v0.0.0-20261203124434-3de0ed635c5e", "inferscope devel"},
		{"inferscope v1.2.3", "inferscope devel-3de0ed6+dirty"},
		{"commit 3de0ed635c5e5a8970ad7978a1c814c90b754109, 2026-12-03T12:44:34Z", "commit 0123456789abcdef0123456789abcdef01234567, 2027-01-01T00:00:00Z"},
		{"built with go1.26.8 for linux/amd64", "built with go1.27rc1 for darwin/arm64"},
	} {
		if normal(c.a, false) != normal(c.b, false) {
			t.Errorf("%q and %q read %q and %q", c.a, c.b, normal(c.a, false), normal(c.b, false))
		}
	}
	if normal("commit 3de0ed635c5e", false) != "commit 3de0ed635c5e" {
		t.Error("a short hash is not a commit")
	}
}

func TestMatchesGlyphsAndPrefixes(t *testing.T) {
	for _, c := range []struct {
		shown, got []string
		numbers    bool
		want       bool
	}{
		{[]string{"KV cache  ██████▎░░░ 62.9%"}, []string{"KV cache  █▏░░░░░░░░ 11.7%"}, true, true},
		{[]string{"KV cache  ██████▎░░░ 62.9%"}, []string{"KV cache  █▏░░░░░░░░ 11.7%"}, false, false},
		{[]string{"demo/chat-0  tabbyapi  new …"}, []string{"demo/chat-0  tabbyapi  new   9.9%  kv_offload_thrashing"}, false, true},
		{[]string{"demo/chat-0  tabbyapi  new …"}, []string{"demo/chat-0  tabbyapi  up   9.9%"}, false, false},
		{[]string{"req/s 10.2 …"}, []string{"req/s  8.4  more"}, true, true},
		{[]string{"a … b"}, []string{"a … b"}, false, true},
		{[]string{"TTFT p50   108 ms  0–11.7K"}, []string{"TTFT p50  ≥1.08 s  0–873"}, true, true},
		{[]string{"TTFT p50   108 ms"}, []string{"TTFT p99   108 ms"}, true, false},
		{[]string{"──────────"}, []string{"────────────────"}, true, true},
	} {
		if got := matches(c.shown, c.got, c.numbers); got != c.want {
			t.Errorf("matches(%q, %q, %v) = %v", c.shown, c.got, c.numbers, got)
		}
	}
}

func TestMissing(t *testing.T) {
	steps := []step{
		{command: "inferscope fleet --prometheus http://127.0.0.1:9090 --json | jq -c '.instances[]'"},
		{command: "prometheus --config.file=prometheus.yml &"},
		{command: "cat > load.sh <<'EOF'\ncurl -s x\nEOF"},
		{command: "curl -s y; promtool check rules r.yml"},
	}
	have := map[string]bool{"jq": true, "promtool": true}
	look := func(name string) (string, error) {
		if have[name] {
			return "/usr/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
	if got := missing(steps, look); !slices.Equal(got, []string{"prometheus", "curl"}) {
		t.Errorf("missing: %q", got)
	}
	if got := missing([]step{{command: "inferscope demo --prometheus-config prometheus.yml"}}, look); len(got) != 0 {
		t.Errorf("a flag or a file taken for a program: %q", got)
	}
}

func TestAnchors(t *testing.T) {
	page := []string{
		"# inferscope",
		"## SGLang (`sglang:`, and `sglang_`)",
		"### Fleet at scale (issue 19)",
		"## Proxy: servers without /metrics (Ollama, LM Studio)",
		"## Usage",
		"## Usage",
		"```sh",
		"# not a heading",
		"```",
		`<a id="kept"></a>`,
		"#not-a-heading",
		"## [docs/cli.md](docs/cli.md) · the reference",
	}
	got := anchors(page)
	for _, id := range []string{"inferscope", "sglang-sglang-and-sglang_", "fleet-at-scale-issue-19",
		"proxy-servers-without-metrics-ollama-lm-studio", "usage", "usage-1", "kept", "docsclimd--the-reference"} {
		if !got[id] {
			t.Errorf("no anchor %q in %v", id, got)
		}
	}
	if got["not-a-heading"] || got["not-a-heading-1"] {
		t.Errorf("a comment in a block or a word after # made an anchor: %v", got)
	}
}

func TestRelativeLinks(t *testing.T) {
	ls := relativeLinks([]string{
		"see [the fleet](docs/fleet.md#trends), [Usage](#usage) and [Go](https://go.dev/x#y)",
		"`[not](a-link.md)` and [mail](mailto:x@y)",
		"```", "[in a block](nowhere.md)", "```",
	})
	want := []link{{1, "docs/fleet.md", "trends"}, {1, "", "usage"}}
	if !slices.Equal(ls, want) {
		t.Errorf("links: %+v", ls)
	}
}

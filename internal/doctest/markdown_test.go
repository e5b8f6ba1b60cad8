package doctest

import (
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

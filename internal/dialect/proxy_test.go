package dialect

import (
	"slices"
	"testing"

	"github.com/inferscope/inferscope/internal/proxy"
)

// The exporter's per-model series (as `inferscope proxy` publishes them)
// list their models and --model keeps one; the proxy's own family says the
// figures are measured in front of a server that is not tabbyAPI, whose
// advice then does not apply.
func TestPerModelAndProxy(t *testing.T) {
	body := `# TYPE tabbyapi:requests_total counter
tabbyapi:requests_total{model="llama3"} 3
tabbyapi:requests_total{model="qwen"} 5
# TYPE tabbyapi:tokens_predicted_total counter
tabbyapi:tokens_predicted_total{model="llama3"} 30
tabbyapi:tokens_predicted_total{model="qwen"} 50
# TYPE inferscope_proxy_requests_total counter
inferscope_proxy_requests_total{endpoint="/api/chat",outcome="finished"} 8
`
	all, err := Map(parse(t, body), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := all.Scalars["requests_total"]; got != 8 {
		t.Errorf("requests together = %v, want 3 + 5", got)
	}
	if len(all.Models) != 2 || all.Models[0] != "llama3" || all.Models[1] != "qwen" {
		t.Errorf("models = %v", all.Models)
	}
	if all.Via != "inferscope proxy" || all.Advice.SlowScrape != "" || all.Advice.KVFix != "" {
		t.Errorf("via %q, advice %+v: want the proxy and no tabbyAPI advice", all.Via, all.Advice)
	}
	one, err := Map(parse(t, body), Options{Model: "qwen"})
	if err != nil {
		t.Fatal(err)
	}
	if one.Scalars["requests_total"] != 5 || one.Scalars["tokens_predicted_total"] != 50 || one.Model != "qwen" {
		t.Errorf("qwen alone: %v (model %q)", one.Scalars, one.Model)
	}
	if _, err := Map(parse(t, body), Options{Model: "nope"}); err == nil {
		t.Error("an unknown model was accepted")
	}
	// tabbyAPI itself: one model, unlabelled, its own advice.
	own, err := Map(parse(t, "# TYPE tabbyapi:requests_total counter\ntabbyapi:requests_total 3\n"), Options{})
	if err != nil || own.Via != "" || own.Advice.SlowScrape == "" {
		t.Errorf("tabbyAPI's own: via %q, advice %+v (%v)", own.Via, own.Advice, err)
	}
}

// The proxy's upstream info names the server behind it, from the kinds the
// proxy publishes; a name that is no dialect, or no proxy, says nothing.
func TestProxyUpstream(t *testing.T) {
	const requests = "# TYPE tabbyapi:requests_total counter\ntabbyapi:requests_total 3\n"
	const proxied = requests + "# TYPE inferscope_proxy_requests_total counter\ninferscope_proxy_requests_total{endpoint=\"openai_chat\",outcome=\"finished\"} 3\n"
	info := func(server string) string {
		return "# TYPE inferscope_proxy_upstream_info gauge\ninferscope_proxy_upstream_info{server=\"" + server + "\"} 1\n"
	}
	for _, tc := range []struct{ name, body, via, upstream string }{
		{"llama.cpp behind", proxied + info("llamacpp"), "inferscope proxy", "llamacpp"},
		{"not said yet", proxied, "inferscope proxy", ""},
		{"no dialect", proxied + info("uvicorn"), "inferscope proxy", ""},
		{"no proxy", requests + info("llamacpp"), "", ""},
	} {
		s, err := Map(parse(t, tc.body), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Via != tc.via || s.Upstream != tc.upstream {
			t.Errorf("%s: via %q upstream %q, want %q %q", tc.name, s.Via, s.Upstream, tc.via, tc.upstream)
		}
	}
	var kinds []string
	for _, k := range proxy.UpstreamKinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, upstreamKinds) {
		t.Errorf("the proxy publishes %q, the dialect reads %q", kinds, upstreamKinds)
	}
}

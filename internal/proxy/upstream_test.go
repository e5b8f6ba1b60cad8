package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUpstreamKind: a llama-server behind the proxy says so in its Server
// header (cpp-httplib's default header, "llama.cpp"), and the proxy
// publishes that kind, from its own list, nothing of the header itself;
// an upstream that names no known server leaves the series out.
func TestUpstreamKind(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{"llama.cpp", `inferscope_proxy_upstream_info{server="llamacpp"} 1`},
		{"uvicorn", ""},
		{"", ""},
	} {
		f := loadFixture(t, "llamacpp_chat_stream.sse")
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.server != "" {
				w.Header().Set("Server", tc.server)
			}
			replay(f, 0)(w, r)
		}))
		p, srv := start(t, up.URL, Options{})
		post(t, srv.URL, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
		waitIdle(t, p)
		text := scrapeProxy(t, p).text
		switch {
		case tc.want != "" && !strings.Contains(text, tc.want):
			t.Errorf("Server %q: no %s in\n%s", tc.server, tc.want, text)
		case tc.want == "" && strings.Contains(text, "inferscope_proxy_upstream_info{"):
			t.Errorf("Server %q: an upstream kind published:\n%s", tc.server, text)
		}
		if tc.server != "" && tc.server != "llama.cpp" && strings.Contains(text, tc.server) {
			t.Errorf("the Server header %q is published", tc.server)
		}
		up.Close()
	}
}

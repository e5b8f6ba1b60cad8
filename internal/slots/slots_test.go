package slots

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/internal/httpsafe/hostiletest"
	"github.com/inferscope/inferscope/internal/snapshot"
)

const real = "../../testdata/real/llama-server-slots/"

// TestParseReal reads the answers real llama-servers (b10309 and b10470,
// -np 2) gave, against the values read off them by hand (the READMEs
// beside them).
func TestParseReal(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []snapshot.Slot
	}{
		{"busy.json", []snapshot.Slot{
			{ID: 0, Ctx: 1024, Processing: true, HasTask: true, Task: 2121, ContextTokens: 916, PromptComputed: 125, PromptCached: 2, Decoded: 790, Remaining: 160},
			{ID: 1, Ctx: 1024, Processing: true, HasTask: true, Task: 2718, ContextTokens: 199, PromptComputed: 1, PromptCached: 5, Decoded: 194, Remaining: 506},
		}},
		{"busy-later.json", []snapshot.Slot{
			{ID: 0, Ctx: 1024, HasTask: true, Task: 2750, ContextTokens: 232, PromptComputed: 1, Decoded: 200},
			{ID: 1, Ctx: 1024, Processing: true, HasTask: true, Task: 2718, ContextTokens: 581, PromptComputed: 1, PromptCached: 5, Decoded: 576, Remaining: 124},
		}},
		// Issue 28's workload (testdata/real/llama.cpp-workload): E ran on
		// slot 0 (task 71), F on slot 1 (task 70), each 32 computed, 96
		// cached, 16 generated of 16, 143 tokens of context after. b10309
		// keeps the counts but the cached one; b10470 resets them all.
		{"../llama.cpp-workload/b10309-slots-after.json", []snapshot.Slot{
			{ID: 0, Ctx: 1024, HasTask: true, Task: 71, ContextTokens: 143, PromptComputed: 32, Decoded: 16},
			{ID: 1, Ctx: 1024, HasTask: true, Task: 70, ContextTokens: 143, PromptComputed: 32, Decoded: 16},
		}},
		{"../llama.cpp-workload/b10470-slots-after.json", []snapshot.Slot{
			{ID: 0, Ctx: 1024, HasTask: true, Task: 71, ContextTokens: 143, Remaining: -1, Cleared: true},
			{ID: 1, Ctx: 1024, HasTask: true, Task: 70, ContextTokens: 143, Remaining: -1, Cleared: true},
		}},
		{"../llama.cpp-workload/b10470-slots-before.json", []snapshot.Slot{{ID: 0, Ctx: 1024}, {ID: 1, Ctx: 1024}}},
	} {
		body, err := os.ReadFile(real + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(body)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d slots", tc.file, len(got))
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s slot %d:\n got %+v\nwant %+v", tc.file, i, got[i], tc.want[i])
			}
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, body := range []string{
		`{"id":0}`, `[{"n_ctx":1}]`, `[{"id":0},{"id":0}]`, `[{"id":0,"n_ctx":-1}]`, `[{"id":0,"next_token":[{"n_decoded":-5}]}]`,
		`not json`, `[` + strings.Repeat(`{"id":1},`, 1) + `]`,
	} {
		if _, err := Parse([]byte(body)); err == nil {
			t.Errorf("Parse(%s) accepted", body)
		}
	}
	// A slot that never ran, and a request with no limit.
	got, err := Parse([]byte(`[{"id":3,"n_ctx":4096,"is_processing":false},{"id":4,"id_task":9,"next_token":[{"n_remain":-1,"n_decoded":7}]}]`))
	if err != nil || got[0].HasTask || got[0].Ctx != 4096 || got[1].Remaining != -1 || got[1].Decoded != 7 {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:8080/metrics":             "http://h:8080/slots",
		"http://u:p@h:8080/api/metrics?x=1": "http://h:8080/api/slots",
		"https://h/metrics/":                "https://h/slots",
	} {
		u, _ := url.Parse(in)
		if got := URL(u).String(); got != want {
			t.Errorf("URL(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestRead: the real answers as a server gives them, with the scrape's
// headers sent to it; 501 (--no-slots) and 404 are said, not failed on.
func TestRead(t *testing.T) {
	busy, _ := os.ReadFile(real + "busy.json")
	disabled, _ := os.ReadFile(real + "disabled-501.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/slots":
			w.Write(busy)
		case "/off/slots":
			w.WriteHeader(http.StatusNotImplemented)
			w.Write(disabled)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	o := Options{Headers: http.Header{"Authorization": {"Bearer k"}}, MaxBytes: 1 << 20}
	for path, want := range map[string]struct{ status, why string }{
		"/metrics":      {snapshot.SlotsRead, ""},
		"/off/metrics":  {snapshot.SlotsDisabled, "HTTP 501: This server does not support slots endpoint. Start it with `--slots`"},
		"/none/metrics": {snapshot.SlotsAbsent, "HTTP 404: this server has no /slots"},
	} {
		u, _ := url.Parse(srv.URL + path)
		got := Read(context.Background(), u, o)
		if got.Status != want.status || got.Why != want.why {
			t.Errorf("%s: %s (%s), want %s (%s)", path, got.Status, got.Why, want.status, want.why)
		}
		if want.status == snapshot.SlotsRead && len(got.Slots) != 2 {
			t.Errorf("%s: %d slots", path, len(got.Slots))
		}
	}
	u, _ := url.Parse(srv.URL + "/metrics")
	if got := Read(context.Background(), u, Options{MaxBytes: 1 << 20}); got.Status != snapshot.SlotsFailed || !strings.Contains(got.Why, "HTTP 401") {
		t.Errorf("without the header: %s (%s)", got.Status, got.Why)
	}
}

// TestReadHostile: an endless, bombed or deeply nested answer stops at
// the cap or the decoder's depth, allocating a bounded amount, and a
// redirect to another host is refused with the headers kept home.
func TestReadHostile(t *testing.T) {
	const limit = 256 << 10
	mux := http.NewServeMux()
	mux.Handle("/endless/slots", hostiletest.Stream(`[`, `{"id":1,"n_ctx":1},`, 1<<30, 0))
	mux.Handle("/bomb/slots", hostiletest.Gzipped(hostiletest.GzipBomb(1<<30)))
	mux.Handle("/deep/slots", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"id":0,"params":` + strings.Repeat("[", 200000)))
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, path := range []string{"/endless", "/bomb", "/deep"} {
		u, _ := url.Parse(srv.URL + path + "/metrics")
		var got *snapshot.Slots
		alloc := hostiletest.Allocated(func() { got = Read(context.Background(), u, Options{MaxBytes: limit}) })
		if got.Status != snapshot.SlotsFailed {
			t.Errorf("%s: %s", path, got.Status)
		}
		if alloc > 64*limit {
			t.Errorf("%s: allocated %d bytes for a cap of %d", path, alloc, limit)
		}
	}
	rec := &hostiletest.Recorder{}
	other := hostiletest.OtherHost(t, rec)
	away := httptest.NewServer(hostiletest.RedirectTo(other))
	defer away.Close()
	u, _ := url.Parse(away.URL + "/metrics")
	got := Read(context.Background(), u, Options{MaxBytes: limit, Headers: http.Header{"Authorization": {"Bearer k"}}})
	if got.Status != snapshot.SlotsFailed || len(rec.Requests()) != 0 {
		t.Errorf("a redirect away: %s, %d requests reached the other host", got.Status, len(rec.Requests()))
	}
}

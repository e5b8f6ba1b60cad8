package discover_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/internal/discover"
	"github.com/inferscope/inferscope/internal/discover/discovertest"
	"github.com/inferscope/inferscope/internal/scrape"
)

// A router asked for /metrics without a model refuses in words NeedsModel
// knows; asked with RouterURL it answers the model's own metrics, and
// never loads one (autoload=false); RouterModels lists what it serves.
// The fake answers as llama.cpp's tools/server does at 82bb485 (see
// discovertest.Router).
func TestRouter(t *testing.T) {
	r := &discovertest.Router{
		Models:  []discovertest.RouterModel{{ID: "qwen", Status: "loaded"}, {ID: "tiny", Status: "unloaded"}},
		Metrics: []byte("llamacpp:prompt_tokens_total 12\n"),
	}
	srv := r.Serve(t)
	metrics, _ := url.Parse(srv.URL + "/metrics")
	ctx := context.Background()

	_, err := scrape.Fetch(ctx, metrics.String(), scrape.Options{})
	if !discover.NeedsModel(err) {
		t.Fatalf("not told as a router: %v", err)
	}
	res, err := scrape.Fetch(ctx, discover.RouterURL(metrics, "qwen").String(), scrape.Options{})
	if err != nil || !strings.Contains(string(res.Body), "llamacpp:prompt_tokens_total 12") {
		t.Fatalf("the model's metrics: %v", err)
	}
	_, err = scrape.Fetch(ctx, discover.RouterURL(metrics, "tiny").String(), scrape.Options{})
	if said := discover.RouterSaid(err); said != "model is not loaded" || discover.NeedsModel(err) {
		t.Errorf("an unloaded model: %q (%v)", said, err)
	}
	_, err = scrape.Fetch(ctx, discover.RouterURL(metrics, "nope").String(), scrape.Options{})
	if said := discover.RouterSaid(err); said != "model 'nope' not found" {
		t.Errorf("an unknown model: %q", said)
	}
	if r.Loads() != 0 {
		t.Errorf("%d requests would have loaded a model", r.Loads())
	}
	models, err := discover.RouterModels(ctx, metrics, discover.Options{})
	if err != nil || !reflect.DeepEqual(models, []discover.Model{{ID: "qwen", Status: "loaded"}, {ID: "tiny", Status: "unloaded"}}) {
		t.Errorf("models: %v %v", models, err)
	}
	if !models[0].Running() || models[1].Running() {
		t.Error("running told wrong")
	}
}

func TestRouterURL(t *testing.T) {
	u, _ := url.Parse("http://user:pw@gpu:8080/api/metrics?x=1")
	got := discover.RouterURL(u, "Qwen/Qwen3 8B")
	if got.String() != "http://user:pw@gpu:8080/api/metrics?autoload=false&model=Qwen%2FQwen3+8B&x=1" {
		t.Errorf("got %s", got)
	}
	if u.RawQuery != "x=1" {
		t.Error("the URL given was changed")
	}
}

// recorded is testdata/real/llama-server-router: a real llama-server
// b10309 in router mode, its answers replayed byte for byte with their
// statuses (README.md there says how they were taken).
const recorded = "../../testdata/real/llama-server-router/"

// The router's recorded answers are told as the fake's are: what
// NeedsModel, RouterSaid, RouterModels and Probe know of a router is what
// the real one says, and the fake answers the same words.
func TestRecordedRouter(t *testing.T) {
	files := map[string]struct {
		file   string
		status int
	}{
		"/metrics":                             {"metrics-no-model.json", 400},
		"/slots":                               {"slots-no-model.json", 400},
		"/metrics?autoload=false&model=tiny-b": {"metrics-not-loaded.json", 400},
		"/metrics?autoload=false&model=nope":   {"metrics-unknown-model.json", 400},
		"/v1/models":                           {"models.json", 200},
		"/props":                               {"props.json", 200},
		"/slots?autoload=false&model=tiny-a":   {"slots-tiny-a.json", 200},
		"/metrics?autoload=false&model=tiny-a": {"../llama.cpp-b10309-tiny.prom", 200},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(f.status)
		w.Write(read(t, recorded+f.file))
	})
	srv := discovertest.Serve(t, mux)
	metrics, _ := url.Parse(srv.URL + "/metrics")
	ctx := context.Background()

	_, err := scrape.Fetch(ctx, metrics.String(), scrape.Options{})
	if !discover.NeedsModel(err) {
		t.Errorf("the recorded 400 not told as a router's: %v", err)
	}
	for model, said := range map[string]string{"tiny-b": "model is not loaded", "nope": "model 'nope' not found"} {
		_, err := scrape.Fetch(ctx, discover.RouterURL(metrics, model).String(), scrape.Options{})
		if got := discover.RouterSaid(err); got != said {
			t.Errorf("%s: %q, want %q", model, got, said)
		}
	}
	models, err := discover.RouterModels(ctx, metrics, discover.Options{})
	if want := []discover.Model{{ID: "tiny-a", Status: "loaded"}, {ID: "tiny-b", Status: "unloaded"}}; err != nil || !reflect.DeepEqual(models, want) {
		t.Errorf("models %v (%v), want %v", models, err, want)
	}
	res, err := discover.Probe(ctx, "127.0.0.1", discover.Options{Ports: []discover.Port{{Number: discovertest.Port(t, srv)}}, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Ports[0]; got.Kind != discover.Router || got.Version != "b10309-82bb48500" || !reflect.DeepEqual(got.Models, models) {
		t.Errorf("probed as %s %q %v", got.Kind, got.Version, got.Models)
	}

	// The fake says the same words, in the same JSON.
	fake := (&discovertest.Router{Models: []discovertest.RouterModel{{ID: "tiny-b", Status: "unloaded"}}}).Serve(t)
	for uri, file := range map[string]string{
		"/metrics":                             "metrics-no-model.json",
		"/slots":                               "slots-no-model.json",
		"/metrics?autoload=false&model=tiny-b": "metrics-not-loaded.json",
		"/metrics?autoload=false&model=nope":   "metrics-unknown-model.json",
	} {
		resp, err := http.Get(fake.URL + uri)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !bytes.Equal(bytes.TrimSpace(body), bytes.TrimSpace(read(t, recorded+file))) {
			t.Errorf("fake %s: %d %s, the router answered %s", uri, resp.StatusCode, body, read(t, recorded+file))
		}
	}
}

package discover_test

import (
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"

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

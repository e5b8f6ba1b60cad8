package discover

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// llama.cpp's router mode: one llama-server started without a model serves
// several, each in a child process of its own, and proxies a GET such as
// /metrics or /slots to the child that ?model=NAME names. What it answers,
// from ggml-org/llama.cpp tools/server (router mode since ec18edf, #17470,
// December 2025; read at 82bb485, b10309):
//
//   - a GET without model: HTTP 400, {"error": {"code": 400, "message":
//     "model name is missing from the request", "type":
//     "invalid_request_error"}} (server-models.cpp, router_validate_model;
//     the routes in server.cpp: get_metrics and get_slots are proxy_get);
//   - a model it does not know: 400 "model 'NAME' not found" ("model not
//     found" before #19117);
//   - with autoload=false, a model that is not running: 400 "model is not
//     loaded". Without it (and unless started with --no-models-autoload)
//     the router first loads the model and waits for it (is_autoload,
//     ensure_model_ready): reading a model's metrics would load it, and may
//     unload another (--models-max). inferscope always asks with
//     autoload=false: reading a server never changes what it runs.
//   - GET /v1/models (and /models): {"object": "list", "data": [{"id": …,
//     "status": {"value": "loaded" | "loading" | "unloaded" | "sleeping" |
//     …}, …}]} (get_router_models).
//
// A GET proxied to a child does not refresh the model's last use (only a
// POST does), so reading its metrics keeps no model loaded either.

// missingModel is the router's message for a GET that names no model.
const missingModel = "model name is missing from the request"

// NeedsModel reports whether a scrape failed because the target is a
// llama.cpp router asked for /metrics (or /slots) without a model.
func NeedsModel(err error) bool {
	var se *scrape.Error
	return errors.As(err, &se) && se.Status == http.StatusBadRequest && se.Said == missingModel
}

// RouterQuery is the query that asks a router for one model's answer
// without loading it.
func RouterQuery(model string) url.Values {
	return url.Values{"model": {model}, "autoload": {"false"}}
}

// RouterURL is u asking a router for model, its other parameters kept.
func RouterURL(u *url.URL, model string) *url.URL {
	c := *u
	q := c.Query()
	for k, v := range RouterQuery(model) {
		q[k] = v
	}
	c.RawQuery = q.Encode()
	return &c
}

// ModelsURL is the /v1/models endpoint of the server whose /metrics is at
// metrics: the same scheme, host and path prefix (an --api-prefix), its
// query and user info dropped.
func ModelsURL(metrics *url.URL) *url.URL {
	u := *metrics
	u.User, u.RawQuery, u.Fragment, u.RawPath = nil, "", "", ""
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/metrics") + "/v1/models"
	return &u
}

// RouterModels asks the router whose /metrics is at metrics for the models
// it serves, with each one's status, through httpsafe with o's headers
// (basic auth in metrics' user info is sent as such) within o's cap and
// ctx.
func RouterModels(ctx context.Context, metrics *url.URL, o Options) ([]Model, error) {
	o = o.withDefaults()
	u := ModelsURL(metrics)
	origin := *u
	origin.User = metrics.User
	tr := o.Transport
	if tr == nil {
		tr = httpsafe.Transport()
	}
	body, status, err := getJSON(ctx, &origin, o, tr)
	where := httpsafe.Redact(u)
	switch {
	case err != nil:
		return nil, fmt.Errorf("listing the models at %s: %w", where, err)
	case status < 200 || status > 299:
		return nil, fmt.Errorf("listing the models at %s: HTTP %d", where, status)
	}
	models, ok := parseModels(body)
	if !ok {
		return nil, fmt.Errorf("listing the models at %s: the answer is not a list of models", where)
	}
	return models, nil
}

// RouterSaid is what a router answered a request for one model, where it
// refused it (400 with its message): "" for any other failure.
func RouterSaid(err error) string {
	var se *scrape.Error
	if errors.As(err, &se) && se.Status == http.StatusBadRequest {
		return termsafe.Line(se.Said, 160)
	}
	return ""
}

package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/inferscope/inferscope/internal/discover"
	"github.com/inferscope/inferscope/internal/httpsafe"
	"github.com/inferscope/inferscope/internal/scrape"
	"github.com/inferscope/inferscope/internal/termsafe"
)

// fetch scrapes a target; where it turns out to be a llama.cpp router
// (one llama-server serving several models, whose /metrics is one model's
// and needs ?model=NAME), it asks again for the model --model names,
// without loading it (internal/discover's router.go says what the router
// answers). routed is that model, "" for any other target: the series are
// then the model's alone, unlabelled, and read as one server's.
func fetch(ctx context.Context, target string, so scrape.Options, model string) (res *scrape.Result, routed string, err error) {
	res, err = scrape.Fetch(ctx, target, so)
	if err == nil || !discover.NeedsModel(err) {
		return res, "", err
	}
	t, rerr := scrape.Resolve(target)
	if rerr != nil || t.URL == nil {
		return nil, "", err
	}
	if model == "" {
		return nil, "", routerError(ctx, target, t.URL, so, "", "")
	}
	res, err = scrape.Fetch(ctx, discover.RouterURL(t.URL, model).String(), so)
	if err != nil {
		if said := discover.RouterSaid(err); said != "" {
			return nil, "", routerError(ctx, target, t.URL, so, model, said)
		}
		return nil, "", err
	}
	return res, model, nil
}

// routerError says why a router gave no metrics (no --model, or the
// router's refusal of the one named) and lists the models it serves, each
// with the command that reads it.
func routerError(ctx context.Context, target string, metrics *url.URL, so scrape.Options, model, said string) error {
	shown := termsafe.ShellQuote(target)
	msg := fmt.Sprintf("%s is a llama.cpp router serving several models: its /metrics is one model's, and --model names which", shown)
	if model != "" {
		msg = fmt.Sprintf("the llama.cpp router at %s has no metrics for --model %s: it answered %q", shown, termsafe.ShellQuote(model), said)
	}
	models, err := discover.RouterModels(ctx, metrics, discover.Options{Headers: so.Headers, MaxBytes: so.MaxBytes, UserAgent: so.UserAgent, Transport: transportOf(so)})
	hints := routerHints(target, metrics, models, err == nil)
	if said == "model is not loaded" {
		hints = append(hints, "inferscope never loads a model to read it (it asks with autoload=false): a request to the model loads it")
	}
	return &usageError{msg: msg, hints: hints}
}

// routerHints are the commands that read each model a router serves
// (listed: whether its list of models could be read).
func routerHints(target string, metrics *url.URL, models []discover.Model, listed bool) []string {
	shown := termsafe.ShellQuote(target)
	list := termsafe.ShellQuote(httpsafe.Redact(discover.ModelsURL(metrics)))
	var hints []string
	switch {
	case !listed:
		hints = append(hints, "list its models: curl -s "+list)
	case len(models) == 0:
		hints = append(hints, "it lists no models: start it with --models-dir or --models-preset, or add a model to its cache")
	}
	for i, m := range models {
		if i == maxRouterHints {
			hints = append(hints, fmt.Sprintf("and %d more: curl -s %s", len(models)-maxRouterHints, list))
			break
		}
		h := "inferscope --model " + termsafe.ShellQuote(m.ID) + " " + shown
		switch {
		case m.Status == "":
		case m.Running():
			h += " (" + m.Status + ")"
		default:
			h += " (" + m.Status + ": no metrics until a request loads it)"
		}
		hints = append(hints, h)
	}
	return hints
}

// maxRouterHints is how many of a router's models the error lists.
const maxRouterHints = 8

// transportOf is the transport a scrape's options carry, nil for the
// shared one.
func transportOf(so scrape.Options) http.RoundTripper {
	if so.Client == nil {
		return nil
	}
	return so.Client.Transport
}

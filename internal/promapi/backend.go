package promapi

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
)

// BackendKind names a store.
type BackendKind string

const (
	Prometheus      BackendKind = "prometheus"
	VictoriaMetrics BackendKind = "victoriametrics"
	Thanos          BackendKind = "thanos"
	Mimir           BackendKind = "mimir"
	// Unknown is a store that answers the API but says nothing of itself.
	Unknown BackendKind = "unknown"
)

// Backend is what the store said of itself.
type Backend struct {
	Kind    BackendKind `json:"kind"`
	Version string      `json:"version,omitempty"`
	// Metadata says the store keeps metric metadata (types and help).
	Metadata bool `json:"metadata"`
	// Extrapolates says increase() and rate() scale to the window's edges
	// (Prometheus and its kin); VictoriaMetrics does not.
	Extrapolates bool `json:"extrapolates"`
}

// String names the backend for a title line: "Prometheus 2.42.0".
func (b Backend) String() string {
	name := map[BackendKind]string{Prometheus: "Prometheus", VictoriaMetrics: "VictoriaMetrics", Thanos: "Thanos",
		Mimir: "Mimir", Unknown: "a Prometheus-compatible store"}[b.Kind]
	if name == "" {
		name = string(b.Kind)
	}
	if b.Version != "" {
		return name + " " + b.Version
	}
	return name
}

// buildinfo is /api/v1/status/buildinfo's data as each store fills it.
type buildinfo struct {
	Version     string `json:"version"`
	Application string `json:"application"` // Mimir: "Grafana Mimir"
}

// parseBuildinfo reads a buildinfo answer: the backend it names, and
// whether it named one at all (VictoriaMetrics answers an empty object, or
// a fixed Prometheus version for Grafana's sake).
func parseBuildinfo(body []byte) (Backend, bool) {
	var r struct {
		Status string    `json:"status"`
		Data   buildinfo `json:"data"`
	}
	if json.Unmarshal(body, &r) != nil || r.Status != "success" {
		return Backend{Kind: Unknown}, false
	}
	v := strings.TrimSpace(r.Data.Version)
	app := strings.ToLower(r.Data.Application)
	switch {
	case strings.Contains(app, "mimir"), strings.Contains(app, "cortex"):
		return Backend{Kind: Mimir, Version: clip(v), Metadata: true, Extrapolates: true}, true
	case v == "":
		return Backend{Kind: Unknown}, false
	case strings.HasPrefix(v, "0."):
		// Thanos is the Prometheus-API store still on 0.x versions.
		return Backend{Kind: Thanos, Version: clip(v), Metadata: true, Extrapolates: true}, true
	}
	return Backend{Kind: Prometheus, Version: clip(v), Metadata: true, Extrapolates: true}, true
}

// vmFakeVersion is the Prometheus version VictoriaMetrics reports in its
// buildinfo since 1.8x, so that Grafana enables its features.
const vmFakeVersion = "2.24.0"

// Detect asks the store what it is (/api/v1/status/buildinfo, and
// VictoriaMetrics' /api/v1/status/top_queries when buildinfo says too
// little) and sets the parameters that backend needs on every later
// request. A store that cannot be reached or refuses is an *Error: this
// is the first request, and it says whether the URL works at all.
func (c *Client) Detect(ctx context.Context) (Backend, error) {
	body, err := c.get(ctx, "/api/v1/status/buildinfo")
	var b Backend
	named := false
	if err != nil {
		var e *Error
		// A store without the endpoint (an older Thanos, a proxy) may
		// still serve queries; anything else is the answer.
		if !errors.As(err, &e) || (e.Status != 404 && e.Status != 405 && e.Kind != BadAnswer) {
			return Backend{}, err
		}
	} else {
		b, named = parseBuildinfo(body)
	}
	if !named || b.Version == vmFakeVersion {
		if c.isVictoriaMetrics(ctx) {
			b = Backend{Kind: VictoriaMetrics}
			// Read the freshest samples, and never a cached answer.
			c.setParam("latency_offset", "0s")
			c.setParam("nocache", "1")
		} else if !named {
			// Say nothing we do not know; metadata is asked for anyway.
			b = Backend{Kind: Unknown, Metadata: true, Extrapolates: true}
		}
	}
	c.mu.Lock()
	c.backend = b
	c.mu.Unlock()
	return b, nil
}

// isVictoriaMetrics probes an endpoint only VictoriaMetrics serves.
func (c *Client) isVictoriaMetrics(ctx context.Context) bool {
	body, err := c.get(ctx, "/api/v1/status/top_queries")
	if err != nil {
		return false
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(body, &r) != nil {
		return false
	}
	_, ok := r["topN"]
	return ok
}

package scrape

import (
	"bytes"
	"context"
	"mime"
	"time"
)

// TextPath is where TensorRT-LLM's trtllm-serve publishes its Prometheus
// text (tensorrt_llm/serve/openai_server.py mounts it when
// return_perf_metrics is true): its /metrics answers the iteration stats
// as JSON ([] with none). A target given without a path whose /metrics
// answers JSON is read here instead; a path the user gave is kept.
const TextPath = "/prometheus/metrics"

// isJSON reports an answer that is JSON, which no exposition is: its media
// type says so, or its first byte opens an array or an object.
func isJSON(r *Result) bool {
	if mt, _, err := mime.ParseMediaType(r.ContentType); err == nil && mt == "application/json" {
		return true
	}
	b := bytes.TrimLeft(bytes.TrimPrefix(r.Body, []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(b) > 0 && (b[0] == '[' || b[0] == '{')
}

// textPath reads t's server at TextPath after its /metrics answered JSON
// (first), within what is left of the scrape's time. It returns that
// scrape, saying which URL answered JSON, or, where TextPath gives nothing
// to read, the JSON answer saying what TextPath gave.
func textPath(ctx context.Context, t Target, o Options, first *Result) (*Result, error) {
	u := *t.URL
	u.Path, u.RawPath, u.RawQuery = TextPath, "", ""
	next := t
	next.URL = &u
	if left := o.Timeout - first.Waited; left > 0 {
		o.Timeout = left
	} else {
		o.Timeout = time.Millisecond
	}
	r, err := fetchHTTP(ctx, next, o)
	switch {
	case ctx.Err() != nil:
		return nil, err // canceled: not TextPath's answer
	case err != nil:
		first.TextPathFailed = sourceOf(next) + ": " + err.Error()
		return first, nil
	case isJSON(r):
		first.TextPathFailed = sourceOf(next) + " answered JSON too"
		return first, nil
	}
	r.AnsweredJSON = first.Source
	r.Waited += first.Waited
	return r, nil
}

// TextTarget is target (as Resolve reads it) with its path set to
// [TextPath]: what a watch scrapes once [Fetch] found the text there, so
// that /metrics is not asked again (a GET of trtllm-serve's /metrics drains
// the iteration stats its Prometheus collector counts from). ok is false
// for a target that is no URL whose path was filled in.
func TextTarget(target string) (string, bool) {
	t, err := Resolve(target)
	if err != nil || t.URL == nil || !t.PathAdded {
		return "", false
	}
	u := *t.URL
	u.Path, u.RawPath, u.RawQuery = TextPath, "", ""
	return u.String(), true
}

package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// FuzzFeed feeds any upstream body, cut anywhere, to the stream and body
// parsers: they never panic, and where the body is cut does not change
// what they read of it.
func FuzzFeed(f *testing.F) {
	for _, name := range []string{"ollama_chat_stream.ndjson", "llamacpp_chat_stream.sse", "vllm_chat_stream_usage.sse", "openai_chat.json", "ollama_generate.json"} {
		f.Add(loadFixture(f, name).body, uint8(len(name)), uint8(0))
	}
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"\\\"usage\\\":{\"}}]}\n\n"), uint8(7), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, cut uint8, kind uint8) {
		read := func(pieces [][]byte) exchange {
			x := exchange{p: &Proxy{o: Options{MaxResponse: 1 << 16}, now: time.Now}, api: api(kind % uint8(numAPIs))}
			x.stream, x.sse = kind%3 != 0, kind%3 == 1
			now := time.Unix(0, 0)
			for _, p := range pieces {
				x.feed(p, now)
			}
			x.end(now)
			x.generation(now, 0)
			x.outcome()
			return x
		}
		whole := read([][]byte{body})
		c := int(cut) % (len(body) + 1)
		split := read([][]byte{body[:c], body[c:]})
		if whole.model != split.model || whole.complete != split.complete || (whole.usage == nil) != (split.usage == nil) || whole.oversized != split.oversized || whole.ttftLost != split.ttftLost {
			t.Errorf("cutting at %d changed what was read: %+v vs %+v", c, whole, split)
		}
	})
}

// FuzzInjectUsage: a rewritten request is JSON that keeps every field the
// client sent and asks for usage; a request left alone is left alone.
func FuzzInjectUsage(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"messages":[]}`))
	f.Add([]byte(`{"model":"m","stream":true,"stream_options":{"include_usage":false,"x":1}}`))
	f.Add([]byte(`{"stream":true,"stream_options":null}`))
	f.Add([]byte(`{"stream":true,"stream_options":[1]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		requestModel(body) // never panics, whatever the body
		var model string
		out, ok := injectUsage(body, &model)
		if !ok {
			return
		}
		var in, got map[string]json.RawMessage
		if json.Unmarshal(body, &in) != nil || json.Unmarshal(out, &got) != nil {
			t.Fatalf("rewrote %q into %q", body, out)
		}
		for k, v := range in {
			if k != "stream_options" && !bytes.Equal(compact(t, v), compact(t, got[k])) {
				t.Errorf("field %s changed: %s -> %s", k, v, got[k])
			}
		}
		var opts struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if json.Unmarshal(got["stream_options"], &opts) != nil || !opts.IncludeUsage {
			t.Errorf("stream_options %s does not ask for usage", got["stream_options"])
		}
	})
}

func compact(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzFilter: the injected stream's filter hands out exactly the bytes it
// read, less whole usage-only events, however the reads are cut.
func FuzzFilter(f *testing.F) {
	f.Add(loadFixture(f, "vllm_chat_stream_usage.sse").body, uint8(3))
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"x\":1}}\r\n\r\ndata: [DONE]"), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, step uint8) {
		n := int(step)%64 + 1
		x := &exchange{p: &Proxy{o: Options{MaxResponse: 1 << 16}, now: time.Now}, stream: true, sse: true}
		fl := &filter{meter: &meter{x: x, body: io.NopCloser(&trickle{b: body, n: n})}}
		got, err := io.ReadAll(fl)
		if err != nil {
			t.Fatal(err)
		}
		// Events end at a blank line ("\n" or "\r\n"), found here by
		// splitting into lines.
		var want, ev []byte
		for line := range bytes.Lines(body) {
			ev = append(ev, line...)
			if string(line) == "\n" || string(line) == "\r\n" {
				if !usageOnly(ev) {
					want = append(want, ev...)
				}
				ev = ev[:0]
			}
		}
		want = append(want, ev...)
		if !bytes.Equal(got, want) {
			t.Errorf("filtered %q\n got %q\nwant %q", body, got, want)
		}
	})
}

// trickle reads n bytes at a time.
type trickle struct {
	b []byte
	n int
}

func (r *trickle) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}

// FuzzModelList: any answer to GET /v1/models is read without a panic,
// and only context lengths that can be true are kept.
func FuzzModelList(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"id":"m","object":"model","meta":{"n_ctx":1024,"n_ctx_train":4096}}]}`))
	f.Add([]byte(`{"object":"list","data":[{"id":"a","max_model_len":2048},{"id":"b","max_model_len":-1},{"id":"c","max_model_len":1e20}]}`))
	f.Add([]byte(`{"data":[{"id":"m","meta":{"n_ctx":"big"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var c contexts
		c.learn(body)
		for id, n := range c.by {
			if n <= 0 || n > MaxTokens {
				t.Errorf("kept a context of %d for %q", n, id)
			}
		}
		if c.only < 0 || c.only > MaxTokens || len(c.by) > maxContexts {
			t.Errorf("only %d, %d models", c.only, len(c.by))
		}
	})
}

// FuzzParseUpstream: whatever is typed, the upstream is an http(s) URL
// with a host, or an error with a hint.
func FuzzParseUpstream(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8080", "https://u:p@h/v1", "h:0", "[::1]", "http://h/?q", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUpstream(s)
		if err != nil {
			if ue, ok := err.(*UpstreamError); !ok || ue.Hint == "" {
				t.Errorf("%q: %v without a hint", s, err)
			}
			return
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.RawQuery != "" || u.Fragment != "" {
			t.Errorf("%q gave %v", s, u)
		}
		if _, err := New(Options{Upstream: u}); err != nil {
			t.Errorf("%q: the proxy refuses %v: %v", s, u, err)
		}
	})
}

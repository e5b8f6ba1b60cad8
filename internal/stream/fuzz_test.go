package stream

import (
	"strings"
	"testing"
)

// FuzzReader reads any body, of any API and framing, cut anywhere: the
// reader never panics, and where the body is cut (into two reads, or a
// byte at a time) does not change the events it reads but for when they
// arrive.
func FuzzReader(f *testing.F) {
	for _, path := range []string{"proxy/ollama_chat_stream.ndjson", "proxy/llamacpp_chat_stream.sse", "proxy/vllm_chat_stream_usage.sse",
		"proxy/openai_chat.json", "proxy/ollama_generate.json", "proxy/llamacpp_b10309_chat_stream.http", "proxy/openai_completions_stream_nousage.sse", "bench/llmd_sim_chat_stream_usage.http"} {
		fx := loadFixture(f, path)
		f.Add(fx.body, uint8(fx.framing), uint8(len(path)))
	}
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"\\\"usage\\\":{\"}}]}\r\n\r\n: ping\n\ndata: [DONE]"), uint8(SSE), uint8(3))
	f.Add([]byte(`{"error":"x"}`+"\n"+`{"done":true,"eval_count":-1}`), uint8(NDJSON), uint8(9))
	f.Add([]byte(`{"object":"error","message":7,"error":{"message":[1]}}`), uint8(Whole), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, framing, cut uint8) {
		fr := Framing(framing % 3)
		api := API(cut % uint8(numAPIs))
		c := int(cut) % (len(body) + 1)
		for _, settle := range []func(*recorder) bool{nil, func(r *recorder) bool { return len(r.events) > 1 }} {
			whole := read(api, fr, []string{string(body)}, settle)
			split := read(api, fr, []string{string(body[:c]), string(body[c:])}, settle)
			if !sameEvents(whole, split) {
				t.Fatalf("cutting at %d changed the events:\n%+v\n%+v", c, whole, split)
			}
			if fr == Whole || len(body) > 4096 {
				continue
			}
			bytewise := make([]string, len(body))
			for i := range body {
				bytewise[i] = string(body[i : i+1])
			}
			if one := read(api, fr, bytewise, settle); !sameEvents(whole, one) {
				t.Fatalf("reading a byte at a time changed the events:\n%+v\n%+v", whole, one)
			}
		}
		// Every content event is a line of its own.
		if fr != Whole {
			content := 0
			for _, e := range read(api, fr, []string{string(body)}, nil) {
				if e.Content {
					content++
				}
			}
			if lines := strings.Count(string(body), "\n") + 1; content > lines {
				t.Fatalf("%d content events from %d lines", content, lines)
			}
		}
	})
}

// sameEvents compares events but for when they arrived.
func sameEvents(a, b []got) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.At, y.At = 0, 0
		if x != y {
			return false
		}
	}
	return true
}

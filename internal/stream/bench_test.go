package stream

import (
	"testing"
	"time"
)

// discard keeps nothing and never settles: every event is decoded, as the
// bench reads.
type discard struct{ content int }

func (d *discard) Event(e *Event) bool {
	if e.Content {
		d.content++
	}
	return false
}

// BenchmarkReaderEvent is the bench's work per streamed event: the line
// found and decoded whole, its content told.
func BenchmarkReaderEvent(b *testing.B) {
	for _, c := range []struct {
		name    string
		api     API
		framing Framing
		event   string
	}{
		{"openai-sse", ChatCompletions, SSE, `data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1735689600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"},
		{"ollama-ndjson", OllamaChat, NDJSON, `{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":" word"},"done":false}` + "\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := &discard{}
			var r Reader
			r.Reset(d, c.api, c.framing, 1<<20)
			ev := []byte(c.event)
			now := time.Now()
			b.SetBytes(int64(len(ev)))
			b.ReportAllocs()
			for b.Loop() {
				r.Feed(ev, now)
			}
			if d.content == 0 {
				b.Fatal("no content read")
			}
		})
	}
}

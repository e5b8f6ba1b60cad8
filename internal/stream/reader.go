package stream

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// MaxLine bounds one streamed line (an SSE data line, an NDJSON line) kept
// for parsing; a longer one is passed unread (an event of kind Skipped).
const MaxLine = 1 << 20

// Framing is how an answer's body is cut into events.
type Framing int

const (
	Whole  Framing = iota // one JSON body: an answer that is not streamed
	SSE                   // server-sent events, each chunk on a data: line (OpenAI)
	NDJSON                // one JSON object a line (Ollama)
)

// FramingOf tells an answer's framing from its Content-Type.
func FramingOf(contentType string) Framing {
	switch {
	case strings.HasPrefix(contentType, "text/event-stream"):
		return SSE
	case strings.HasPrefix(contentType, "application/x-ndjson"):
		return NDJSON
	}
	return Whole
}

// Kind is what an event is.
type Kind uint8

const (
	// Data is a decoded chunk, line or whole answer.
	Data Kind = iota
	// Done is SSE's "data: [DONE]", the end of an OpenAI stream.
	Done
	// Skipped is a line longer than MaxLine, or a whole answer longer than
	// the reader's bound, passed unread: what it said is lost.
	Skipped
	// Malformed is a data line, an NDJSON line or a whole answer that is
	// not the JSON its API sends.
	Malformed
)

// Event is one event of an answer as the reader read it. The reader
// reuses it: a handler keeps what it needs, not the pointer.
type Event struct {
	Kind  Kind
	T     time.Time // when the read that completed it arrived
	Whole bool      // the answer was not streamed: this is all of it
	// Content: the event carries generated tokens: a delta's content,
	// reasoning or tool call, a completion's text, Ollama's message
	// content, thinking or tool call, its response or thinking; on a
	// whole answer, a message too. A role-only chunk, an empty delta, a
	// usage-only chunk or a keep-alive comment does not.
	Content bool
	Model   string
	Usage   *Usage   // OpenAI's usage object (not null); the last one seen is the answer's
	Timings *Timings // llama.cpp's timings
	// Finish is the first non-empty finish_reason of the chunk's choices,
	// or Ollama's done_reason.
	Finish string
	// Final is Ollama's last line's accounting (done: true), nil on
	// other lines.
	Final *OllamaFinal
	// Error is what an error object in the answer says: Ollama's
	// {"error": "..."} line, OpenAI-compatible servers' {"error": {...}}
	// chunk; "" none.
	Error string
}

// A Handler takes a reader's events, in order, as they complete.
//
// Its answer, settled, says that from now on the handler needs only the
// events that can end or account for the answer: then a streamed line is
// decoded only when a scan of its bytes finds a usage or timings object,
// a finish reason (SSE), or Ollama's done: true or an error (NDJSON); no
// event is sent for the others. The proxy settles once it has its first token
// and the model; the bench never settles, since it times every content
// event.
type Handler interface {
	Event(e *Event) (settled bool)
}

// Reader reads one answer's body as it arrives, calling its handler with
// each event. The zero Reader is not usable: see [Reader.Reset]. It keeps
// at most one line of MaxLine (or a whole answer of its bound) and the
// read in hand, whatever the server sends.
type Reader struct {
	h        Handler
	api      API
	framing  Framing
	maxWhole int

	buf      []byte
	skipping bool // inside a streamed line beyond its bound, until its end
	full     bool // a whole answer beyond its bound: not read
	settled  bool
	ev       Event
}

// Reset makes r a reader of one answer of api in framing f, with h its
// handler; a whole answer longer than maxWhole bytes is not read. A
// streamed answer's lines are decoded as f says (SSE's as OpenAI chunks,
// NDJSON's as Ollama lines), a whole one's as api says.
func (r *Reader) Reset(h Handler, api API, f Framing, maxWhole int) {
	*r = Reader{h: h, api: api, framing: f, maxWhole: maxWhole, buf: r.buf[:0]}
}

// Feed reads bytes of the answer that arrived at t.
func (r *Reader) Feed(b []byte, t time.Time) {
	if r.framing == Whole {
		switch {
		case r.full:
		case len(r.buf)+len(b) > r.maxWhole:
			r.full, r.buf = true, nil
			r.emit(Event{Kind: Skipped, T: t, Whole: true})
		default:
			r.buf = append(r.buf, b...)
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		switch {
		case r.skipping && i < 0:
			return
		case r.skipping:
			r.skipping = false // the long line ends here
		case i < 0 && len(r.buf)+len(b) > MaxLine, i >= 0 && len(r.buf)+i > MaxLine:
			r.skipping, r.buf = true, r.buf[:0]
			r.emit(Event{Kind: Skipped, T: t})
			continue
		case i < 0:
			r.buf = append(r.buf, b...)
			return
		default:
			line := b[:i]
			if len(r.buf) > 0 {
				line = append(r.buf, line...)
				r.buf = line
			}
			r.line(line, t)
			r.buf = r.buf[:0]
		}
		b = b[i+1:]
	}
}

// End is the answer's end of body, at t: a whole answer is decoded, and a
// last line without its newline read.
func (r *Reader) End(t time.Time) {
	switch {
	case r.framing == Whole:
		if !r.full {
			r.whole(r.buf, t)
		}
		r.buf = nil
	case len(r.buf) > 0 && !r.skipping:
		r.line(r.buf, t)
		r.buf = r.buf[:0]
	}
}

func (r *Reader) emit(e Event) {
	r.ev = e
	r.settled = r.h.Event(&r.ev)
}

// whole decodes an answer that was not streamed.
func (r *Reader) whole(b []byte, t time.Time) {
	if r.api.OpenAI() {
		var c openaiChunk
		if json.Unmarshal(b, &c) != nil {
			r.emit(Event{Kind: Malformed, T: t, Whole: true})
			return
		}
		r.emit(Event{Kind: Data, T: t, Whole: true, Content: c.answered(), Model: c.Model, Usage: c.Usage,
			Timings: c.Timings, Finish: c.finish(), Error: openaiErr(b)})
		return
	}
	var l ollamaLine
	if json.Unmarshal(b, &l) != nil {
		r.emit(Event{Kind: Malformed, T: t, Whole: true})
		return
	}
	r.ollama(&l, t, true)
}

// line reads one streamed line.
func (r *Reader) line(b []byte, t time.Time) {
	b = bytes.TrimSuffix(b, []byte{'\r'})
	if r.framing == SSE {
		r.sseLine(b, t)
	} else {
		r.ndjsonLine(b, t)
	}
}

// sseLine reads one line of an OpenAI event stream.
func (r *Reader) sseLine(b []byte, t time.Time) {
	data, ok := bytes.CutPrefix(b, []byte("data:"))
	if !ok {
		return // an event name, an id, a comment (": keep-alive"), a blank line
	}
	data = bytes.TrimLeft(data, " ")
	if bytes.Equal(data, []byte("[DONE]")) {
		r.emit(Event{Kind: Done, T: t})
		return
	}
	if r.settled && ValueAfter(data, `"usage"`) != '{' && ValueAfter(data, `"timings"`) != '{' &&
		ValueAfter(data, `"finish_reason"`) != '"' {
		return
	}
	var c openaiChunk
	if json.Unmarshal(data, &c) != nil {
		if len(bytes.TrimSpace(data)) > 0 {
			r.emit(Event{Kind: Malformed, T: t})
		}
		return
	}
	r.emit(Event{Kind: Data, T: t, Content: c.tokens(), Model: c.Model, Usage: c.Usage, Timings: c.Timings,
		Finish: c.finish(), Error: openaiErr(data)})
}

// ndjsonLine reads one line of an Ollama stream.
func (r *Reader) ndjsonLine(b []byte, t time.Time) {
	if r.settled && ValueAfter(b, `"done"`) != 't' && ValueAfter(b, `"error"`) == 0 {
		return
	}
	var l ollamaLine
	if json.Unmarshal(b, &l) != nil {
		if len(bytes.TrimSpace(b)) > 0 {
			r.emit(Event{Kind: Malformed, T: t})
		}
		return
	}
	r.ollama(&l, t, false)
}

func (r *Reader) ollama(l *ollamaLine, t time.Time, whole bool) {
	e := Event{Kind: Data, T: t, Whole: whole, Content: l.tokens(), Model: l.Model, Finish: l.DoneReason, Error: l.Error}
	if l.Done {
		f := l.OllamaFinal
		e.Final = &f
	}
	r.emit(e)
}

package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/inferscope/inferscope/internal/stream"
)

// filter passes an injected stream's events through, less the usage-only
// chunk the injection caused: the client gets the bytes the upstream would
// have sent without the injection.
//
// It reads each byte once. An event is held until it is whole (its blank
// line has arrived), so the client sees no partial events either, and is
// then handed out or, when it is the usage-only chunk, dropped. An event
// that grows beyond maxLine (the meter's bound on a line) cannot be that
// chunk: what was held of it goes out, and the rest passes as it arrives,
// unheld, to the event's end. So the filter holds at most maxLine and one
// read, whatever the upstream sends.
type filter struct {
	meter *meter
	event []byte // the event being received, while it is held
	// passing: the event being received is beyond the bound, and passes.
	passing bool
	// line is how the line being received starts: its length so far (at
	// most 2 counted) and whether its first byte is '\r', to see a blank
	// line ("\n" or "\r\n") when its '\n' arrives.
	lineLen int
	lineCR  bool
	out     []byte // bytes to hand out, from off on
	off     int
	err     error
	tmp     [32 << 10]byte
}

func (f *filter) Read(b []byte) (int, error) {
	for f.off == len(f.out) {
		f.out, f.off = f.out[:0], 0
		if f.err != nil {
			if len(f.event) > 0 { // the stream's tail without its blank line
				f.out, f.event = append(f.out, f.event...), f.event[:0]
				break
			}
			return 0, f.err
		}
		n, err := f.meter.Read(f.tmp[:])
		f.err = err
		f.scan(f.tmp[:n])
	}
	n := copy(b, f.out[f.off:])
	f.off += n
	return n, nil
}

// scan takes bytes of the stream: each line's end is found once, and an
// event ends at a blank line.
func (f *filter) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			f.startLine(b)
			f.take(b)
			return
		}
		f.startLine(b[:i])
		blank := f.lineLen == 0 || f.lineLen == 1 && f.lineCR
		f.take(b[:i+1])
		f.lineLen, f.lineCR = 0, false
		if blank {
			f.endEvent()
		}
		b = b[i+1:]
	}
}

// startLine notes the first bytes of the line being received.
func (f *filter) startLine(b []byte) {
	if f.lineLen == 0 && len(b) > 0 {
		f.lineCR = b[0] == '\r'
	}
	f.lineLen = min(f.lineLen+len(b), 2)
}

// take adds bytes to the event being received: held, or passed on once
// the event is beyond the bound.
func (f *filter) take(b []byte) {
	switch {
	case f.passing:
		f.out = append(f.out, b...)
	case len(f.event)+len(b) > maxLine:
		f.passing = true
		f.out = append(append(f.out, f.event...), b...)
		f.event = f.event[:0]
	default:
		f.event = append(f.event, b...)
	}
}

// endEvent hands out the event just ended, unless it is the usage-only
// chunk.
func (f *filter) endEvent() {
	if f.passing {
		f.passing = false
		return
	}
	if !usageOnly(f.event) {
		f.out = append(f.out, f.event...)
	}
	f.event = f.event[:0]
}

// usageOnly reports an event whose chunk has no choices and a usage: the
// chunk include_usage adds.
func usageOnly(ev []byte) bool {
	if stream.ValueAfter(ev, `"usage"`) != '{' {
		return false
	}
	for line := range bytes.Lines(ev) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue
		}
		var c struct {
			Choices []json.RawMessage `json:"choices"`
			Usage   json.RawMessage   `json:"usage"`
		}
		if json.Unmarshal(bytes.TrimSpace(data), &c) == nil && len(c.Choices) == 0 && len(c.Usage) > 0 && string(c.Usage) != "null" {
			return true
		}
	}
	return false
}

func (f *filter) Close() error { return f.meter.Close() }

package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxDatasetLine bounds one line of a JSONL dataset.
const MaxDatasetLine = 16 << 20

// Item is one dataset entry: a conversation so far and, where the file
// says, the output length to ask for.
type Item struct {
	Messages []Message
	Output   int // tokens; 0 not given
}

// DatasetError is a dataset that cannot be read, at a line where one is
// to blame.
type DatasetError struct {
	Name string
	Line int // 0: the file as a whole
	Msg  string
}

func (e *DatasetError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
	}
	return e.Name + ": " + e.Msg
}

// ReadDataset reads a dataset: JSONL, one request a line, each
// {"prompt": "..."} or {"messages": [{"role", "content"}...]} with an
// optional "output_tokens" (or "max_tokens"), or a ShareGPT conversation
// {"conversations": [{"from": "human", "value": ...}, {"from": "gpt",
// ...}]}; or a ShareGPT file (a JSON array of such conversations). A
// ShareGPT entry's prompt is its first human turn, with what came before
// it, and its output length the first reply's, at four bytes a token (as
// the demo's simulator counts; the server's usage says the truth).
// Entries with no prompt are left out; a line that is not JSON is an
// error naming its line.
func ReadDataset(name string, r io.Reader) ([]Item, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	first, err := firstByte(br)
	if err == io.EOF {
		return nil, &DatasetError{Name: name, Msg: "the dataset is empty"}
	}
	if err != nil {
		return nil, &DatasetError{Name: name, Msg: err.Error()}
	}
	if first == '[' {
		return readShareGPT(name, br)
	}
	var items []Item
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), MaxDatasetLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e entry
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, &DatasetError{Name: name, Line: line, Msg: "not a JSON object: " + clipErr(err)}
		}
		it, err := e.item()
		if err != nil {
			return nil, &DatasetError{Name: name, Line: line, Msg: err.Error()}
		}
		if len(it.Messages) > 0 {
			items = append(items, it)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &DatasetError{Name: name, Line: line + 1, Msg: fmt.Sprintf("a line longer than %d MiB", MaxDatasetLine>>20)}
		}
		return nil, &DatasetError{Name: name, Msg: err.Error()}
	}
	if len(items) == 0 {
		return nil, &DatasetError{Name: name, Msg: "no entry has a prompt"}
	}
	return items, nil
}

func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' && b != 0xEF && b != 0xBB && b != 0xBF { // a UTF-8 BOM too
			return b, br.UnreadByte()
		}
	}
}

func readShareGPT(name string, r io.Reader) ([]Item, error) {
	var all []entry
	if err := json.NewDecoder(r).Decode(&all); err != nil {
		return nil, &DatasetError{Name: name, Msg: "not a JSON array of conversations: " + clipErr(err)}
	}
	var items []Item
	for i, e := range all {
		it, err := e.item()
		if err != nil {
			return nil, &DatasetError{Name: name, Msg: fmt.Sprintf("entry %d: %v", i+1, err)}
		}
		if len(it.Messages) > 0 {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return nil, &DatasetError{Name: name, Msg: "no conversation has a human turn"}
	}
	return items, nil
}

// entry is one dataset line or ShareGPT conversation.
type entry struct {
	Prompt        *string   `json:"prompt"`
	Messages      []Message `json:"messages"`
	OutputTokens  *int      `json:"output_tokens"`
	MaxTokens     *int      `json:"max_tokens"`
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

func (e *entry) item() (Item, error) {
	var it Item
	switch {
	case e.OutputTokens != nil:
		it.Output = *e.OutputTokens
	case e.MaxTokens != nil:
		it.Output = *e.MaxTokens
	}
	if it.Output < 0 {
		return it, fmt.Errorf("an output length of %d", it.Output)
	}
	switch {
	case e.Prompt != nil:
		if *e.Prompt != "" {
			it.Messages = []Message{{Role: "user", Content: *e.Prompt}}
		}
	case e.Messages != nil:
		for _, m := range e.Messages {
			if m.Role == "" {
				return it, errors.New(`a message without a "role"`)
			}
		}
		it.Messages = e.Messages
	case e.Conversations != nil:
		for k, t := range e.Conversations {
			role := map[string]string{"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system"}[t.From]
			if role == "" {
				return it, fmt.Errorf("a turn from %q (ShareGPT's are human and gpt)", t.From)
			}
			if role != "user" {
				it.Messages = append(it.Messages, Message{Role: role, Content: t.Value})
				continue
			}
			it.Messages = append(it.Messages, Message{Role: role, Content: t.Value})
			if it.Output == 0 && k+1 < len(e.Conversations) {
				it.Output = max(1, (len(e.Conversations[k+1].Value)+3)/4)
			}
			return it, nil
		}
		it.Messages = nil // no human turn
	default:
		return it, errors.New(`no "prompt", "messages" or "conversations"`)
	}
	return it, nil
}

func clipErr(err error) string {
	s := err.Error()
	if utf8.RuneCountInString(s) > 120 {
		s = string([]rune(s)[:120]) + "…"
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// Dataset sends a dataset's items in a seeded order: each pass over the
// items a permutation drawn from the seed and the pass, so that the same
// seed sends the same items in the same order.
type Dataset struct {
	Shape Shape
	Items []Item
	// Output, when not 0, is the output length for items that give none
	// (0: the server's default).
	Output      int
	FixedOutput bool
	Seed        uint64

	mu   sync.Mutex
	pass int
	p    []int // the pass's permutation
}

// Next makes request i.
func (d *Dataset) Next(i int) Request {
	n := len(d.Items)
	pass, k := i/n, i%n
	it := d.Items[d.perm(pass)[k]]
	out := it.Output
	if out == 0 {
		out = d.Output
	}
	fixed := d.FixedOutput && FixedOutput(d.Shape.API) && out > 0
	return Request{Body: d.Shape.Body(it.Messages, out, fixed), PromptTokens: -1, OutputTokens: out, Fixed: fixed}
}

// perm is pass's permutation of the items, kept while the pass lasts (a
// shuffle is as long as the dataset).
func (d *Dataset) perm(pass int) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.p == nil || d.pass != pass {
		d.p, d.pass = permutation(len(d.Items), d.Seed, uint64(pass)), pass
	}
	return d.p
}

func permutation(n int, seed, pass uint64) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	r := rand.New(rand.NewPCG(seed, pass<<1))
	r.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

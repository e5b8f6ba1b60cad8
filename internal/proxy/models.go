package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// contexts are the models' context lengths as the upstream reported them
// in the model lists clients asked it for (GET /v1/models): vLLM's and
// SGLang's max_model_len, llama.cpp's meta.n_ctx (the context of one
// slot). A prompt longer than its model's context cannot be true.
type contexts struct {
	mu sync.RWMutex
	by map[string]int
	// only is the context of the one model a list named (a server of one
	// model, such as llama.cpp's, answers to any model name); 0 when the
	// last list named several or none.
	only int
}

// maxModelLists bounds the model list read, and maxContexts the models
// kept.
const (
	maxModelList = 1 << 20
	maxContexts  = 256
)

// of is the context length of a model; 0 when not reported.
func (c *contexts) of(model string) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n, ok := c.by[model]; ok {
		return n
	}
	return c.only
}

// watch reads a model list as it passes to the client.
func (c *contexts) watch(resp *http.Response) {
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" ||
		!strings.Contains(resp.Header.Get("Content-Type"), "json") || resp.ContentLength > maxModelList {
		return
	}
	resp.Body = &listReader{ReadCloser: resp.Body, c: c}
}

// listReader keeps a copy of a model list, read when it ends.
type listReader struct {
	io.ReadCloser
	c    *contexts
	buf  []byte
	over bool
}

func (l *listReader) Read(b []byte) (int, error) {
	n, err := l.ReadCloser.Read(b)
	if !l.over {
		if len(l.buf)+n > maxModelList {
			l.over, l.buf = true, nil
		} else {
			l.buf = append(l.buf, b[:n]...)
		}
	}
	if err == io.EOF && !l.over {
		l.c.learn(l.buf)
		l.over, l.buf = true, nil
	}
	return n, err
}

// learn takes the context lengths a model list reports.
func (c *contexts) learn(body []byte) {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen *count `json:"max_model_len"`
			Meta        *struct {
				NCtx *count `json:"n_ctx"`
			} `json:"meta"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || len(list.Data) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]int{}
	}
	c.only = 0
	for _, m := range list.Data {
		n := m.MaxModelLen
		if n == nil && m.Meta != nil {
			n = m.Meta.NCtx
		}
		if n == nil || !n.OK || n.N == 0 {
			continue
		}
		if _, known := c.by[m.ID]; known || len(c.by) < maxContexts {
			c.by[m.ID] = n.N
		}
		if len(list.Data) == 1 {
			c.only = n.N
		}
	}
}

package slots

import (
	"os"
	"testing"
)

// FuzzParse: any answer is read or refused, never a panic, and a slot
// read has no negative count.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"busy.json", "busy-later.json", "idle.json", "disabled-501.json"} {
		body, err := os.ReadFile(real + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add([]byte(`[{"id":0,"n_ctx":4096,"is_processing":false}]`))
	f.Add([]byte(`[{"id":1,"id_task":3,"next_token":[{"n_remain":-1,"n_decoded":2}]}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := Parse(body)
		if err != nil {
			return
		}
		for _, s := range got {
			if s.Ctx < 0 || s.ContextTokens < 0 || s.PromptComputed < 0 || s.PromptCached < 0 || s.Decoded < 0 || s.Remaining < -1 {
				t.Fatalf("a negative count read: %+v", s)
			}
		}
	})
}

package discover

import (
	"encoding/json"

	"github.com/inferscope/inferscope/internal/termsafe"
)

// The readers of the servers' JSON answers. Each takes what it knows and
// leaves the rest: an answer it cannot read gives nothing, never an error
// that would hide the server it came from. Every string kept is cleaned
// for a terminal and cut short.

const (
	maxVersionRunes = 40
	maxModelRunes   = 120
	// maxModels is how many models of one answer are kept: a gateway may
	// list thousands, and a listing names a few.
	maxModels = 256
)

// parseVersion reads {"version": "…"}: vLLM's and TensorRT-LLM's /version,
// Ollama's /api/version, SGLang's /server_info and /get_server_info.
func parseVersion(body []byte) string {
	var v struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return termsafe.Line(v.Version, maxVersionRunes)
}

// props is what llama.cpp's /props says of the server: its build
// ("b6500-1a2b3c4") and the model it serves (model_alias: --alias, or the
// model file's name). A router's own /props has role "router" and a
// placeholder alias, not a model.
type props struct{ build, model string }

func parseProps(body []byte) props {
	var v struct {
		BuildInfo  string `json:"build_info"`
		ModelAlias string `json:"model_alias"`
		Role       string `json:"role"`
	}
	if json.Unmarshal(body, &v) != nil {
		return props{}
	}
	out := props{build: termsafe.Line(v.BuildInfo, maxVersionRunes)}
	if v.Role != "router" {
		out.model = termsafe.Line(v.ModelAlias, maxModelRunes)
	}
	return out
}

// parseInfo reads TGI's /info: its version and model_id.
func parseInfo(body []byte) (version, model string) {
	var v struct {
		Version string `json:"version"`
		ModelID string `json:"model_id"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", ""
	}
	return termsafe.Line(v.Version, maxVersionRunes), termsafe.Line(v.ModelID, maxModelRunes)
}

// parseModels reads an OpenAI-compatible /v1/models ({"object": "list",
// "data": [{"id": …}]}), and a llama.cpp router's status of each
// ({"status": {"value": "loaded"}}). ok is false for an answer that is no
// such list.
func parseModels(body []byte) (models []Model, ok bool) {
	var v struct {
		Data *[]struct {
			ID     string          `json:"id"`
			Status json.RawMessage `json:"status"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &v) != nil || v.Data == nil {
		return nil, false
	}
	for _, d := range *v.Data {
		if len(models) == maxModels {
			break
		}
		id := termsafe.Line(d.ID, maxModelRunes)
		if id == "" {
			continue
		}
		models = append(models, Model{ID: id, Status: routerStatus(d.Status)})
	}
	return models, true
}

// routerStatus reads a router's {"value": "loaded", …}; anything else (an
// OpenAI-compatible server's own status field, if any) says nothing.
func routerStatus(raw json.RawMessage) string {
	var s struct {
		Value string `json:"value"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return termsafe.Line(s.Value, 20)
}

// parseOllamaPS reads Ollama's /api/ps: the models loaded now.
func parseOllamaPS(body []byte) []Model {
	var v struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var out []Model
	for _, m := range v.Models {
		if len(out) == maxModels {
			break
		}
		if id := termsafe.Line(m.Name, maxModelRunes); id != "" {
			out = append(out, Model{ID: id, Status: "loaded"})
		}
	}
	return out
}

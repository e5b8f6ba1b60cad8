package dashboard

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/inferscope/inferscope/internal/promql"
)

// The Perses dashboard model (docs/api/dashboard.md of Perses v0.52),
// as much of it as these dashboards use.
type (
	// PersesDashboard is a Perses Dashboard resource.
	PersesDashboard struct {
		Kind     string         `yaml:"kind"`
		Metadata PersesMetadata `yaml:"metadata"`
		Spec     PersesSpec     `yaml:"spec"`
	}
	// PersesMetadata names a resource and its project.
	PersesMetadata struct {
		Name    string `yaml:"name"`
		Project string `yaml:"project"`
	}
	// PersesSpec is a dashboard's specification.
	PersesSpec struct {
		Display         PersesDisplay          `yaml:"display"`
		Duration        string                 `yaml:"duration"`
		RefreshInterval string                 `yaml:"refreshInterval"`
		Variables       []PersesVariable       `yaml:"variables"`
		Panels          map[string]PersesPanel `yaml:"panels"`
		Layouts         []PersesLayout         `yaml:"layouts"`
	}
	// PersesDisplay is a display name and description.
	PersesDisplay struct {
		Name        string `yaml:"name,omitempty"`
		Description string `yaml:"description,omitempty"`
	}
	// PersesVariable is a ListVariable.
	PersesVariable struct {
		Kind string             `yaml:"kind"`
		Spec PersesVariableSpec `yaml:"spec"`
	}
	// PersesVariableSpec is a list variable's specification.
	PersesVariableSpec struct {
		Name           string        `yaml:"name"`
		Display        PersesDisplay `yaml:"display"`
		AllowAllValue  bool          `yaml:"allowAllValue"`
		AllowMultiple  bool          `yaml:"allowMultiple"`
		CustomAllValue string        `yaml:"customAllValue,omitempty"`
		Sort           string        `yaml:"sort,omitempty"`
		Plugin         PersesPlugin  `yaml:"plugin"`
	}
	// PersesPlugin is a plugin's kind and its specification.
	PersesPlugin struct {
		Kind string         `yaml:"kind"`
		Spec map[string]any `yaml:"spec"`
	}
	// PersesPanel is a panel.
	PersesPanel struct {
		Kind string          `yaml:"kind"`
		Spec PersesPanelSpec `yaml:"spec"`
	}
	// PersesPanelSpec is a panel's specification.
	PersesPanelSpec struct {
		Display PersesDisplay `yaml:"display"`
		Plugin  PersesPlugin  `yaml:"plugin"`
		Queries []PersesQuery `yaml:"queries"`
	}
	// PersesQuery is a time-series query.
	PersesQuery struct {
		Kind string          `yaml:"kind"`
		Spec PersesQuerySpec `yaml:"spec"`
	}
	// PersesQuerySpec holds a query's plugin.
	PersesQuerySpec struct {
		Plugin PersesPlugin `yaml:"plugin"`
	}
	// PersesLayout is a grid of panels.
	PersesLayout struct {
		Kind string           `yaml:"kind"`
		Spec PersesLayoutSpec `yaml:"spec"`
	}
	// PersesLayoutSpec is a grid's title and items.
	PersesLayoutSpec struct {
		Display PersesGridDisplay `yaml:"display"`
		Items   []PersesGridItem  `yaml:"items"`
	}
	// PersesGridDisplay is a grid's title and whether it starts open.
	PersesGridDisplay struct {
		Title    string         `yaml:"title"`
		Collapse PersesCollapse `yaml:"collapse"`
	}
	// PersesCollapse says whether a grid starts open.
	PersesCollapse struct {
		Open bool `yaml:"open"`
	}
	// PersesGridItem places a panel.
	PersesGridItem struct {
		X       int               `yaml:"x"`
		Y       int               `yaml:"y"`
		Width   int               `yaml:"width"`
		Height  int               `yaml:"height"`
		Content map[string]string `yaml:"content"`
	}
)

// persesFormats are Perses' formats for the figures' units; a unit it has
// no format for is a decimal, the panel's title saying what it counts.
var persesFormats = map[promql.Unit]map[string]any{
	promql.Ratio:          {"unit": "percent-decimal"},
	promql.Seconds:        {"unit": "seconds"},
	promql.RequestsPerSec: {"unit": "requests/sec"},
	promql.BytesPerSec:    {"unit": "bytes", "shortValues": true},
	promql.PerSec:         {"unit": "events/sec"},
}

// PersesProject is the project the dashboard belongs to.
const PersesProject = "inferscope"

// NewPerses builds the dashboard as a Perses Dashboard resource. user is the
// selector the user gave (the variables' values are read under it); l is
// a library built with [LibraryOptions] for [Perses].
func NewPerses(l *promql.Library, user []promql.Matcher, o Options) (*PersesDashboard, error) {
	o = o.withDefaults(l.Dialect())
	series, err := variableSeries(l, user)
	if err != nil {
		return nil, err
	}
	d := &PersesDashboard{
		Kind:     "Dashboard",
		Metadata: PersesMetadata{Name: o.UID, Project: PersesProject},
		Spec: PersesSpec{
			Display:         PersesDisplay{Name: o.Title, Description: "The report's figures for " + l.Dialect() + ", written by inferscope dashboard from the series names the server publishes."},
			Duration:        "1h",
			RefreshInterval: "30s",
			Panels:          map[string]PersesPanel{},
		},
	}
	for _, v := range Variables(l.By()) {
		d.Spec.Variables = append(d.Spec.Variables, PersesVariable{Kind: "ListVariable", Spec: PersesVariableSpec{
			Name: v.Name, Display: PersesDisplay{Name: v.Label}, AllowAllValue: true, AllowMultiple: true, CustomAllValue: ".*",
			Sort: "alphabetical-asc",
			Plugin: PersesPlugin{Kind: "PrometheusLabelValuesVariable", Spec: map[string]any{
				"labelName": v.Label, "matchers": []string{series},
			}},
		}})
	}
	persesOverview(d, l, NewOverview(l))
	for _, row := range Rows(l) {
		grid := PersesLayout{Kind: "Grid", Spec: PersesLayoutSpec{Display: PersesGridDisplay{Title: row.Section.Title, Collapse: PersesCollapse{Open: true}}}}
		for i, p := range row.Panels {
			key := panelKey(p.ID)
			d.Spec.Panels[key] = persesPanel(l, p)
			grid.Spec.Items = append(grid.Spec.Items, PersesGridItem{X: 8 * (i % 3), Y: 8 * (i / 3), Width: 8, Height: 8,
				Content: map[string]string{"$ref": "#/spec/panels/" + key}})
		}
		d.Spec.Layouts = append(d.Spec.Layouts, grid)
	}
	if o.GPU != nil {
		grid := PersesLayout{Kind: "Grid", Spec: PersesLayoutSpec{Display: PersesGridDisplay{Title: "GPU", Collapse: PersesCollapse{Open: true}}}}
		for i, p := range GPUPanels(o.GPU) {
			key := panelKey(p.ID)
			d.Spec.Panels[key] = persesPanel(o.GPU, p)
			grid.Spec.Items = append(grid.Spec.Items, PersesGridItem{X: 8 * (i % 3), Y: 8 * (i / 3), Width: 8, Height: 8,
				Content: map[string]string{"$ref": "#/spec/panels/" + key}})
		}
		d.Spec.Layouts = append(d.Spec.Layouts, grid)
	}
	return d, nil
}

// panelKey is a panel's key in the panels map: its id, letters, digits
// and underscores only.
func panelKey(id string) string { return strings.NewReplacer("/", "_", ".", "_").Replace(id) }

func persesPanel(l labelled, p Panel) PersesPanel {
	chart := map[string]any{"legend": map[string]any{"position": "bottom", "mode": "list"}}
	if f, ok := persesFormats[p.Unit]; ok {
		chart["yAxis"] = map[string]any{"format": f}
	}
	return PersesPanel{Kind: "Panel", Spec: PersesPanelSpec{
		Display: PersesDisplay{Name: p.Title, Description: describe(p)},
		Plugin:  PersesPlugin{Kind: "TimeSeriesChart", Spec: chart},
		Queries: persesQueries(l, p),
	}}
}

// persesQueries are a panel's queries, each named by its labels and
// suffix.
func persesQueries(l labelled, p Panel) []PersesQuery {
	var out []PersesQuery
	for _, q := range p.Queries {
		out = append(out, PersesQuery{Kind: "TimeSeriesQuery", Spec: PersesQuerySpec{
			Plugin: PersesPlugin{Kind: "PrometheusTimeSeriesQuery", Spec: map[string]any{
				"query": q.Figure.Expr, "seriesNameFormat": legend(l.By(), q.Suffix),
			}},
		}})
	}
	return out
}

// PersesYAML writes a Perses dashboard as YAML.
func PersesYAML(d *PersesDashboard) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("writing the Perses dashboard: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing the Perses dashboard: %w", err)
	}
	return b.Bytes(), nil
}

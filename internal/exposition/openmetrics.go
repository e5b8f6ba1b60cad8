package exposition

import (
	"bytes"
	"strings"
)

// fromOpenMetrics rewrites an OpenMetrics 1.0 body as the classic text
// format, line for line, so that expfmt's text parser can read it (and a
// parse error's line number still points into the original body).
//
// expfmt has an OpenMetrics decoder, but it is grammar-driven and costs about
// 25 µs a byte: a 64 MiB body, within the default cap, would take half an
// hour. The two formats differ in few places, each handled here:
//   - "# EOF" ends the body (required: a body without it is truncated);
//     "# UNIT" lines have no text counterpart;
//   - a counter family "x" has samples "x_total": the text format types the
//     sample name, so the TYPE and HELP lines are renamed to "x_total";
//   - "_created" samples of counters, histograms and summaries are dropped
//     (the inspector does not use them);
//   - exemplars (" # {…} v") and timestamps (float seconds in OpenMetrics,
//     integer milliseconds in text) are dropped;
//   - types the text format lacks (gaugehistogram, info, stateset, unknown)
//     lose their TYPE line, so their samples read as untyped.
//
// One function: a line-by-line translator whose state is the family read.
func fromOpenMetrics(body []byte) ([]byte, error) {
	lines := bytes.Split(body, []byte("\n"))
	out := make([]byte, 0, len(body))
	var famName, famType string
	eof := false
	for i, raw := range lines {
		if i > 0 {
			out = append(out, '\n')
		}
		line := string(bytes.TrimSuffix(raw, []byte("\r")))
		if eof {
			if strings.TrimSpace(line) != "" {
				return nil, &Error{Line: i + 1, Reason: "content after # EOF",
					Hints: []string{"# EOF ends an OpenMetrics body; two outputs joined into one? keep one"}}
			}
			continue
		}
		switch {
		case line == "# EOF":
			eof = true
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) != 4 {
				return nil, &Error{Line: i + 1, Reason: "malformed TYPE line"}
			}
			famName, famType = f[2], f[3]
			switch famType {
			case "counter":
				out = append(out, "# TYPE "+totalName(famName)+" counter"...)
			case "gauge", "histogram", "summary":
				out = append(out, line...)
			}
		case strings.HasPrefix(line, "# HELP "):
			rest := strings.TrimPrefix(line, "# HELP ")
			name, text, _ := strings.Cut(rest, " ")
			if name == famName && famType == "counter" {
				name = totalName(name)
			}
			out = append(out, "# HELP "+name+" "+text...)
		case strings.HasPrefix(line, "#"):
			// "# UNIT" and any other comment: nothing to carry over.
		case line == "":
		default:
			name, rest := splitSample(line)
			if strings.HasSuffix(name, "_created") && famName+"_created" == name &&
				(famType == "counter" || famType == "histogram" || famType == "summary") {
				continue
			}
			out = append(out, line[:len(line)-len(rest)]...)
			out = append(out, ' ')
			out = append(out, firstField(rest)...)
		}
	}
	if !eof {
		return nil, &Error{Reason: "the OpenMetrics body has no # EOF line: it was cut short",
			Hints: []string{"scrape again; a body saved by hand must run to its # EOF line"}}
	}
	return out, nil
}

// totalName is a counter family's sample name.
func totalName(fam string) string {
	if strings.HasSuffix(fam, "_total") {
		return fam
	}
	return fam + "_total"
}

// splitSample splits a sample line after its name and labels, honouring
// quotes and escapes in label values (which may hold spaces, braces or "#").
func splitSample(line string) (name, rest string) {
	i := strings.IndexAny(line, "{ \t")
	if i < 0 {
		return line, ""
	}
	name = line[:i]
	if line[i] != '{' {
		return name, line[i:]
	}
	inQuote := false
	for j := i + 1; j < len(line); j++ {
		switch c := line[j]; {
		case inQuote && c == '\\':
			j++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return name, line[j+1:]
		}
	}
	return name, "" // unterminated labels: the text parser will say so
}

// firstField is the sample value: what follows it (a timestamp, an
// exemplar) is dropped.
func firstField(rest string) string {
	f := strings.Fields(rest)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

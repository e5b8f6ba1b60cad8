package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/inferscope/inferscope/internal/iostreams"
)

// The reference of the command line, written from the command tree as the
// help is: docs/cli.md (markdown) and docs/man/*.1 (man pages), kept in
// sync by TestCLIDocs (go test ./internal/cli -run TestCLIDocs -update
// rewrites them).

// docTree is every command of the tree that has a page, the root first,
// then each command in the order help lists them.
func docTree() []*cobra.Command {
	root := newRoot(iostreams.System(), nil)
	out := []*cobra.Command{root}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range visible(c) {
			out = append(out, s)
			walk(s)
		}
	}
	walk(root)
	return out
}

// anchor is a command's heading anchor in docs/cli.md.
func anchor(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

// paragraphs splits text at blank lines; a paragraph whose lines are
// indented is laid out as written (pre), the others are prose.
func paragraphs(text string) (out []struct {
	lines []string
	pre   bool
}) {
	for _, p := range strings.Split(text, "\n\n") {
		lines := strings.Split(strings.Trim(p, "\n"), "\n")
		pre := false
		for _, l := range lines {
			pre = pre || strings.HasPrefix(l, " ")
		}
		out = append(out, struct {
			lines []string
			pre   bool
		}{lines, pre})
	}
	return out
}

// CLIMarkdown is docs/cli.md.
func CLIMarkdown() string {
	var b strings.Builder
	cmds := docTree()
	b.WriteString("# Command line\n\n")
	b.WriteString("<!-- Written from the command tree by `go test ./internal/cli -run TestCLIDocs -update`; do not edit. -->\n\n")
	b.WriteString("Every command of `inferscope`, its flags and its exit statuses, as its `--help` says them.\n")
	b.WriteString("A flag that several commands take means the same in each (one definition).\n")
	b.WriteString("Man pages of the same text are in [man/](man/); shell completion: `inferscope completion bash|zsh|fish|powershell`.\n\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "- [%s](#%s): %s\n", c.CommandPath(), anchor(c), c.Short)
	}
	for _, c := range cmds {
		fmt.Fprintf(&b, "\n## %s\n\n%s.\n\n```\n%s\n```\n", c.CommandPath(), capitalize(c.Short), c.UseLine())
		for _, p := range paragraphs(c.Long) {
			if p.pre {
				fmt.Fprintf(&b, "\n```\n%s\n```\n", strings.Join(p.lines, "\n"))
				continue
			}
			fmt.Fprintf(&b, "\n%s\n", strings.Join(p.lines, "\n"))
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "\nExamples:\n\n```sh\n%s\n```\n", c.Example)
		}
		if subs := visible(c); len(subs) > 0 {
			b.WriteString("\n| command | what it does |\n|---|---|\n")
			for _, s := range subs {
				fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", s.Name(), anchor(s), cell(s.Short))
			}
		}
		b.WriteString("\n| flag | meaning | default |\n|---|---|---|\n")
		c.Flags().VisitAll(func(f *pflag.Flag) {
			spelled, usage := flagParts(f)
			def := ""
			if d := defaultOf(f); d != "" {
				def = "`" + d + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", strings.TrimSpace(spelled), cell(usage), def)
		})
		b.WriteString("\n| exit status | meaning |\n|---|---|\n")
		for _, e := range decodeExits(c) {
			fmt.Fprintf(&b, "| %d | %s |\n", e.code, cell(e.meaning))
		}
	}
	return b.String()
}

// cell makes text safe in a markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ManPages are the man pages of the tree: {file name: page}.
func ManPages() map[string]string {
	cmds := docTree()
	out := map[string]string{}
	for _, c := range cmds {
		out[anchor(c)+".1"] = manPage(c, cmds)
	}
	return out
}

// roff escapes text for a man page: backslashes, hyphens as minus signs
// (so that flags copy as typed), and a line that would start a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffLines escapes each line of text.
func roffLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = roff(l)
	}
	return strings.Join(out, "\n")
}

func manPage(c *cobra.Command, all []*cobra.Command) string {
	var b strings.Builder
	name := anchor(c)
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"inferscope\" \"inferscope manual\"\n", strings.ToUpper(roff(name)))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(name), roff(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n%s\n", roff(c.CommandPath()), roff(strings.TrimPrefix(c.UseLine(), c.CommandPath()+" ")))
	if c.Long != "" {
		b.WriteString(".SH DESCRIPTION\n")
		for i, p := range paragraphs(c.Long) {
			if i > 0 {
				b.WriteString(".PP\n")
			}
			if p.pre {
				fmt.Fprintf(&b, ".nf\n%s\n.fi\n", roffLines(p.lines))
				continue
			}
			fmt.Fprintf(&b, "%s\n", roffLines(p.lines))
		}
	}
	b.WriteString(".SH OPTIONS\n")
	c.Flags().VisitAll(func(f *pflag.Flag) {
		spelled, usage := flagLine(f)
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roff(strings.TrimSpace(spelled)), roff(usage))
	})
	if c.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLES\n.nf\n%s\n.fi\n", roffLines(strings.Split(c.Example, "\n")))
	}
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range decodeExits(c) {
		fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", e.code, roff(e.meaning))
	}
	var see []string
	for _, o := range all {
		if o != c {
			see = append(see, fmt.Sprintf(".BR %s (1)", roff(anchor(o))))
		}
	}
	fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(see, ",\n"))
	return b.String()
}

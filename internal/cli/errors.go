package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/inferscope/inferscope/internal/termsafe"
	"io"
	"strings"

	"github.com/inferscope/inferscope/internal/dialect"
	"github.com/inferscope/inferscope/internal/exposition"
	"github.com/inferscope/inferscope/internal/scrape"
)

// Exit codes.
const (
	ExitOK     = 0 // report printed
	ExitFailOn = 1 // --fail-on tripped
	ExitError  = 2 // could not produce a report
)

// usageError is a mistake in the command line.
type usageError struct {
	msg   string
	hints []string
}

func (e *usageError) Error() string { return e.msg }

func usagef(hint, format string, args ...any) error {
	e := &usageError{msg: fmt.Sprintf(format, args...)}
	if hint != "" {
		e.hints = []string{hint}
	}
	return e
}

// printError writes err as one `inferscope: error:` line and the hints that
// say what to try.
func printError(w io.Writer, err error) {
	msg, hints := explain(err)
	fmt.Fprintf(w, "inferscope: error: %s\n", oneLine(msg))
	for _, h := range hints {
		fmt.Fprintf(w, "inferscope: hint: %s\n", oneLine(h))
	}
}

func explain(err error) (string, []string) {
	var (
		se *scrape.Error
		ee *exposition.Error
		ue *dialect.UnknownError
		me *dialect.ModelError
		re *readError
		us *usageError
	)
	switch {
	case errors.As(err, &us):
		return us.msg, us.hints
	case errors.As(err, &se):
		return err.Error(), se.Hints
	case errors.As(err, &ee):
		hint := "check that the target serves Prometheus metrics"
		if errors.As(err, &re) {
			hint = re.lookHint()
		}
		return err.Error(), []string{hint}
	case errors.As(err, &ue) && ue.Wanted != "":
		return err.Error(), []string{"leave out --dialect and inferscope detects the server from its series"}
	case errors.As(err, &ue):
		return err.Error(), []string{
			"inferscope reads tabbyAPI, vLLM, llama.cpp, SGLang and TGI metrics; is this the inference server's own /metrics?",
			"--dialect NAME reads the series as one server's anyway (" + strings.Join(dialect.Names(), ", ") + ")",
		}
	case errors.As(err, &me):
		if len(me.Models) == 0 {
			return err.Error(), []string{"leave out --model: a server that serves one model does not label its series"}
		}
		return err.Error(), []string{"--model takes one of: " + strings.Join(me.Models, ", ")}
	case errors.Is(err, dialect.ErrUnknownDialect):
		return err.Error(), []string{"--dialect takes one of: " + strings.Join(dialect.Names(), ", ")}
	case errors.Is(err, context.Canceled):
		return "interrupted", nil
	}
	return err.Error(), nil
}

// oneLine keeps a message on one printable line: it may quote what a server
// sent.
func oneLine(s string) string { return strings.TrimRight(termsafe.Line(s, 0), ".") }

package termsafe_test

import (
	"fmt"

	"github.com/inferscope/inferscope/internal/termsafe"
)

func ExampleText() {
	fmt.Println(termsafe.Text("Qwen3\x1b]0;pwned\x07-27B\x1b[2J\r"))
	// Output:
	// Qwen3-27B
}

func ExampleLine() {
	fmt.Println(termsafe.Line("Traceback:\n  \x1b[31mKeyError\x1b[0m 'tabbyapi'", 20))
	// Output:
	// Traceback: KeyError…
}

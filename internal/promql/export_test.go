package promql

// CheckNotes exposes checkNotes to the external tests.
var CheckNotes = checkNotes

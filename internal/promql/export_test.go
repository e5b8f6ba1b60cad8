package promql

// CheckNotes exposes checkNotes to the external tests.
var CheckNotes = checkNotes

// Matches exposes matches to the external tests.
var Matches = matches

package analysis

// PhaseSpeeds are a server's prefill and decode speeds measured under
// control (`inferscope bench --probe`, read back by --probe-file): the
// phase trade's rows (exchange rate, break-even) weigh them in place of
// the server's own phase times where they are given.
type PhaseSpeeds struct {
	// Source names the probe in the rows ("the probe of 2026-12-06 08:07").
	Source string
	// Model is the model probed, "" where unknown: a report of a server
	// that does not serve it says so.
	Model string
	// Prefill is tokens a second by prompt length, lengths ascending;
	// PrefillFrom says what they were timed by ("the server's prefill
	// time", "client TTFT").
	Prefill     []PrefillSpeed
	PrefillFrom string
	// Decode is one request's decode tokens a second by batch size,
	// batches ascending (the batch's total is Batch × PerRequest);
	// DecodeFrom as PrefillFrom.
	Decode     []DecodeSpeed
	DecodeFrom string
}

// PrefillSpeed is prefill at one prompt length.
type PrefillSpeed struct {
	Length          float64
	TokensPerSecond float64
}

// DecodeSpeed is decode at one batch size: each request's tokens a second.
type DecodeSpeed struct {
	Batch      float64
	PerRequest float64
}

package openai

import (
	"encoding/json"
	"math"
)

// usage is a stream's token counts, as a chat completions usage chunk
// gives them. The sidecar counts no tokens itself: they are the agent's,
// from its stream's end, or zeros, which say none were reported (a count
// of characters or words would pass for tokens and be wrong).
type usage struct {
	prompt, completion, total int64
}

// usageOf is the usage the mapping stage's end record carries ({"end":
// {"usage": …}}, emit: text), in the dialect's own spelling: OpenAI Chat
// Completions' prompt_tokens and completion_tokens, the Responses API's
// input_tokens and output_tokens, the Vercel AI SDK's promptTokens,
// completionTokens, inputTokens and outputTokens. The total is the
// agent's when it gives one, else the sum. ok is false for a record
// without usage.
func usageOf(record []byte) (u usage, ok bool) {
	var end struct {
		End *struct {
			Usage *struct {
				PromptTokens     *float64 `json:"prompt_tokens"`
				InputTokens      *float64 `json:"input_tokens"`
				PromptTokens2    *float64 `json:"promptTokens"`
				InputTokens2     *float64 `json:"inputTokens"`
				CompletionTokens *float64 `json:"completion_tokens"`
				OutputTokens     *float64 `json:"output_tokens"`
				Completion2      *float64 `json:"completionTokens"`
				OutputTokens2    *float64 `json:"outputTokens"`
				TotalTokens      *float64 `json:"total_tokens"`
				TotalTokens2     *float64 `json:"totalTokens"`
			} `json:"usage"`
		} `json:"end"`
	}
	if json.Unmarshal(record, &end) != nil || end.End == nil || end.End.Usage == nil {
		return usage{}, false
	}
	n := end.End.Usage
	u.prompt = count(n.PromptTokens, n.InputTokens, n.PromptTokens2, n.InputTokens2)
	u.completion = count(n.CompletionTokens, n.OutputTokens, n.Completion2, n.OutputTokens2)
	if u.total = count(n.TotalTokens, n.TotalTokens2); u.total == 0 {
		u.total = u.prompt + u.completion
	}
	return u, true
}

// count is the first of counts given that is a whole number from 0 to
// 2^53, else 0.
func count(counts ...*float64) int64 {
	for _, c := range counts {
		if c != nil && *c >= 0 && *c <= 1<<53 && *c == math.Trunc(*c) {
			return int64(*c)
		}
	}
	return 0
}

// Sampler: picks the next token from a vector of logits. First the penalties
// over the tokens seen so far change the logits: repetition_penalty (Hugging
// Face's and llama.cpp's: the logit of every token of the prompt or
// generated so far is divided by it when positive, multiplied when not),
// then frequency_penalty and presence_penalty (OpenAI's: a generated token's
// logit loses frequency_penalty times the times it was generated, and
// presence_penalty once). Then it is greedy (argmax, the first on ties) when
// temperature is 0, otherwise it draws from the softmax of logits /
// temperature, restricted to the top_k most likely tokens and then to the
// smallest set whose probability reaches top_p (nucleus). With `logprobs`
// set it also keeps the sampled token's TokenLogprobs (token_logprobs.h),
// computed from the logits as given, before penalties and temperature.
//
// The random stream is a xorshift64* generator seeded by `seed`, one draw per
// sampled token, so a sequence's tokens depend only on its logits, prompt and
// seed — not on the world size, the thread count or other sequences.
//
// Thread-safety: not thread-safe; one Sampler per sequence.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "runtime/sampling_options.h"
#include "runtime/token_logprobs.h"

namespace inferno {

// TokenConstraint: which tokens may come next in one sequence (e.g. text
// that must stay a JSON document of a schema), applied by its Sampler after
// the penalties, before temperature and the top-k / top-p cuts.
//
// Thread-safety: one sequence's; called from the generator thread.
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets the logit of every token that may not come next to -infinity,
  // leaving at least one finite. `logits` (vocab).
  virtual void Mask(std::span<float> logits) = 0;
  // `token` was sampled (it was left by the last Mask).
  virtual void Accept(int32_t token) = 0;
};

class Sampler {
 public:
  // `prompt`'s tokens count as seen for the repetition penalty; `constraint`
  // (may be null) limits every token. Preconditions:
  // ValidSamplingOptions(options), vocab_size >= 1, prompt ids in [0, vocab).
  Sampler(const SamplingOptions& options, int32_t vocab_size, std::span<const int32_t> prompt,
          std::shared_ptr<TokenConstraint> constraint = nullptr);

  // Whether Sample picks the argmax of the logits as given and needs nothing
  // else of them: greedy, without penalties, logprobs or a constraint. (Under tensor
  // parallelism such a pick needs only each rank's best logit.)
  bool ArgMaxOnly() const;

  // The next token id; it counts as seen from now on. `logits` (vocab) is
  // used as scratch and overwritten. Allocates nothing after the first call
  // but to remember a token seen for the first time.
  //
  // With a `draft` token (>= 0; speculative decoding) the token is drawn
  // from the same distribution p, with the draft kept as often as p allows
  // (speculative sampling): `draft_probs` (vocab) is q, the distribution
  // the draft was drawn from (a draft model's, Propose), or empty when the
  // draft was certain (prompt lookup: q is all on the draft). One coin u:
  // below min(1, p(draft) / q(draft)) the draft; else the rest of u,
  // rescaled to [0, 1), picks from max(0, p - q), renormalised. Greedy
  // picks the argmax either way. The caller keeps the draft's
  // continuation only when the draft is returned. Preconditions: draft in
  // [-1, vocab), -1 = no draft; draft_probs empty or (vocab) with a draft.
  int32_t Sample(std::span<float> logits, int32_t draft = -1, std::span<const float> draft_probs = {});

  // A draft model's proposal: the argmax when greedy, else a token drawn
  // from softmax(logits / temperature) cut to top_k and top_p (neither
  // penalties nor the constraint apply), leaving those probabilities in
  // `logits` (0 outside the cut): the q to give Sample with the token.
  // One draw of the random stream when not greedy.
  int32_t Propose(std::span<float> logits);

  const SamplingOptions& options() const { return options_; }

  // The last sampled token's logprobs. Precondition: options.logprobs >= 0
  // and Sample was called.
  const TokenLogprobs& last_logprobs() const { return logprobs_; }

 private:
  // Uniform in [0, 1).
  float NextUniform();
  // Not greedy: the distribution of `logits` after temperature, top_k and
  // top_p, as the first `kept` (returned) (probability, id) pairs of
  // candidates_, whose probabilities sum to `mass`; `logits` becomes their
  // softmax.
  size_t Distribution(std::span<float> logits, float& mass);
  // Applies the penalties to `logits`.
  void Penalize(std::span<float> logits) const;
  // Records `token` as seen.
  void See(int32_t token, bool generated);

  SamplingOptions options_;
  std::shared_ptr<TokenConstraint> constraint_;
  uint64_t state_;
  std::vector<std::pair<float, int32_t>> candidates_;  // (vocab) probability, id
  // With penalties: (vocab) how often each token was generated, whether it
  // was seen in the prompt or generated; and the ids seen, each once.
  std::vector<int32_t> generated_count_;
  std::vector<bool> seen_;
  std::vector<int32_t> seen_ids_;
  std::vector<float> raw_;  // (vocab) with logprobs: the logits as given
  TokenLogprobs logprobs_;
};

}  // namespace inferno

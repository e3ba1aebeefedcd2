// OpenAiServer: the HTTP front of `serve` (cpp-httplib), speaking the OpenAI
// API: POST /v1/completions and /v1/chat/completions (JSON, or with
// "stream": true server-sent events of completion chunks ending with
// `data: [DONE]`), GET /v1/models, GET /health and GET /metrics (Prometheus
// text). Requests become sequences of a RequestQueue, which the leader's
// generator loop serves.
//
// Errors are OpenAI error objects {"error": {"message", "type", "param",
// "code"}}: 400 for a malformed or unsupported request or a prompt longer
// than the context, 401 for a missing or wrong API key (--api-key), 404 for
// an unknown model or path, 413 for a body over the size limit, 429 when the
// queue is full, 503 while loading, draining or after the pipeline failed.
// A client that disconnects cancels its request, streamed or not (noticed
// within a second: the handler checks its connection while it waits). A
// request whose line, headers and body do not all arrive within
// `request_deadline` gets 408 and its connection is closed; a connection
// beyond `max_connections` gets 503 (code "too_many_connections") at once,
// unread, and is closed (server/http_server.h). With
// ServerSettings::continuations a request may carry server/continuation.h's
// field: its stream then names the tokens of each chunk, and a request
// carrying tokens continues an answer another leader began.
//
// Thread-safety: Bind and Start once, from one thread; then the Set* methods
// and Stop from any thread. Handlers run on the server's own threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "server/metrics.h"
#include "server/request_queue.h"
#include "text/chat_template/chat_template.h"
#include "text/tokenizer.h"

namespace inferno {

class HttpServer;

struct ServerSettings {
  std::string model_name;              // the id of GET /v1/models, which requests must name
  std::optional<std::string> api_key;  // requires "Authorization: Bearer KEY" on /v1/
  int64_t max_body_bytes = 1 << 20;
  // A request's line, headers and body must arrive within this of its first byte.
  std::chrono::milliseconds request_deadline{10000};
  // Client connections served at once, each on a thread of its own; one
  // more is answered 503 at once and closed (server/http_server.h). Each
  // running or queued request holds one, so it should exceed the slots
  // plus the queue.
  int max_connections = 256;
  // Accept the continuation protocol of server/continuation.h (serve
  // --failover, behind serve_front).
  bool continuations = false;
};

// What turns a request into a prompt, known once the model is loaded.
struct PromptMaker {
  const Tokenizer* tokenizer = nullptr;
  std::optional<int32_t> bos_id;         // starts a completion prompt
  const ChatTemplate* chat = nullptr;    // none: chat requests get 400
  std::optional<std::string> bos_token;  // for the chat template
  std::optional<std::string> eos_token;
  int64_t context_length = 0;  // positions per sequence, prompt included
  // For constrained decoding (response_format, tool_choice "required" or a
  // function; server/json_constraint.h): each token's text, and the tokens
  // that end a sequence.
  std::shared_ptr<const std::vector<std::string>> token_texts;
  std::vector<int32_t> stop_ids;
};

class OpenAiServer {
 public:
  OpenAiServer(ServerSettings settings, RequestQueue& queue, ServerMetrics& metrics);
  ~OpenAiServer();

  // Binds host:port (port 0: a free one) and returns the port. Errors: Io
  // naming the address.
  Result<int> Bind(const std::string& host, int port);
  // Serves on its own thread until Stop.
  void Start();

  // Completion requests are served from now on (before: 503 "loading").
  void SetReady(PromptMaker maker);
  // /health answers 503 with `reason`; completion requests get 503.
  void SetUnhealthy(const std::string& reason);
  // /health answers 503 "draining"; new completion requests get 503.
  void SetDraining();
  // Stops accepting connections and waits for the handlers to finish.
  void Stop();

 private:
  enum class State { kLoading, kReady, kDraining, kUnhealthy };
  struct Handlers;

  ServerSettings settings_;
  RequestQueue& queue_;
  ServerMetrics& metrics_;
  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
  mutable std::mutex mutex_;
  State state_ = State::kLoading;  // guarded by mutex_
  std::string unhealthy_reason_;   // guarded by mutex_
  PromptMaker maker_;              // set once with kReady
};

}  // namespace inferno

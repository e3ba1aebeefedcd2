#include "server/openai_server.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <utility>
#include <variant>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/completion_text.h"
#include "server/continuation.h"
#include "server/http_server.h"
#include "server/json_constraint.h"
#include "server/openai_logprobs.h"
#include "server/openai_request.h"
#include "server/tool_calls.h"

namespace inferno {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// How long a handler waits for tokens before it checks that its client is
// still there (and a streaming one writes a keep-alive comment).
constexpr std::chrono::seconds kKeepAlive{1};

// The status recorded in /metrics for a request whose client left before
// its answer (nginx's "client closed request"); nothing is sent.
constexpr int kClientClosedRequest = 499;

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::optional<std::string> param;
  std::optional<std::string> code;
};

// `json` as text; bytes of generated text that are not UTF-8 (a byte-fallback
// token can make them) become U+FFFD rather than an exception.
std::string Dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json ErrorJson(const ApiError& error) {
  return {{"error",
           {{"message", error.message},
            {"type", error.type},
            {"param", error.param ? Json(*error.param) : Json(nullptr)},
            {"code", error.code ? Json(*error.code) : Json(nullptr)}}}};
}

void SendError(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  res.set_content(Dump(ErrorJson(error)), "application/json");
}

ApiError ServerError(const std::string& message) { return {503, "server_error", message, {}, {}}; }

const char* FinishReasonName(bool stopped_by_text, FinishReason reason) {
  if (stopped_by_text) return "stop";
  switch (reason) {
    case FinishReason::kStopToken:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "stop";
}

// A request being answered: what both the JSON and the streaming answers
// need.
struct Exchange {
  OpenAiRequest request;
  std::string id;  // "cmpl-N" or "chatcmpl-N"
  int64_t created = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  std::shared_ptr<Request> handle;
  std::unique_ptr<CompletionText> text;
  std::unique_ptr<OpenAiLogprobs> logprobs;    // when the request asks for them
  std::unique_ptr<ToolCallParser> tool_calls;  // chat with tools (tool_choice not "none")
  int64_t calls = 0;                           // tool calls answered so far
  // server/continuation.h: the stream names each chunk's tokens; `continued`:
  // another leader began the answer (its role chunk was sent).
  bool token_comments = false;
  bool continued = false;

  // OpenAI's form of the answer's `index`th tool call.
  Json ToolCallJson(const ToolCall& call, int64_t index, bool with_index) const {
    Json json = {{"id", "call_" + id.substr(id.find('-') + 1) + "_" + std::to_string(index)},
                 {"type", "function"},
                 {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
    if (with_index) json["index"] = index;
    return json;
  }
  std::optional<Clock::time_point> last_token;

  bool chat() const { return request.endpoint == Endpoint::kChatCompletions; }

  Json Usage() const {
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens}};
  }

  // A streamed chunk with `delta` text (or for chat `delta_object`), the
  // logprobs of its tokens and the finish reason, if any.
  Json Chunk(const std::string& model, const Json& delta, const Json& finish,
             const Json& logprobs = nullptr) const {
    Json choice = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", finish}};
    if (chat()) {
      choice["delta"] = delta;
    } else {
      choice["text"] = delta;
    }
    return {{"id", id},
            {"object", chat() ? "chat.completion.chunk" : "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", Json::array({choice})}};
  }
};

// What a tool call must look like when tool_choice makes the model call one
// (of `names`, with its `parameters`; several: any of the names with an
// object of arguments), in `format`: the JSON schema of the call and the
// literal text around it.
struct ToolCallShape {
  nlohmann::ordered_json schema;
  std::string prefix, suffix;
};
ToolCallShape ShapeOfToolCall(ToolCallFormat format, const std::vector<std::string>& names,
                              const std::vector<nlohmann::ordered_json>& parameters) {
  using Ordered = nlohmann::ordered_json;
  const Ordered arguments = names.size() == 1 ? parameters[0] : Ordered{{"type", "object"}};
  const std::string key = format == ToolCallFormat::kLlama3Json ? "parameters" : "arguments";
  Ordered call = {{"type", "object"},
                  {"properties", {{"name", {{"enum", names}}}, {key, arguments}}},
                  {"required", {"name", key}}};
  switch (format) {
    case ToolCallFormat::kHermes:
      return {call, "<tool_call>\n", "\n</tool_call>"};
    case ToolCallFormat::kMistral:
      return {{{"type", "array"}, {"items", call}, {"minItems", 1}, {"maxItems", 1}}, "", ""};
    default:
      return {call, "", ""};
  }
}

// The constraint that shapes the answer of chat `request` — its
// response_format, or the call a tool_choice of "required" or a function
// forces, in the template's `tool_format` — if any, or the error to answer.
std::variant<std::shared_ptr<TokenConstraint>, ApiError> ConstraintOf(const OpenAiRequest& request,
                                                                      const PromptMaker& maker,
                                                                      ToolCallFormat tool_format) {
  const bool call_forced =
      request.tool_choice == ToolChoice::kRequired || request.tool_choice == ToolChoice::kFunction;
  if (request.response_schema || call_forced) {
    if (maker.token_texts == nullptr) {
      return ApiError{400,
                      "invalid_request_error",
                      "constrained output (response_format, tool_choice \"required\" or a function) needs "
                      "the server's token texts",
                      request.response_schema ? "response_format" : "tool_choice",
                      {}};
    }
    if (request.response_schema && call_forced) {
      return ApiError{400,
                      "invalid_request_error",
                      "'response_format' and a 'tool_choice' that forces a call cannot both shape the answer",
                      "response_format",
                      {}};
    }
  }
  if (request.response_schema) {
    return std::make_shared<JsonConstraint>(maker.token_texts, maker.stop_ids, *request.response_schema);
  }
  if (call_forced && tool_format != ToolCallFormat::kNone) {
    std::vector<std::string> names = request.tool_names;
    std::vector<nlohmann::ordered_json> parameters = request.tool_parameters;
    if (request.tool_choice == ToolChoice::kFunction) {
      const size_t i = std::find(names.begin(), names.end(), request.tool_choice_name) - names.begin();
      names = {names[i]};
      parameters = {parameters[i]};
    }
    const ToolCallShape shape = ShapeOfToolCall(tool_format, names, parameters);
    Result<JsonSchema> schema = JsonSchema::Compile(shape.schema, "tools: the call's schema");
    if (!schema) return ApiError{400, "invalid_request_error", schema.error().message, "tools", {}};
    return std::make_shared<JsonConstraint>(maker.token_texts, maker.stop_ids, std::move(*schema),
                                            shape.prefix, shape.suffix);
  }
  return std::shared_ptr<TokenConstraint>();
}

}  // namespace

// The route handlers, which see the server's private state.
struct OpenAiServer::Handlers {
  OpenAiServer& server;

  // Waits for the request's next events: new text (after stop strings and
  // UTF-8), and the end. Records the latency metrics.
  struct Step {
    std::vector<int32_t> ids;  // generated since the last step
    std::string text;
    Json logprobs;                // of the new tokens, when the request asks for them
    std::vector<ToolCall> calls;  // completed since the last step
    std::optional<const char*> finish;
    std::optional<std::string> error;
  };
  Step Next(Exchange& exchange, Clock::time_point deadline) {
    RequestEvents events = exchange.handle->Take(deadline);
    Step step;
    step.ids = events.tokens;
    if (!events.tokens.empty()) {
      const Clock::time_point now = Clock::now();
      if (!exchange.last_token) {
        server.metrics_.ObserveTimeToFirstToken(
            std::chrono::duration<double>(now - exchange.handle->submitted()).count());
      } else {
        const double each = std::chrono::duration<double>(now - *exchange.last_token).count() /
                            static_cast<double>(events.tokens.size());
        for (size_t i = 0; i < events.tokens.size(); ++i) server.metrics_.ObserveTimePerToken(each);
      }
      exchange.last_token = now;
      exchange.completion_tokens += static_cast<int64_t>(events.tokens.size());
      server.metrics_.CountTokens(0, static_cast<int64_t>(events.tokens.size()));
      // Tokens sampled after a stop string (before the cancel took effect)
      // are not part of the answer.
      if (exchange.logprobs && !exchange.text->stopped()) {
        step.logprobs = exchange.logprobs->Add(events.previous, events.tokens, events.logprobs);
      }
      step.text = exchange.text->Add(events.previous, events.tokens);
      // A stop string: the sequence need not run on.
      if (exchange.text->stopped()) exchange.handle->Cancel();
    }
    if (events.error) {
      step.error = events.error->ToString();
    } else if (events.finish) {
      step.text += exchange.text->Finish();
      step.finish = FinishReasonName(exchange.text->stopped(), *events.finish);
    }
    if (exchange.tool_calls && !step.error) SplitToolCalls(exchange, step);
    return step;
  }

  // Moves the tool calls out of the step's text (holding back what may
  // still become one). Without parallel_tool_calls the first call ends the
  // answer, as a stop string does.
  static void SplitToolCalls(Exchange& exchange, Step& step) {
    ToolCallParser::Output out = exchange.tool_calls->Add(step.text);
    if (step.finish) {
      ToolCallParser::Output rest = exchange.tool_calls->Finish();
      out.content += rest.content;
      out.calls.insert(out.calls.end(), rest.calls.begin(), rest.calls.end());
    }
    step.text = std::move(out.content);
    step.calls = std::move(out.calls);
    if (!exchange.request.parallel_tool_calls && !step.calls.empty()) {
      step.calls.resize(exchange.calls == 0 ? 1 : 0);
      exchange.handle->Cancel();
    }
    exchange.calls += static_cast<int64_t>(step.calls.size());
    if (step.finish && exchange.calls > 0) step.finish = "tool_calls";
  }

  // The request of `req` as a queued Exchange, or the error to answer.
  std::variant<std::unique_ptr<Exchange>, ApiError> Admit(const httplib::Request& req, Endpoint endpoint) {
    PromptMaker maker;
    {
      std::lock_guard<std::mutex> lock(server.mutex_);
      if (server.state_ == State::kLoading) return ServerError("the model is loading; retry later");
      if (server.state_ == State::kDraining) return ServerError("the server is shutting down");
      if (server.state_ == State::kUnhealthy)
        return ServerError("the pipeline failed: " + server.unhealthy_reason_);
      maker = server.maker_;
    }
    std::string body = req.body;
    std::optional<Continuation> continuation;
    if (server.settings_.continuations) {
      Result<std::optional<Continuation>> taken = TakeContinuation(body);
      if (!taken) return ApiError{400, "invalid_request_error", taken.error().message, kContinueField, {}};
      continuation = *std::move(taken);
    }
    Result<OpenAiRequest> parsed = ParseOpenAiRequest(body, endpoint);
    if (!parsed) return ApiError{400, "invalid_request_error", parsed.error().message, {}, {}};
    auto exchange = std::make_unique<Exchange>();
    exchange->request = std::move(*parsed);
    const OpenAiRequest& request = exchange->request;
    if (request.model != server.settings_.model_name) {
      return ApiError{404, "invalid_request_error",
                      "The model '" + request.model + "' does not exist; this server serves '" +
                          server.settings_.model_name + "'",
                      "model", "model_not_found"};
    }
    std::vector<int32_t> prompt;
    ToolCallFormat tool_format = ToolCallFormat::kNone;
    std::shared_ptr<TokenConstraint> constraint;
    if (exchange->chat()) {
      if (maker.chat == nullptr) {
        return ApiError{400,
                        "invalid_request_error",
                        "this model has no chat template (start serve with --chat-template)",
                        "messages",
                        {}};
      }
      ChatRequest chat;
      chat.messages = request.messages;
      if (request.tools && request.tool_choice != ToolChoice::kNone) {
        tool_format = DetectToolCallFormat(maker.chat->source());
        if (tool_format == ToolCallFormat::kNone) {
          return ApiError{400,
                          "invalid_request_error",
                          "this model's chat template writes no tool calls this server reads (Qwen's "
                          "<tool_call>, Llama 3.1's JSON, Mistral's [TOOL_CALLS])",
                          "tools",
                          {}};
        }
        chat.extra_variables.emplace_back("tools", *request.tools);
      }
      auto shaped = ConstraintOf(request, maker, tool_format);
      if (auto* error = std::get_if<ApiError>(&shaped)) return *error;
      constraint = std::get<std::shared_ptr<TokenConstraint>>(std::move(shaped));
      chat.bos_token = maker.bos_token;
      chat.eos_token = maker.eos_token;
      Result<std::string> text = maker.chat->Render(chat);
      if (!text) return ApiError{400, "invalid_request_error", text.error().message, "messages", {}};
      prompt = maker.tokenizer->Encode(*text);
    } else {
      if (maker.bos_id) prompt.push_back(*maker.bos_id);
      const std::vector<int32_t> ids = maker.tokenizer->Encode(request.prompt);
      prompt.insert(prompt.end(), ids.begin(), ids.end());
    }
    if (prompt.empty()) return ApiError{400, "invalid_request_error", "the prompt is empty", "prompt", {}};
    if (static_cast<int64_t>(prompt.size()) > maker.context_length) {
      return ApiError{400, "invalid_request_error",
                      "the prompt has " + std::to_string(prompt.size()) +
                          " tokens, more than the context of " + std::to_string(maker.context_length) +
                          " positions",
                      exchange->chat() ? "messages" : "prompt", "context_length_exceeded"};
    }
    exchange->prompt_tokens = static_cast<int64_t>(prompt.size());
    SequenceSpec spec;
    spec.prompt = std::move(prompt);
    // Completions default to OpenAI's 16 tokens; chat runs to the end of the
    // context (or a stop token).
    spec.max_new_tokens = request.max_tokens.value_or(exchange->chat() ? maker.context_length : 16);
    const int32_t last_prompt_token = spec.prompt.back();
    if (continuation && !continuation->tokens.empty()) {
      if (constraint || tool_format != ToolCallFormat::kNone || request.logprobs >= 0 || !request.stream) {
        return ApiError{400,
                        "invalid_request_error",
                        "only a streamed answer without tools, response_format or logprobs can be continued",
                        kContinueField,
                        {}};
      }
      const std::vector<int32_t>& sent = continuation->tokens;
      spec.prompt.insert(spec.prompt.end(), sent.begin(), sent.end());
      spec.max_new_tokens -= static_cast<int64_t>(sent.size());
      if (static_cast<int64_t>(spec.prompt.size()) > maker.context_length) {
        return ApiError{400, "invalid_request_error", "the continued answer fills the context",
                        kContinueField, "context_length_exceeded"};
      }
    }
    spec.sampling.temperature = request.temperature;
    spec.sampling.top_p = request.top_p;
    spec.sampling.seed = request.seed ? static_cast<uint64_t>(*request.seed) : std::random_device{}();
    spec.sampling.presence_penalty = request.presence_penalty;
    spec.sampling.frequency_penalty = request.frequency_penalty;
    spec.sampling.repetition_penalty = request.repetition_penalty;
    spec.sampling.logprobs = request.logprobs;
    spec.constraint = std::move(constraint);
    Submission submission = server.queue_.Submit(std::move(spec));
    if (submission.outcome == Submission::kQueueFull) {
      return ApiError{429, "rate_limit_error", "the request queue is full; retry later", {}, "queue_full"};
    }
    if (submission.outcome == Submission::kUnavailable)
      return ServerError("the server is not accepting requests");
    server.metrics_.CountTokens(exchange->prompt_tokens, 0);
    exchange->handle = std::move(submission.request);
    exchange->id =
        std::string(exchange->chat() ? "chatcmpl-" : "cmpl-") + std::to_string(exchange->handle->id());
    exchange->created = static_cast<int64_t>(std::time(nullptr));
    exchange->text = std::make_unique<CompletionText>(*maker.tokenizer, request.stop);
    if (continuation) {
      exchange->token_comments = true;
      if (continuation->id) exchange->id = *continuation->id;
      if (continuation->created) exchange->created = *continuation->created;
      if (!continuation->tokens.empty()) {
        // The text of the tokens sent already went out from the leader that
        // began the answer: only its state (held-back bytes) matters here.
        exchange->continued = true;
        exchange->completion_tokens = static_cast<int64_t>(continuation->tokens.size());
        (void)exchange->text->Add(last_prompt_token, continuation->tokens);
      }
    }
    if (tool_format != ToolCallFormat::kNone)
      exchange->tool_calls = std::make_unique<ToolCallParser>(tool_format);
    if (request.logprobs >= 0) {
      exchange->logprobs = std::make_unique<OpenAiLogprobs>(*maker.tokenizer, exchange->chat());
    }
    return exchange;
  }

  void Complete(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
    const std::string path = req.path;
    auto admitted = Admit(req, endpoint);
    if (auto* error = std::get_if<ApiError>(&admitted)) {
      SendError(res, *error);
      server.metrics_.CountRequest(path, res.status);
      return;
    }
    std::shared_ptr<Exchange> exchange = std::move(std::get<std::unique_ptr<Exchange>>(admitted));
    if (exchange->request.stream) {
      Stream(exchange, res);
      server.metrics_.CountRequest(path, 200);
      return;
    }
    std::string text;
    Json calls = Json::array();
    const char* finish = nullptr;
    while (finish == nullptr) {
      if (HttpServer::ClientGone()) {
        exchange->handle->Cancel();
        server.metrics_.CountRequest(path, kClientClosedRequest);
        return;
      }
      Step step = Next(*exchange, Clock::now() + kKeepAlive);
      text += step.text;
      for (const ToolCall& call : step.calls) {
        calls.push_back(exchange->ToolCallJson(call, static_cast<int64_t>(calls.size()), false));
      }
      if (step.error) {
        SendError(res, ServerError("the pipeline failed: " + *step.error));
        server.metrics_.CountRequest(path, res.status);
        return;
      }
      if (step.finish) finish = *step.finish;
    }
    Json choice = {{"index", 0},
                   {"logprobs", exchange->logprobs ? exchange->logprobs->total() : Json(nullptr)},
                   {"finish_reason", finish}};
    if (exchange->chat()) {
      choice["message"] = {{"role", "assistant"}, {"content", text}};
      if (!calls.empty()) {
        if (text.empty()) choice["message"]["content"] = nullptr;
        choice["message"]["tool_calls"] = std::move(calls);
      }
    } else {
      choice["text"] = text;
    }
    const Json body = {{"id", exchange->id},
                       {"object", exchange->chat() ? "chat.completion" : "text_completion"},
                       {"created", exchange->created},
                       {"model", server.settings_.model_name},
                       {"choices", Json::array({choice})},
                       {"usage", exchange->Usage()}};
    res.set_content(Dump(body), "application/json");
    server.metrics_.CountRequest(path, 200);
  }

  // Server-sent events: a chunk per group of tokens, the finish, usage if
  // asked, [DONE]. A client that left (seen while waiting, or by a failed
  // write) cancels the request.
  void Stream(std::shared_ptr<Exchange> exchange, httplib::Response& res) {
    const std::string model = server.settings_.model_name;
    auto started = std::make_shared<bool>(false);
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, exchange, model, started](size_t, httplib::DataSink& sink) {
          const auto send = [&](const Json& json) {
            const std::string event = "data: " + Dump(json) + "\n\n";
            return sink.write(event.data(), event.size());
          };
          if (!*started && exchange->chat() && !exchange->continued) {
            *started = true;
            if (!send(exchange->Chunk(model, {{"role", "assistant"}, {"content", ""}}, nullptr)))
              return false;
          }
          if (HttpServer::ClientGone()) return false;
          Step step = Next(*exchange, Clock::now() + kKeepAlive);
          if (step.error) {
            send(ErrorJson(ServerError("the pipeline failed: " + *step.error)));
            sink.done();
            return true;
          }
          // A chunk per group of tokens, even one that prints nothing yet.
          if (!step.ids.empty() || !step.text.empty()) {
            if (exchange->token_comments) {
              const std::string comment = TokenComment(step.ids);
              if (!sink.write(comment.data(), comment.size())) return false;
            }
            const Json delta = exchange->chat() ? Json{{"content", step.text}} : Json(step.text);
            if (!send(exchange->Chunk(model, delta, nullptr, step.logprobs))) return false;
          }
          // A tool call goes whole in one delta (OpenAI's clients join the
          // arguments of every delta of an index).
          for (size_t i = 0; i < step.calls.size(); ++i) {
            const int64_t index = exchange->calls - static_cast<int64_t>(step.calls.size() - i);
            const Json delta = {
                {"tool_calls", Json::array({exchange->ToolCallJson(step.calls[i], index, true)})}};
            if (!send(exchange->Chunk(model, delta, nullptr))) return false;
          }
          if (step.ids.empty() && step.text.empty() && step.calls.empty() && !step.finish) {
            static constexpr char kComment[] = ": keep-alive\n\n";
            if (!sink.write(kComment, sizeof kComment - 1)) return false;
          }
          if (step.finish) {
            const Json delta = exchange->chat() ? Json::object() : Json("");
            if (!send(exchange->Chunk(model, delta, *step.finish))) return false;
            if (exchange->request.include_usage) {
              Json usage = exchange->Chunk(model, delta, nullptr);
              usage["choices"] = Json::array();
              usage["usage"] = exchange->Usage();
              if (!send(usage)) return false;
            }
            static constexpr char kDone[] = "data: [DONE]\n\n";
            if (!sink.write(kDone, sizeof kDone - 1)) return false;
            sink.done();
          }
          return true;
        },
        // Whichever way the response ends, the sequence need not run on.
        [exchange](bool) { exchange->handle->Cancel(); });
  }
};

OpenAiServer::OpenAiServer(ServerSettings settings, RequestQueue& queue, ServerMetrics& metrics)
    : settings_(std::move(settings)),
      queue_(queue),
      metrics_(metrics),
      http_(std::make_unique<HttpServer>(settings_.request_deadline, settings_.max_connections)) {
  HttpServer& http = *http_;
  ApiError refusal = ServerError("the server has " + std::to_string(settings_.max_connections) +
                                 " connections open, its limit; retry later");
  refusal.code = "too_many_connections";
  http.set_refusal(Dump(ErrorJson(refusal)), "application/json");
  http.set_payload_max_length(static_cast<size_t>(settings_.max_body_bytes));
  http.set_read_timeout(std::chrono::seconds(10));
  http.set_write_timeout(std::chrono::seconds(10));
  http.set_keep_alive_timeout(2);
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!settings_.api_key || req.path.rfind("/v1/", 0) != 0)
      return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + *settings_.api_key) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    SendError(res, {401,
                    "invalid_request_error",
                    "a valid API key is required: Authorization: Bearer KEY",
                    {},
                    "invalid_api_key"});
    metrics_.CountRequest(req.path, 401);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib answers itself (404, 413, 400 for a malformed request
  // line, or one that came too slowly: 408) get an error object too.
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (HttpServer::RequestLate()) {
          res.status = 408;
          res.set_header("Connection", "close");
        }
        ApiError error{res.status, "invalid_request_error", "", {}, {}};
        if (res.status == 408) {
          error.message = "the request did not arrive within " +
                          std::to_string(settings_.request_deadline.count()) + " ms";
          error.code = "request_timeout";
        } else if (res.status == 404) {
          error.message = "no route " + req.method + " " + req.path;
        } else if (res.status == 413) {
          error.message =
              "the request body is larger than " + std::to_string(settings_.max_body_bytes) + " bytes";
        } else {
          error.message = "HTTP " + std::to_string(res.status);
        }
        SendError(res, error);
        metrics_.CountRequest(req.path, res.status);
        return httplib::Server::HandlerResponse::Handled;
      }));
  auto handlers = std::make_shared<Handlers>(Handlers{*this});
  http.Post("/v1/completions", [handlers](const httplib::Request& req, httplib::Response& res) {
    handlers->Complete(req, res, Endpoint::kCompletions);
  });
  http.Post("/v1/chat/completions", [handlers](const httplib::Request& req, httplib::Response& res) {
    handlers->Complete(req, res, Endpoint::kChatCompletions);
  });
  http.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    const Json model = {
        {"id", settings_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "inferno"}};
    res.set_content(Dump(Json{{"object", "list"}, {"data", Json::array({model})}}), "application/json");
    metrics_.CountRequest(req.path, 200);
  });
  http.Get("/health", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mutex_);
    Json body;
    switch (state_) {
      case State::kReady:
        body = {{"status", "ok"}};
        break;
      case State::kLoading:
        body = {{"status", "loading"}};
        break;
      case State::kDraining:
        body = {{"status", "draining"}};
        break;
      case State::kUnhealthy:
        body = {{"status", "unhealthy"}, {"error", unhealthy_reason_}};
        break;
    }
    res.status = state_ == State::kReady ? 200 : 503;
    res.set_content(Dump(body), "application/json");
    metrics_.CountRequest(req.path, res.status);
  });
  http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    metrics_.CountRequest(req.path, 200);
    res.set_content(metrics_.Render(queue_.queued(), queue_.running(), http_->refused_connections()),
                    "text/plain; version=0.0.4");
  });
}

OpenAiServer::~OpenAiServer() { Stop(); }

Result<int> OpenAiServer::Bind(const std::string& host, int port) {
  const int bound = port == 0 ? http_->bind_to_any_port(host) : (http_->bind_to_port(host, port) ? port : -1);
  if (bound < 0) return Error::Io("--listen: cannot listen on " + host + ":" + std::to_string(port));
  return bound;
}

void OpenAiServer::Start() {
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // Stop must find it running, or it would not stop it.
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while (!http_->is_running() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void OpenAiServer::SetReady(PromptMaker maker) {
  std::lock_guard<std::mutex> lock(mutex_);
  maker_ = maker;
  state_ = State::kReady;
}

void OpenAiServer::SetUnhealthy(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = State::kUnhealthy;
  unhealthy_reason_ = reason;
}

void OpenAiServer::SetDraining() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ != State::kUnhealthy) state_ = State::kDraining;
}

void OpenAiServer::Stop() {
  if (!thread_.joinable()) return;
  http_->stop();
  thread_.join();
}

}  // namespace inferno

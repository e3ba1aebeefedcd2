#include "server/failover_front.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/continuation.h"
#include "server/http_server.h"

namespace inferno {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// How long the front end waits between two tries to reach a new leader.
constexpr std::chrono::milliseconds kRetryPause{100};
// How long a connection to the leader may take to open (one host: at once).
constexpr std::chrono::seconds kConnectTimeout{2};
// How long a candidate may take to answer /health when the front end looks
// for the new leader (a stopped process accepts the connection but never
// answers).
constexpr std::chrono::milliseconds kProbeTimeout{500};
// How long a whole answer may take (the leader sends nothing before it).
constexpr std::chrono::minutes kWholeAnswerLimit{10};
// While a whole answer is awaited, how often the leader's /health is asked
// (a stopped leader neither answers nor closes the connection), and how many
// unanswered asks in a row make it lost.
constexpr std::chrono::seconds kWholeWatchPause{1};
constexpr int kWholeWatchMisses = 2;

// The OpenAI error object of a request the front end cannot continue.
std::string LostJson(const std::string& message) {
  const Json error = {
      {"error",
       {{"message", message}, {"type", "server_error"}, {"param", nullptr}, {"code", "leader_lost"}}}};
  return error.dump();
}

std::string ErrorEvent(const std::string& message) { return "data: " + LostJson(message) + "\n\n"; }

}  // namespace

// Passes one client's request on, and again after a lost leader.
struct FailoverFront::Forwarder {
  const FrontSettings& settings;
  std::atomic<size_t>& leader;  // the index of the candidate last found leading
  const httplib::Request& request;
  size_t tried = 0;  // the candidate of the last try

  // A client of the leader, as far as the front end knows (see FindLeader).
  httplib::Client Client() {
    tried = leader.load();
    return Client(tried);
  }

  httplib::Client Client(size_t index) const {
    const HostPort& backend = settings.backends[index];
    httplib::Client client(backend.host, backend.port);
    client.set_connection_timeout(kConnectTimeout);
    client.set_read_timeout(std::chrono::duration_cast<std::chrono::seconds>(settings.silence));
    client.set_write_timeout(std::chrono::duration_cast<std::chrono::seconds>(settings.silence));
    client.set_keep_alive(false);
    return client;
  }

  httplib::Request Outgoing(std::string body) const {
    httplib::Request out;
    out.method = request.method;
    out.path = request.path;
    out.body = std::move(body);
    out.set_header("Content-Type", "application/json");
    if (request.has_header("Authorization"))
      out.set_header("Authorization", request.get_header_value("Authorization"));
    return out;
  }

  // After a failed try at candidate `tried`: asks every candidate's /health,
  // the one after it first (a new leader listens at its own address) and
  // it last, and makes the first that answers 200 (ready) the leader. A
  // stopped one is passed over after kProbeTimeout. Returns whether one
  // answered (none: the leader stays).
  bool FindLeader() {
    const size_t count = settings.backends.size();
    for (size_t step = 1; step <= count; ++step) {
      const size_t index = (tried + step) % count;
      httplib::Client client = Client(index);
      client.set_connection_timeout(kProbeTimeout);
      client.set_read_timeout(kProbeTimeout);
      const httplib::Result health = client.Get("/health");
      if (health && health->status == 200) {
        size_t expected = tried;  // unless another request found one first
        leader.compare_exchange_strong(expected, index);
        return true;
      }
    }
    return false;
  }

  // After a loss at `lost`: FindLeader every kRetryPause until a candidate
  // answers (so that no try waits on a stopped leader). False once
  // `failover_timeout` has passed since `lost` or the client has left.
  bool AwaitLeader(Clock::time_point lost) {
    while (!FindLeader()) {
      if (Clock::now() - lost >= settings.failover_timeout || HttpServer::ClientGone()) return false;
      std::this_thread::sleep_for(kRetryPause);
    }
    return true;
  }

  // Whether candidate `index` answers /health at all (503 "loading" too)
  // within kProbeTimeout.
  bool Answers(size_t index) const {
    httplib::Client client = Client(index);
    client.set_connection_timeout(kProbeTimeout);
    client.set_read_timeout(kProbeTimeout);
    return static_cast<bool>(client.Get("/health"));
  }

  // Sends `out` with `client`, asking the leader's /health every
  // kWholeWatchPause meanwhile on a thread of its own: after
  // kWholeWatchMisses unanswered asks the request is cut (as a broken
  // connection), so a stopped leader is not waited for kWholeAnswerLimit.
  httplib::Result SendWatched(httplib::Client& client, const httplib::Request& out) {
    std::mutex mutex;
    std::condition_variable wake;
    bool answered = false;
    std::thread watch([&] {
      int missed = 0;
      std::unique_lock<std::mutex> lock(mutex);
      while (!wake.wait_for(lock, kWholeWatchPause, [&] { return answered; })) {
        lock.unlock();
        missed = Answers(tried) ? 0 : missed + 1;
        lock.lock();
        if (missed == kWholeWatchMisses && !answered) {
          client.stop();
          return;
        }
      }
    });
    httplib::Result result = client.send(out);
    {
      std::lock_guard<std::mutex> lock(mutex);
      answered = true;
    }
    wake.notify_all();
    watch.join();
    return result;
  }

  // A whole answer: sent again after a lost leader until a new one answers
  // (a 503 then means it is still loading).
  void Whole(httplib::Response& res) {
    std::optional<Clock::time_point> lost;
    while (true) {
      httplib::Client client = Client();
      client.set_read_timeout(kWholeAnswerLimit);
      httplib::Result result = SendWatched(client, Outgoing(request.body));
      if (result && (result->status != 503 || !lost)) {
        res.status = result->status;
        res.set_content(result->body, result->get_header_value("Content-Type").c_str());
        return;
      }
      if (!lost) lost = Clock::now();
      if (result) std::this_thread::sleep_for(kRetryPause);  // a new leader's 503: still loading
      if (Clock::now() - *lost >= settings.failover_timeout || !AwaitLeader(*lost)) {
        res.status = 503;
        res.set_content(LostJson(LostMessage()), "application/json");
        return;
      }
    }
  }

  std::string LostMessage() const {
    std::string where;
    for (const HostPort& backend : settings.backends)
      where += (where.empty() ? "" : ", ") + backend.host + ":" + std::to_string(backend.port);
    return "serve_front: the leader (of " + where +
           ") was lost and no new leader continued the request within " +
           std::to_string(settings.failover_timeout.count()) + " ms";
  }

  // A streamed answer, continued after a lost leader; writes to `sink`.
  // Returns false when the client left.
  bool Stream(httplib::DataSink& sink) {
    Continuation sent;             // the tokens whose chunks the client has
    std::vector<int32_t> pending;  // named by the last comment, their chunk not yet passed on
    bool finished = false;         // a chunk with a finish_reason was passed on
    std::optional<Clock::time_point> lost;
    while (true) {
      Result<std::string> body = WithContinuation(request.body, sent);
      if (!body) {
        const std::string event = ErrorEvent("serve_front: " + body.error().message);
        return sink.write(event.data(), event.size());
      }
      httplib::Request out = Outgoing(*std::move(body));
      std::optional<int> status;
      std::string buffer, error_body;
      bool done = false, client_gone = false, progressed = false;
      out.response_handler = [&](const httplib::Response& response) {
        status = response.status;
        return true;
      };
      // Passes on each whole block ("...\n\n") as it arrives.
      out.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
        if (status != 200) {
          error_body.append(data, size);
          return true;
        }
        buffer.append(data, size);
        for (size_t end; !done && (end = buffer.find("\n\n")) != std::string::npos;) {
          const std::string block = buffer.substr(0, end + 2);
          buffer.erase(0, end + 2);
          if (std::optional<std::vector<int32_t>> tokens = ParseTokenComment(block)) {
            pending = std::move(*tokens);
            continue;
          }
          if (!sink.write(block.data(), block.size())) {
            client_gone = true;
            return false;
          }
          progressed = true;
          if (block.rfind("data: [DONE]", 0) == 0) {
            done = true;
          } else if (block.rfind("data: ", 0) == 0) {
            const Json chunk = Json::parse(std::string_view(block).substr(6), nullptr, false);
            if (chunk.is_object() && chunk.contains("error")) done = true;  // the leader's own end
            if (chunk.is_object() && !sent.id && chunk.contains("id") && chunk.at("id").is_string()) {
              sent.id = chunk.at("id").get<std::string>();
              if (chunk.contains("created") && chunk.at("created").is_number_integer())
                sent.created = chunk.at("created").get<int64_t>();
            }
            if (chunk.is_object() && chunk.contains("choices") && chunk.at("choices").is_array()) {
              for (const Json& choice : chunk.at("choices")) {
                if (choice.is_object() && choice.contains("finish_reason") &&
                    !choice.at("finish_reason").is_null())
                  finished = true;
              }
            }
            sent.tokens.insert(sent.tokens.end(), pending.begin(), pending.end());
            pending.clear();
          }
        }
        return !done;
      };
      httplib::Client client = Client();
      (void)client.send(out);
      if (client_gone) return false;
      if (done) return true;
      if (status && *status != 200 && (*status != 503 || !lost)) {
        // The leader refused the request: its error as the stream's.
        const Json error = Json::parse(error_body, nullptr, false);
        const std::string event =
            "data: " + (error.is_object() ? error.dump() : Json{{"error", error_body}}.dump()) + "\n\n";
        return sink.write(event.data(), event.size());
      }
      if (finished) {
        // Lost after the finish: only the end of the stream is missing.
        static constexpr char kDone[] = "data: [DONE]\n\n";
        return sink.write(kDone, sizeof kDone - 1);
      }
      pending.clear();
      if (progressed) lost.reset();  // a leader took it since: this is a new loss
      if (!lost) lost = Clock::now();
      if (status == 503) std::this_thread::sleep_for(kRetryPause);  // a new leader still loading
      if (Clock::now() - *lost >= settings.failover_timeout || !AwaitLeader(*lost)) {
        if (HttpServer::ClientGone()) return false;
        const std::string event = ErrorEvent(LostMessage());
        return sink.write(event.data(), event.size());
      }
    }
  }
};

FailoverFront::FailoverFront(FrontSettings settings)
    : settings_(std::move(settings)),
      http_(std::make_unique<HttpServer>(settings_.request_deadline, settings_.max_connections)) {
  HttpServer& http = *http_;
  http.set_payload_max_length(static_cast<size_t>(settings_.max_body_bytes));
  http.set_read_timeout(std::chrono::seconds(10));
  http.set_write_timeout(std::chrono::seconds(10));
  const auto post = [this](const httplib::Request& req, httplib::Response& res) {
    const Json body = Json::parse(req.body, nullptr, false);
    const bool stream = body.is_object() && body.value("stream", false) == true;
    if (!stream) {
      Forwarder{settings_, leader_, req}.Whole(res);
      return;
    }
    res.set_chunked_content_provider("text/event-stream", [this, &req](size_t, httplib::DataSink& sink) {
      const bool stayed = Forwarder{settings_, leader_, req}.Stream(sink);
      if (stayed) sink.done();
      return stayed;
    });
  };
  http.Post("/v1/completions", post);
  http.Post("/v1/chat/completions", post);
  http.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
    httplib::Headers headers;
    if (req.has_header("Authorization"))
      headers.emplace("Authorization", req.get_header_value("Authorization"));
    Forwarder forwarder{settings_, leader_, req};
    httplib::Result result = forwarder.Client().Get(req.path, headers);
    if (!result) {  // the leader was lost: asked once more at the one found next
      forwarder.FindLeader();
      result = forwarder.Client().Get(req.path, headers);
    }
    if (!result) {
      res.status = 503;
      res.set_content(Json{{"status", "no leader"}}.dump(), "application/json");
      return;
    }
    res.status = result->status;
    res.set_content(result->body, result->get_header_value("Content-Type").c_str());
  });
}

FailoverFront::~FailoverFront() { Stop(); }

Result<int> FailoverFront::Bind(const std::string& host, int port) {
  const int bound = port == 0 ? http_->bind_to_any_port(host) : (http_->bind_to_port(host, port) ? port : -1);
  if (bound < 0) return Error::Io("--listen: cannot listen on " + host + ":" + std::to_string(port));
  return bound;
}

void FailoverFront::Start() {
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while (!http_->is_running() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void FailoverFront::Stop() {
  if (!thread_.joinable()) return;
  http_->stop();
  thread_.join();
}

}  // namespace inferno

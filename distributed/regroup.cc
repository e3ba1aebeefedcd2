#include "distributed/regroup.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "distributed/zmq/rendezvous_channel.h"

namespace inferno {
namespace {

using Json = nlohmann::json;

// How much longer than the leader's window a survivor waits for its answer.
constexpr std::chrono::milliseconds kAnswerSlack{2000};

// How often a standby rank calls the leader: each call is a fresh
// connection that lives this long.
constexpr std::chrono::milliseconds kStandbyCall{1000};
// How long a held standby waits for the leader's decision (which comes
// within the leader's window; a longer silence means the leader is gone).
constexpr std::chrono::milliseconds kHeldWait{30000};
// How many calls in a row the leader's address may refuse before a standby
// gives up (see AwaitPlace).
constexpr int kRefusedCallsToGiveUp = 5;
// How often a standby rank asks `stopped()` while it waits.
constexpr std::chrono::milliseconds kStandbyStopCheck{250};
// The answer a JoinDesk gives a rank's regroup request (its coordinator is
// not listening yet), and how long the rank waits before it asks again.
constexpr char kRetryKey[] = "retry";
constexpr std::chrono::milliseconds kRetryPause{50};
// How often a JoinDesk asks whether it is to close.
constexpr std::chrono::milliseconds kDeskStopCheck{100};

// The leader's view of the standby ranks that called during one regroup.
struct StandbyCalls {
  std::map<int, std::string> held;       // standby -> the connection last told "hold"
  std::map<int, std::string> confirmed;  // standby -> the connection it confirmed on
  std::vector<int> order;                // the confirmed standbys, first confirmed first
};

// The coordinator's side of a regroup: collects the survivors and the
// standbys it needs, then numbers and answers them (see the header).
Result<Regrouped> Decide(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window,
                         int standbys, const std::vector<int>& lost_ranks, int coordinator, int job_size,
                         bool grow) {
  Result<std::unique_ptr<RendezvousServer>> server =
      RendezvousServer::Listen(ended.master_addr, ended.master_port, ended.job_secret);
  if (!server) return std::move(server).error().Prefixed("regroup: ");
  Deadline deadline = Clock::now() + window;
  std::map<int, std::string> arrived;  // old rank -> client
  StandbyCalls calls;
  bool survivors_in = false;
  // The places of the next generation: the ended one's, and when growing
  // back, the job's own size.
  const int places = grow ? job_size : ended.world_size;
  const auto lost = [&] { return places - 1 - static_cast<int>(arrived.size()); };
  // Once all of the other ranks but those lost (at least one; none when
  // growing back) are in, the standbys that have not called yet get
  // kStandbyWait from then.
  const int expected =
      ended.world_size - 1 - (grow ? 0 : std::max<int>(1, static_cast<int>(lost_ranks.size())));
  const auto note_arrival = [&] {
    if (survivors_in || static_cast<int>(arrived.size()) < expected) return;
    survivors_in = true;
    if (standbys > 0) deadline = std::min(deadline, Clock::now() + kStandbyWait);
  };
  note_arrival();
  const auto done = [&] {
    return survivors_in && static_cast<int>(calls.confirmed.size()) >= std::min(lost(), standbys);
  };
  while (!done()) {
    Result<RendezvousServer::Request> request = (*server)->Receive(deadline);
    if (!request) {
      if (request.error().kind == ErrorKind::kTimeout) break;
      return std::move(request).error().Prefixed("regroup: ");
    }
    const Json json = Json::parse(request->body, nullptr, false);
    if (json.is_object() && json.contains("standby") && json.at("standby").is_number_integer()) {
      const int standby = json.at("standby").get<int>();
      if (calls.confirmed.count(standby) > 0) continue;  // an earlier call of one already counted
      const auto held = calls.held.find(standby);
      if (json.value("holding", false) && held != calls.held.end() && held->second == request->client) {
        calls.confirmed.emplace(standby, request->client);
        calls.order.push_back(standby);
      } else if (!json.contains("holding")) {
        calls.held[standby] = request->client;
        (void)(*server)->Reply(request->client, Json{{"hold", true}}.dump());
      }
      continue;
    }
    const bool well_formed = json.is_object() && json.contains("generation") && json.contains("rank") &&
                             json.at("generation").is_number_integer() && json.at("rank").is_number_integer();
    const int asked = well_formed ? json.at("generation").get<int>() : -1;
    const int rank = well_formed ? json.at("rank").get<int>() : -1;
    std::string refusal;
    if (!well_formed) {
      refusal = "a malformed regroup request";
    } else if (asked != generation) {
      refusal = "rank " + std::to_string(rank) + " asked to join generation " + std::to_string(asked) +
                ", the leader forms generation " + std::to_string(generation);
    } else if (rank <= coordinator || rank >= ended.world_size || arrived.count(rank) > 0) {
      refusal = "rank " + std::to_string(rank) + " arrived twice or is out of range";
    } else if (std::find(lost_ranks.begin(), lost_ranks.end(), rank) != lost_ranks.end()) {
      refusal = "rank " + std::to_string(rank) + " was found lost: it is fenced out of generation " +
                std::to_string(generation);
    }
    if (!refusal.empty()) {
      (void)(*server)->Reply(request->client, Json{{"error", refusal}}.dump());
      continue;
    }
    arrived.emplace(rank, request->client);
    note_arrival();
  }
  // Each lost place, lowest first, goes to the next standby that confirmed.
  Regrouped regrouped;
  regrouped.config = ended;
  regrouped.generation = generation;
  std::vector<std::optional<std::string>> clients;  // by new rank; none: the coordinator
  size_t next_standby = 0;
  for (int place = 0; place < places; ++place) {
    if (place == coordinator) {
      regrouped.config.rank = static_cast<int>(clients.size());
      clients.emplace_back();
    } else if (const auto survivor = arrived.find(place); survivor != arrived.end()) {
      clients.emplace_back(survivor->second);
    } else if (next_standby < calls.order.size()) {
      clients.emplace_back(calls.confirmed[calls.order[next_standby++]]);
    } else {
      continue;
    }
    regrouped.old_ranks.push_back(place);
  }
  regrouped.config.world_size = static_cast<int>(regrouped.old_ranks.size());
  regrouped.standbys_taken = static_cast<int>(next_standby);
  regrouped.job_size = job_size;
  for (size_t index = 0; index < clients.size(); ++index) {
    if (!clients[index]) continue;
    Json answer{{"rank", index},
                {"world_size", regrouped.config.world_size},
                {"old_ranks", regrouped.old_ranks},
                {"generation", generation},
                {"standbys_taken", regrouped.standbys_taken},
                {"job_size", job_size}};
    // A member gone since it asked fails the new rendezvous, which names it.
    (void)(*server)->Reply(*clients[index], answer.dump());
  }
  // The standbys not needed (or not confirmed in time) wait for the next regroup.
  for (size_t index = next_standby; index < calls.order.size(); ++index) {
    (void)(*server)->Reply(calls.confirmed[calls.order[index]], Json{{"wait", true}}.dump());
  }
  for (const auto& [standby, client] : calls.held) {
    if (calls.confirmed.count(standby) == 0) (void)(*server)->Reply(client, Json{{"wait", true}}.dump());
  }
  return regrouped;
}

// Reads the leader's answer of a place: this member's new rank, the new
// world size and the old ranks of the places (see Regrouped).
Result<Regrouped> ReadPlace(const RendezvousConfig& job, const Json& json) {
  if (!json.is_object() || !json.contains("rank") || !json.contains("world_size") ||
      !json.contains("old_ranks") || !json.contains("generation") || !json.at("rank").is_number_integer() ||
      !json.at("world_size").is_number_integer() || !json.at("old_ranks").is_array() ||
      !json.at("generation").is_number_integer()) {
    return Error::Transport("regroup: a malformed answer from the leader at " + job.master_addr + ":" +
                            std::to_string(job.master_port));
  }
  Regrouped regrouped;
  regrouped.config = job;
  regrouped.config.rank = json.at("rank").get<int>();
  regrouped.config.world_size = json.at("world_size").get<int>();
  regrouped.generation = json.at("generation").get<int>();
  regrouped.standbys_taken = json.value("standbys_taken", 0);
  regrouped.job_size = json.value("job_size", regrouped.config.world_size);
  for (const Json& rank : json.at("old_ranks")) {
    if (!rank.is_number_integer()) return Error::Transport("regroup: a malformed answer from the leader");
    regrouped.old_ranks.push_back(rank.get<int>());
  }
  if (regrouped.config.rank < 0 || regrouped.config.rank >= regrouped.config.world_size ||
      static_cast<int>(regrouped.old_ranks.size()) != regrouped.config.world_size) {
    return Error::Transport("regroup: an inconsistent answer from the leader");
  }
  return regrouped;
}

// The leader's refusal in `json`, as an error, if it is one.
std::optional<Error> Refusal(const Json& json, const std::string& who) {
  if (!json.is_object() || !json.contains("error") || !json.at("error").is_string()) return std::nullopt;
  return Error::InvalidArgument("regroup: the leader refused " + who + ": " +
                                json.at("error").get<std::string>());
}

// A survivor's (or a grown-back member's) request for its place. A desk
// (JoinDesk) still listening at the address answers "retry": the request
// is sent again on a fresh connection until the coordinator answers.
Result<Regrouped> Ask(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window) {
  const Deadline until = Clock::now() + window + kAnswerSlack;
  const std::string request = Json{{"generation", generation}, {"rank", ended.rank}}.dump();
  while (true) {
    Result<std::unique_ptr<RendezvousClient>> client =
        RendezvousClient::Connect(ended.master_addr, ended.master_port, ended.job_secret);
    if (!client) return std::move(client).error().Prefixed("regroup: ");
    Status sent = (*client)->Send(request);
    if (!sent) return std::move(sent).error().Prefixed("regroup: ");
    Result<std::string> reply = (*client)->Receive(until);
    if (!reply) {
      return std::move(reply).error().Prefixed("regroup: the leader at " + ended.master_addr + ":" +
                                               std::to_string(ended.master_port) + " did not answer: ");
    }
    const Json json = Json::parse(*reply, nullptr, false);
    if (json.is_object() && json.value(kRetryKey, false)) {
      std::this_thread::sleep_for(kRetryPause);
      continue;
    }
    if (std::optional<Error> refused = Refusal(json, "rank " + std::to_string(ended.rank))) return *refused;
    Result<Regrouped> regrouped = ReadPlace(ended, json);
    if (regrouped &&
        (regrouped->generation != generation || regrouped->old_ranks[regrouped->config.rank] != ended.rank)) {
      return Error::Transport("regroup: an inconsistent answer from the leader");
    }
    return regrouped;
  }
}

}  // namespace

Result<Regrouped> Regroup(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window,
                          int standbys, const std::vector<int>& lost_ranks, int job_size) {
  int coordinator = 0;
  while (std::find(lost_ranks.begin(), lost_ranks.end(), coordinator) != lost_ranks.end()) ++coordinator;
  if (coordinator == ended.rank) {
    return Decide(ended, generation, window, standbys, lost_ranks, coordinator,
                  job_size > 0 ? job_size : ended.world_size, /*grow=*/false);
  }
  if (std::find(lost_ranks.begin(), lost_ranks.end(), ended.rank) != lost_ranks.end()) {
    return Error::InvalidArgument("regroup: rank " + std::to_string(ended.rank) +
                                  " is among the lost ranks it was given; a fenced rank does not regroup");
  }
  return Ask(ended, generation, window);
}

Result<Regrouped> GrowBack(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window,
                           int job_size) {
  if (ended.rank != 0) return Ask(ended, generation, window);
  return Decide(ended, generation, window, std::max(0, job_size - ended.world_size), {}, /*coordinator=*/0,
                std::max(job_size, ended.world_size), /*grow=*/true);
}

Result<std::optional<Regrouped>> AwaitPlace(const RendezvousConfig& job,
                                            const std::function<bool()>& stopped) {
  const std::string who = "standby rank " + std::to_string(job.standby.value_or(-1));
  const Json call{{"standby", job.standby.value_or(-1)}};
  // The leader's next message on `client` before `until`, asking stopped() as
  // it waits; nullopt if none came or stopped() became true.
  const auto listen = [&](RendezvousClient& client, Deadline until) -> Result<std::optional<Json>> {
    while (Clock::now() < until && !stopped()) {
      Result<std::string> reply = client.Receive(std::min(until, Clock::now() + kStandbyStopCheck));
      if (reply) return std::optional<Json>(Json::parse(*reply, nullptr, false));
      if (reply.error().kind != ErrorKind::kTimeout)
        return std::move(reply).error().Prefixed("regroup: " + who + ": ");
    }
    return std::optional<Json>();
  };
  int refused_calls = 0;  // in a row
  while (!stopped()) {
    Result<std::unique_ptr<RendezvousClient>> client =
        RendezvousClient::Connect(job.master_addr, job.master_port, job.job_secret);
    if (!client) return std::move(client).error().Prefixed("regroup: ");
    if (Status sent = (*client)->Send(call.dump()); !sent)
      return std::move(sent).error().Prefixed("regroup: ");
    Result<std::optional<Json>> heard = listen(**client, Clock::now() + kStandbyCall);
    if (!heard) {
      // A server closing mid-handshake (the job's rendezvous ending as a
      // call reaches it) refuses one call; another secret refuses them all.
      if (++refused_calls < kRefusedCallsToGiveUp) continue;
      return heard.error();
    }
    refused_calls = 0;
    if (!*heard) continue;
    if (std::optional<Error> refused = Refusal(**heard, who)) return *refused;
    if (!(*heard)->is_object() || !(*heard)->value("hold", false)) continue;
    // Held: confirm on this connection, then wait for the place or "wait",
    // which the leader sends every standby it held when it decides.
    Json confirm = call;
    confirm["holding"] = true;
    if (Status sent = (*client)->Send(confirm.dump()); !sent)
      return std::move(sent).error().Prefixed("regroup: ");
    Result<std::optional<Json>> answer = listen(**client, Clock::now() + kHeldWait);
    if (!answer) return answer.error();
    if (!*answer) continue;  // the leader is gone, or stopped()
    if (std::optional<Error> refused = Refusal(**answer, who)) return *refused;
    if ((*answer)->is_object() && (*answer)->value("wait", false)) continue;
    Result<Regrouped> place = ReadPlace(job, **answer);
    if (!place) return place.error();
    place->config.standby.reset();
    return std::optional<Regrouped>(*std::move(place));
  }
  return std::optional<Regrouped>();
}

Result<std::unique_ptr<JoinDesk>> JoinDesk::Open(const RendezvousConfig& job, std::function<void()> heard) {
  Result<std::unique_ptr<RendezvousServer>> server =
      RendezvousServer::Listen(job.master_addr, job.master_port, job.job_secret);
  if (!server) return std::move(server).error().Prefixed("join desk: ");
  return std::unique_ptr<JoinDesk>(new JoinDesk(*std::move(server), std::move(heard)));
}

JoinDesk::JoinDesk(std::unique_ptr<RendezvousServer> server, std::function<void()> heard)
    : server_(std::move(server)), heard_(std::move(heard)), thread_([this] { Serve(); }) {}

JoinDesk::~JoinDesk() {
  stop_ = true;
  thread_.join();
}

void JoinDesk::Serve() {
  bool heard = false;
  while (!stop_) {
    Result<RendezvousServer::Request> request = server_->Receive(Clock::now() + kDeskStopCheck);
    if (!request) {
      if (request.error().kind == ErrorKind::kTimeout) continue;  // ask stop_ again
      // The socket itself failed: asking again would fail at once, forever.
      std::fprintf(stderr, "join desk: %s; replacements are no longer heard\n",
                   request.error().ToString().c_str());
      return;
    }
    const Json json = Json::parse(request->body, nullptr, false);
    if (json.is_object() && json.contains("standby")) {
      // Unanswered: the caller calls again, and the regroup that follows hears it.
      if (!heard) heard_();
      heard = true;
      continue;
    }
    // A rank's regroup request: its coordinator will listen here once this desk closes.
    (void)server_->Reply(request->client, Json{{kRetryKey, true}}.dump());
  }
}

}  // namespace inferno

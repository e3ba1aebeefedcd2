#include "distributed/regroup.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "distributed/zmq/rendezvous_channel.h"

namespace inferno {
namespace {

using Json = nlohmann::json;

// How much longer than the leader's window a survivor waits for its answer.
constexpr std::chrono::milliseconds kAnswerSlack{2000};

Result<Regrouped> Decide(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window) {
  Result<std::unique_ptr<RendezvousServer>> server =
      RendezvousServer::Listen(ended.master_addr, ended.master_port, ended.job_secret);
  if (!server) return std::move(server).error().Prefixed("regroup: ");
  const Deadline deadline = Clock::now() + window;
  std::map<int, std::string> arrived;  // old rank -> client
  while (static_cast<int>(arrived.size()) < ended.world_size - 2) {
    Result<RendezvousServer::Request> request = (*server)->Receive(deadline);
    if (!request) {
      if (request.error().kind == ErrorKind::kTimeout) break;
      return std::move(request).error().Prefixed("regroup: ");
    }
    const Json json = Json::parse(request->body, nullptr, false);
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
    } else if (rank <= 0 || rank >= ended.world_size || arrived.count(rank) > 0) {
      refusal = "rank " + std::to_string(rank) + " arrived twice or is out of range";
    }
    if (!refusal.empty()) {
      (void)(*server)->Reply(request->client, Json{{"error", refusal}}.dump());
      continue;
    }
    arrived.emplace(rank, request->client);
  }
  Regrouped regrouped;
  regrouped.config = ended;
  regrouped.config.rank = 0;
  regrouped.old_ranks.push_back(0);
  for (const auto& [rank, client] : arrived) regrouped.old_ranks.push_back(rank);
  regrouped.config.world_size = static_cast<int>(regrouped.old_ranks.size());
  for (size_t index = 1; index < regrouped.old_ranks.size(); ++index) {
    const Json answer{
        {"rank", index}, {"world_size", regrouped.config.world_size}, {"old_ranks", regrouped.old_ranks}};
    // A survivor gone since it asked fails the new rendezvous, which names it.
    (void)(*server)->Reply(arrived[regrouped.old_ranks[index]], answer.dump());
  }
  return regrouped;
}

Result<Regrouped> Ask(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window) {
  Result<std::unique_ptr<RendezvousClient>> client =
      RendezvousClient::Connect(ended.master_addr, ended.master_port, ended.job_secret);
  if (!client) return std::move(client).error().Prefixed("regroup: ");
  Status sent = (*client)->Send(Json{{"generation", generation}, {"rank", ended.rank}}.dump());
  if (!sent) return std::move(sent).error().Prefixed("regroup: ");
  Result<std::string> reply = (*client)->Receive(Clock::now() + window + kAnswerSlack);
  if (!reply) {
    return std::move(reply).error().Prefixed("regroup: the leader at " + ended.master_addr + ":" +
                                             std::to_string(ended.master_port) + " did not answer: ");
  }
  const Json json = Json::parse(*reply, nullptr, false);
  if (json.is_object() && json.contains("error") && json.at("error").is_string()) {
    return Error::InvalidArgument("regroup: the leader refused rank " + std::to_string(ended.rank) + ": " +
                                  json.at("error").get<std::string>());
  }
  if (!json.is_object() || !json.contains("rank") || !json.contains("world_size") ||
      !json.contains("old_ranks") || !json.at("rank").is_number_integer() ||
      !json.at("world_size").is_number_integer() || !json.at("old_ranks").is_array()) {
    return Error::Transport("regroup: a malformed answer from the leader at " + ended.master_addr + ":" +
                            std::to_string(ended.master_port));
  }
  Regrouped regrouped;
  regrouped.config = ended;
  regrouped.config.rank = json.at("rank").get<int>();
  regrouped.config.world_size = json.at("world_size").get<int>();
  for (const Json& rank : json.at("old_ranks")) {
    if (!rank.is_number_integer()) return Error::Transport("regroup: a malformed answer from the leader");
    regrouped.old_ranks.push_back(rank.get<int>());
  }
  if (regrouped.config.rank <= 0 || regrouped.config.rank >= regrouped.config.world_size ||
      static_cast<int>(regrouped.old_ranks.size()) != regrouped.config.world_size ||
      regrouped.old_ranks[regrouped.config.rank] != ended.rank) {
    return Error::Transport("regroup: an inconsistent answer from the leader");
  }
  return regrouped;
}

}  // namespace

Result<Regrouped> Regroup(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window) {
  return ended.rank == 0 ? Decide(ended, generation, window) : Ask(ended, generation, window);
}

}  // namespace inferno

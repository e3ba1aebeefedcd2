#include "distributed/rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <glog/logging.h>
#include <nlohmann/json.hpp>

#include "distributed/host_identity.h"
#include "distributed/ipc_directory.h"
#include "distributed/launcher_lifeline.h"
#include "distributed/launcher_master.h"
#include "distributed/routed/transport.h"
#include "distributed/shm/transport.h"
#include "distributed/standby_rank.h"
#include "distributed/tcp/transport.h"
#include "distributed/zmq/rendezvous_channel.h"
#include "distributed/zmq/transport.h"

namespace inferno {
namespace {

using Json = nlohmann::json;

constexpr std::chrono::milliseconds kVerdictSlack{2000};

// Where one rank receives, as reported to rank 0.
struct RankEndpoints {
  int rank = -1;
  int world_size = 0;
  // HostIdentity(): ranks with equal values connect over ipc:// and, when
  // both offer an inbox, over shared memory.
  std::string host;
  std::string tcp;
  std::string ipc;                                 // empty when the rank offers no ipc endpoint
  std::map<std::string, std::string> fingerprint;  // RendezvousOptions::fingerprint
  // Unless the rank uses ZeroMQ only: its shared-memory inbox (a
  // SegmentAddress); else empty.
  std::string shm;
  // Unless the rank offers no direct TCP data path: its data port as
  // "address:port" and the key frames to it are sealed for (a DataKey in
  // hex; the table travels CURVE-encrypted when the job has a secret).
  std::string data;
  std::string data_key;
};

Json ToJson(const RankEndpoints& entry) {
  return Json{{"rank", entry.rank},        {"world_size", entry.world_size},
              {"host", entry.host},        {"tcp", entry.tcp},
              {"ipc", entry.ipc},          {"fingerprint", entry.fingerprint},
              {"shm", entry.shm},          {"data", entry.data},
              {"data_key", entry.data_key}};
}

// nullopt when `json` is not a well-formed entry (a stranger's bytes).
std::optional<RankEndpoints> EntryFromJson(const Json& json) {
  try {
    RankEndpoints entry;
    entry.rank = json.at("rank").get<int>();
    entry.world_size = json.at("world_size").get<int>();
    entry.host = json.at("host").get<std::string>();
    entry.tcp = json.at("tcp").get<std::string>();
    entry.ipc = json.at("ipc").get<std::string>();
    entry.fingerprint = json.at("fingerprint").get<std::map<std::string, std::string>>();
    entry.shm = json.value("shm", std::string());
    entry.data = json.value("data", std::string());
    entry.data_key = json.value("data_key", std::string());
    return entry;
  } catch (const Json::exception&) {
    return std::nullopt;
  }
}

std::optional<Json> ParseJson(const std::string& text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return std::nullopt;
  return json;
}

uint64_t RandomId() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device() ^
         static_cast<uint64_t>(Clock::now().time_since_epoch().count());
}

// The local IPv4 address this host uses to reach `master_addr` (so peers on
// other hosts can connect back to it).
Result<std::string> LocalAddressToward(const std::string& master_addr) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(master_addr.c_str(), "9", &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Error::Transport("rendezvous: cannot resolve MASTER_ADDR '" + master_addr +
                            "': " + gai_strerror(rc));
  }
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  const bool ok = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  const int saved_errno = errno;
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (!ok) {
    return Error::Transport("rendezvous: no route to MASTER_ADDR '" + master_addr +
                            "': " + std::strerror(saved_errno));
  }
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return std::string(text);
}

Result<int> ParseInt(const char* name, const char* value, int min, int max) {
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || parsed < min || parsed > max) {
    return Error::InvalidArgument(std::string(name) + "='" + value + "' is not an integer in [" +
                                  std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int>(parsed);
}

Error MissingRanks(const std::string& where, const std::vector<bool>& arrived,
                   std::chrono::milliseconds waited) {
  std::string missing;
  for (size_t rank = 0; rank < arrived.size(); ++rank) {
    if (arrived[rank]) continue;
    missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
  }
  return {ErrorKind::kTimeout, where + ": ranks " + missing + " of " + std::to_string(arrived.size()) +
                                   " did not arrive within " + std::to_string(waited.count()) + " ms"};
}

}  // namespace

std::string FingerprintDifference(int rank, const std::map<std::string, std::string>& theirs,
                                  const std::map<std::string, std::string>& mine) {
  const auto shown = [](const std::map<std::string, std::string>& fingerprint, const std::string& name) {
    const auto it = fingerprint.find(name);
    return it == fingerprint.end() ? std::string("nothing") : "'" + it->second + "'";
  };
  std::map<std::string, std::string> names = mine;
  names.insert(theirs.begin(), theirs.end());
  for (const auto& [name, unused] : names) {
    const std::string here = shown(mine, name), there = shown(theirs, name);
    if (here != there) {
      return "rank " + std::to_string(rank) + " and rank 0 run different things: " + name + " is " + there +
             " on rank " + std::to_string(rank) + ", " + here + " on rank 0";
    }
  }
  return "";
}

namespace {

// Rank 0: collects every rank's endpoints, then sends everyone the table.
Result<Json> ServeTable(const RendezvousConfig& config, const RendezvousOptions& options,
                        const RankEndpoints& mine) {
  Result<std::unique_ptr<RendezvousServer>> server =
      RendezvousServer::Listen(config.master_addr, config.master_port, config.job_secret);
  if (!server) return std::move(server).error();
  if (options.on_master_listening) options.on_master_listening((*server)->port());
  const std::string where = "rendezvous at " + config.master_addr + ":" + std::to_string((*server)->port());

  std::vector<RankEndpoints> entries(config.world_size);
  std::vector<bool> arrived(config.world_size, false);
  std::vector<std::string> clients(config.world_size);
  entries[0] = mine;
  arrived[0] = true;
  int count = 1;
  auto fail_everyone = [&](const Error& error) {
    const std::string body = Json{{"error", error.message}}.dump();
    for (int rank = 1; rank < config.world_size; ++rank) {
      if (arrived[rank]) (void)(*server)->Reply(clients[rank], body);
    }
    return error;
  };

  // Once a rank is refused, the job cannot start: every rank that has
  // arrived or still arrives (until the deadline) is told why, so that each
  // fails at once with the same one line instead of timing out.
  std::optional<Error> verdict;
  const auto in_range = [&](int rank) { return rank > 0 && rank < config.world_size; };
  const Deadline deadline = Clock::now() + options.timeout;
  while (count < config.world_size) {
    Result<RendezvousServer::Request> request = (*server)->Receive(deadline);
    if (!request) {
      if (request.error().kind != ErrorKind::kTimeout) return std::move(request).error();
      if (verdict) return *verdict;
      return fail_everyone(MissingRanks(where, arrived, options.timeout));
    }
    std::optional<Json> json = ParseJson(request->body);
    std::optional<RankEndpoints> entry = json ? EntryFromJson(*json) : std::nullopt;
    // A standby rank's call (distributed/regroup.h) is for a regroup, not this rendezvous.
    if (!entry && json && json->is_object() && json->contains("standby")) continue;
    if (!entry) {
      LOG(WARNING) << where << ": ignored a malformed request of " << request->body.size() << " bytes";
      continue;
    }
    if (verdict) {
      (void)(*server)->Reply(request->client, Json{{"error", verdict->message}}.dump());
      if (in_range(entry->rank) && !arrived[entry->rank]) {
        arrived[entry->rank] = true;
        ++count;
      }
      continue;
    }
    std::string refusal;
    if (entry->world_size != config.world_size) {
      refusal = where + ": rank " + std::to_string(entry->rank) + " has WORLD_SIZE " +
                std::to_string(entry->world_size) + ", rank 0 has " + std::to_string(config.world_size);
    } else if (!in_range(entry->rank) || arrived[entry->rank]) {
      refusal = where + ": rank " + std::to_string(entry->rank) + " arrived twice or is out of range";
    } else if (std::string difference =
                   FingerprintDifference(entry->rank, entry->fingerprint, mine.fingerprint);
               !difference.empty()) {
      refusal = where + ": " + difference;
    }
    if (!refusal.empty()) {
      (void)(*server)->Reply(request->client, Json{{"error", refusal}}.dump());
      verdict = fail_everyone(Error::InvalidArgument(refusal));
      if (in_range(entry->rank) && !arrived[entry->rank]) {
        arrived[entry->rank] = true;
        ++count;
      }
      continue;
    }
    entries[entry->rank] = *entry;
    clients[entry->rank] = request->client;
    arrived[entry->rank] = true;
    ++count;
  }

  if (verdict) return *verdict;
  Json table{{"job_id", RandomId()}, {"ranks", Json::array()}};
  for (const RankEndpoints& entry : entries) table["ranks"].push_back(ToJson(entry));
  const std::string body = table.dump();
  for (int rank = 1; rank < config.world_size; ++rank) {
    Status replied = (*server)->Reply(clients[rank], body);
    if (!replied) return std::move(replied).error();
  }
  return table;
}

// Ranks other than 0: reports `mine` and waits for the table.
Result<Json> FetchTable(const RendezvousConfig& config, const RendezvousOptions& options,
                        const RankEndpoints& mine) {
  Result<std::unique_ptr<RendezvousClient>> client =
      RendezvousClient::Connect(config.master_addr, config.master_port, config.job_secret);
  if (!client) return std::move(client).error();
  Status sent = (*client)->Send(ToJson(mine).dump());
  if (!sent) return std::move(sent).error();
  // A little longer than rank 0 waits, so that its verdict (the table, or
  // which ranks are missing) reaches this rank before it gives up.
  Result<std::string> reply = (*client)->Receive(Clock::now() + options.timeout + kVerdictSlack);
  if (!reply) return std::move(reply).error();
  std::optional<Json> table = ParseJson(*reply);
  if (!table || !table->is_object()) {
    return Error::Transport("rendezvous: malformed table from rank 0 at " + config.master_addr + ":" +
                            std::to_string(config.master_port));
  }
  if (table->contains("error")) {
    return Error::InvalidArgument("rendezvous: rank 0 refused rank " + std::to_string(config.rank) + ": " +
                                  table->value("error", std::string()));
  }
  return *table;
}

// This rank's shared-memory transport, its abort checks joined to the
// ZeroMQ control plane's; null (ZeroMQ only) when `choice` says so or, under
// kAuto, when it cannot be created (logged).
Result<std::shared_ptr<ShmTransport>> CreateShmTransport(const RendezvousConfig& config,
                                                         TransportChoice choice,
                                                         const std::shared_ptr<ZmqTransport>& control) {
  if (choice == TransportChoice::kZmq || choice == TransportChoice::kTcp)
    return std::shared_ptr<ShmTransport>();
  ShmTransportOptions options;
  options.rank = config.rank;
  options.world_size = config.world_size;
  options.timeout = config.op_timeout;
  options.also_check = [control] { return control->CheckAbortNotices(); };
  Result<std::shared_ptr<ShmTransport>> created = ShmTransport::Create(options);
  if (!created && choice == TransportChoice::kAuto) {
    LOG(WARNING) << "rank " << config.rank
                 << ": no shared memory, using ZeroMQ to every peer: " << created.error().ToString();
    return std::shared_ptr<ShmTransport>();
  }
  return created;
}

// This rank's direct TCP data path (docs/network.md), listening on
// `address`, its waits joined to the ZeroMQ control plane's abort notices
// and liveness verdicts: under kTcp, and under kAuto when the job has a
// secret (its key then travels in the CURVE-encrypted table); null
// otherwise.
Result<std::shared_ptr<TcpTransport>> CreateTcpTransport(const RendezvousConfig& config,
                                                         TransportChoice choice,
                                                         const std::shared_ptr<ZmqTransport>& control,
                                                         const std::string& address) {
  const bool wanted =
      choice == TransportChoice::kTcp || (choice == TransportChoice::kAuto && config.job_secret.has_value());
  if (!wanted) return std::shared_ptr<TcpTransport>();
  TcpTransportOptions options;
  options.rank = config.rank;
  options.world_size = config.world_size;
  options.timeout = config.op_timeout;
  options.bind_address = address;
  options.also_check = [control] { return control->CheckAbortNotices(); };
  return TcpTransport::Listen(options);
}

// The data path entry of a table row: nullopt when the row offers none, an
// error when it is malformed.
Result<std::optional<TcpPeerAddress>> DataAddressOf(const RankEndpoints& entry) {
  if (entry.data.empty()) return std::optional<TcpPeerAddress>();
  const size_t colon = entry.data.rfind(':');
  const std::string where = "rendezvous: rank " + std::to_string(entry.rank) + "'s data path";
  Result<DataKey> key = DataKey::Parse(where, entry.data_key);
  if (!key) return std::move(key).error();
  if (colon == std::string::npos) return Error::Transport(where + " '" + entry.data + "' has no port");
  Result<int> port = ParseInt("data port", entry.data.c_str() + colon + 1, 1, 65535);
  if (!port) return Error::Transport(where + ": " + port.error().message);
  return std::optional<TcpPeerAddress>(TcpPeerAddress{entry.data.substr(0, colon), *port, *key});
}

}  // namespace

Result<RendezvousConfig> ReadRendezvousConfig(const std::function<const char*(const char*)>& getenv,
                                              const RendezvousOptions& options) {
  RendezvousConfig config;
  config.op_timeout = options.op_timeout;
  struct RankVariables {
    const char* rank;
    const char* size;
    std::optional<ClusterLauncher> launcher;  // which finds rank 0 without MASTER_*
    // Unless null, the pair counts only where this variable is set: a batch
    // script's own shell has SLURM_PROCID=0 and SLURM_NTASKS, but is no task
    // of a step (srun's tasks have SLURM_STEP_ID).
    const char* only_with;
  };
  const char* standby = getenv(kStandbyVariable);
  if (standby != nullptr) {
    Result<int> index = ParseInt(kStandbyVariable, standby, 0, 1 << 20);
    if (!index) return std::move(index).error();
    if (getenv("RANK") != nullptr) {
      return Error::InvalidArgument(std::string("both RANK and ") + kStandbyVariable +
                                    " are set: a standby rank has no rank until it takes a lost one's place");
    }
    config.standby = *index;
  }
  if (const char* standbys = getenv(kStandbyRanksVariable)) {
    Result<int> count = ParseInt(kStandbyRanksVariable, standbys, 0, 1 << 20);
    if (!count) return std::move(count).error();
    config.standby_ranks = *count;
  }
  // A standby's RANK is not set; it reads as rank 0 here and -1 below (a
  // replacement started later, launch --join, has no WORLD_SIZE either: the
  // leader tells it the job's size).
  const auto rank_variable = [&](const char* name) -> const char* {
    return standby != nullptr && std::string_view(name) == "RANK" && getenv("WORLD_SIZE") != nullptr
               ? "0"
               : getenv(name);
  };
  const RankVariables kRankNames[] = {
      {"RANK", "WORLD_SIZE", std::nullopt, nullptr},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", ClusterLauncher::kOpenMpi, nullptr},
      {"SLURM_PROCID", "SLURM_NTASKS", ClusterLauncher::kSlurm, "SLURM_STEP_ID"}};
  std::optional<ClusterLauncher> launcher;
  for (const auto& [rank_name, size_name, names_launcher, only_with] : kRankNames) {
    const char* rank = rank_variable(rank_name);
    const char* size = getenv(size_name);
    if (rank == nullptr && size == nullptr) continue;
    if (only_with != nullptr && getenv(only_with) == nullptr) continue;
    if (rank == nullptr || size == nullptr) {
      return Error::InvalidArgument(std::string(rank == nullptr ? size_name : rank_name) + " is set but " +
                                    (rank == nullptr ? rank_name : size_name) + " is not");
    }
    Result<int> world_size = ParseInt(size_name, size, 1, 1 << 20);
    if (!world_size) return std::move(world_size).error();
    Result<int> parsed_rank = ParseInt(rank_name, rank, 0, *world_size - 1);
    if (!parsed_rank) return std::move(parsed_rank).error();
    config.rank = *parsed_rank;
    config.world_size = *world_size;
    launcher = names_launcher;
    break;
  }
  if (config.standby) config.rank = -1;
  const char* addr = getenv("MASTER_ADDR");
  const char* port = getenv("MASTER_PORT");
  if (addr != nullptr) config.master_addr = addr;
  if (port != nullptr) {
    Result<int> parsed = ParseInt("MASTER_PORT", port, 0, 65535);
    if (!parsed) return std::move(parsed).error();
    config.master_port = *parsed;
  }
  if (config.world_size > 1 && (addr == nullptr || port == nullptr)) {
    if (!launcher) {
      return Error::InvalidArgument("a world of " + std::to_string(config.world_size) +
                                    " ranks needs MASTER_ADDR and MASTER_PORT");
    }
    Result<LauncherMaster> master = FindLauncherMaster(*launcher, getenv);
    if (!master) return std::move(master).error();
    if (addr == nullptr) config.master_addr = master->addr;
    if (port == nullptr) config.master_port = master->port;
    config.master_source = master->source;
  }
  if (const char* timeout = getenv("INFERNO_TIMEOUT_MS")) {
    Result<int> parsed = ParseInt("INFERNO_TIMEOUT_MS", timeout, 1, 1 << 30);
    if (!parsed) return std::move(parsed).error();
    config.op_timeout = std::chrono::milliseconds(*parsed);
  }
  if (const char* timeout = getenv("INFERNO_RENDEZVOUS_TIMEOUT_MS")) {
    Result<int> parsed = ParseInt("INFERNO_RENDEZVOUS_TIMEOUT_MS", timeout, 1, 1 << 30);
    if (!parsed) return std::move(parsed).error();
    config.rendezvous_timeout = std::chrono::milliseconds(*parsed);
  }
  if (const char* transport = getenv(kTransportVariable)) {
    Result<TransportChoice> choice = ParseTransportChoice(kTransportVariable, transport);
    if (!choice) return std::move(choice).error();
    config.transport = *choice;
  }
  const char* secret = getenv(kJobSecretVariable);
  const char* secret_file = getenv(kJobSecretFileVariable);
  if (secret != nullptr && secret_file != nullptr) {
    return Error::InvalidArgument(std::string("both ") + kJobSecretVariable + " and " +
                                  kJobSecretFileVariable + " are set: unset one");
  }
  if (secret != nullptr || secret_file != nullptr) {
    Result<JobSecret> parsed = secret != nullptr ? ParseJobSecret(secret) : ReadJobSecretFile(secret_file);
    if (!parsed) return std::move(parsed).error();
    config.job_secret = *parsed;
  }
  const char* insecure = getenv(kInsecureJobVariable);
  if (insecure != nullptr && std::string_view(insecure) != "1") {
    return Error::InvalidArgument(std::string(kInsecureJobVariable) + "='" + insecure +
                                  "': set it to 1 to run a job without a secret, or unset it");
  }
  if (insecure != nullptr && config.job_secret) {
    return Error::InvalidArgument(std::string("both ") +
                                  (secret != nullptr ? kJobSecretVariable : kJobSecretFileVariable) +
                                  " and " + kInsecureJobVariable + "=1 are set: unset one");
  }
  if ((config.world_size > 1 || config.standby) && !config.job_secret && insecure == nullptr) {
    return Error::InvalidArgument(
        std::string("a job of ") + std::to_string(config.world_size) + " ranks needs a secret: export " +
        kJobSecretVariable +
        "=$(job_key) on every rank (launch does it for you) or a file only you can read that holds it in " +
        kJobSecretFileVariable + ", or set " + kInsecureJobVariable +
        "=1 to let anyone who reaches a rank join");
  }
  return config;
}

namespace {

// Join's check that `config` names a place in the job: a standby rank's
// names none yet.
Status CheckPlace(const RendezvousConfig& config) {
  if (config.standby) {
    return Error::InvalidArgument("this process is standby rank " + std::to_string(*config.standby) + " (" +
                                  kStandbyVariable +
                                  "): it has no place in the job until it takes a lost rank's, which only "
                                  "serve --failover and infer --failover do");
  }
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size) {
    return Error::UnknownRank("rendezvous", config.rank, config.world_size);
  }
  return {};
}

}  // namespace

Result<ProcessGroup> Join(const RendezvousConfig& config, const RendezvousOptions& options) {
  if (Status placed = CheckPlace(config); !placed) return placed.error();
  ZmqTransportOptions transport_options;
  transport_options.rank = config.rank;
  transport_options.world_size = config.world_size;
  transport_options.timeout = config.op_timeout;
  transport_options.job_secret = config.job_secret;
  transport_options.bind_endpoints.clear();
  if (config.world_size == 1) {
    Result<std::shared_ptr<ZmqTransport>> alone = ZmqTransport::Bind(transport_options);
    if (!alone) return std::move(alone).error();
    Status connected = (*alone)->Connect({""}, RandomId());
    if (!connected) return std::move(connected).error();
    return ProcessGroup(*alone);
  }

  // Reaching rank 0 failed: say where its address came from, if not from the user.
  const auto explained = [&config](Error error) {
    if (!config.master_source.empty()) {
      error.message += " (" + config.master_addr + ":" + std::to_string(config.master_port) + " is " +
                       config.master_source + "; export MASTER_ADDR and MASTER_PORT to choose another)";
    }
    return error;
  };
  Result<std::string> local_address = LocalAddressToward(config.master_addr);
  if (!local_address) return explained(std::move(local_address).error());
  transport_options.bind_endpoints.push_back("tcp://" + *local_address + ":0");
  const TransportChoice choice = config.transport.value_or(options.transport);
  const bool prefer_ipc = options.prefer_ipc_on_same_host && choice != TransportChoice::kTcp;
  if (prefer_ipc) {
    // A file in a directory only this user can enter, never an abstract
    // name, which any process in the network namespace could connect to.
    Result<IpcDirectory> directory = IpcDirectory::Create();
    if (!directory) return std::move(directory).error();
    transport_options.ipc_directory = std::make_shared<const IpcDirectory>(std::move(*directory));
    transport_options.bind_endpoints.push_back("ipc://" + transport_options.ipc_directory->path() + "/rank-" +
                                               std::to_string(config.rank));
  }
  Result<std::shared_ptr<ZmqTransport>> transport = ZmqTransport::Bind(transport_options);
  if (!transport) return std::move(transport).error();

  RankEndpoints mine;
  mine.rank = config.rank;
  mine.world_size = config.world_size;
  mine.host = HostIdentity();
  mine.fingerprint = options.fingerprint;
  mine.tcp = (*transport)->endpoints()[0];
  if (prefer_ipc) mine.ipc = (*transport)->endpoints()[1];
  Result<std::shared_ptr<ShmTransport>> shm_transport = CreateShmTransport(config, choice, *transport);
  if (!shm_transport) return std::move(shm_transport).error();
  if (*shm_transport) mine.shm = (*shm_transport)->inbox().ToString();
  Result<std::shared_ptr<TcpTransport>> tcp_transport =
      CreateTcpTransport(config, choice, *transport, *local_address);
  if (!tcp_transport) return std::move(tcp_transport).error();
  if (*tcp_transport) {
    mine.data = *local_address + ":" + std::to_string((*tcp_transport)->port());
    mine.data_key = (*tcp_transport)->key().ToHex();
  }

  RendezvousOptions waits = options;
  waits.timeout = config.rendezvous_timeout.value_or(options.timeout);
  Result<Json> table = config.rank == 0 ? ServeTable(config, waits, mine) : FetchTable(config, waits, mine);
  if (!table) return explained(std::move(table).error());

  std::vector<std::string> endpoints;
  // Rank i's inbox when it is reached over shared memory.
  std::vector<std::optional<SegmentAddress>> inboxes;
  std::vector<bool> local_peers;
  // Rank i's data port when it is reached over the direct TCP data path.
  std::vector<std::optional<TcpPeerAddress>> data_addresses;
  std::vector<bool> data_peers;
  uint64_t job_id = 0;
  bool well_formed = table->contains("job_id") && table->at("job_id").is_number_unsigned() &&
                     table->contains("ranks") && table->at("ranks").is_array();
  if (well_formed) {
    job_id = table->at("job_id").get<uint64_t>();
    for (const Json& json : table->at("ranks")) {
      std::optional<RankEndpoints> entry = EntryFromJson(json);
      if (!entry) {
        well_formed = false;
        break;
      }
      const bool same_host = entry->host == mine.host && !entry->ipc.empty();
      endpoints.push_back(prefer_ipc && same_host ? entry->ipc : entry->tcp);
      Result<SegmentAddress> inbox = SegmentAddress::Parse(entry->shm);
      const bool local = *shm_transport && entry->rank != config.rank && inbox && entry->host == mine.host;
      if (choice == TransportChoice::kShm && entry->rank != config.rank && !local) {
        return Error::InvalidArgument("rendezvous: INFERNO_TRANSPORT=shm, but rank " +
                                      std::to_string(entry->rank) +
                                      " is not on this host or does not use shared memory");
      }
      inboxes.push_back(local ? std::optional<SegmentAddress>(*inbox) : std::nullopt);
      local_peers.push_back(local);
      Result<std::optional<TcpPeerAddress>> data = DataAddressOf(*entry);
      if (!data) return std::move(data).error();
      const bool direct =
          *tcp_transport && *data && entry->rank != config.rank && !local && !(prefer_ipc && same_host);
      data_addresses.push_back(direct ? *data : std::nullopt);
      data_peers.push_back(direct);
    }
  }
  if (!well_formed) {
    return Error::Transport("rendezvous: malformed table from rank 0 at " + config.master_addr + ":" +
                            std::to_string(config.master_port));
  }
  if (static_cast<int>(endpoints.size()) != config.world_size) {
    return Error::LengthMismatch("rendezvous table", config.world_size,
                                 static_cast<int64_t>(endpoints.size()));
  }
  Status connected = (*transport)->Connect(endpoints, job_id);
  if (!connected) return std::move(connected).error();
  std::shared_ptr<Transport> routed = *transport;
  if (std::find(data_peers.begin(), data_peers.end(), true) == data_peers.end()) {
    tcp_transport->reset();  // no peer on another host: stop listening
  } else {
    Status data_connected = (*tcp_transport)->Connect(data_addresses, job_id, Clock::now() + waits.timeout);
    if (!data_connected) return std::move(data_connected).error();
    std::string ranks;
    for (int peer = 0; peer < config.world_size; ++peer) {
      if (data_peers[peer]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
    }
    LOG(INFO) << "rank " << config.rank << ": data to rank(s) " << ranks << " over the direct TCP data path";
    routed = std::make_shared<RoutedTransport>(routed, *tcp_transport, data_peers);
  }
  if (std::find(local_peers.begin(), local_peers.end(), true) != local_peers.end()) {
    Status shm_connected = (*shm_transport)->Connect(inboxes, Clock::now() + waits.timeout);
    if (!shm_connected) return std::move(shm_connected).error();
    routed = std::make_shared<RoutedTransport>(routed, *shm_transport, local_peers);
  }

  ProcessGroup group(routed);
  Status ready = group.barrier();
  if (!ready) {
    Error error = std::move(ready).error();
    error.message =
        "rendezvous: rank " + std::to_string(config.rank) + " could not reach every peer: " + error.message;
    return error;
  }
  return group;
}

Result<ProcessGroup> JoinFromEnvironment(const RendezvousOptions& options) {
  const auto getenv = [](const char* name) { return std::getenv(name); };
  if (Status watched = WatchLauncherLifeline(getenv); !watched) return watched.error();
  Result<RendezvousConfig> config = ReadRendezvousConfig(getenv, options);
  if (!config) return std::move(config).error();
  return Join(*config, options);
}

}  // namespace inferno

#include "launch/launcher.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "distributed/job_secret.h"
#include "distributed/launcher_lifeline.h"
#include "distributed/standby_rank.h"

namespace inferno {
namespace {

using Clock = std::chrono::steady_clock;

// Signals the launcher handles through a signalfd instead of handlers.
constexpr int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
// Exit status when --timeout passes (as timeout(1)).
constexpr int kTimeoutStatus = 124;
// Exit status of a child whose exec failed (as the shell).
constexpr int kExecFailedStatus = 127;
// After every rank has exited, how long to keep reading output from processes
// they left behind before giving up on it.
constexpr std::chrono::milliseconds kOutputDrainLimit{1000};
// Output buffered per stream before a line is emitted without its newline.
constexpr size_t kMaxLineBytes = 64 * 1024;

std::string ErrnoText() { return std::strerror(errno); }

// Binds a TCP socket to addr:port (port 0: one the kernel chooses), closes it
// and returns the port it had.
Result<int> BindAndRelease(const std::string& addr, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return Error::InvalidArgument("--master-addr: cannot resolve '" + addr + "': " + gai_strerror(rc));
  }
  std::string last_error = "no usable address";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = ErrnoText();
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
      close(fd);
      freeaddrinfo(found);
      return bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    }
    last_error = ErrnoText();
    close(fd);
  }
  freeaddrinfo(found);
  return Error::Io("--master-addr: cannot bind " + addr + ":" + std::to_string(port) + " (" + last_error +
                   "); is it an address of this host?");
}

// The first port of the kernel's ephemeral range, which port-0 binds and
// outgoing connections draw from.
int EphemeralPortsBegin() {
  int begin = 32768;
  if (FILE* range = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(range, "%d", &begin) != 1) begin = 32768;
    std::fclose(range);
  }
  return begin;
}

// A port free on addr now; rank 0 binds it again moments later. To make that
// race rare, the port is drawn at random from below the ephemeral range, where
// no port-0 bind or outgoing connection of another process lands; the
// kernel's choice (from the ephemeral range) is the fallback. The kernel's
// choice is made first, so that a bad address fails at once.
Result<int> FindFreePort(const std::string& addr) {
  constexpr int kLowestCandidate = 20000;
  constexpr int kCandidates = 32;
  auto kernel_choice = BindAndRelease(addr, 0);
  if (!kernel_choice) return kernel_choice;
  const int end = EphemeralPortsBegin();
  if (end > kLowestCandidate) {
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> pick(kLowestCandidate, end - 1);
    for (int i = 0; i < kCandidates; ++i) {
      if (auto port = BindAndRelease(addr, pick(random)); port) return port;
    }
  }
  return kernel_choice;
}

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our own stdout is gone; the ranks keep running
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// "exited with status 3" / "was killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(wait_status)) + " (" +
           strsignal(WTERMSIG(wait_status)) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
}

int ExitStatusOf(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

// One output stream (stdout or stderr) of one rank, read through a pipe when
// output is tagged.
struct TaggedStream {
  int fd = -1;      // read end; -1 once closed
  int target = -1;  // our fd the lines go to
  std::string prefix;
  std::string pending;  // bytes after the last newline

  // Emits every complete line (and, with `flush`, the remainder) with the prefix.
  void Emit(bool flush) {
    std::string out;
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      out += prefix;
      out.append(pending, start, nl + 1 - start);
    }
    pending.erase(0, start);
    if (!pending.empty() && (flush || pending.size() >= kMaxLineBytes)) {
      out += prefix + pending + "\n";
      pending.clear();
    }
    WriteAll(target, out);
  }

  // Reads what is available; closes the stream at end of file.
  void Read() {
    char buffer[16384];
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      Close();
      return;
    }
    pending.append(buffer, static_cast<size_t>(n));
    Emit(/*flush=*/false);
  }

  void Close() {
    if (fd < 0) return;
    close(fd);
    fd = -1;
    Emit(/*flush=*/true);
  }
};

struct RankProcess {
  int rank = 0;
  std::optional<int> standby;  // a standby rank's index (rank is then -1)
  pid_t pid = -1;              // also its process group id
  bool running = false;
  TaggedStream out, err;
};

// "rank 3", or "standby rank 1".
std::string Name(const RankProcess& process) {
  return process.standby ? "standby rank " + std::to_string(*process.standby)
                         : "rank " + std::to_string(process.rank);
}

class Supervisor {
 public:
  explicit Supervisor(const LaunchOptions& options) : options_(options) {}

  Result<int> Run() {
    if (options_.master_port == 0) {
      auto port = FindFreePort(options_.master_addr);
      if (!port) return port.error();
      master_port_ = *port;
    } else {
      master_port_ = options_.master_port;
    }
    if (!options_.insecure) {
      if (auto secret = ChooseJobSecret(); !secret) return secret.error();
    }
    if (auto fd = TakeSignals(); !fd) return fd.error();
    // The lifeline (distributed/launcher_lifeline.h): only this process
    // holds the write end, so the ranks see end of file when it dies.
    if (pipe2(lifeline_, O_CLOEXEC) != 0) return Error::Io("lifeline pipe: " + ErrnoText());
    // Descendants that ranks orphan are re-parented to us, so they stay in
    // reach (and their exit is reaped) while the job runs.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    ranks_.resize(options_.ranks_per_node + options_.standby);
    ChooseCpus();
    for (int local = 0; local < static_cast<int>(ranks_.size()); ++local) {
      if (auto started = Start(local); !started) {
        Stop(SIGKILL);
        while (AnyRunning()) Reap(/*block=*/true);
        return started.error();
      }
    }
    if (options_.timeout.count() > 0) job_deadline_ = Clock::now() + options_.timeout;
    Supervise();
    return exit_status_.value_or(0);
  }

 private:
  // Unless --insecure, sets job_secret_: launch's own INFERNO_JOB_SECRET if
  // set (checked), else a fresh one, which only a single-node job may use;
  // or, when launch has INFERNO_JOB_SECRET_FILE (checked) instead, leaves it
  // empty: the ranks inherit the file's name and read it.
  Status ChooseJobSecret() {
    const char* file = std::getenv(kJobSecretFileVariable);
    if (file != nullptr && std::getenv(kJobSecretVariable) != nullptr) {
      return Error::InvalidArgument(std::string("both ") + kJobSecretVariable + " and " +
                                    kJobSecretFileVariable + " are set: unset one");
    }
    if (file != nullptr) {
      if (Result<JobSecret> read = ReadJobSecretFile(file); !read) return read.error();
      return {};
    }
    if (const char* inherited = std::getenv(kJobSecretVariable)) {
      if (Result<JobSecret> parsed = ParseJobSecret(inherited); !parsed) {
        return parsed.error();
      }
      job_secret_ = inherited;
      return {};
    }
    if (options_.join) {
      return Error::InvalidArgument(
          std::string("--join: a replacement needs the job's secret: export the job's ") +
          kJobSecretVariable + " (or " + kJobSecretFileVariable +
          " naming a file that holds it), or --insecure for a job without one");
    }
    if (options_.nnodes > 1) {
      return Error::InvalidArgument(
          std::string("a job of ") + std::to_string(options_.nnodes) + " nodes needs the same " +
          kJobSecretVariable + " exported on every node (make one with job_key), or " +
          kJobSecretFileVariable + " naming a file every node reads, or --insecure");
    }
    Result<std::string> fresh = NewJobSecretText();
    if (!fresh) return fresh.error();
    job_secret_ = *fresh;
    return {};
  }

  // Fills rank_cpus_ with the CPU set of each local rank (see CpuBinding),
  // or leaves it empty when the ranks are not bound.
  void ChooseCpus() {
    if (options_.binding != CpuBinding::kCore) return;
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
    }
    const size_t ranks = ranks_.size();  // standby ranks too: each may take a rank's place
    if (ranks > cpus.size()) return;
    // Rank i gets the i-th of `ranks` equal runs of the allowed CPUs, so a
    // rank's threads (--threads) have CPUs of their own too; one rank gets
    // them all.
    const size_t per_rank = cpus.size() / ranks;
    rank_cpus_.resize(ranks);
    for (size_t rank = 0; rank < ranks; ++rank) {
      CPU_ZERO(&rank_cpus_[rank]);
      for (size_t i = rank * per_rank; i < (rank + 1) * per_rank; ++i) CPU_SET(cpus[i], &rank_cpus_[rank]);
    }
  }

  Status TakeSignals() {
    sigset_t handled;
    sigemptyset(&handled);
    for (const int signal : kHandledSignals) sigaddset(&handled, signal);
    if (sigprocmask(SIG_BLOCK, &handled, &original_mask_) != 0) {
      return Error::Io("sigprocmask: " + ErrnoText());
    }
    signal_fd_ = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) return Error::Io("signalfd: " + ErrnoText());
    // A closed stdout must not kill the launcher and orphan the job.
    std::signal(SIGPIPE, SIG_IGN);
    return {};
  }

  Status Start(int local_rank) {
    RankProcess& process = ranks_[local_rank];
    if (local_rank < options_.ranks_per_node) {
      process.rank = options_.node_rank * options_.ranks_per_node + local_rank;
    } else {
      process.rank = -1;
      process.standby = options_.first_standby_index + local_rank - options_.ranks_per_node;
    }
    int out_pipe[2] = {-1, -1};
    int err_pipe[2] = {-1, -1};
    if (options_.tag_output && (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)) {
      return Error::Io(Name(process) + ": pipe: " + ErrnoText());
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      return Error::Io(Name(process) + ": fork: " + ErrnoText());
    }
    if (pid == 0) ExecRank(process, local_rank, parent, out_pipe[1], err_pipe[1]);
    setpgid(pid, pid);  // also done by the child; whichever runs first wins
    process.pid = pid;
    process.running = true;
    if (options_.tag_output) {
      close(out_pipe[1]);
      close(err_pipe[1]);
      // Appending (not "[" + ...) avoids GCC 12's false -Wrestrict at -O3.
      const std::string prefix =
          std::string("[")
              .append(process.standby ? "s" + std::to_string(*process.standby) : std::to_string(process.rank))
              .append("] ");
      process.out = TaggedStream{out_pipe[0], STDOUT_FILENO, prefix, ""};
      process.err = TaggedStream{err_pipe[0], STDERR_FILENO, prefix, ""};
    }
    return {};
  }

  // In the child: sets up the rank's process state and execs the program.
  [[noreturn]] void ExecRank(const RankProcess& process, int local_rank, pid_t parent, int out_fd,
                             int err_fd) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(kExecFailedStatus);  // the launcher died already
    if (out_fd >= 0) {
      dup2(out_fd, STDOUT_FILENO);
      dup2(err_fd, STDERR_FILENO);
    }
    // A failure leaves the rank unbound; a bound rank's default --threads
    // is every CPU of its own (base/default_threads.h).
    if (!rank_cpus_.empty() && sched_setaffinity(0, sizeof(cpu_set_t), &rank_cpus_[local_rank]) == 0) {
      setenv("INFERNO_CPUS_BOUND", "1", /*overwrite=*/1);
    } else {
      unsetenv("INFERNO_CPUS_BOUND");
    }
    if (const int null_fd = open("/dev/null", O_RDONLY); null_fd >= 0) {
      dup2(null_fd, STDIN_FILENO);
      if (null_fd != STDIN_FILENO) close(null_fd);
    }
    const auto set = [](const char* name, const std::string& value) {
      setenv(name, value.c_str(), /*overwrite=*/1);
    };
    if (process.standby) {
      unsetenv("RANK");
      set(kStandbyVariable, std::to_string(*process.standby));
    } else {
      set("RANK", std::to_string(process.rank));
      unsetenv(kStandbyVariable);
    }
    if (options_.standby > 0 && !options_.join) {
      set(kStandbyRanksVariable, std::to_string(options_.nnodes * options_.standby));
    } else {
      unsetenv(kStandbyRanksVariable);
    }
    if (options_.join) {
      unsetenv("WORLD_SIZE");  // the job's leader tells a replacement its size
    } else {
      set("WORLD_SIZE", std::to_string(options_.world_size()));
    }
    set("LOCAL_RANK", std::to_string(local_rank));
    set("LOCAL_WORLD_SIZE", std::to_string(options_.join ? options_.standby : options_.ranks_per_node));
    set("NODE_RANK", std::to_string(options_.node_rank));
    set("MASTER_ADDR", options_.master_addr);
    set("MASTER_PORT", std::to_string(master_port_));
    if (options_.insecure) {
      set(kInsecureJobVariable, "1");
      unsetenv(kJobSecretVariable);
      unsetenv(kJobSecretFileVariable);
    } else {
      if (!job_secret_.empty()) set(kJobSecretVariable, job_secret_);  // else INFERNO_JOB_SECRET_FILE's
      unsetenv(kInsecureJobVariable);
    }
    if (options_.transport) set(kTransportVariable, TransportChoiceName(*options_.transport));
    // A copy without close-on-exec, inherited by the program and anything it
    // starts (a shell, a wrapper) down to the rank itself.
    set(kLifelineVariable, std::to_string(dup(lifeline_[0])));
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                             "SLURM_PROCID", "SLURM_NTASKS"}) {
      unsetenv(name);
    }
    std::signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
    std::vector<char*> argv;
    for (const std::string& arg : options_.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const std::string message =
        "launch: " + Name(process) + ": cannot run '" + options_.command[0] + "': " + ErrnoText() + "\n";
    WriteAll(STDERR_FILENO, message);
    _exit(kExecFailedStatus);
  }

  void Supervise() {
    std::optional<Clock::time_point> drain_deadline;
    while (true) {
      if (!AnyRunning() && !drain_deadline) {
        // Processes the ranks left behind may still hold the output pipes.
        Stop(SIGKILL);
        drain_deadline = Clock::now() + kOutputDrainLimit;
      }
      if (drain_deadline && (!AnyStreamOpen() || Clock::now() >= *drain_deadline)) break;

      std::vector<pollfd> fds = {{signal_fd_, POLLIN, 0}};
      std::vector<TaggedStream*> streams;
      for (RankProcess& process : ranks_) {
        for (TaggedStream* stream : {&process.out, &process.err}) {
          if (stream->fd < 0) continue;
          fds.push_back({stream->fd, POLLIN, 0});
          streams.push_back(stream);
        }
      }
      const int ready = poll(fds.data(), fds.size(), PollTimeoutMs(drain_deadline));
      if (ready < 0 && errno != EINTR) {
        WriteAll(STDERR_FILENO, "launch: poll: " + ErrnoText() + "; stopping the job\n");
        Fail(1);
      }
      if (ready > 0) {
        if (fds[0].revents != 0) HandleSignals();
        for (size_t i = 1; i < fds.size(); ++i) {
          if (fds[i].revents != 0) streams[i - 1]->Read();
        }
      }
      CheckDeadlines();
    }
    for (RankProcess& process : ranks_) {
      process.out.Close();
      process.err.Close();
    }
  }

  int PollTimeoutMs(const std::optional<Clock::time_point>& drain_deadline) const {
    std::optional<Clock::time_point> next = drain_deadline;
    for (const auto& deadline : {job_deadline_, kill_deadline_}) {
      if (deadline && (!next || *deadline < *next)) next = deadline;
    }
    if (!next) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  }

  void HandleSignals() {
    signalfd_siginfo info;
    while (read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
      const int signal = static_cast<int>(info.ssi_signo);
      if (signal == SIGCHLD) {
        while (Reap(/*block=*/false)) {
        }
        continue;
      }
      if (exit_status_) {
        WriteAll(STDERR_FILENO,
                 std::string("launch: got SIG") + sigabbrev_np(signal) + " again; killing the ranks now\n");
        Stop(SIGKILL);
        continue;
      }
      WriteAll(STDERR_FILENO, std::string("launch: got SIG") + sigabbrev_np(signal) + "; stopping " +
                                  std::to_string(RunningCount()) + " ranks\n");
      Fail(128 + signal);
    }
  }

  // Reaps one exited child (a rank, or a process a rank orphaned). Returns
  // whether one was reaped.
  bool Reap(bool block) {
    int wait_status = 0;
    const pid_t pid = waitpid(-1, &wait_status, block ? 0 : WNOHANG);
    if (pid <= 0) return false;
    for (RankProcess& process : ranks_) {
      if (process.pid != pid || !process.running) continue;
      process.running = false;
      const bool failed = !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0;
      if (failed && !exit_status_ && options_.failover) {
        WriteAll(STDERR_FILENO, "launch: " + Name(process) + " (pid " + std::to_string(pid) + ") " +
                                    DescribeWaitStatus(wait_status) + "; --failover: " +
                                    std::to_string(RunningCount()) + " ranks carry on without it\n");
        // The last one's failure is the job's.
        if (RunningCount() == 0) exit_status_ = ExitStatusOf(wait_status);
      } else if (failed && !exit_status_) {
        WriteAll(STDERR_FILENO, "launch: " + Name(process) + " (pid " + std::to_string(pid) + ") " +
                                    DescribeWaitStatus(wait_status) + "; stopping " +
                                    std::to_string(RunningCount()) + " other ranks\n");
        Fail(ExitStatusOf(wait_status));
      } else if (options_.failover && !failed && !exit_status_ && RunningCount() > 0) {
        // A rank ends with 0 only once the leader (rank 0, or the rank that
        // took its role) has ended the job; a lost rank may be frozen
        // (SIGSTOP), not dead, and a standby may still wait: the job ends.
        WriteAll(STDERR_FILENO, "launch: " + Name(process) + " exited with status 0; --failover: stopping " +
                                    std::to_string(RunningCount()) + " ranks still running\n");
        Fail(0);
      }
    }
    return true;
  }

  void CheckDeadlines() {
    const Clock::time_point now = Clock::now();
    if (job_deadline_ && now >= *job_deadline_) {
      job_deadline_.reset();
      if (!exit_status_) {
        WriteAll(STDERR_FILENO, "launch: --timeout of " + std::to_string(options_.timeout.count()) +
                                    " ms passed; stopping " + std::to_string(RunningCount()) + " ranks\n");
        Fail(kTimeoutStatus);
      }
    }
    if (kill_deadline_ && now >= *kill_deadline_) {
      kill_deadline_.reset();
      std::string stuck;
      for (const RankProcess& process : ranks_) {
        if (process.running) stuck.append(stuck.empty() ? " " : ", ").append(Name(process));
      }
      if (!stuck.empty()) {
        WriteAll(STDERR_FILENO, "launch:" + stuck + " still running " +
                                    std::to_string(options_.grace.count()) +
                                    " ms after SIGTERM; sending SIGKILL\n");
        Stop(SIGKILL);
      }
    }
  }

  // Records the job's exit status and starts stopping the ranks.
  void Fail(int status) {
    exit_status_ = status;
    Stop(SIGTERM);
    kill_deadline_ = Clock::now() + options_.grace;
  }

  // Sends `signal` to the process group of every rank (running or not: a
  // finished rank's group may still hold processes it started).
  void Stop(int signal) {
    for (const RankProcess& process : ranks_) {
      if (process.pid > 0) kill(-process.pid, signal);
    }
  }

  bool AnyRunning() const { return RunningCount() > 0; }

  int RunningCount() const {
    return static_cast<int>(
        std::count_if(ranks_.begin(), ranks_.end(), [](const RankProcess& p) { return p.running; }));
  }

  bool AnyStreamOpen() const {
    return std::any_of(ranks_.begin(), ranks_.end(),
                       [](const RankProcess& p) { return p.out.fd >= 0 || p.err.fd >= 0; });
  }

  const LaunchOptions& options_;
  int master_port_ = 0;
  std::string job_secret_;  // unless --insecure: what the ranks get
  int signal_fd_ = -1;
  int lifeline_[2] = {-1, -1};  // read end, write end
  sigset_t original_mask_{};
  std::vector<RankProcess> ranks_;
  std::vector<cpu_set_t> rank_cpus_;  // local rank -> its CPUs; empty: unbound
  std::optional<int> exit_status_;    // set once the job is being stopped
  std::optional<Clock::time_point> job_deadline_;
  std::optional<Clock::time_point> kill_deadline_;
};

}  // namespace

Result<int> RunRanks(const LaunchOptions& options) { return Supervisor(options).Run(); }

}  // namespace inferno

// Regroup: after a rank of a job is lost, the survivors, and standby ranks
// started with the job to take a lost rank's place, agree on the members of
// the job's next generation, before they rendezvous again as a new
// ProcessGroup (Join) over those members.
//
// The coordinator decides: the lowest rank not among the lost ones the
// caller names (its liveness watch's verdict, Transport::LostRanks): the
// leader (rank 0), or when the leader is lost, rank 1. It listens at
// the job's MASTER_ADDR:MASTER_PORT again, with the job's secret (CURVE, as
// the rendezvous), and every surviving rank reports its rank in the ended
// generation. The survivors are in as soon as all of the other ranks but the
// lost ones (at least one) have arrived (one loss, the common case, costs no
// waiting) or when
// `window` has passed. A standby rank (AwaitPlace) calls the leader over and
// over until a regroup hears it: the leader answers "hold", and counts the
// standby once it confirms on the same connection (so a call of a connection
// the standby has since closed never takes a place). When the leader
// expects standbys, it waits for as many as ranks were lost, at most
// kStandbyWait after the survivors are in. Members are numbered in the
// order of the old ranks whose places they hold: each survivor its own, each
// standby a lost rank's (the first standby the lowest lost rank), and lost
// ranks no standby took are left out (the others move down). So with the
// leader lost, a standby becomes rank 0 (the new leader), or else rank 1
// does (the coordinator itself), each other member moving down one. Standbys not
// needed are told to wait for the next regroup. A request of another
// generation, an unknown rank, a rank named lost (fenced out) or a rank that
// arrives twice is refused with a one-line reason. The new generation's Join then binds fresh sockets and
// fresh shared-memory segments under a fresh job id, so no message of the
// ended generation can reach it.
//
// Thread-safety: plain functions; each call builds its own sockets.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/error.h"
#include "distributed/rendezvous.h"

namespace inferno {

class RendezvousServer;  // distributed/zmq/rendezvous_channel.h

struct Regrouped {
  // The old configuration with this rank's new rank and the new world size.
  RendezvousConfig config;
  // The ranks of the ended generation whose places the members hold, by new
  // rank (a standby holds a lost rank's).
  std::vector<int> old_ranks;
  // The generation formed (1 for the first regroup).
  int generation = 0;
  // How many standby ranks took a place (every member learns it).
  int standbys_taken = 0;
  // The job's own world size, which a grow-back returns to (every member
  // learns it, so a replacement started later knows it too).
  int job_size = 0;
};

// How long the leader waits for standby ranks once the survivors are in.
inline constexpr std::chrono::milliseconds kStandbyWait{2000};

// Regroups rank `ended.rank` of the generation `ended` described, whose
// successor is number `generation` (1 for the first regroup). `lost_ranks`:
// the ranks of `ended` found lost (Transport::LostRanks; every survivor must
// agree on whether rank 0 is among them, which the liveness watch gives: each
// survivor judges the same heartbeats, or the same closed connection); the
// lowest rank not among them coordinates. On the coordinator, `standbys` is
// how many standby ranks may still answer (0: none is waited for).
// Errors: InvalidArgument when `ended.rank` is itself among `lost_ranks`
// (fenced out: it must not take part); Timeout on another rank
// that hears no answer within `window` plus two seconds (the coordinator is
// gone); InvalidArgument when the coordinator refuses the rank (the reason
// quoted); Transport when the coordinator cannot listen. `job_size`: the
// job's own world size, passed on to every member (0: ended.world_size).
Result<Regrouped> Regroup(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window,
                          int standbys = 0, const std::vector<int>& lost_ranks = {}, int job_size = 0);

// A grow-back: no rank of `ended` was lost, and the job, running below its
// own size `job_size`, takes the standby ranks (replacements) that call, up
// to job_size - ended.world_size, in new places after the old ranks (new
// ranks ended.world_size, ...). Every rank of `ended` calls it once all
// have agreed to (the leader decided it, see JoinDesk); rank 0 coordinates,
// waits `window` for every other rank, then at most kStandbyWait for the
// standbys; none calling in time leaves the members as they were (a
// generation of the same size). Every member keeps its rank. Errors as
// Regroup's.
Result<Regrouped> GrowBack(const RendezvousConfig& ended, int generation, std::chrono::milliseconds window,
                           int job_size);

// A standby rank's wait for a place: calls the leader at `job`'s
// MASTER_ADDR:MASTER_PORT (`job.standby` names the standby) until a regroup
// gives it one, then returns it (config.rank: the place, 0 when it takes the
// lost leader's; generation: the
// generation to join). Returns nullopt once `stopped()` is true (asked every
// 250 ms or sooner). The calls reaching the job's rendezvous instead are
// ignored there. Errors: InvalidArgument when the leader refuses it (the
// reason quoted); Transport when the leader's address refuses 5 calls in a
// row (another job secret; one refusal, a server closing as the call
// arrives, is retried) or its answer is malformed.
Result<std::optional<Regrouped>> AwaitPlace(const RendezvousConfig& job,
                                            const std::function<bool()>& stopped);

// JoinDesk: while a job runs below its own size, its leader listens at the
// job's MASTER_ADDR:MASTER_PORT (with the job's secret, CURVE, so a caller
// with another secret is refused in the handshake) for standby ranks that
// call (AwaitPlace: a replacement started later, or a standby that missed
// the last regroup). The first call heard runs `heard` (once, on the desk's
// thread); calls are never answered: the caller calls again and the
// GrowBack that follows the desk hears it. A rank's regroup request that
// reaches the desk (its loop failed before the leader's did) is answered
// "retry", and Regroup asks again until the coordinator answers. The desk
// must be closed (destroyed) before anything else listens at the address.
// If its socket fails (not a timeout), the desk logs one line and stops
// hearing calls; the job goes on at its size.
//
// Thread-safety: one thread of its own; construction and destruction from
// one thread.
class JoinDesk {
 public:
  // Errors: Transport naming the address when it cannot listen.
  static Result<std::unique_ptr<JoinDesk>> Open(const RendezvousConfig& job, std::function<void()> heard);
  ~JoinDesk();  // stops listening within kDeskStopCheck (0.1 s)
  JoinDesk(const JoinDesk&) = delete;
  JoinDesk& operator=(const JoinDesk&) = delete;

 private:
  JoinDesk(std::unique_ptr<RendezvousServer> server, std::function<void()> heard);
  void Serve();

  std::unique_ptr<RendezvousServer> server_;
  const std::function<void()> heard_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace inferno

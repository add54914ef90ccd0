// What NCCL would run: the `nccl` algorithm's choice of algorithm x protocol for one run.
//
// NCCL's tuner (src/graph/tuning.cc) predicts, for every algorithm it implements and every
// protocol, latency + size / bandwidth, and runs the minimum. collsim does the same with its own
// engine in place of the formula: each candidate (an AlgorithmInfo row with nccl_candidate that
// this topology supports: nvls only where the switch reduces) under each protocol of the link
// model (the protocol regimes of a calibrated model file, each with its own alpha, bandwidth and
// launch; one protocol, the run's own link, without them) is replayed once without delays, run
// fused (one launch, as NCCL's collectives), and the fastest wins. The choice depends on the size,
// topology and model, never on the arrivals: NCCL picks before it knows who is late.
#pragma once

#include <string>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/models/calibration.hpp"
#include "collsim/models/collective.hpp"
#include "collsim/models/formats/model_file.hpp"
#include "collsim/models/link_model.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {

/// One run's choice and the costs to run it with.
struct NcclChoice {
  std::string algorithm;        ///< the chosen candidate row's name, e.g. "ring"
  std::string protocol;         ///< "LL", "LL128", "Simple", or "model" without protocol regimes
  double predicted_s = 0;       ///< its delay-free time under the replay engine
  Topology topology;            ///< the run's topology with the protocol's link applied
  ExecutionCosts execution;     ///< fused, with the protocol's launch
};

/// The candidate x protocol with the least delay-free time for n ranks and `size_bytes` per rank
/// on `topology` (already carrying the run's link). `model` (may be null) supplies the protocol
/// regimes; `execution.launch_s` is the launch without regimes. Ties go to the earlier candidate
/// in table order, then the earlier protocol. Throws ConfigError when no candidate supports n.
/// `collective`: a ReduceScatter or AllGather is run as the candidate's phase of that name
/// (collective_part), so only candidates with one take part (ring among NCCL's); calibrate
/// explains nccl-tests logs of those collectives this way.
NcclChoice choose_nccl(Rank n, double size_bytes, const Topology& topology, const ModelFile* model,
                       const ExecutionCosts& execution, Collective collective = Collective::AllReduce);

}  // namespace collsim

// Between calibrate.cpp (the fit) and calibration_model.cpp (the model file it writes).
#pragma once

#include <string>

#include "collsim/sim/calibrate.hpp"

namespace collsim::detail {

/// The model file of a finished fit, named `name` (its provenance, terms and fitted rows from
/// `report`). `report` needs its fit, points and inputs filled in.
ModelFile build_model(const CalibrationReport& report, const std::string& name);

}  // namespace collsim::detail

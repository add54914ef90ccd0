// The build id (cmake/build_id.cmake regenerates the header at every build): alone in this file
// so that a new commit recompiles one small file.
#include "collsim_build_id.hpp"
#include "collsim/experiments/spec.hpp"

namespace collsim {

std::string_view collsim_build_id() { return COLLSIM_BUILD_ID; }

}  // namespace collsim

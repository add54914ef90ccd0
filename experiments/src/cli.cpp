#include "collsim/experiments/cli.hpp"

#include <fmt/format.h>

#include <exception>

#include "collsim/experiments/commands.hpp"
#include "collsim/experiments/spec.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/quote.hpp"

namespace collsim {
namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const Args&, std::ostream&);
};

const Subcommand kSubcommands[] = {
    {"schedule", "generate a schedule and print it (text, json, stats)", &schedule_command},
    {"verify", "check schedules with the verifier and the reference executor", &verify_command},
    {"simulate", "time one AllReduce with an engine (closed_form, replay, simgrid)", &simulate_command},
    {"run", "run an experiment study (YAML spec): sweeps, trials, results CSV; MPI-aware", &run_command},
    {"calibrate", "fit the link model to nccl-tests logs or collsim-cuda CSVs; cross-predict", &calibrate_command},
    {"advise", "rank the algorithms for a topology, size and arrival model; say which to use", &advise_command},
    {"algorithms", "list the algorithm table (summary, reference, closed form, ...); --json for scripts",
     &algorithms_command},
    {"arrivals", "summarise an arrival trace (spread, late ranks, persistence); fit a model; plot its CDF", &arrivals_command},
};

std::string usage() {
  std::string text =
      "usage: collsim COMMAND [options]\n\n"
      "collsim simulates AllReduce algorithms (StragglAR, ring, trees, ...) under straggler delays.\n\n"
      "commands:\n";
  for (const auto& c : kSubcommands) text += fmt::format("  {:<10} {}\n", c.name, c.summary);
  text += "\nRun 'collsim COMMAND --help' (or 'collsim help COMMAND') for the options of a command;\n"
          "'collsim --version' prints the version.\n";
  return text;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() == 2 && args[0] == "help") return run_cli({args[1], "--help"}, out, err);
  if (args.size() > 2 && args[0] == "help") {
    err << "collsim: error: 'collsim help' takes at most one command\n";
    return kExitBadInput;
  }
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    out << usage();
    return args.empty() ? kExitBadInput : 0;
  }
  if (args[0] == "--version") {
    out << "collsim " << COLLSIM_VERSION << " (build " << collsim_build_id() << ")\n";
    return 0;
  }
  for (const auto& c : kSubcommands) {
    if (args[0] != c.name) continue;
    // one_line_message: a message that echoed input stays one line of bounded length.
    try {
      forget_input_files();  // what this command reads, its outputs must not replace
      return c.run(Args(args.begin() + 1, args.end()), out);
    } catch (const InternalError& e) {
      err << "collsim: internal error (please report): " << one_line_message(e.what()) << "\n";
      return kExitInternal;
    } catch (const Error& e) {
      err << "collsim: error: " << one_line_message(e.what()) << "\n";
      return kExitBadInput;
    } catch (const std::bad_alloc&) {
      err << "collsim: error: out of memory\n";
      return kExitBadInput;
    } catch (const std::exception& e) {
      err << "collsim: internal error (please report): " << one_line_message(e.what()) << "\n";
      return kExitInternal;
    }
  }
  err << fmt::format("collsim: error: unknown command '{}' (run 'collsim --help')\n", quote_excerpt(args[0]));
  return kExitBadInput;
}

}  // namespace collsim

// Applying a fitted model to a topology, class by class (see formats/model_file.hpp: apply_model).
#include <fmt/format.h>

#include <algorithm>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/model_file.hpp"

namespace collsim {
namespace {

std::string class_names(const Topology& topology) {
  std::string out;
  for (const auto& c : topology.link_classes) out += fmt::format("{}{}", out.empty() ? "" : ", ", c.name);
  return out.empty() ? std::string(kNvlinkClass) : out;
}

std::string model_where(const ModelFile& model) {
  return model.source.empty() ? fmt::format("model '{}'", model.name) : model.source;
}

}  // namespace

void apply_model(const ModelFile& model, double size_bytes, Topology& topology) {
  topology.link.gamma_s_per_byte = model.link.gamma_s_per_byte;
  if (topology.link_classes.empty()) {
    // A hand-built topology without classes: the whole of it is the model's one link.
    if (!model.link_classes.empty()) {
      throw ConfigError(fmt::format("{}: a model with link_classes needs a topology with link classes; '{}' has none",
                                    model_where(model), topology.name));
    }
    const LinkModel link = model.link_for_size(size_bytes);
    for (auto& l : topology.links) {
      l.latency_s = l.latency_share * link.latency_s;
      l.bandwidth_Bps = l.bandwidth_multiple * link.bandwidth_Bps;
    }
    topology.link = link;
    return;
  }
  if (model.link_classes.empty()) {
    for (const auto& c : topology.link_classes) {
      if (c.name != kNvlinkClass) {
        throw ConfigError(fmt::format(
            "{}: single-class model '{}' (key 'link', class '{}') has no parameters for link class '{}' of topology "
            "'{}' (its classes: {}); calibrate with --topology on measurements that cross that class, or use a "
            "topology with only class '{}'",
            model_where(model), model.name, kNvlinkClass, c.name, topology.name, class_names(topology), kNvlinkClass));
      }
    }
    const LinkModel link = model.link_for_size(size_bytes);
    topology.set_link_class(*topology.find_link_class(kNvlinkClass), link.latency_s, link.bandwidth_Bps);
    topology.link.gamma_s_per_byte = link.gamma_s_per_byte;
    return;
  }
  for (const auto& c : model.link_classes) {
    if (!topology.find_link_class(c.name)) {
      throw ConfigError(fmt::format("{}:{}: unknown link class 'link_classes.{}' for topology '{}' (its classes: {})",
                                    model_where(model), c.line, c.name, topology.name, class_names(topology)));
    }
  }
  for (const auto& c : topology.link_classes) {
    const bool fitted = std::any_of(model.link_classes.begin(), model.link_classes.end(),
                                    [&](const ModelLinkClass& m) { return m.name == c.name; });
    if (fitted) continue;
    const bool unidentified = std::find(model.unidentified_classes.begin(), model.unidentified_classes.end(),
                                        c.name) != model.unidentified_classes.end();
    throw ConfigError(fmt::format("{}: model '{}' has no parameters for link class '{}' of topology '{}'{}",
                                  model_where(model), model.name, c.name, topology.name,
                                  unidentified ? " (the calibration data did not identify it: see unidentified_classes)"
                                               : std::string(" (the model's link_classes do not list it)")));
  }
  for (const auto& c : model.link_classes) {
    topology.set_link_class(*topology.find_link_class(c.name), c.latency_s, c.bandwidth_Bps);
  }
}

}  // namespace collsim

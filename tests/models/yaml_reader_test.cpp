#include "collsim/models/formats/yaml_reader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace collsim {
namespace {

// yaml-cpp 0.7's LoadAll never returned on these (a ',' where a value starts, outside brackets):
// it read an empty document in front of the ',' again and again, and the memory filled up.
TEST(LoadYamlDocuments, ACommaWhereAValueStartsIsASyntaxErrorAtItsLine) {
  const std::pair<std::string, int> cases[] = {{",", 0},
                                               {" ,", 0},
                                               {",,", 0},
                                               {",\nname: x\n", 0},
                                               {"- a\n,", 1},
                                               {"[1]\n,", 1},
                                               {"{a: 1}\n,\n", 1},
                                               {"&a ,", 0},
                                               {"!t ,", 0},
                                               {"\xef\xbb\xbf,", 0},
                                               {"%YAML 1.2\n---\n,", 2},
                                               {"name: x\n---\n,", 2}};
  for (const auto& [text, line] : cases) {
    try {
      load_yaml_documents(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const YAML::ParserException& e) {
      EXPECT_EQ(e.mark.line, line) << text;
      EXPECT_EQ(e.msg, "',' cannot start a value here (a ',' belongs inside [a, b] or {a: 1, b: 2})") << text;
    }
  }
}

// Everything else reads as LoadAll reads it: empty documents, several documents, and yaml-cpp's
// own syntax errors.
TEST(LoadYamlDocuments, OtherwiseTheDocumentsOfLoadAll) {
  EXPECT_TRUE(load_yaml_documents("").empty());
  EXPECT_EQ(load_yaml_documents("---\n---\n").size(), 2u);
  const auto two = load_yaml_documents("a: [1, 2]\n---\nb: {c: 3}\n");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0]["a"][1].as<int>(), 2);
  EXPECT_EQ(two[1]["b"]["c"].as<int>(), 3);
  EXPECT_EQ(load_yaml_documents("a: 1\n ,\n").size(), 1u);  // a ',' inside a plain scalar is text
  EXPECT_THROW(load_yaml_documents("a: ,"), YAML::ParserException);
  EXPECT_THROW(load_yaml_documents("[,"), YAML::ParserException);
}

}  // namespace
}  // namespace collsim

#include "collsim/models/formats/csv.hpp"

#include <gtest/gtest.h>

#include <string>

#include "collsim/models/formats/measurement_csv.hpp"

namespace collsim {
namespace {

TEST(CsvField, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
}

TEST(CsvField, ReadsBackThroughTheMeasurementReader) {
  const std::string device = "H100, \"SXM\" 80GB";
  const std::string text = "algorithm,n,size_bytes,time_s,device\n" + csv_field("ring,v2") + ",8,1024,1e-5," +
                           csv_field(device) + "\n";
  const MeasurementCsv csv = parse_measurement_csv(text, "m.csv");
  ASSERT_EQ(csv.rows.size(), 1u);
  EXPECT_EQ(csv.rows[0].algorithm, "ring,v2");
  EXPECT_EQ(csv.rows[0].device, device);
}

}  // namespace
}  // namespace collsim

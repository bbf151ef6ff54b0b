#include "tools/cli/args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace moetune::cli {
namespace {

using ::testing::HasSubstr;

const std::vector<FlagSpec> kSpecs = {
    {"model", false, "model"}, {"gpus", false, "gpus"}, {"explain", true, "why"}};

TEST(ArgsTest, ParsesBothValueFormsBooleansAndPositionals) {
  auto args = Args::Parse({"JOB7", "--model", "deepseek-v3", "--gpus=1024", "--explain"}, kSpecs);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->GetOr("model", ""), "deepseek-v3");
  EXPECT_EQ(*args->GetInt("gpus").value(), 1024);
  EXPECT_TRUE(args->Has("explain"));
  EXPECT_EQ(args->positional(), std::vector<std::string>{"JOB7"});
}

TEST(ArgsTest, UnknownFlagIsNamed) {
  auto args = Args::Parse({"--modle", "x"}, kSpecs);
  EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(args.status().message()), HasSubstr("--modle"));
}

TEST(ArgsTest, MissingValueAndBadIntegerAreNamed) {
  EXPECT_THAT(std::string(Args::Parse({"--gpus"}, kSpecs).status().message()),
              HasSubstr("--gpus needs a value"));
  auto args = Args::Parse({"--gpus", "12x"}, kSpecs);
  ASSERT_TRUE(args.ok());
  auto gpus = args->GetInt("gpus");
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(gpus.status().message()), HasSubstr("'12x'"));
}

TEST(ArgsTest, UnderscoreAndDashSpellingsAreOneFlag) {
  const std::vector<FlagSpec> specs = {{"model_file", false, "f"}, {"top-k", false, "k"}};
  auto args = Args::Parse({"--model-file", "m.json", "--top_k=3"}, specs);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->GetOr("model_file", ""), "m.json");
  EXPECT_EQ(args->GetOr("model-file", ""), "m.json");
  EXPECT_EQ(*args->GetInt("top-k").value(), 3);
  EXPECT_TRUE(args->Has("top_k"));
}

TEST(ArgsTest, AbsentFlagIsEmptyNotZero) {
  auto args = Args::Parse({}, kSpecs);
  ASSERT_TRUE(args.ok());
  EXPECT_FALSE(args->GetInt("gpus").value().has_value());
}

// The optimizer offload flags: a fraction in [0, 1], the overlap only with
// a fraction; each refusal names the flag.
TEST(ArgsTest, OptimizerOffloadFlags) {
  const std::vector<FlagSpec> specs = {{"optimizer-offload-fraction", false, ""},
                                       {"optimizer-offload-overlap", true, ""}};
  auto parse = [&](const std::vector<std::string>& argv) {
    absl::StatusOr<Args> a = Args::Parse(argv, specs);
    EXPECT_TRUE(a.ok()) << a.status();
    return ParseOptimizerOffloadFlags(*a);
  };
  absl::StatusOr<OptimizerOffloadFlags> none = parse({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->fraction, 0.0);
  EXPECT_FALSE(none->overlap);
  absl::StatusOr<OptimizerOffloadFlags> half =
      parse({"--optimizer-offload-fraction", "0.5", "--optimizer-offload-overlap"});
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->fraction, 0.5);
  EXPECT_TRUE(half->overlap);
  for (const char* bad : {"1.5", "-0.1", "nan", "half"}) {
    EXPECT_THAT(std::string(parse({"--optimizer-offload-fraction", bad}).status().message()),
                HasSubstr("--optimizer-offload-fraction"))
        << bad;
  }
  EXPECT_THAT(std::string(parse({"--optimizer-offload-overlap"}).status().message()),
              HasSubstr("--optimizer-offload-overlap needs --optimizer-offload-fraction > 0"));
}

}  // namespace
}  // namespace moetune::cli
